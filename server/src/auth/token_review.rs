//! Asking the API server who a bearer token belongs to.

use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use kube::api::{Api, PostParams};

use super::AuthState;
use crate::cluster::caller::{Caller, Token};
use crate::cluster::error::{ApiError, Failure};

/// The API server could not be asked (an outage, not a refusal).
pub(crate) struct Unreachable;

/// Who the API server says the bearer of `token` is (SelfSubjectReview), or `None`
/// when it does not accept the token.
pub(crate) async fn who_is(state: &AuthState, token: &str) -> Result<Option<String>, Unreachable> {
    let probe = Caller::Bearer {
        name: String::new(),
        token: Token(token.to_string()),
    };
    let review = match state.pool.build_for(&probe) {
        Ok(client) => Api::<SelfSubjectReview>::all(client)
            .create(&PostParams::default(), &SelfSubjectReview::default())
            .await
            .map_err(ApiError::from),
        Err(e) => Err(ApiError::from(e)),
    };
    match review {
        Ok(r) => Ok(r.status.and_then(|s| s.user_info).and_then(|u| u.username)),
        // Only the API server's refusal means the token is wrong; an outage is not.
        Err(e) if matches!(e.failure(), Failure::Unauthorized | Failure::Forbidden) => Ok(None),
        Err(error) => {
            tracing::warn!(%error, "sign-in: the API server could not review the token");
            Err(Unreachable)
        }
    }
}
