//! The Stack controller: for each Stack, server-side apply the children the catalog
//! describes, remove children a changed choice no longer needs, and write status
//! derived from the children. Drift (a child edited or deleted) triggers a reconcile
//! through the owned-object watches and is put back by the next apply.

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Secret, Service};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tracing::Instrument;

use super::catalog::LiveCatalog;
use super::children::{self, ChildrenError, STACK_LABEL, Workload};
use super::scheduling;
use super::stack::{Endpoint, Stack, StackStatus};
use super::status::{Observed, Problem, derive};
use crate::kube::error::{Failure, failure};

/// Stacks reconciled at the same time.
const CONCURRENCY: u16 = 16;

/// The field manager of everything the reconciler applies.
pub const MANAGER: &str = "portico-reconciler";

#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("{}", api_message(.0))]
    Kube(#[from] kube::Error),
    #[error("the system's random source failed while generating a password")]
    Random,
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
    /// Consecutive failures per Stack, for exponential backoff.
    attempts: Mutex<HashMap<String, u32>>,
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
    } = settings;
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: MANAGER.into(),
            instance: Some(identity),
        },
    );
    let catalog_changes = catalog.changes();
    let ctx = Arc::new(Context {
        client: client.clone(),
        catalog,
        recorder,
        stats,
        attempts: Mutex::default(),
    });
    let children = watcher::Config::default().labels(STACK_LABEL);
    let ns = namespace.as_deref();
    let controller = Controller::new(scoped::<Stack>(&client, ns), watcher::Config::default());
    let stacks = controller.store();
    controller
        .owns(scoped::<StatefulSet>(&client, ns), children.clone())
        .owns(scoped::<Deployment>(&client, ns), children.clone())
        .owns(scoped::<Service>(&client, ns), children.clone())
        .owns(scoped::<Secret>(&client, ns), children.clone())
        // Pods only for whether they can be placed: everything else about them shows
        // in the workload's status, which is watched above.
        .watches(scoped::<Pod>(&client, ns), children, move |pod: Pod| {
            let stack =
                ObjectRef::<Stack>::new(pod.labels().get(STACK_LABEL)?).within(&pod.namespace()?);
            scheduling::pod_changes_status(&pod, stacks.get(&stack).as_deref()).then_some(stack)
        })
        .reconcile_all_on(catalog_changes)
        // Bounded, so a burst of Stacks does not overwhelm the API server.
        .with_config(kube::runtime::controller::Config::default().concurrency(CONCURRENCY))
        .graceful_shutdown_on(stop)
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(%error, "reconcile did not complete");
            }
        })
        .await;
    tracing::info!("the Stack reconciler stopped");
}

fn key(stack: &Stack) -> String {
    format!(
        "{}/{}",
        stack.namespace().unwrap_or_default(),
        stack.name_any()
    )
}

fn error_policy(stack: Arc<Stack>, error: &ReconcileError, ctx: Arc<Context>) -> Action {
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
        ctx.stats.reconciles.fetch_add(1, Ordering::Relaxed);
        if stack.metadata.deletion_timestamp.is_some() {
            // The garbage collector removes the children through their ownerReferences.
            return Ok(Action::await_change());
        }
        match provision(&stack, &ctx).await {
            Ok(action) => {
                tracing::debug!("reconciled");
                ctx.attempts
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&key(&stack));
                Ok(action)
            }
            Err(error) => {
                let problem = Problem {
                    reason: "ReconcileFailed".into(),
                    message: error.to_string(),
                };
                // Best effort: the error itself is what the backoff acts on.
                if let Err(status_error) =
                    write_status(&stack, &ctx, &Observed::default(), Some(&problem)).await
                {
                    tracing::debug!(%status_error, "could not record the failure in status");
                }
                Err(error)
            }
        }
    }
    .instrument(span)
    .await
}

