//! Whether a viewer may join a live feed: a SelfSubjectAccessReview made as that
//! viewer (cached briefly by the client pool). The portal's own identity (local mode)
//! is not checked; it is the identity the feeds would use anyway.

use crate::clients::AccessQuestion;
use crate::identity::Caller;
use crate::state::AppState;

pub async fn may_watch(
    state: &AppState,
    caller: &Caller,
    group: &str,
    plural: &str,
    namespace: Option<&str>,
) -> bool {
    if *caller == Caller::Portal {
        return true;
    }
    let question = AccessQuestion {
        verb: "watch".into(),
        group: group.into(),
        resource: plural.into(),
        namespace: namespace.map(str::to_string),
    };
    match state.clients.allowed(caller, &question).await {
        Ok(allowed) => allowed,
        Err(error) => {
            tracing::warn!(%error, user = caller.name(), "access check failed; refusing the feed");
            false
        }
    }
}
