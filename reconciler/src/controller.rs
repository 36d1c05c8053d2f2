//! The Stack controller: for each Stack, server-side apply the children the catalog
//! describes, remove children a changed choice no longer needs, and write status
//! derived from the children. Drift (a child edited or deleted) triggers a reconcile
//! through the owned-object watches and is put back by the next apply. This file is
//! the wiring (the watches, the controller, the error policy and backoff); one
//! reconcile's work is `super::provision`.
//!
//! Reads come from the watches' stores ([`super::change_filter`]), not the API server; a Stack
//! is reconciled when its spec changes (its generation), not when its own status write
//! comes back; a child only when something read of it changed; and an apply that would
//! change nothing is skipped.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::Api;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::{WatchStreamExt, predicates, reflector as reflect, watcher};
use kube::{Resource, ResourceExt};
use tracing::Instrument;

use super::catalog::LiveCatalog;
use super::change_filter::{self, Applied, cached};
pub use super::context::ReconcileStats;
use super::context::{Context, DEBOUNCE};
use super::desired::STACK_LABEL;
pub use super::error::ReconcileError;
use super::executor::Executor;
pub use super::executor::MANAGER;
use super::metrics::{Metrics, Outcome};
use super::plan::controlled_by;
use super::provision::{endpoint_of, provision};
use super::readiness::{deployment_readiness, statefulset_readiness};
use super::scheduling;
use super::stack::Stack;
use super::status::Observed;
use super::stores::{Names, Stores};

/// Stacks reconciled at the same time, by default. Measured (`cargo bench -p server
/// --bench stacks`, 400 Tomcat Stacks): 16 and 48 finish within 1 % of each other,
/// since the API server is what every reconcile waits on; more would only queue there.
/// kube 5's client speaks HTTP/1.1 (hyper is built without http2), so each request in
/// flight holds one pooled connection: 16 reconciles make at most 48 (a new Stack's
/// Services and workload are applied at once, a running one's one at a time), plus the
/// Events told in the background, none of them a new one per call.
pub const CONCURRENCY: u16 = 16;

/// What one reconciler instance works with.
#[derive(Clone)]
pub struct Settings {
    /// What each choice provisions; every Stack is reconciled again when it changes.
    pub catalog: LiveCatalog,
    /// Reconcile only Stacks in this namespace (all namespaces when `None`).
    pub namespace: Option<String>,
    /// Counters shared with whoever started the reconciler.
    pub stats: Arc<ReconcileStats>,
    /// What `/metrics` shows.
    pub metrics: Arc<Metrics>,
    /// Stacks reconciled at the same time ([`CONCURRENCY`] unless measured otherwise).
    pub concurrency: u16,
}

