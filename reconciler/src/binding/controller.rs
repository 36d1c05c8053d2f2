//! The StackBinding controller: puts a Stack's connection details into the named
//! workload's containers (server-side apply with a field manager per binding), takes
//! them out again when the binding goes or names another workload (a finalizer holds
//! the binding until then), and says in status what it did or why it cannot.
//!
//! Who may bind what is decided at admission, for the person making the binding
//! (`deploy/base/binding-policy.yaml`); what the reconciler may change in a workload
//! that is not a Stack's, by `deploy/base/reconciler-policy.yaml`: only variables under
//! a prefix the workload's own annotation accepts ([`projection::ACCEPTED_PREFIXES`]),
//! which this controller checks first to say so in the binding's status.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::finalizer::{Event as Finalizing, finalizer};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, reflector as reflect, watcher};
use kube::{Resource, ResourceExt};
use serde_json::json;
use tracing::Instrument;

use super::kind::{StackBinding, StackBindingStatus, WorkloadKind, WorkloadRef};
use super::projection::{self, Details, FINALIZER, NotYet, Target};
use crate::catalog::LiveCatalog;
use crate::stack::Stack;
use portico_cluster::error::{Failure, failure};

#[derive(Debug, thiserror::Error)]
pub enum BindingError {
    #[error(transparent)]
    Kube(#[from] kube::Error),
    #[error("the binding's finalizer: {0}")]
    Finalizer(#[source] Box<kube::runtime::finalizer::Error<BindingError>>),
}

struct Context {
    client: kube::Client,
    stacks: Store<Stack>,
    catalog: LiveCatalog,
}

/// How soon a binding whose workload does not exist (yet) is looked at again: the
/// reconciler watches no workload it does not own.
const LOOK_AGAIN: Duration = Duration::from_secs(30);

/// Runs the binding controller until `stop` resolves; `namespace` scopes it (tests).
pub async fn run(
    client: kube::Client,
    catalog: LiveCatalog,
    namespace: Option<String>,
    stop: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let scoped = |client: &kube::Client| match namespace.as_deref() {
        Some(ns) => (
            Api::<StackBinding>::namespaced(client.clone(), ns),
            Api::<Stack>::namespaced(client.clone(), ns),
        ),
        None => (Api::all(client.clone()), Api::all(client.clone())),
    };
    let (bindings, stacks_api) = scoped(&client);
    let (stacks, writer) = reflector::store();
    let stack_changes = reflect(writer, watcher(stacks_api, watcher::Config::default()))
        .default_backoff()
        .touched_objects();
    let controller = Controller::new(bindings, watcher::Config::default());
    let known = controller.store();
    let ctx = Arc::new(Context {
        client,
        stacks,
        catalog,
    });
    controller
        // A Stack's endpoint or credentials appearing or changing: its bindings (and
        // bindings into it) are carried out again.
        .watches_stream(stack_changes, move |stack: Stack| {
            let (namespace, name) = (stack.namespace(), stack.name_any());
            known
                .state()
                .into_iter()
                .filter(|b| {
                    b.namespace() == namespace
                        && (b.spec.stack == name
                            || (b.spec.workload.kind == WorkloadKind::Stack
                                && b.spec.workload.name == name))
                })
                .map(|b| ObjectRef::from_obj(b.as_ref()))
                .collect::<Vec<_>>()
        })
        .graceful_shutdown_on(stop)
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(%error, "binding reconcile did not complete");
            }
        })
        .await;
}

fn key(binding: &StackBinding) -> String {
    format!(
        "{}/{}",
        binding.namespace().unwrap_or_default(),
        binding.name_any()
    )
}

fn error_policy(binding: Arc<StackBinding>, error: &BindingError, _: Arc<Context>) -> Action {
    tracing::warn!(binding = %key(&binding), %error, "binding reconcile failed");
    // 5 to 10 s, spread: bindings that failed together are not all tried at once.
    Action::requeue(portico_core::backoff::jittered(
        1,
        Duration::from_secs(10),
        Duration::from_secs(10),
        fastrand::f64(),
    ))
}

async fn reconcile(binding: Arc<StackBinding>, ctx: Arc<Context>) -> Result<Action, BindingError> {
    let span = tracing::info_span!("bind", binding = %key(&binding));
    async move {
        let api: Api<StackBinding> =
            Api::namespaced(ctx.client.clone(), &binding.namespace().unwrap_or_default());
        finalizer(&api, FINALIZER, binding, |event| async {
            match event {
                Finalizing::Apply(binding) => bind(&binding, &ctx).await,
                Finalizing::Cleanup(binding) => unbind(&binding, &ctx).await,
            }
        })
        .await
        .map_err(|e| BindingError::Finalizer(Box::new(e)))
    }
    .instrument(span)
    .await
}

