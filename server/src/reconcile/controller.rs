//! The Stack controller: for each Stack, server-side apply the children the catalog
//! describes, remove children a changed choice no longer needs, and write status
//! derived from the children. Drift (a child edited or deleted) triggers a reconcile
//! through the owned-object watches and is put back by the next apply.
//!
//! Reads come from the watches' stores ([`super::cache`]), not the API server; a Stack
//! is reconciled when its spec changes (its generation), not when its own status write
//! comes back; a child only when something read of it changed; and an apply that would
//! change nothing is skipped.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::Api;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{EventType, Recorder, Reporter};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, predicates, reflector as reflect, watcher};
use kube::{Resource, ResourceExt};
use tracing::Instrument;

use super::catalog::{CatalogEntry, LiveCatalog};
use super::change_filter::{self, Applied, cached};
use super::desired::{self, STACK_LABEL, Workload};
pub use super::error::ReconcileError;
pub use super::executor::MANAGER;
use super::executor::{Executor, Writes};
use super::metrics::{Metrics, Outcome};
use super::plan::{Kind, World, controlled_by, plan};
use super::readiness::{deployment_readiness, statefulset_readiness};
use super::stack::{Endpoint, Stack};
use super::status::{Observed, Problem};
use super::stores::{Names, Stores};
use super::{claims, scheduling};

/// Stacks reconciled at the same time, by default. Measured (`cargo bench -p server
/// --bench stacks`, 400 Tomcat Stacks): 16 and 48 finish within 1 % of each other,
/// since the API server is what every reconcile waits on; more would only queue there.
/// kube 5's client speaks HTTP/1.1 (hyper is built without http2), so each request in
/// flight holds one pooled connection: 16 reconciles make at most 48 (a new Stack's
/// Services and workload are applied at once, a running one's one at a time), plus the
/// Events told in the background, none of them a new one per call.
pub const CONCURRENCY: u16 = 16;

/// How long a Stack's triggers are gathered before it is reconciled: its children
/// appear within a few hundred milliseconds of each other, and one reconcile then
/// sees them all.
const DEBOUNCE: Duration = Duration::from_millis(500);

/// Counters a test or a benchmark reads.
#[derive(Debug, Default)]
pub struct ReconcileStats {
    pub reconciles: AtomicU64,
    pub failures: AtomicU64,
}

struct Context {
    executor: Executor,
    catalog: LiveCatalog,
    stats: Arc<ReconcileStats>,
    metrics: Arc<Metrics>,
    /// Consecutive failures per Stack, for exponential backoff.
    attempts: Mutex<HashMap<String, u32>>,
    stores: Stores,
    stacks: Store<Stack>,
}

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
    // Every object's name and owners, for ownership checks; filled for as long as the
    // controller runs.
    let (statefulset_names, fill_statefulsets) = change_filter::names(scoped(&client, ns));
    let (deployment_names, fill_deployments) = change_filter::names(scoped(&client, ns));
    let (service_names, fill_services) = change_filter::names(scoped(&client, ns));
    let (claim_names, fill_claims) = change_filter::names(scoped(&client, ns));
    let fill_names = async {
        futures::join!(
            fill_statefulsets,
            fill_deployments,
            fill_services,
            fill_claims
        );
    };
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
            names: Names {
                statefulsets: statefulset_names,
                deployments: deployment_names,
                services: service_names,
                claims: claim_names,
            },
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

