//! Self-service stacks: the `Stack` kind, the catalog of what each choice provisions,
//! the children computed from both, status derived from the children, the reconciler
//! that applies them, bindings that hand a Stack to a workload, and the Lease that
//! keeps both controllers to one replica. The crate `portico-reconciler`: uses
//! `portico-cluster` and `portico-core` only, never the server's `watch` (its caches
//! are its own), `auth` (it acts as the portal) or Leptos; Cargo holds it to that.

pub mod binding;
pub mod catalog;
pub(crate) mod change_filter;
pub mod claims;
pub mod containers;
mod context;
pub mod controller;
pub mod desired;
pub mod error;
mod executor;
#[cfg(test)]
mod fixtures;
pub mod leader;
pub mod metrics;
pub mod plan;
mod provision;
mod readiness;
pub mod requirements;
pub mod scheduling;
pub mod stack;
pub(crate) mod status;
mod stores;

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
    use futures::FutureExt;
    let identity = lease.identity.clone();
    leader::lead(client.clone(), lease, shutdown, move |stop| {
        // Both controllers stop together when the Lease is lost or given up.
        let stop = stop.map(|_| ()).shared();
        let stacks = controller::run(
            client.clone(),
            settings.clone(),
            identity.clone(),
            stop.clone(),
        );
        let bindings = binding::controller::run(
            client.clone(),
            settings.catalog.clone(),
            settings.namespace.clone(),
            stop,
        );
        async move {
            futures::join!(stacks, bindings);
        }
    })
    .await;
}
