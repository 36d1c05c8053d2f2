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
use std::fmt::Debug;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Secret, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{
    Api, DeleteParams, PartialObjectMeta, Patch, PatchParams, PostParams, Preconditions,
};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, predicates, reflector as reflect, watcher};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tracing::Instrument;

use super::cache::{self, Applied, ChildKey, Relevant, cached, hash_json};
use super::catalog::{CatalogEntry, LiveCatalog};
use super::desired::{self, STACK_LABEL, Workload};
use super::metrics::{Metrics, Outcome};
use super::plan::{Blocked, Kind, Stale, World, controlled_by, plan};
use super::stack::{Endpoint, Stack, StackStatus};
use super::status::{Observed, Problem, derive};
use super::{claims, containers, scheduling};
use crate::cluster::error::{Failure, failure};

/// Stacks reconciled at the same time, by default. Measured (`cargo bench -p server
/// --bench stacks`, 400 Tomcat Stacks): 16 and 48 finish within 1 % of each other,
/// since the API server is what every reconcile waits on; more would only queue there.
/// kube 5's client speaks HTTP/1.1 (hyper is built without http2), so each request in
/// flight holds one pooled connection: 16 reconciles make at most 16 connections (a
/// reconcile applies one child at a time), none of them a new one per call.
pub const CONCURRENCY: u16 = 16;

/// How long a Stack's triggers are gathered before it is reconciled: its children
/// appear within a few hundred milliseconds of each other, and one reconcile then
/// sees them all.
const DEBOUNCE: Duration = Duration::from_millis(500);

/// The field manager of everything the reconciler applies.
pub const MANAGER: &str = "portico-reconciler";

#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// The Stack cannot be provisioned as it stands; not a failure of the reconciler.
    #[error(transparent)]
    Blocked(#[from] Blocked),
    #[error("{}", api_message(.0))]
    Kube(#[from] kube::Error),
    #[error("the system's random source failed while generating a password")]
    Random,
}

impl ReconcileError {
    /// What status says of it (Degraded).
    fn problem(&self) -> Problem {
        let reason = match self {
            ReconcileError::Blocked(blocked) => blocked.reason(),
            ReconcileError::Kube(_) | ReconcileError::Random => "ReconcileFailed",
        };
        Problem {
            reason: reason.into(),
            message: self.to_string(),
        }
    }
}

/// The API server's own words when it gave any (they end up in status, read by people).
fn api_message(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => format!("The API server refused a change: {}", status.message),
        other => format!("The API server could not be reached: {other}"),
    }
}

/// Counters a test or a benchmark reads.
#[derive(Debug, Default)]
pub struct ReconcileStats {
    pub reconciles: AtomicU64,
    pub failures: AtomicU64,
}

struct Context {
    client: kube::Client,
    catalog: LiveCatalog,
    recorder: Recorder,
    stats: Arc<ReconcileStats>,
    metrics: Arc<Metrics>,
    /// Consecutive failures per Stack, for exponential backoff.
    attempts: Mutex<HashMap<String, u32>>,
    stores: Stores,
    stacks: Store<Stack>,
    applied: Arc<Applied>,
}

/// The watches' stores of every child kind and of the Stacks' Pods (labelled objects,
/// whole), and of every object's metadata under any name (for ownership checks).
struct Stores {
    statefulsets: Store<StatefulSet>,
    deployments: Store<Deployment>,
    services: Store<Service>,
    pods: Store<Pod>,
    names: Names,
    /// Set once every store above holds its first list.
    first_lists: tokio::sync::OnceCell<()>,
}

struct Names {
    statefulsets: Store<PartialObjectMeta<StatefulSet>>,
    deployments: Store<PartialObjectMeta<Deployment>>,
    services: Store<PartialObjectMeta<Service>>,
    claims: Store<PartialObjectMeta<PersistentVolumeClaim>>,
}

impl World for Stores {
    fn meta(&self, kind: Kind, namespace: &str, name: &str) -> Option<ObjectMeta> {
        let names = &self.names;
        match kind {
            Kind::StatefulSet => {
                cached(&names.statefulsets, namespace, name).map(|o| o.metadata.clone())
            }
            Kind::Deployment => {
                cached(&names.deployments, namespace, name).map(|o| o.metadata.clone())
            }
            Kind::Service => cached(&names.services, namespace, name).map(|o| o.metadata.clone()),
            // Never read: a name clash shows as the Stack's Pods failing to start.
            Kind::Secret => None,
            Kind::PersistentVolumeClaim => {
                cached(&names.claims, namespace, name).map(|o| o.metadata.clone())
            }
        }
    }