/// Plans from the stores, then carries the plan out: applies the children (skipping
/// what would not change), deletes what a changed choice left behind, writes status.
async fn provision(stack: &Stack, ctx: &Context) -> Result<(Action, Outcome), ReconcileError> {
    // A reconcile reads the stores: none before every store holds its first list.
    ctx.stores.ready().await;
    // Used only if the Secret is new: made on every reconcile (a few microseconds)
    // to keep the plan free of randomness.
    let password = desired::generate_password().map_err(|_| ReconcileError::Random)?;
    let admin_password = desired::generate_password().map_err(|_| ReconcileError::Random)?;
    let passwords = desired::Passwords {
        user: &password,
        admin: &admin_password,
    };
    let catalog = ctx.catalog.current();
    let now = k8s_openapi::jiff::Timestamp::now();
    let Some(plan) = plan(stack, &catalog, &ctx.stores, (passwords, now))? else {
        return Ok((Action::await_change(), Outcome::Unchanged));
    };
    let namespace = stack.namespace().unwrap_or_default();
    let name = stack.name_any();
    let stores = &ctx.stores;
    let writes = Writes::default();
    let at = (namespace.as_str(), name.as_str(), &writes);
    let desired = &plan.children;
    let mut credentials_secret = None;
    if let Some(secret) = &desired.secret {
        let (name, made) = ctx.executor.create_credentials(stack, secret).await?;
        // A Secret from before Stacks had an app user holds one password: moved to
        // today's keys before the workload that reads them is applied.
        if !made && reads_legacy_password(desired, &namespace, stores) {
            let entry = catalog.get(&stack.spec.choice);
            if let Some(patch) = entry.and_then(|e| desired::legacy_password_move(e, &password)) {
                ctx.executor.move_legacy_password(stack, patch).await?;
            }
        }
        credentials_secret = Some(name);
    }
    let apply_headless = async {
        if let Some(headless) = &desired.headless {
            ctx.executor.apply(at, headless, &stores.services).await?;
        }
        Ok::<_, kube::Error>(())
    };
    let apply_service = ctx.executor.apply(at, &desired.service, &stores.services);
    let apply_workload = async {
        Ok::<_, kube::Error>(match &desired.workload {
            Workload::Stateful(sts) => statefulset_readiness(
                &ctx.executor
                    .apply(at, sts.as_ref(), &stores.statefulsets)
                    .await?,
            ),
            Workload::Stateless(deployment) => deployment_readiness(
                &ctx.executor
                    .apply(at, deployment.as_ref(), &stores.deployments)
                    .await?,
            ),
        })
    };
    let (service, (ready_replicas, rolled_out)) =
        if plan.stale.is_empty() && nothing_exists(desired, &namespace, stores) {
            // Nothing runs that a refusal part-way could leave half changed: one round trip
            // instead of one per child, which is most of a new Stack's time to its children.
            let ((), service, readiness) =
                futures::try_join!(apply_headless, apply_service, apply_workload)?;
            (service, readiness)
        } else {
            // One at a time, the headless Service first: a change the API server refuses
            // part-way (a quota on Services) then leaves the Service and the workload of the
            // running stack as they were. Applied at once, the main Service could already
            // select the new choice's Pods while the rest was refused.
            apply_headless.await?;
            let service = apply_service.await?;
            (service, apply_workload.await?)
        };
    // The catalog the plan was made from, not a newer one.
    let entry = catalog.get(&stack.spec.choice);
    let observed = Observed {
        replicas: stack.spec.replicas,
        ready_replicas,
        rolled_out,
        endpoint: endpoint_of(&service, entry),
        credentials_secret,
        version: entry.and_then(|e| {
            let image = e.image_for(stack.spec.version.as_deref())?;
            e.version_of(image).map(str::to_string)
        }),
    };
    // A Pod the scheduler cannot place keeps the Stack from ever being Ready: say so,
    // in the scheduler's words, rather than "progressing" forever.
    let mut unplaceable = plan
        .unplaceable
        .filter(|_| observed.ready_replicas < observed.replicas);
    // A stateful Pod that cannot be placed most often waits on its volume: say why the
    // claim does not bind, in the words of whoever failed to bind it.
    let mut claim_again = None;
    let stateful = matches!(desired.workload, Workload::Stateful(_));
    if stateful
        && unplaceable
            .as_ref()
            .is_some_and(|p| p.reason == scheduling::REASON)
    {
        match claims::unbound(&ctx.executor.client, &namespace, &name, stack.spec.replicas).await {
            Ok(claims::Claims::Unbound(message)) => {
                let reason = claims::REASON.into();
                unplaceable = Some(Problem { reason, message });
                claim_again = Some(claims::LOOK_AGAIN);
            }
            Ok(claims::Claims::Unexplained) => claim_again = Some(claims::LOOK_AGAIN),
            Ok(claims::Claims::NotTheReason) => {}
            // Only a finer diagnosis is lost: the scheduler's words stand.
            Err(error) => {
                tracing::debug!(%error, "could not read the Stack's volume claims");
                claim_again = Some(claims::LOOK_AGAIN);
            }
        }
    }
    let mut removed = Vec::new();
    for stale in &plan.stale {
        if ctx.executor.delete_stale(&namespace, stale).await? {
            removed.push(format!("{} {}", stale.kind.name(), stale.name));
        }
    }
    if plan.stale_credentials && ctx.executor.delete_credentials(stack).await? {
        removed.push(format!("Secret {}", desired::secret_name(&name)));
    }
    if !removed.is_empty() {
        ctx.executor.publish(
            stack,
            EventType::Normal,
            "ChildrenRemoved",
            format!(
                "Removed {} (not part of a {} stack).",
                removed.join(", "),
                stack.spec.choice
            ),
        );
    }
    let status_changed = ctx
        .executor
        .write_status(stack, &observed, unplaceable.as_ref())
        .await?;
    let outcome = if writes.wrote.load(Ordering::Relaxed) || !removed.is_empty() || status_changed {
        Outcome::Applied
    } else {
        Outcome::Unchanged
    };
    // A child changed while it was applied, and the watch's news of it was held back:
    // look again once it has settled.
    let next = if writes.missed.load(Ordering::Relaxed) {
        DEBOUNCE
    } else {
        // A Pod not placed yet is looked at again when its grace period ends.
        plan.look_again_in
            .or(claim_again)
            .unwrap_or(Duration::from_secs(300))
    };
    Ok((Action::requeue(next), outcome))
}

