//! Self-service stacks: the `Stack` kind, the catalog of what each choice provisions,
//! the children computed from both, status derived from the children, the reconciler
//! that applies them, and the Lease that keeps it to one replica. Uses `kube` only:
//! never `watch` (its caches are its own) nor `auth` (it acts as the portal).

pub(crate) mod cache;
pub mod catalog;
pub mod children;
pub mod claims;
pub mod containers;
pub mod controller;
pub mod leader;
pub mod metrics;
pub mod plan;
pub mod scheduling;
pub mod stack;
pub(crate) mod status;

use tokio::sync::watch;

/// Runs the Stack reconciler on this replica whenever it holds the leader Lease,
/// until `shutdown` turns true (then in-flight reconciles finish and the Lease is
/// released).
pub async fn run_elected(
    client: kube::Client,
    settings: controller::Settings,
    lease: leader::LeaseSettings,
    shutdown: watch::Receiver<bool>,
) {
    let identity = lease.identity.clone();
    leader::lead(client.clone(), lease, shutdown, move |stop| {
        controller::run(
            client.clone(),
            settings.clone(),
            identity.clone(),
            async move {
                let _ = stop.await;
            },
        )
    })
    .await;
}