/// What one reconcile found: Ready, or why not.
struct Outcome {
    ready: bool,
    reason: &'static str,
    message: String,
    target: Option<String>,
    prefix: Option<String>,
    variables: Vec<String>,
}

impl Outcome {
    fn not_ready(reason: &'static str, message: String, target: Option<String>) -> Outcome {
        Outcome {
            ready: false,
            reason,
            message,
            target,
            prefix: None,
            variables: Vec::new(),
        }
    }
}

/// Carries out `binding`: puts its Stack's connection details into its workload (after
/// taking them out of one it named before), or says in status why it cannot.
async fn bind(binding: &StackBinding, ctx: &Context) -> Result<Action, BindingError> {
    // Before the Stacks' first list, every Stack would look missing.
    if ctx.stacks.wait_until_ready().await.is_err() {
        return Ok(Action::requeue(Duration::from_secs(1)));
    }
    let namespace = binding.namespace().unwrap_or_default();
    let bound_before = binding.status.as_ref().and_then(|s| s.target.clone());
    let (details, into_stack) = match stacks_of(binding, ctx, &namespace) {
        Ok(found) => found,
        Err(not_yet) => return not_yet_bound(binding, ctx, not_yet, bound_before).await,
    };
    let target = target_of(ctx, &binding.spec.workload, into_stack.as_deref());
    // Pointed at another workload: first take the variables out of the old one.
    if let Some(old) = bound_before
        .as_deref()
        .filter(|old| *old != target.label())
        .and_then(Target::parse)
    {
        remove_from(ctx, &namespace, &old, &binding.name_any()).await?;
    }
    let owner = into_stack.as_ref().and_then(|s| s.metadata.uid.clone());
    let Some(found) = workload_of(ctx, &namespace, &target, owner.as_deref()).await? else {
        return workload_missing(binding, ctx, &target, owner.is_some()).await;
    };
    let prefix = projection::prefix(binding, &details.choice);
    // Someone's own workload takes variables only under a prefix its owner accepted
    // (admission holds the reconciler to the same); a Stack's own needs no offer.
    if into_stack.is_none() && !projection::accepts(found.accepted.as_deref(), &prefix) {
        let accepted = found.accepted.as_deref();
        return not_accepted(binding, ctx, &target, accepted, &prefix, bound_before).await;
    }
    let env = projection::variables(&prefix, &details);
    let names: Vec<String> = env.iter().map(|e| e.name.clone()).collect();
    let body = projection::bind(&target, &found.containers, &env);
    let params = PatchParams::apply(&projection::manager(&binding.name_any()));
    match apply_to(ctx, &namespace, &target, &params, &body).await {
        Ok(()) => {
            let outcome = Outcome {
                ready: true,
                reason: "Bound",
                message: format!(
                    "{} {} gets {} and rolls to pick them up.",
                    target.kind,
                    target.name,
                    names.join(", ")
                ),
                target: Some(target.label()),
                prefix: Some(prefix),
                variables: names,
            };
            write_status(binding, ctx, outcome).await?;
            Ok(Action::requeue(Duration::from_secs(300)))
        }
        // Refused (a variable someone else set, admission, an invalid result): said in
        // the API server's words; nothing changed, so there is nothing to take out.
        Err(kube::Error::Api(status)) if status.code >= 400 && status.code < 500 => {
            refused(binding, ctx, &target, status, bound_before).await
        }
        Err(error) => Err(error.into()),
    }
}

/// The connection details of `binding`'s Stack, and the Stack it binds into when its
/// workload is a Stack's; or why it cannot be carried out yet.
fn stacks_of(
    binding: &StackBinding,
    ctx: &Context,
    namespace: &str,
) -> Result<(Details, Option<Arc<Stack>>), NotYet> {
    let stack = ctx
        .stacks
        .get(&ObjectRef::new(&binding.spec.stack).within(namespace));
    let details = match stack.as_deref().map(projection::details) {
        Some(details) => details?,
        None => return Err(NotYet::NoStack(binding.spec.stack.clone())),
    };
    let workload = &binding.spec.workload;
    // Into a Stack: only its own workload, which admission checked the person may
    // change through the Stack (never an object of someone else's under its name).
    let into_stack = match workload.kind {
        WorkloadKind::Stack => Some(
            ctx.stacks
                .get(&ObjectRef::new(&workload.name).within(namespace))
                .ok_or_else(|| NotYet::NoStack(workload.name.clone()))?,
        ),
        _ => None,
    };
    Ok((details, into_stack))
}