    fn statefulset(&self, namespace: &str, name: &str) -> Option<Arc<StatefulSet>> {
        cached(&self.statefulsets, namespace, name)
    }

    fn child(&self, kind: Kind, name: &str, stack: (&str, &str, &str)) -> Option<Option<String>> {
        match kind {
            Kind::StatefulSet => child_in(&self.statefulsets, name, stack),
            Kind::Deployment => child_in(&self.deployments, name, stack),
            Kind::Service => child_in(&self.services, name, stack),
            // Credentials are deleted by name (see `Plan::stale_credentials`); claims
            // are the StatefulSet's, not the Stack's.
            Kind::Secret | Kind::PersistentVolumeClaim => None,
        }
    }

    fn pods(&self, namespace: &str, stack: &str) -> Vec<Arc<Pod>> {
        self.pods
            .state()
            .into_iter()
            .filter(|p| {
                p.metadata.namespace.as_deref() == Some(namespace)
                    && p.labels().get(STACK_LABEL).map(String::as_str) == Some(stack)
            })
            .collect()
    }
}

/// The uid of the object named `name` in `store`, if the Stack `(namespace, name, uid)`
/// labels and controls it.
fn child_in<K: ChildObject>(
    store: &Store<K>,
    name: &str,
    (namespace, stack, uid): (&str, &str, &str),
) -> Option<Option<String>> {
    let child = cached(store, namespace, name)?;
    let labelled = child.labels().get(STACK_LABEL).map(String::as_str) == Some(stack);
    (labelled && controlled_by(child.meta(), uid)).then(|| child.meta().uid.clone())
}

