//! Whether a viewer may join a live feed: a SelfSubjectAccessReview made as that
//! viewer (cached briefly by the client pool). The portal's own identity (local mode)
//! is not checked; it is the identity the feeds would use anyway. Also: whether a
//! namespace a viewer names exists, so no feed is started for an invented one.

use axum::http::HeaderMap;
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;

use crate::auth::access::AccessQuestion;
use crate::cluster::caller::Caller;
use crate::cluster::error::{Failure, failure};
use crate::live::LiveState;

/// Whether the viewer may watch; refused when the review itself fails (joining a
/// feed needs a yes).
pub async fn may_watch(
    state: &LiveState,
    caller: &Caller,
    group: &str,
    plural: &str,
    namespace: Option<&str>,
) -> bool {
    watch_review(state, caller, group, plural, namespace)
        .await
        .unwrap_or_else(|error| {
            tracing::warn!(%error, user = caller.name(), "access review failed");
            false
        })
}

/// Whether an open view may go on, asked again every `recheck`: see [`keeps_view`].
pub async fn still_may_watch(
    state: &LiveState,
    caller: &Caller,
    headers: &HeaderMap,
    group: &str,
    plural: &str,
    namespace: Option<&str>,
) -> bool {
    let answer = watch_review(state, caller, group, plural, namespace).await;
    keeps_view(state, caller, headers, answer)
}

/// How a re-check reads the API server's answer. A no ends the view. So does a review
/// the API server refused: a 401 means it no longer accepts the token (a deleted
/// ServiceAccount, a revoked token), and the person's session ends here as well; a 403
/// means they may not even ask. Only a review that got no answer at all (an API server
/// restart, a timeout) keeps the view, which then recovers on its own.
pub fn keeps_view(
    state: &LiveState,
    caller: &Caller,
    headers: &HeaderMap,
    answer: Result<bool, kube::Error>,
) -> bool {
    let error = match answer {
        Ok(allowed) => return allowed,
        Err(error) => error,
    };
    let refused = failure(&error);
    tracing::warn!(%error, user = caller.name(), ?refused, "access review failed");
    match refused {
        Failure::Unauthorized => {
            state.auth.end_refused_session(headers);
            false
        }
        Failure::Forbidden => false,
        _ => true,
    }
}

/// The API server's answer to "may `caller` watch this".
async fn watch_review(
    state: &LiveState,
    caller: &Caller,
    group: &str,
    plural: &str,
    namespace: Option<&str>,
) -> Result<bool, kube::Error> {
    if *caller == Caller::Portal {
        return Ok(true);
    }
    let question = AccessQuestion {
        verb: "watch".into(),
        group: group.into(),
        resource: plural.into(),
        subresource: None,
        namespace: namespace.map(str::to_string),
        name: None,
    };
    state
        .auth
        .reviews
        .allowed_within(caller, &question, state.limits.recheck)
        .await
}

/// Whether `namespace` exists: asked with the viewer's own client, or, if the viewer
/// may not read Namespace objects, with the portal's (which may `get` one by name;
/// its answers are reused for a few seconds and limited per person). Only a clear
/// "not found" says no; the answer is never shown beyond that refusal.
pub async fn namespace_exists(
    state: &LiveState,
    viewer: &kube::Client,
    person: Option<&str>,
    namespace: &str,
) -> bool {
    let namespaces: Api<Namespace> = Api::all(viewer.clone());
    match namespaces.get_metadata_opt(namespace).await {
        Ok(found) => return found.is_some(),
        Err(e) if matches!(failure(&e), Failure::Unauthorized | Failure::Forbidden) => {}
        Err(_) => return true,
    }
    let answers = &state.namespaces;
    if let Some(known) = answers.answers.get(namespace).await {
        return known;
    }
    // Past the person's share, assume it exists: the view then runs as the viewer, whose
    // feeds are bounded anyway, and the portal is not made to ask.
    if !answers.may_ask(person.unwrap_or("")) {
        return true;
    }
    let namespaces: Api<Namespace> = Api::all(state.portal.clone());
    let lookup = async {
        let found = namespaces.get_metadata_opt(namespace).await.ok()?;
        Some(found.is_some())
    };
    // An unanswered lookup is not kept, and counts as existing.
    answers
        .answers
        .optionally_get_with(namespace.to_string(), lookup)
        .await
        .unwrap_or(true)
}