/// Whether the Stack's workload reads its password under the credentials Secret's
/// old key, or no workload says (none runs: a Stack made again over kept data may find
/// an old Secret). Moving the keys of a Secret already moved is refused harmlessly.
fn reads_legacy_password(desired: &desired::Children, namespace: &str, stores: &Stores) -> bool {
    let reads_old_key = |template: &k8s_openapi::api::core::v1::PodTemplateSpec| {
        template
            .spec
            .iter()
            .flat_map(|pod| &pod.containers)
            .flat_map(|c| c.env.iter().flatten())
            .filter_map(|e| e.value_from.as_ref()?.secret_key_ref.as_ref())
            .any(|r| r.key == desired::LEGACY_PASSWORD_KEY)
    };
    let running = match &desired.workload {
        Workload::Stateful(sts) => cached(&stores.statefulsets, namespace, &sts.name_any())
            .map(|s| s.spec.as_ref().is_some_and(|s| reads_old_key(&s.template))),
        Workload::Stateless(deployment) => {
            cached(&stores.deployments, namespace, &deployment.name_any())
                .map(|d| d.spec.as_ref().is_some_and(|s| reads_old_key(&s.template)))
        }
    };
    running.unwrap_or(true)
}

/// Whether no object exists yet under any of the names of the Stack's Services and
/// workload (the Secret is made before them, and never read).
fn nothing_exists(desired: &desired::Children, namespace: &str, stores: &Stores) -> bool {
    let (kind, workload) = match &desired.workload {
        Workload::Stateful(sts) => (Kind::StatefulSet, sts.name_any()),
        Workload::Stateless(deployment) => (Kind::Deployment, deployment.name_any()),
    };
    let mut services = desired.headless.iter().chain([&desired.service]);
    stores.meta(kind, namespace, &workload).is_none()
        && services.all(|s| {
            stores
                .meta(Kind::Service, namespace, &s.name_any())
                .is_none()
        })
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

/// Where a Stack is reached: its Service and the Service's first port, else
/// `fallback`; none when there is neither.
/// How to reach the Stack: its Service's port, and from the catalog entry, who the
/// password is for, which database, and the URL scheme of a connection.
fn endpoint_of(service: &Service, entry: Option<&CatalogEntry>) -> Option<Endpoint> {
    let port = service
        .spec
        .as_ref()
        .and_then(|s| s.ports.as_ref())
        .and_then(|p| p.first());
    Some(Endpoint {
        service: service.name_any(),
        port: port.map(|p| p.port).or(entry.map(|e| e.port))?,
        node_port: port.and_then(|p| p.node_port),
        user: entry.and_then(|e| e.user.clone()),
        admin_user: entry.and_then(|e| Some(e.admin.as_ref()?.user.clone())),
        database: entry.and_then(|e| e.database.clone()),
        scheme: entry.and_then(|e| e.scheme.clone()),
    })
}

#[cfg(test)]
mod tests {
    //! `provision` against a mock API server: what a reconcile writes, in which order.
    use http::{Method, StatusCode};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use kube::api::PartialObjectMeta;
    use kube::core::PartialObjectMetaExt;
    use kube::runtime::reflector;
    use serde_json::json;

    use super::*;
    use crate::reconcile::catalog::{Catalog, DEFAULT_CATALOG};
    use crate::reconcile::fixtures::{executor, expect, stack};

    /// A reconciler's context whose stores hold nothing yet, as for a new Stack.
    fn context(executor: Executor) -> Context {
        let catalog = Catalog::parse(DEFAULT_CATALOG).expect("the default catalog");
        Context {
            executor,
            catalog: LiveCatalog::fixed(catalog),
            stats: Arc::default(),
            metrics: Arc::default(),
            attempts: Mutex::default(),
            stores: Stores {
                statefulsets: reflector::store().0,
                deployments: reflector::store().0,
                services: reflector::store().0,
                pods: reflector::store().0,
                names: Names {
                    statefulsets: reflector::store().0,
                    deployments: reflector::store().0,
                    services: reflector::store().0,
                    claims: reflector::store().0,
                },
                // Listed (and empty): a new Stack in an empty namespace.
                first_lists: tokio::sync::OnceCell::new_with(Some(())),
            },
            stacks: reflector::store().0,
        }
    }

    // Time stands still until every task waits: one apply held back until another is
    // answered ends the wait for the next at once.
    #[tokio::test(start_paused = true)]
    async fn a_new_stack_gets_its_secret_first_then_its_services_and_workload_at_once_then_its_status()
     {
        let (executor, mut api_server) = executor();
        let ctx = context(executor);
        let stack = stack(None);
        let api = async {
            let path = |p: &str| format!("/api/v1/namespaces/shop/{p}");
            let mut sent = Vec::new();
            let secret = expect(
                &mut api_server,
                Method::POST,
                &path("secrets"),
                StatusCode::CREATED,
                json!({}),
            )
            .await;
            sent.push(secret);
            // All three applies arrive before any is answered.
            let mut waiting = Vec::new();
            for _ in 0..3 {
                let next = tokio::time::timeout(Duration::from_secs(60), api_server.next_request());
                let (request, respond) = next
                    .await
                    .expect("every apply sent before any is answered")
                    .expect("an apply");
                assert_eq!(request.method(), Method::PATCH);
                let path = request.uri().path().to_string();
                let body = request.into_body().collect_bytes().await.expect("a body");
                waiting.push((path, body, respond));
            }
            let mut paths: Vec<&str> = waiting.iter().map(|(p, _, _)| p.as_str()).collect();
            paths.sort_unstable();
            assert_eq!(
                paths,
                [
                    path("services/db").as_str(),
                    path("services/db-headless").as_str(),
                    "/apis/apps/v1/namespaces/shop/statefulsets/db",
                ]
            );
            for (_, body, respond) in waiting {
                respond.send_response(http::Response::new(kube::client::Body::from(body.to_vec())));
            }
            expect(
                &mut api_server,
                Method::PATCH,
                "/apis/portico.dev/v1alpha1/namespaces/shop/stacks/db/status",
                StatusCode::OK,
                json!(stack),
            )
            .await;
        };
        // Paused time ends this at once should a request never come (nothing hangs).
        let both = tokio::time::timeout(
            Duration::from_secs(120),
            futures::future::join(provision(&stack, &ctx), api),
        );
        let (outcome, ()) = both
            .await
            .expect("the reconcile and the API server finished");
        let (_, outcome) = outcome.expect("provisioned");
        assert!(matches!(outcome, Outcome::Applied));
    }

    #[tokio::test]
    async fn only_a_stack_whose_services_and_workload_are_all_missing_counts_as_new() {
        let catalog = Catalog::parse(DEFAULT_CATALOG).expect("the default catalog");
        let stack = stack(None);
        let children = desired::desired(
            &stack,
            catalog.get("mysql").expect("mysql"),
            desired::Passwords::placeholder("p"),
        )
        .expect("children");
        let (executor, _api_server) = executor();
        let ctx = context(executor);
        assert!(nothing_exists(&children, "shop", &ctx.stores));
        // Any object under one of the names, the Stack's or not: one at a time.
        let (names, mut writer) = reflector::store::<PartialObjectMeta<Service>>();
        let headless = ObjectMeta {
            name: Some("db-headless".into()),
            namespace: Some("shop".into()),
            ..ObjectMeta::default()
        };
        writer.apply_watcher_event(&watcher::Event::Apply(headless.into_response_partial()));
        let stores = Stores {
            names: Names {
                services: names,
                ..ctx.stores.names
            },
            ..ctx.stores
        };
        assert!(!nothing_exists(&children, "shop", &stores));
    }
}
