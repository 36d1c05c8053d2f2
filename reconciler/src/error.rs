//! What a reconcile fails with: what status says of it, and its metric label.

use super::plan::Blocked;
use super::status::Problem;
use portico_cluster::error::failure;

/// The failure reason of a reconcile the random source failed (the others are the API
/// server's failure classes, [`portico_cluster::error::Failure::name`]).
pub const RANDOM: &str = "Random";

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
    /// The `reason` label of the reconcile failure and block metrics: the block's
    /// condition reason, the API server's failure class, or `Random`.
    pub fn metric_reason(&self) -> &'static str {
        match self {
            Self::Blocked(blocked) => blocked.reason(),
            Self::Kube(error) => failure(error).name(),
            Self::Random => RANDOM,
        }
    }

    /// What status says of it (Degraded).
    pub(super) fn problem(&self) -> Problem {
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