impl Stores {
    /// Returns once every store has been filled by its first list (at once after that).
    async fn ready(&self) {
        // One task waits on the stores; every other reconcile waits on the OnceCell.
        // `Store::wait_until_ready` keeps a single waker (kube-runtime 5's DelayedInit
        // polls one futures oneshot), so of many reconciles waiting on it directly only
        // the last to poll was woken, and the rest hung for ever (9 of 1,000 Stacks in
        // the benchmark never got a status).
        self.first_lists
            .get_or_init(|| async {
                // The only error is a dropped writer, which ends the controller anyway.
                let _ = futures::join!(
                    self.statefulsets.wait_until_ready(),
                    self.deployments.wait_until_ready(),
                    self.services.wait_until_ready(),
                    self.pods.wait_until_ready(),
                    self.names.statefulsets.wait_until_ready(),
                    self.names.deployments.wait_until_ready(),
                    self.names.services.wait_until_ready(),
                    self.names.claims.wait_until_ready(),
                );
            })
            .await;
    }
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

/// A namespaced kind the controller creates as a Stack's child.
trait ChildObject:
    Resource<Scope = NamespaceResourceScope, DynamicType = ()>
    + Clone
    + DeserializeOwned
    + Serialize
    + Debug
{
}

impl<K> ChildObject for K where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + Serialize
        + Debug
{
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
    // What each child kind's reconcile reads of it; anything else changing (a status
    // heartbeat, the echo of an apply that changed nothing) triggers nothing.
    // What each child kind's reconcile reads of it ([`Relevant`]); anything else
    // changing (a status heartbeat, the echo of an apply) triggers nothing.
    let applied = Arc::new(Applied::default());
    let (statefulsets, statefulset_changes) = cache::watched(
        scoped::<StatefulSet>(&client, ns),
        children.clone(),
        |_| {},
        applied.clone(),
    );
    let (deployments, deployment_changes) = cache::watched(
        scoped::<Deployment>(&client, ns),
        children.clone(),
        |_| {},
        applied.clone(),
    );
    let (services, service_changes) = cache::watched(
        scoped::<Service>(&client, ns),
        children.clone(),
        |_| {},
        applied.clone(),
    );
    // Pods only for whether they can be placed and what their containers report
    // (status, not spec): everything else shows in the workload's status, watched above.
    let (pods, pod_changes) = cache::watched(
        scoped::<Pod>(&client, ns),
        children,
        |p: &mut Pod| p.spec = None,
        applied.clone(),
    );
    // Every object's name and owners, for ownership checks; filled for as long as the
    // controller runs.
    let (statefulset_names, fill_statefulsets) = cache::names(scoped(&client, ns));
    let (deployment_names, fill_deployments) = cache::names(scoped(&client, ns));
    let (service_names, fill_services) = cache::names(scoped(&client, ns));
    let (claim_names, fill_claims) = cache::names(scoped(&client, ns));
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
        client: client.clone(),
        catalog,
        recorder,
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
        applied,
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
    ctx.applied.retain_stacks(exists);
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
    let delay = Duration::from_secs(1 << attempt.min(8)).min(Duration::from_secs(300));
    tracing::warn!(stack = %key(&stack), %error, attempt, retry_in = ?delay, "reconcile failed");
    Action::requeue(delay)
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
                let error = match write_status(&stack, &ctx, &observed, Some(&problem)).await {
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
    let catalog = ctx.catalog.current();
    let now = k8s_openapi::jiff::Timestamp::now();
    let Some(plan) = plan(stack, &catalog, &ctx.stores, (&password, now))? else {
        return Ok((Action::await_change(), Outcome::Unchanged));
    };
    let namespace = stack.namespace().unwrap_or_default();
    let name = stack.name_any();
    let stores = &ctx.stores;
    let writes = Writes::default();
    let at = (namespace.as_str(), name.as_str(), &writes);
    let desired = &plan.children;
    // One at a time, the Secret and the headless Service first: a change the API server
    // refuses part-way (a quota on Services) then leaves the Service and the workload
    // of the running stack as they were. Applied at once, the main Service could
    // already select the new choice's Pods while the rest was refused.
    let mut credentials_secret = None;
    if let Some(secret) = &desired.secret {
        credentials_secret = Some(create_credentials(ctx, stack, secret).await?);
    }
    if let Some(headless) = &desired.headless {
        apply(ctx, at, headless, &stores.services).await?;
    }
    let service = apply(ctx, at, &desired.service, &stores.services).await?;
    let (ready_replicas, rolled_out) = match &desired.workload {
        Workload::Stateful(sts) => {
            statefulset_readiness(&apply(ctx, at, sts.as_ref(), &stores.statefulsets).await?)
        }
        Workload::Stateless(deployment) => {
            deployment_readiness(&apply(ctx, at, deployment.as_ref(), &stores.deployments).await?)
        }
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
        match claims::unbound(&ctx.client, &namespace, &name, stack.spec.replicas).await {
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
        if delete_stale(ctx, &namespace, stale).await? {
            removed.push(format!("{} {}", stale.kind.name(), stale.name));
        }
    }
    if plan.stale_credentials && delete_credentials(ctx, stack).await? {
        removed.push(format!("Secret {}", desired::secret_name(&name)));
    }
    if !removed.is_empty() {
        publish(
            ctx,
            stack,
            EventType::Normal,
            "ChildrenRemoved",
            format!(
                "Removed {} (not part of a {} stack).",
                removed.join(", "),
                stack.spec.choice
            ),
        )
        .await;
    }
    let status_changed = write_status(stack, ctx, &observed, unplaceable.as_ref()).await?;
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

impl Relevant for StatefulSet {
    fn relevant(&self) -> u64 {
        hash_json(&(
            cache::marker(self),
            as_status_reads(statefulset_readiness(self)),
        ))
    }
}

impl Relevant for Deployment {
    fn relevant(&self) -> u64 {
        hash_json(&(
            cache::marker(self),
            as_status_reads(deployment_readiness(self)),
        ))
    }
}

/// Of `(ready replicas, rolled out)`, what status is derived from: the count, and
/// whether the rollout is done with every replica ready (the controller noting the new
/// spec while no replica is ready yet changes nothing a person sees).
fn as_status_reads((ready, rolled_out): (i32, bool)) -> (i32, bool) {
    (ready, rolled_out && ready > 0)
}

impl Relevant for Service {
    fn relevant(&self) -> u64 {
        let meta = &self.metadata;
        hash_json(&(&self.spec, &meta.labels, &meta.owner_references))
    }
}

/// Pods only for what they tell the Stack's status: whether they can be placed, a
/// container trouble, a container running but not ready yet.
impl Relevant for Pod {
    fn relevant(&self) -> u64 {
        cache::hash_of(&(
            scheduling::pod_problem(self),
            containers::unready_since(self),
        ))
    }
}

/// What the reconciler reads of a StatefulSet: ready replicas, and whether the
/// controller has rolled out its latest spec to every replica. (Its watch triggers a
/// reconcile only when these, its generation or its controller change.)
fn statefulset_readiness(set: &StatefulSet) -> (i32, bool) {
    // Borrowed, not cloned: this runs on every event of the StatefulSets' watch.
    let status = set.status.as_ref();
    let wanted = set.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let updated = status.map_or(0, |s| s.updated_replicas.unwrap_or(s.replicas));
    (
        status.and_then(|s| s.ready_replicas).unwrap_or(0),
        status.and_then(|s| s.observed_generation) >= set.metadata.generation && updated >= wanted,
    )
}

/// What the reconciler reads of a Deployment: ready replicas, and whether the
/// controller has seen its latest spec.
fn deployment_readiness(deployment: &Deployment) -> (i32, bool) {
    let status = deployment.status.as_ref();
    (
        status.and_then(|s| s.ready_replicas).unwrap_or(0),
        status.and_then(|s| s.observed_generation) >= deployment.metadata.generation,
    )
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
        database: entry.and_then(|e| e.database.clone()),
        scheme: entry.and_then(|e| e.scheme.clone()),
    })
}

/// Makes sure the Stack's credentials Secret exists, and names it. Never read back
/// (the reconciler may not read Secrets): one that exists keeps the password the
/// database started with, and a create finding it counts as done. Asked on every
/// reconcile (one request), so a Secret deleted, or one a re-created Stack found still
/// being collected, is made again.
async fn create_credentials(
    ctx: &Context,
    stack: &Stack,
    secret: &Secret,
) -> Result<String, kube::Error> {
    let name = secret.name_any();
    let api = Api::<Secret>::namespaced(ctx.client.clone(), &stack.namespace().unwrap_or_default());
    let params = PostParams {
        field_manager: Some(MANAGER.into()),
        ..PostParams::default()
    };
    match api.create(&params, secret).await {
        Ok(_) => Ok(name),
        Err(e) if failure(&e) == Failure::AlreadyExists => Ok(name),
        Err(e) => Err(e),
    }
}

/// Deletes the credentials Secret a changed choice left behind (by name: it is never
/// read; admission lets the reconciler delete only a Stack's own children).
async fn delete_credentials(ctx: &Context, stack: &Stack) -> Result<bool, kube::Error> {
    let name = desired::secret_name(&stack.name_any());
    let api = Api::<Secret>::namespaced(ctx.client.clone(), &stack.namespace().unwrap_or_default());
    match api.delete(&name, &DeleteParams::background()).await {
        Ok(_) => Ok(true),
        Err(e) if failure(&e) == Failure::NotFound => Ok(false),
        // Admission refuses a Secret that is no longer labelled as the Stack's (changed
        // by hand): it is left to whoever changed it, and the Stack goes on.
        Err(e) if failure(&e) == Failure::Forbidden => {
            tracing::warn!(secret = %name, error = %e, "the credentials Secret a changed choice left behind is not the Stack's to delete any more");
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// What the applies of one reconcile did.
#[derive(Default)]
struct Writes {
    /// An apply was sent (not skipped).
    wrote: AtomicBool,
    /// The watch showed a child differently while it was applied.
    missed: AtomicBool,
}

/// Server-side apply with Portico's field manager; `force` takes back fields someone
/// else changed (drift correction). Skipped, returning the cached child, when this
/// exact object was applied last and the child has not changed since.
/// `(namespace, stack)` say where and for whom; `writes` notes what happened.
async fn apply<K>(
    ctx: &Context,
    (namespace, stack, writes): (&str, &str, &Writes),
    object: &K,
    store: &Store<K>,
) -> Result<K, kube::Error>
where
    K: ChildObject + Relevant,
{
    let name = object.meta().name.clone().unwrap_or_default();
    let key = ChildKey {
        kind: K::kind(&()).into_owned(),
        namespace: namespace.into(),
        stack: stack.into(),
        name: name.clone(),
    };
    let sent = hash_json(object);
    if let Some(current) = cached(store, namespace, &name)
        && ctx
            .applied
            .unchanged(&key, sent, &cache::marker(current.as_ref()))
    {
        return Ok((*current).clone());
    }
    let api: Api<K> = Api::namespaced(ctx.client.clone(), namespace);
    // Dropped with this future on failure or cancellation: the watch then counts again.
    let sending = ctx.applied.sending(key);
    let applied = api
        .patch(
            &name,
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(object),
        )
        .await?;
    writes.wrote.store(true, Ordering::Relaxed);
    if sending.answered(sent, cache::marker(&applied), applied.relevant()) {
        writes.missed.store(true, Ordering::Relaxed);
    }
    Ok(applied)
}

/// Deletes a child a changed choice left behind; whether it was there to delete.
async fn delete_stale(ctx: &Context, namespace: &str, stale: &Stale) -> Result<bool, kube::Error> {
    let client = &ctx.client;
    match stale.kind {
        Kind::StatefulSet => delete_only::<StatefulSet>(client, namespace, stale).await,
        Kind::Deployment => delete_only::<Deployment>(client, namespace, stale).await,
        Kind::Service => delete_only::<Service>(client, namespace, stale).await,
        Kind::Secret => delete_only::<Secret>(client, namespace, stale).await,
        Kind::PersistentVolumeClaim => {
            delete_only::<PersistentVolumeClaim>(client, namespace, stale).await
        }
    }
}

async fn delete_only<K: ChildObject>(
    client: &kube::Client,
    namespace: &str,
    stale: &Stale,
) -> Result<bool, kube::Error> {
    // Only the object the store saw: never one made since under the same name.
    let only_that_one = DeleteParams {
        preconditions: Some(Preconditions {
            uid: stale.uid.clone(),
            resource_version: None,
        }),
        ..DeleteParams::background()
    };
    match Api::<K>::namespaced(client.clone(), namespace)
        .delete(&stale.name, &only_that_one)
        .await
    {
        Ok(_) => Ok(true),
        Err(e) if matches!(failure(&e), Failure::NotFound | Failure::Conflict) => Ok(false),
        Err(e) => Err(e),
    }
}

async fn write_status(
    stack: &Stack,
    ctx: &Context,
    observed: &Observed,
    problem: Option<&Problem>,
) -> Result<bool, kube::Error> {
    // Whole seconds, as the API server stores a condition's time.
    let now = k8s_openapi::jiff::Timestamp::now();
    let now = now.round(k8s_openapi::jiff::Unit::Second).unwrap_or(now);
    let previous = stack.status.as_ref();
    let next: StackStatus = derive(previous, stack.metadata.generation, observed, problem, now);
    if previous == Some(&next) {
        return Ok(false);
    }
    let api: Api<Stack> =
        Api::namespaced(ctx.client.clone(), &stack.namespace().unwrap_or_default());
    api.patch_status(
        &stack.name_any(),
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({ "status": next })),
    )
    .await?;
    let before = previous.and_then(|p| p.phase.clone());
    // A new phase, or a problem told in new words (the scheduler's reason changes as
    // it retries), is worth an Event.
    let said_before = previous
        .and_then(|p| p.conditions.iter().find(|c| c.type_ == "Degraded"))
        .filter(|c| c.status == "True")
        .map(|c| c.message.as_str());
    let new_problem = problem.is_some_and(|p| said_before != Some(p.message.as_str()));
    // Progressing is not told: status shows it, and an Event per new Stack would be a
    // third of the reconciler's writes.
    if before != next.phase || new_problem {
        let event = match (next.phase.as_deref(), problem) {
            (Some("Ready"), _) => Some((
                EventType::Normal,
                "Ready",
                "Every replica is ready.".to_string(),
            )),
            (Some("Degraded"), Some(p)) => {
                Some((EventType::Warning, p.reason.as_str(), p.message.clone()))
            }
            _ => None,
        };
        if let Some((kind, reason, note)) = event {
            publish(ctx, stack, kind, reason, note).await;
        }
    }
    Ok(true)
}

async fn publish(ctx: &Context, stack: &Stack, type_: EventType, reason: &str, note: String) {
    let event = Event {
        type_,
        reason: reason.into(),
        note: Some(note),
        action: "Reconcile".into(),
        secondary: None,
    };
    if let Err(error) = ctx.recorder.publish(&event, &stack.object_ref(&())).await {
        tracing::debug!(%error, "could not publish an Event");
    }
}