/// The workload `workload` names: a Stack's is its StatefulSet when the catalog's
/// entry for its choice is stateful, else its Deployment.
fn target_of(ctx: &Context, workload: &WorkloadRef, into_stack: Option<&Stack>) -> Target {
    let stateful = into_stack.is_some_and(|stack| {
        ctx.catalog
            .current()
            .get(&stack.spec.choice)
            .is_some_and(|e| e.stateful)
    });
    Target::of(workload.kind, &workload.name, stateful)
}

/// Status for a binding whose workload does not exist (or, `into_stack`, is not the
/// Stack's own yet); it is looked at again after [`LOOK_AGAIN`].
async fn workload_missing(
    binding: &StackBinding,
    ctx: &Context,
    target: &Target,
    into_stack: bool,
) -> Result<Action, BindingError> {
    let message = if into_stack {
        format!(
            "Stack {} has no {} of its own yet.",
            target.name, target.kind
        )
    } else {
        format!(
            "{} {} does not exist in this namespace.",
            target.kind, target.name
        )
    };
    let outcome = Outcome::not_ready("WorkloadNotFound", message, None);
    write_status(binding, ctx, outcome).await?;
    Ok(Action::requeue(LOOK_AGAIN))
}

/// Status for a binding into someone's own workload whose annotation (`accepted`)
/// does not accept `prefix`; it is looked at again after [`LOOK_AGAIN`].
async fn not_accepted(
    binding: &StackBinding,
    ctx: &Context,
    target: &Target,
    accepted: Option<&str>,
    prefix: &str,
    bound_before: Option<String>,
) -> Result<Action, BindingError> {
    let value = projection::accepting(accepted, prefix).unwrap_or_default();
    let message = format!(
        "{} {} does not accept variables starting with {prefix}: whoever may change it \
         accepts them with the annotation {}={value}.",
        target.kind,
        target.name,
        projection::ACCEPTED_PREFIXES
    );
    // Variables it wrote before (a workload bound before acceptances existed, or one
    // whose acceptance was withdrawn) stay until the binding goes: nothing is taken
    // from a running app unasked, and unbinding still takes them out.
    let still = bound_before.filter(|b| *b == target.label());
    write_status(
        binding,
        ctx,
        Outcome::not_ready("NotAccepted", message, still),
    )
    .await?;
    Ok(Action::requeue(LOOK_AGAIN))
}

/// Status for a binding whose apply the API server refused with `status`.
async fn refused(
    binding: &StackBinding,
    ctx: &Context,
    target: &Target,
    status: Box<kube::core::Status>,
    bound_before: Option<String>,
) -> Result<Action, BindingError> {
    let message = format!(
        "{} {} was not changed: {}",
        target.kind, target.name, status.message
    );
    let reason = match failure(&kube::Error::Api(status)) {
        Failure::Conflict => "VariableTaken",
        Failure::Forbidden => "Refused",
        _ => "Invalid",
    };
    // What an earlier apply put there is still there, to be taken out later.
    let still = bound_before.filter(|b| *b == target.label());
    write_status(binding, ctx, Outcome::not_ready(reason, message, still)).await?;
    Ok(Action::requeue(Duration::from_secs(60)))
}

/// Server-side applies `body` to `target` with the field manager in `params`.
async fn apply_to(
    ctx: &Context,
    namespace: &str,
    target: &Target,
    params: &PatchParams,
    body: &serde_json::Value,
) -> Result<(), kube::Error> {
    match target.kind {
        "StatefulSet" => Api::<StatefulSet>::namespaced(ctx.client.clone(), namespace)
            .patch(&target.name, params, &Patch::Apply(body))
            .await
            .map(|_| ()),
        _ => Api::<Deployment>::namespaced(ctx.client.clone(), namespace)
            .patch(&target.name, params, &Patch::Apply(body))
            .await
            .map(|_| ()),
    }
}