fn scoped<K>(client: &kube::Client, namespace: Option<&str>) -> Api<K>
where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>,
{
    match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

/// Runs the controller until `stop` resolves, then finishes in-flight reconciles.
pub async fn run(
    client: kube::Client,
    settings: Settings,
    identity: String,
    stop: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let Settings {
        catalog,
        namespace,
        stats,
        metrics,
        concurrency,
    } = settings;
    // This runs exactly while this replica holds the Lease.
    metrics.set_leader(true);
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: MANAGER.into(),
            instance: Some(identity),
        },
    );
    let catalog_changes = catalog.changes();
    let children = watcher::Config::default().labels(STACK_LABEL);
    let ns = namespace.as_deref();
    // What each child kind's reconcile reads of it ([`Relevant`]); anything else
    // changing (a status heartbeat, the echo of an apply) triggers nothing.
    let applied = Arc::new(Applied::default());
    let (statefulsets, statefulset_changes) = change_filter::watched(
        scoped::<StatefulSet>(&client, ns),
        children.clone(),
        |_| {},
        applied.clone(),
    );
    let (deployments, deployment_changes) = change_filter::watched(
        scoped::<Deployment>(&client, ns),
        children.clone(),
        |_| {},
        applied.clone(),
    );
    let (services, service_changes) = change_filter::watched(
        scoped::<Service>(&client, ns),
        children.clone(),
        |_| {},
        applied.clone(),
    );
    // Pods only for whether they can be placed and what their containers report
    // (status, not spec): everything else shows in the workload's status, watched above.
    let (pods, pod_changes) = change_filter::watched(
        scoped::<Pod>(&client, ns),
        children,
        |p: &mut Pod| p.spec = None,
        applied.clone(),
    );
    let (names, fill_names) = names_of_children(&client, ns);
    let (stacks, stack_writer) = reflector::store();
    let stack_changes = reflect(
        stack_writer,
        watcher(scoped::<Stack>(&client, ns), watcher::Config::default()),
    )
    .default_backoff()
    .touched_objects()
    // Spec changes only: the reconciler's own status writes come back as updates too.
    .predicate_filter(predicates::generation, Default::default());
    let _counting_pending = metrics.count_pending_in(stacks.clone());
    let ctx = Arc::new(Context {
        executor: Executor::new(client.clone(), applied, recorder),
        catalog,
        stats,
        metrics: metrics.clone(),
        attempts: Mutex::default(),
        stores: Stores {
            statefulsets,
            deployments,
            services,
            pods,
            names,
            first_lists: tokio::sync::OnceCell::new(),
        },
        stacks: stacks.clone(),
    });
    let pod_owners = stacks.clone();
    let controller = Controller::for_stream(stack_changes, stacks)
        .owns_stream(statefulset_changes)
        .owns_stream(deployment_changes)
        .owns_stream(service_changes)
        .watches_stream(pod_changes, move |pod: Pod| {
            let stack =
                ObjectRef::<Stack>::new(pod.labels().get(STACK_LABEL)?).within(&pod.namespace()?);
            scheduling::pod_changes_status(&pod, pod_owners.get(&stack).as_deref()).then_some(stack)
        })
        .reconcile_all_on(catalog_changes)
        // Bounded, so a burst of Stacks does not overwhelm the API server.
        .with_config(
            kube::runtime::controller::Config::default()
                .concurrency(concurrency)
                .debounce(DEBOUNCE),
        )
        .graceful_shutdown_on(stop)
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(%error, "reconcile did not complete");
            }
        });
    // The name stores are filled until the controller has stopped.
    tokio::select! {
        () = controller => {}
        () = fill_names => {}
    }
    metrics.set_leader(false);
    tracing::info!("the Stack reconciler stopped");
}

/// Every object's name and owners under the children's names, for ownership checks,
/// and what fills them (for as long as the controller runs).
fn names_of_children(
    client: &kube::Client,
    ns: Option<&str>,
) -> (Names, impl Future<Output = ()> + Send + 'static) {
    let (statefulsets, fill_statefulsets) = change_filter::names(scoped(client, ns));
    let (deployments, fill_deployments) = change_filter::names(scoped(client, ns));
    let (services, fill_services) = change_filter::names(scoped(client, ns));
    let (claims, fill_claims) = change_filter::names(scoped(client, ns));
    let fill = async move {
        futures::join!(
            fill_statefulsets,
            fill_deployments,
            fill_services,
            fill_claims
        );
    };
    let names = Names {
        statefulsets,
        deployments,
        services,
        claims,
    };
    (names, fill)
}

fn key(stack: &Stack) -> String {
    format!(
        "{}/{}",
        stack.namespace().unwrap_or_default(),
        stack.name_any()
    )
}

/// Drops what is kept per Stack (backoff attempts, applied records) for Stacks that no
/// longer exist. Cheap: called when a reconcile finds its Stack being deleted, and on
/// every hundredth reconcile.
fn forget_gone_stacks(ctx: &Context) {
    let exists = |namespace: &str, name: &str| {
        ctx.stacks
            .get(&ObjectRef::new(name).within(namespace))
            .is_some_and(|s| s.metadata.deletion_timestamp.is_none())
    };
    ctx.executor.applied.retain_stacks(exists);
    ctx.attempts
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .retain(|key, _| {
            key.split_once('/')
                .is_some_and(|(namespace, name)| exists(namespace, name))
        });
}

fn error_policy(stack: Arc<Stack>, error: &ReconcileError, ctx: Arc<Context>) -> Action {
    if let ReconcileError::Blocked(blocked) = error {
        tracing::info!(stack = %key(&stack), reason = blocked.reason(), "blocked");
        return if blocked.awaits_change() {
            Action::await_change()
        } else {
            Action::requeue(Duration::from_secs(60))
        };
    }
    ctx.stats.failures.fetch_add(1, Ordering::Relaxed);
    let attempt = {
        let mut attempts = ctx.attempts.lock().unwrap_or_else(|p| p.into_inner());
        let n = attempts.entry(key(&stack)).or_insert(0);
        *n = n.saturating_add(1);
        *n
    };
    let delay = retry_wait(attempt);
    tracing::warn!(stack = %key(&stack), %error, attempt, retry_in = ?delay, "reconcile failed");
    Action::requeue(delay)
}