async fn provision(stack: &Stack, ctx: &Context) -> Result<Action, ReconcileError> {
    let name = stack.name_any();
    let namespace = stack.namespace().unwrap_or_default();
    let catalog = ctx.catalog.current();
    let Some(entry) = catalog.get(&stack.spec.choice) else {
        let offered = catalog.entries.keys().cloned().collect::<Vec<_>>();
        let message = format!(
            "The catalog offers no {:?}; it offers {}.",
            stack.spec.choice,
            offered.join(", ")
        );
        return blocked(stack, ctx, "UnknownChoice", message).await;
    };
    // Whoever may create a Stack gets its children made for them: only compute, and
    // only as much as the catalog allows, or someone could take the cluster's GPUs.
    if let Some(asked) = &stack.spec.resources
        && let Err(refused) = entry.check_resources(&asked.requests, &asked.limits)
    {
        return blocked(stack, ctx, "ResourcesRefused", format!("{refused}.")).await;
    }
    let uid = stack.metadata.uid.clone().unwrap_or_default();
    let password = match &entry.password_env {
        Some(_) => {
            // One read serves both: whose the Secret is, and the password to keep.
            let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &namespace);
            let secret_name = children::secret_name(&name);
            let existing = secrets.get_opt(&secret_name).await?;
            if existing.as_ref().is_some_and(|s| !controlled_by(s, &uid)) {
                return name_conflict(stack, ctx, &format!("Secret {secret_name}")).await;
            }
            existing
                .as_ref()
                .and_then(children::password_in)
                .map_or_else(children::generate_password, Ok)
                .map_err(|_| ReconcileError::Random)?
        }
        None => String::new(),
    };
    let desired = match children::desired(stack, entry, &password) {
        Ok(d) => d,
        Err(error @ ChildrenError::UnknownVersion { .. }) => {
            return blocked(stack, ctx, "UnknownVersion", error.to_string()).await;
        }
        Err(ChildrenError::Incomplete) => return Ok(Action::await_change()),
    };
    // Never take over an object that exists under a child's name but is not this
    // Stack's: that would repoint or, on deletion, remove someone else's object.
    // A StatefulSet is read whole, once: its owner here, its claims' policy below.
    let existing_set = match &desired.workload {
        Workload::Stateful(sts) => {
            let sets: Api<StatefulSet> = Api::namespaced(ctx.client.clone(), &namespace);
            sets.get_opt(&sts.name_any()).await?
        }
        Workload::Stateless(_) => None,
    };
    let mut foreign_child = match &desired.workload {
        Workload::Stateful(sts) => existing_set
            .as_ref()
            .is_some_and(|set| !controlled_by(set, &uid))
            .then(|| format!("{} {}", StatefulSet::kind(&()), sts.name_any())),
        Workload::Stateless(d) => foreign(ctx, &namespace, d.as_ref(), &uid).await?,
    };
    for service in desired.headless.iter().chain([&desired.service]) {
        if foreign_child.is_none() {
            foreign_child = foreign(ctx, &namespace, service, &uid).await?;
        }
    }
    if foreign_child.is_none()
        && let Workload::Stateful(sts) = &desired.workload
    {
        let claims = (sts.name_any(), stack.spec.replicas);
        foreign_child = foreign_claim(ctx, &namespace, claims, existing_set.as_ref()).await?;
    }
    if let Some(child) = foreign_child {
        return name_conflict(stack, ctx, &child).await;
    }

    let mut credentials_secret = None;
    if let Some(secret) = &desired.secret {
        credentials_secret = Some(apply(ctx, &namespace, secret).await?.name_any());
    }
    if let Some(headless) = &desired.headless {
        apply(ctx, &namespace, headless).await?;
    }
    let service = apply(ctx, &namespace, &desired.service).await?;
    let (ready_replicas, rolled_out) = match &desired.workload {
        Workload::Stateful(sts) => {
            let applied = apply(ctx, &namespace, sts.as_ref()).await?;
            let status = applied.status.unwrap_or_default();
            (
                status.ready_replicas,
                status.observed_generation >= applied.metadata.generation
                    && status.updated_replicas.unwrap_or(status.replicas) >= stack.spec.replicas,
            )
        }
        Workload::Stateless(deployment) => {
            let applied = apply(ctx, &namespace, deployment.as_ref()).await?;
            let status = applied.status.unwrap_or_default();
            (
                status.ready_replicas,
                status.observed_generation >= applied.metadata.generation,
            )
        }
    };
    let mut observed = Observed {
        replicas: stack.spec.replicas,
        ready_replicas: ready_replicas.unwrap_or(0),
        rolled_out,
        ..Default::default()
    };
    let port = service
        .spec
        .as_ref()
        .and_then(|s| s.ports.as_ref())
        .and_then(|p| p.first());
    observed.endpoint = Some(Endpoint {
        service: service.name_any(),
        port: port.map_or(entry.port, |p| p.port),
        node_port: port.and_then(|p| p.node_port),
    });
    observed.credentials_secret = credentials_secret;
    // A Pod the scheduler cannot place keeps the Stack from ever being Ready: say so,
    // in the scheduler's words, rather than "progressing" forever.
    let unplaceable = if observed.ready_replicas < observed.replicas {
        let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
        let list = pods
            .list(
                &ListParams::default()
                    .labels(&format!("{STACK_LABEL}={name}"))
                    .match_any(),
            )
            .await?;
        scheduling::first_unschedulable(&list.items).map(|message| Problem {
            reason: scheduling::REASON.into(),
            message,
        })
    } else {
        None
    };

    // What a changed choice left behind: children of this Stack the desired set lacks.
    let workload = [name.clone()];
    let (statefulsets, deployments): (&[String], &[String]) = match &desired.workload {
        Workload::Stateful(_) => (&workload, &[]),
        Workload::Stateless(_) => (&[], &workload),
    };
    let services: Vec<String> = desired
        .headless
        .iter()
        .chain([&desired.service])
        .map(|s| s.name_any())
        .collect();
    let secrets: Vec<String> = desired.secret.iter().map(|s| s.name_any()).collect();
    let scope = (ctx, namespace.as_str(), name.as_str(), uid.as_str());
    let mut removed = Vec::new();
    removed.extend(remove_stale::<StatefulSet>(scope, statefulsets).await?);
    removed.extend(remove_stale::<Deployment>(scope, deployments).await?);
    removed.extend(remove_stale::<Service>(scope, &services).await?);
    removed.extend(remove_stale::<Secret>(scope, &secrets).await?);
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
    write_status(stack, ctx, &observed, unplaceable.as_ref()).await?;
    Ok(Action::requeue(Duration::from_secs(300)))
}