/// Status for a binding that cannot be carried out yet; the variables stay where they
/// are (the Stack's next change brings the binding back here).
async fn not_yet_bound(
    binding: &StackBinding,
    ctx: &Context,
    why: NotYet,
    bound: Option<String>,
) -> Result<Action, BindingError> {
    let reason = match why {
        NotYet::NoStack(_) => "StackNotFound",
        NotYet::NoEndpoint(_) => "StackNotReady",
    };
    write_status(
        binding,
        ctx,
        Outcome::not_ready(reason, format!("{why}."), bound),
    )
    .await?;
    Ok(Action::await_change())
}

async fn unbind(binding: &StackBinding, ctx: &Context) -> Result<Action, BindingError> {
    let namespace = binding.namespace().unwrap_or_default();
    let recorded = binding.status.as_ref().and_then(|s| s.target.as_deref());
    if let Some(target) = recorded.and_then(Target::parse) {
        remove_from(ctx, &namespace, &target, &binding.name_any()).await?;
    }
    Ok(Action::await_change())
}

/// Takes binding `name`'s variables out of `target`: an apply of nothing with its
/// field manager removes every field only it set. A workload that is gone has none.
async fn remove_from(
    ctx: &Context,
    namespace: &str,
    target: &Target,
    name: &str,
) -> Result<(), BindingError> {
    // An apply to a missing object would create it (and be refused): nothing to do.
    if workload_of(ctx, namespace, target, None).await?.is_none() {
        return Ok(());
    }
    let params = PatchParams::apply(&projection::manager(name));
    let body = projection::unbind(target);
    match apply_to(ctx, namespace, target, &params, &body).await {
        Ok(()) => Ok(()),
        Err(e) if failure(&e) == Failure::NotFound => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// What a binding needs to know of its workload.
struct Workload {
    /// Its containers' names.
    containers: Vec<String>,
    /// Its annotation of accepted prefixes ([`projection::ACCEPTED_PREFIXES`]).
    accepted: Option<String>,
}

/// `target` as a binding sees it, or `None` when it does not exist (or, with `owner`,
/// when that Stack does not control it).
async fn workload_of(
    ctx: &Context,
    namespace: &str,
    target: &Target,
    owner: Option<&str>,
) -> Result<Option<Workload>, kube::Error> {
    let controlled = |meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
        owner.is_none_or(|uid| {
            meta.owner_references
                .iter()
                .flatten()
                .any(|o| o.controller == Some(true) && o.uid == uid)
        })
    };
    let found = match target.kind {
        "StatefulSet" => Api::<StatefulSet>::namespaced(ctx.client.clone(), namespace)
            .get_opt(&target.name)
            .await?
            .filter(|s| controlled(&s.metadata))
            .and_then(|s| Some((projection::acceptance(&s.metadata), s.spec?.template))),
        _ => Api::<Deployment>::namespaced(ctx.client.clone(), namespace)
            .get_opt(&target.name)
            .await?
            .filter(|d| controlled(&d.metadata))
            .and_then(|d| Some((projection::acceptance(&d.metadata), d.spec?.template))),
    };
    Ok(found.map(|(accepted, template)| Workload {
        containers: template
            .spec
            .map(|s| s.containers.into_iter().map(|c| c.name).collect())
            .unwrap_or_default(),
        accepted,
    }))
}

/// Writes status when it differs from what the binding already says; a Ready
/// condition keeps its transition time while its status holds.
async fn write_status(
    binding: &StackBinding,
    ctx: &Context,
    outcome: Outcome,
) -> Result<(), kube::Error> {
    let previous = binding.status.clone().unwrap_or_default();
    let status_text = if outcome.ready { "True" } else { "False" };
    let since = previous
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready" && c.status == status_text)
        .map(|c| c.last_transition_time.clone())
        .unwrap_or_else(|| Time(k8s_openapi::jiff::Timestamp::now()));
    let status = StackBindingStatus {
        observed_generation: binding.meta().generation,
        prefix: outcome.prefix,
        target: outcome.target,
        variables: outcome.variables,
        conditions: vec![Condition {
            type_: "Ready".into(),
            status: status_text.into(),
            reason: outcome.reason.into(),
            message: outcome.message,
            last_transition_time: since,
            observed_generation: binding.meta().generation,
        }],
    };
    if status == previous {
        return Ok(());
    }
    Api::<StackBinding>::namespaced(ctx.client.clone(), &binding.namespace().unwrap_or_default())
        .patch_status(
            &binding.name_any(),
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": status })),
        )
        .await?;
    Ok(())
}