/// The wait before a failed Stack's next try: 2 s doubling to 5 minutes, spread at
/// random so that Stacks that failed together (an API server restart) are not all
/// tried again in the same second.
fn retry_wait(attempt: u32) -> Duration {
    portico_core::backoff::jittered(
        attempt.saturating_add(1),
        Duration::from_secs(1),
        Duration::from_secs(300),
        fastrand::f64(),
    )
}

async fn reconcile(stack: Arc<Stack>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    let span = tracing::info_span!(
        "reconcile",
        stack = %key(&stack),
        generation = stack.metadata.generation.unwrap_or(0)
    );
    async move {
        let reconciling = ctx.metrics.reconcile_started();
        let count = ctx.stats.reconciles.fetch_add(1, Ordering::Relaxed);
        if stack.metadata.deletion_timestamp.is_some() {
            // The garbage collector removes the children through their ownerReferences.
            forget_gone_stacks(&ctx);
            reconciling.finish(Outcome::Deleting);
            return Ok(Action::await_change());
        }
        if count % 100 == 99 {
            forget_gone_stacks(&ctx);
        }
        match provision(&stack, &ctx).await {
            Ok((action, outcome)) => {
                tracing::debug!(outcome = outcome.kind().as_str(), "reconciled");
                ctx.attempts
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&key(&stack));
                reconciling.finish(outcome);
                Ok(action)
            }
            Err(error) => {
                // Status keeps what the children last reported, and says what is wrong.
                // Best effort: the error itself is what the error policy acts on.
                let problem = error.problem();
                let observed = observe_cached(&stack, &ctx);
                let error = match ctx
                    .executor
                    .write_status(&stack, &observed, Some(&problem))
                    .await
                {
                    Ok(_) => error,
                    // A blocked Stack waits for a change, so its status must say why:
                    // retry (with backoff) until it does.
                    Err(status_error) if matches!(error, ReconcileError::Blocked(_)) => {
                        ReconcileError::Kube(status_error)
                    }
                    Err(status_error) => {
                        tracing::debug!(%status_error, "could not record the problem in status");
                        error
                    }
                };
                reconciling.finish(Outcome::of(&error));
                Err(error)
            }
        }
    }
    .instrument(span)
    .await
}

/// What the Stack's children report, as the stores last saw them: the observation
/// status keeps when a reconcile is blocked or fails, so the endpoint, the credentials
/// and the replica counts of children that still run do not vanish.
fn observe_cached(stack: &Stack, ctx: &Context) -> Observed {
    let namespace = stack.namespace().unwrap_or_default();
    let name = stack.name_any();
    let uid = stack.metadata.uid.clone().unwrap_or_default();
    let stores = &ctx.stores;
    let (ready_replicas, rolled_out) = cached(&stores.statefulsets, &namespace, &name)
        .filter(|s| controlled_by(&s.metadata, &uid))
        .map(|s| statefulset_readiness(&s))
        .or_else(|| {
            cached(&stores.deployments, &namespace, &name)
                .filter(|d| controlled_by(&d.metadata, &uid))
                .map(|d| deployment_readiness(&d))
        })
        .unwrap_or((0, false));
    let endpoint = cached(&stores.services, &namespace, &name)
        .filter(|s| controlled_by(&s.metadata, &uid))
        .and_then(|service| endpoint_of(&service, ctx.catalog.current().get(&stack.spec.choice)));
    // Secrets are never read: what status said stands.
    let credentials_secret = stack
        .status
        .as_ref()
        .and_then(|s| s.credentials_secret.clone());
    Observed {
        replicas: stack.spec.replicas,
        ready_replicas,
        rolled_out,
        endpoint,
        credentials_secret,
        // What runs is what ran: a refused change (a downgrade) did not reach it.
        version: stack.status.as_ref().and_then(|s| s.version.clone()),
    }
}