/// "Kind name" of `desired` when an object of that name exists without this Stack
/// (uid) as its controller.
async fn foreign<K>(
    ctx: &Context,
    namespace: &str,
    desired: &K,
    uid: &str,
) -> Result<Option<String>, kube::Error>
where
    K: ChildObject,
{
    let api: Api<K> = Api::namespaced(ctx.client.clone(), namespace);
    let name = desired.name_any();
    let existing = api.get_metadata_opt(&name).await?;
    Ok(existing
        .is_some_and(|e| !controlled_by(&e, uid))
        .then(|| format!("{} {name}", K::kind(&()))))
}

/// "PersistentVolumeClaim name" of a claim the StatefulSet would adopt although it
/// did not make it: one that exists before the StatefulSet, or is not owned by it. A
/// claim planted under a child's name would otherwise hand the stack someone else's
/// volume (and its data).
/// `(name, replicas)` are the StatefulSet's; `set` is the one that exists now, if any.
async fn foreign_claim(
    ctx: &Context,
    namespace: &str,
    (name, replicas): (String, i32),
    set: Option<&StatefulSet>,
) -> Result<Option<String>, kube::Error> {
    let set_uid = set.and_then(|s| s.metadata.uid.clone());
    // A StatefulSet made before claims were owned (no Delete retention policy yet):
    // its claims carry no owner until the policy is applied, so a claim made after
    // the set counts as the set's. The next apply brings the policy and the owners.
    let unowned_since = set
        .filter(|s| {
            s.spec
                .as_ref()
                .and_then(|spec| spec.persistent_volume_claim_retention_policy.as_ref())
                .and_then(|p| p.when_deleted.as_deref())
                != Some("Delete")
        })
        .and_then(|s| s.metadata.creation_timestamp.clone());
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), namespace);
    for ordinal in 0..replicas.max(0) {
        let claim = children::claim_name(&name, ordinal);
        let Some(existing) = claims.get_metadata_opt(&claim).await? else {
            continue;
        };
        let owned = set_uid.as_deref().is_some_and(|uid| {
            existing
                .metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.uid == uid)
        });
        let made_after_legacy_set = unowned_since.as_ref().is_some_and(|since| {
            existing
                .metadata
                .creation_timestamp
                .as_ref()
                .is_some_and(|made| made.0 >= since.0)
        });
        let ours = owned || made_after_legacy_set;
        if !ours {
            return Ok(Some(format!("PersistentVolumeClaim {claim}")));
        }
    }
    Ok(None)
}

