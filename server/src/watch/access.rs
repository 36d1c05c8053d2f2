//! Whether a viewer may join a live feed: a SelfSubjectAccessReview made as that
//! viewer (cached briefly by the client pool). The portal's own identity (local mode)
//! is not checked; it is the identity the feeds would use anyway. Also: whether a
//! namespace a viewer names exists, so no feed is started for an invented one.

use k8s_openapi::api::core::v1::Namespace;
use kube::Api;

use super::LiveState;
use crate::auth::access::AccessQuestion;
use crate::kube::caller::Caller;
use crate::kube::error::{Failure, failure};

/// Whether the viewer may watch; refused when the review itself fails (joining a
/// feed needs a yes).
pub async fn may_watch(
    state: &LiveState,
    caller: &Caller,
    group: &str,
    plural: &str,
    namespace: Option<&str>,
) -> bool {
    watch_review(state, caller, group, plural, namespace, false).await
}

/// Whether the viewer still may watch; `true` when the review itself fails, so an API
/// server restart does not end every open view (the feed recovers on its own).
pub async fn still_may_watch(
    state: &LiveState,
    caller: &Caller,
    group: &str,
    plural: &str,
    namespace: Option<&str>,
) -> bool {
    watch_review(state, caller, group, plural, namespace, true).await
}

/// The API server's answer, or `if_unanswered` when the review itself fails.
async fn watch_review(
    state: &LiveState,
    caller: &Caller,
    group: &str,
    plural: &str,
    namespace: Option<&str>,
    if_unanswered: bool,
) -> bool {
    if *caller == Caller::Portal {
        return true;
    }
    let question = AccessQuestion {
        verb: "watch".into(),
        group: group.into(),
        resource: plural.into(),
        subresource: None,
        namespace: namespace.map(str::to_string),
    };
    state
        .auth
        .reviews
        .allowed_within(caller, &question, state.limits.recheck)
        .await
        .unwrap_or_else(|error| {
            tracing::warn!(%error, user = caller.name(), if_unanswered, "access review failed");
            if_unanswered
        })
}

/// Whether `namespace` exists: asked with the viewer's own client, or, if the viewer
/// may not read Namespace objects, with the portal's (which may `get` one by name).
/// Only a clear "not found" says no; the answer is never shown beyond that refusal.
pub async fn namespace_exists(state: &LiveState, viewer: &kube::Client, namespace: &str) -> bool {
    for client in [viewer, &state.portal] {
        let namespaces: Api<Namespace> = Api::all(client.clone());
        match namespaces.get_metadata_opt(namespace).await {
            Ok(found) => return found.is_some(),
            Err(e) if matches!(failure(&e), Failure::Unauthorized | Failure::Forbidden) => {
                continue;
            }
            Err(_) => return true,
        }
    }
    true
}
