//! One reconcile carried out: the plan made from the stores, then its phases in
//! order (the credentials Secret, the Services and the workload, why Pods are not
//! placed, what a changed choice left behind, status). The wiring of the controller
//! that calls it is `super::controller`.

use std::sync::atomic::Ordering;
use std::time::Duration;

use k8s_openapi::api::core::v1::{PodTemplateSpec, Service};
use kube::ResourceExt;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;

use super::catalog::CatalogEntry;
use super::change_filter::cached;
use super::context::{Context, DEBOUNCE};
use super::desired::{self, Children, Workload};
use super::error::ReconcileError;
use super::executor::Writes;
use super::metrics::Outcome;
use super::plan::{Kind, Plan, World, plan};
use super::readiness::{deployment_readiness, statefulset_readiness};
use super::stack::{Endpoint, Stack};
use super::status::{Observed, Problem};
use super::stores::Stores;
use super::{claims, scheduling};

/// When a Stack with nothing to wait for is looked at again anyway.
const LOOK_AGAIN: Duration = Duration::from_secs(300);

/// Plans from the stores, then carries the plan out: applies the children (skipping
/// what would not change), deletes what a changed choice left behind, writes status.
pub(super) async fn provision(
    stack: &Stack,
    ctx: &Context,
) -> Result<(Action, Outcome), ReconcileError> {
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
    let writes = Writes::default();
    let credentials_secret = credentials(stack, ctx, &plan, &password).await?;
    let at = (namespace.as_str(), name.as_str(), &writes);
    let (service, (ready_replicas, rolled_out)) = apply_children(ctx, at, &plan).await?;
    let observed = Observed {
        replicas: stack.spec.replicas,
        ready_replicas,
        rolled_out,
        endpoint: endpoint_of(&service, Some(&plan.entry)),
        credentials_secret,
        version: plan
            .entry
            .image_for(stack.spec.version.as_deref())
            .and_then(|image| plan.entry.version_of(image))
            .map(str::to_string),
    };
    let (unplaceable, claim_again) = why_not_placed(stack, ctx, &plan, &observed).await;
    let removed = remove_stale(stack, ctx, &plan).await?;
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
        plan.look_again_in.or(claim_again).unwrap_or(LOOK_AGAIN)
    };
    Ok((Action::requeue(next), outcome))
}

/// Makes sure the credentials Secret the plan wants exists (moving an old one's
/// password to today's keys), and names it; `None` when the plan has none.
async fn credentials(
    stack: &Stack,
    ctx: &Context,
    plan: &Plan,
    password: &str,
) -> Result<Option<String>, ReconcileError> {
    let Some(secret) = &plan.children.secret else {
        return Ok(None);
    };
    let (name, made) = ctx.executor.create_credentials(stack, secret).await?;
    // A Secret from before Stacks had an app user holds one password: moved to
    // today's keys before the workload that reads them is applied.
    let namespace = stack.namespace().unwrap_or_default();
    if !made
        && reads_legacy_password(&plan.children, &namespace, &ctx.stores)
        && let Some(patch) = desired::legacy_password_move(&plan.entry, password)
    {
        ctx.executor.move_legacy_password(stack, patch).await?;
    }
    Ok(Some(name))
}

/// Applies the Services and the workload: the applied main Service, and the
/// workload's ready replicas and whether it rolled out.
async fn apply_children(
    ctx: &Context,
    at: (&str, &str, &Writes),
    plan: &Plan,
) -> Result<(Service, (i32, bool)), kube::Error> {
    let (desired, stores) = (&plan.children, &ctx.stores);
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
    if plan.stale.is_empty() && nothing_exists(desired, at.0, stores) {
        // Nothing runs that a refusal part-way could leave half changed: one round trip
        // instead of one per child, which is most of a new Stack's time to its children.
        let ((), service, readiness) =
            futures::try_join!(apply_headless, apply_service, apply_workload)?;
        Ok((service, readiness))
    } else {
        // One at a time, the headless Service first: a change the API server refuses
        // part-way (a quota on Services) then leaves the Service and the workload of the
        // running stack as they were. Applied at once, the main Service could already
        // select the new choice's Pods while the rest was refused.
        apply_headless.await?;
        let service = apply_service.await?;
        Ok((service, apply_workload.await?))
    }
}