/// Records in status why the Stack cannot be provisioned as it stands, and waits for
/// it (or the catalog) to change.
async fn blocked(
    stack: &Stack,
    ctx: &Context,
    reason: &str,
    message: String,
) -> Result<Action, ReconcileError> {
    let problem = Problem {
        reason: reason.into(),
        message,
    };
    write_status(stack, ctx, &Observed::default(), Some(&problem)).await?;
    Ok(Action::await_change())
}

/// Records that `child` ("Kind name") blocks this Stack, and looks again later.
async fn name_conflict(
    stack: &Stack,
    ctx: &Context,
    child: &str,
) -> Result<Action, ReconcileError> {
    let problem = Problem {
        reason: "NameConflict".into(),
        message: format!(
            "{child} already exists and does not belong to this Stack; rename the Stack or remove it."
        ),
    };
    write_status(stack, ctx, &Observed::default(), Some(&problem)).await?;
    Ok(Action::requeue(Duration::from_secs(60)))
}

/// Whether `object`'s controller is the Stack with `uid`.
fn controlled_by(object: &impl Resource, uid: &str) -> bool {
    object
        .owner_references()
        .iter()
        .any(|o| o.controller == Some(true) && o.uid == uid)
}

/// Server-side apply with Portico's field manager; `force` takes back fields someone
/// else changed (drift correction).
async fn apply<K>(ctx: &Context, namespace: &str, object: &K) -> Result<K, kube::Error>
where
    K: ChildObject,
{
    let api: Api<K> = Api::namespaced(ctx.client.clone(), namespace);
    let name = object.meta().name.clone().unwrap_or_default();
    api.patch(
        &name,
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(object),
    )
    .await
}

/// Deletes this Stack's children of kind `K` that are not in `keep` (left over from
/// another choice). Only objects this Stack controls are touched.
async fn remove_stale<K>(
    (ctx, namespace, stack, uid): (&Context, &str, &str, &str),
    keep: &[String],
) -> Result<Vec<String>, kube::Error>
where
    K: ChildObject,
{
    let api: Api<K> = Api::namespaced(ctx.client.clone(), namespace);
    let list = api
        .list_metadata(&ListParams::default().labels(&format!("{STACK_LABEL}={stack}")))
        .await?;
    let mut removed = Vec::new();
    for child in list.items {
        let name = child.name_any();
        let ours = controlled_by(&child, uid);
        if ours && !keep.contains(&name) {
            match api.delete(&name, &DeleteParams::background()).await {
                Ok(_) => removed.push(format!("{} {name}", K::kind(&()))),
                Err(e) if failure(&e) == Failure::NotFound => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(removed)
}

async fn write_status(
    stack: &Stack,
    ctx: &Context,
    observed: &Observed,
    problem: Option<&Problem>,
) -> Result<(), kube::Error> {
    let now = k8s_openapi::jiff::Timestamp::now()
        .round(k8s_openapi::jiff::Unit::Second)
        .map(|t| t.to_string())
        .unwrap_or_default();
    let previous = stack.status.as_ref();
    let next: StackStatus = derive(previous, stack.metadata.generation, observed, problem, &now);
    if previous == Some(&next) {
        return Ok(());
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
    if before != next.phase {
        let (kind, reason, note) = match (next.phase.as_deref(), problem) {
            (Some("Ready"), _) => (
                EventType::Normal,
                "Ready",
                "Every replica is ready.".to_string(),
            ),
            (Some("Degraded"), Some(p)) => {
                (EventType::Warning, p.reason.as_str(), p.message.clone())
            }
            _ => (
                EventType::Normal,
                "Provisioning",
                "Children applied; waiting for replicas to become ready.".to_string(),
            ),
        };
        publish(ctx, stack, kind, reason, note).await;
    }
    Ok(())
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
