//! Carrying a plan out: the reconciler's writes (server-side applies, deletes of
//! what a changed choice left behind, the credentials Secret, status) and its Events.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Secret, Service};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::events::{Event, EventType, Recorder};
use kube::runtime::reflector::Store;
use kube::{Resource, ResourceExt};
use tracing::Instrument;

use super::change_filter::{self, Applied, ChildKey, Relevant, cached, hash_json};
use super::desired;
use super::plan::{Kind, Stale};
use super::stack::{Stack, StackStatus};
use super::status::{Observed, Problem, derive};
use super::stores::ChildObject;
use portico_cluster::error::{Failure, failure};

/// What the applies of one reconcile did.
#[derive(Default)]
pub(super) struct Writes {
    /// An apply was sent (not skipped).
    pub(super) wrote: AtomicBool,
    /// The watch showed a child differently while it was applied.
    pub(super) missed: AtomicBool,
}

/// The field manager of everything the reconciler applies.
pub const MANAGER: &str = "portico-reconciler";

/// The reconciler's hands: its client, what it applied last, and its Event recorder.
pub(super) struct Executor {
    pub(super) client: kube::Client,
    pub(super) applied: Arc<Applied>,
    recorder: Recorder,
}

impl Executor {
    pub(super) fn new(client: kube::Client, applied: Arc<Applied>, recorder: Recorder) -> Self {
        Self {
            client,
            applied,
            recorder,
        }
    }

    /// Makes sure the Stack's credentials Secret exists, and names it. Never read back
    /// (the reconciler may not read Secrets): one that exists keeps the password the
    /// database started with, and a create finding it counts as done. Asked on every
    /// reconcile (one request), so a Secret deleted, or one a re-created Stack found still
    /// being collected, is made again.
    /// Also says whether this call made it.
    pub(super) async fn create_credentials(
        &self,
        stack: &Stack,
        secret: &Secret,
    ) -> Result<(String, bool), kube::Error> {
        let name = secret.name_any();
        let api =
            Api::<Secret>::namespaced(self.client.clone(), &stack.namespace().unwrap_or_default());
        let params = PostParams {
            field_manager: Some(MANAGER.into()),
            ..PostParams::default()
        };
        match api.create(&params, secret).await {
            Ok(_) => Ok((name, true)),
            Err(e) if failure(&e) == Failure::AlreadyExists => Ok((name, false)),
            Err(e) => Err(e),
        }
    }