/// Why the Stack's Pods are not all placed, if that keeps it from Ready: the
/// scheduler's words, or for a stateful Pod waiting on its volume why the claim does
/// not bind; and when to look at the claims again.
async fn why_not_placed(
    stack: &Stack,
    ctx: &Context,
    plan: &Plan,
    observed: &Observed,
) -> (Option<Problem>, Option<Duration>) {
    // A Pod the scheduler cannot place keeps the Stack from ever being Ready: say so,
    // in the scheduler's words, rather than "progressing" forever.
    let unplaceable = plan
        .unplaceable
        .clone()
        .filter(|_| observed.ready_replicas < observed.replicas);
    let stateful = matches!(plan.children.workload, Workload::Stateful(_));
    let waits_on_volume = unplaceable
        .as_ref()
        .is_some_and(|p| p.reason == scheduling::REASON);
    if !(stateful && waits_on_volume) {
        return (unplaceable, None);
    }
    let (namespace, name) = (stack.namespace().unwrap_or_default(), stack.name_any());
    let client = &ctx.executor.client;
    match claims::unbound(client, &namespace, &name, stack.spec.replicas).await {
        Ok(claims::Claims::Unbound(message)) => {
            let reason = claims::REASON.into();
            (Some(Problem { reason, message }), Some(claims::LOOK_AGAIN))
        }
        Ok(claims::Claims::Unexplained) => (unplaceable, Some(claims::LOOK_AGAIN)),
        Ok(claims::Claims::NotTheReason) => (unplaceable, None),
        // Only a finer diagnosis is lost: the scheduler's words stand.
        Err(error) => {
            tracing::debug!(%error, "could not read the Stack's volume claims");
            (unplaceable, Some(claims::LOOK_AGAIN))
        }
    }
}

/// Deletes what a changed choice left behind, says so in an Event, and names what
/// went.
async fn remove_stale(
    stack: &Stack,
    ctx: &Context,
    plan: &Plan,
) -> Result<Vec<String>, ReconcileError> {
    let namespace = stack.namespace().unwrap_or_default();
    let mut removed = Vec::new();
    for stale in &plan.stale {
        if ctx.executor.delete_stale(&namespace, stale).await? {
            removed.push(format!("{} {}", stale.kind.name(), stale.name));
        }
    }
    if plan.stale_credentials && ctx.executor.delete_credentials(stack).await? {
        removed.push(format!(
            "Secret {}",
            desired::secret_name(&stack.name_any())
        ));
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
    Ok(removed)
}

/// Whether the Stack's workload reads its password under the credentials Secret's
/// old key, or no workload says (none runs: a Stack made again over kept data may find
/// an old Secret). Moving the keys of a Secret already moved is refused harmlessly.
fn reads_legacy_password(desired: &Children, namespace: &str, stores: &Stores) -> bool {
    let reads_old_key = |template: &PodTemplateSpec| {
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
fn nothing_exists(desired: &Children, namespace: &str, stores: &Stores) -> bool {
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

/// How to reach the Stack: its Service's first port (else the catalog entry's), and
/// from the entry, who the password is for, which database, and the URL scheme of a
/// connection; none when there is no port at all.
pub(super) fn endpoint_of(service: &Service, entry: Option<&CatalogEntry>) -> Option<Endpoint> {
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
    use std::sync::{Arc, Mutex};

    use http::{Method, StatusCode};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use kube::api::PartialObjectMeta;
    use kube::core::PartialObjectMetaExt;
    use kube::runtime::{reflector, watcher};
    use serde_json::json;

    use super::*;
    use crate::catalog::{Catalog, DEFAULT_CATALOG, LiveCatalog};
    use crate::executor::Executor;
    use crate::fixtures::{executor, expect, stack};
    use crate::stores::Names;

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