    /// Applies `patch` ([`desired::legacy_password_move`]) to the Stack's credentials
    /// Secret: a JSON patch, so the Secret is never read, and the answer (which holds
    /// it) is dropped unread. Admission lets the reconciler make exactly this change. A
    /// Secret already moved (its old key gone: 422) or gone (404) needs nothing.
    pub(super) async fn move_legacy_password(
        &self,
        stack: &Stack,
        patch: serde_json::Value,
    ) -> Result<bool, kube::Error> {
        let name = desired::secret_name(&stack.name_any());
        let namespace = stack.namespace().unwrap_or_default();
        // Both names are DNS labels: nothing to escape in the path.
        let request = http::Request::patch(format!(
            "/api/v1/namespaces/{namespace}/secrets/{name}?fieldManager={MANAGER}"
        ))
        .header(http::header::CONTENT_TYPE, "application/json-patch+json")
        .body(serde_json::to_vec(&patch).map_err(kube::Error::SerdeError)?)
        .map_err(kube::Error::HttpError)?;
        match self.client.request_text(request).await {
            Ok(_) => {
                tracing::info!(secret = %name, "moved the credentials Secret's one password to today's keys");
                Ok(true)
            }
            Err(e) if matches!(failure(&e), Failure::NotFound | Failure::Invalid) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Deletes the credentials Secret a changed choice left behind (by name: it is never
    /// read; admission lets the reconciler delete only a Stack's own children).
    pub(super) async fn delete_credentials(&self, stack: &Stack) -> Result<bool, kube::Error> {
        let name = desired::secret_name(&stack.name_any());
        let api =
            Api::<Secret>::namespaced(self.client.clone(), &stack.namespace().unwrap_or_default());
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

    /// Server-side apply with Portico's field manager; `force` takes back fields someone
    /// else changed (drift correction). Skipped, returning the cached child, when this
    /// exact object was applied last and the child has not changed since.
    /// `(namespace, stack)` say where and for whom; `writes` notes what happened.
    pub(super) async fn apply<K>(
        &self,
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
            && self
                .applied
                .unchanged(&key, sent, &change_filter::marker(current.as_ref()))
        {
            return Ok((*current).clone());
        }
        let api: Api<K> = Api::namespaced(self.client.clone(), namespace);
        // Dropped with this future on failure or cancellation: the watch then counts again.
        let sending = self.applied.sending(key);
        let applied = api
            .patch(
                &name,
                &PatchParams::apply(MANAGER).force(),
                &Patch::Apply(object),
            )
            .await?;
        writes.wrote.store(true, Ordering::Relaxed);
        if sending.answered(sent, change_filter::marker(&applied), applied.relevant()) {
            writes.missed.store(true, Ordering::Relaxed);
        }
        Ok(applied)
    }

    /// Deletes a child a changed choice left behind; whether it was there to delete.
    pub(super) async fn delete_stale(
        &self,
        namespace: &str,
        stale: &Stale,
    ) -> Result<bool, kube::Error> {
        let client = &self.client;
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

    pub(super) async fn write_status(
        &self,
        stack: &Stack,
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
            Api::namespaced(self.client.clone(), &stack.namespace().unwrap_or_default());
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
                self.publish(stack, kind, reason, note);
            }
        }
        Ok(true)
    }

    /// Tells an Event in the background: it is best effort, and waiting for it held a
    /// reconcile slot a request longer, which other Stacks waited on. One still being
    /// sent when the reconciler stops is lost, and two told at once may arrive in
    /// either order.
    pub(super) fn publish(&self, stack: &Stack, type_: EventType, reason: &str, note: String) {
        let event = Event {
            type_,
            reason: reason.into(),
            note: Some(note),
            action: "Reconcile".into(),
            secondary: None,
        };
        let recorder = self.recorder.clone();
        let regarding = stack.object_ref(&());
        tokio::spawn(
            async move {
                if let Err(error) = recorder.publish(&event, &regarding).await {
                    tracing::debug!(%error, "could not publish an Event");
                }
            }
            .in_current_span(),
        );
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

#[cfg(test)]
mod tests {
    //! The executor against a mock API server: each test says which requests it
    //! expects, in order, and answers them as the API server would.
    use futures::FutureExt;
    use http::{Method, StatusCode};
    use serde_json::{Value, json};

    use std::time::Duration;

    use super::*;
    use crate::fixtures::{ApiServer, executor, expect, ready, stack};

    const STATUS_PATH: &str = "/apis/portico.dev/v1alpha1/namespaces/shop/stacks/db/status";
    const EVENTS_PATH: &str = "/apis/events.k8s.io/v1/namespaces/shop/events";

    /// A Stack without status turns Ready: the status patch and the Event it takes,
    /// answered as the API server would; what was written and what was sent.
    async fn turn_ready(
        executor: &Executor,
        api_server: &mut ApiServer,
        stack: &Stack,
    ) -> (Result<bool, kube::Error>, Value, Value) {
        let api = async {
            let patch = expect(
                api_server,
                Method::PATCH,
                STATUS_PATH,
                StatusCode::OK,
                json!(stack),
            )
            .await;
            let event_created = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
                "metadata": {"name": "e"}, "eventTime": null});
            let event = expect(
                api_server,
                Method::POST,
                EVENTS_PATH,
                StatusCode::CREATED,
                event_created,
            )
            .await;
            (patch, event)
        };
        let observed = ready();
        let (written, (patch, event)) =
            tokio::join!(executor.write_status(stack, &observed, None), api);
        (written, patch, event)
    }

    #[tokio::test]
    async fn a_stack_turning_ready_gets_its_status_once_and_one_event() {
        let (executor, mut api_server) = executor();
        let (written, patch, event) = turn_ready(&executor, &mut api_server, &stack(None)).await;
        assert!(written.expect("status written"));
        let status = &patch["status"];
        assert_eq!(status["phase"], "Ready");
        assert_eq!(status["observedGeneration"], 2);
        assert_eq!(status["credentialsSecret"], "db-credentials");
        assert_eq!(event["reason"], "Ready");
        assert_eq!(event["type"], "Normal");
        assert_eq!(event["regarding"]["name"], "db");
    }

    #[tokio::test]
    async fn a_status_that_would_not_change_is_not_written() {
        let (executor, mut api_server) = executor();
        let (_, patch, _) = turn_ready(&executor, &mut api_server, &stack(None)).await;
        let observed = ready();
        let again = stack(Some(patch["status"].clone()));
        let written = tokio::select! {
            written = executor.write_status(&again, &observed, None) => written,
            request = api_server.next_request() => {
                panic!("an unchanged status was sent: {:?}", request.map(|(r, _)| r.uri().clone()))
            }
        };
        assert!(!written.expect("nothing to write"));
    }

    // Time stands still until every task waits: an Event told in the background would
    // be sent before the wait below ends.
    #[tokio::test(start_paused = true)]
    async fn a_refused_status_write_is_the_api_servers_error_and_tells_no_event() {
        let (executor, mut api_server) = executor();
        let stack = stack(None);
        let refusal = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
            "message": "stacks.portico.dev \"db\" is forbidden", "reason": "Forbidden", "code": 403});
        let api = expect(
            &mut api_server,
            Method::PATCH,
            STATUS_PATH,
            StatusCode::FORBIDDEN,
            refusal,
        );
        let observed = ready();
        let (written, _) = tokio::join!(executor.write_status(&stack, &observed, None), api);
        let error = written.expect_err("refused");
        assert_eq!(failure(&error), Failure::Forbidden);
        let next = tokio::time::timeout(Duration::from_secs(60), api_server.next_request());
        assert!(next.await.is_err(), "nothing else was sent");
    }

    #[tokio::test]
    async fn credentials_that_already_exist_count_as_made_and_are_never_read() {
        let (executor, mut api_server) = executor();
        let stack = stack(None);
        let secret: Secret = serde_json::from_value(json!({
            "metadata": {"name": "db-credentials", "namespace": "shop"},
            "stringData": {"password": "p"},
        }))
        .expect("a Secret");
        let exists = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
            "message": "secrets \"db-credentials\" already exists", "reason": "AlreadyExists", "code": 409});
        let api = expect(
            &mut api_server,
            Method::POST,
            "/api/v1/namespaces/shop/secrets",
            StatusCode::CONFLICT,
            exists,
        );
        let (made, sent) = tokio::join!(executor.create_credentials(&stack, &secret), api);
        assert_eq!(
            made.expect("counted as found"),
            ("db-credentials".to_string(), false)
        );
        assert_eq!(sent["metadata"]["name"], "db-credentials");
        assert!(api_server.next_request().now_or_never().is_none());
    }
}
