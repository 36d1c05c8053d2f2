//! Live views, grouped by what each part holds, from the API server up to the tab:
//! [`rows`] (rows and changes held once for everyone), [`upstream`] (the Table API and
//! a watch's events), [`feeds`] (one upstream watch per query and identity, the hub
//! that shares them, a viewer's subscription), [`budgets`] (what a person and a replica
//! may hold), [`views`] (opening a view, its access re-checks, children, the home page),
//! [`logs`] (container and workload logs) and [`transports`] (the tab's WebSocket, SSE).
//! Uses `auth` (a viewer's access is reviewed before a feed is joined) and `cluster`.
//! The folders' arrows run one way; docs/architecture.md draws them.

pub mod budgets;
pub mod feeds;
pub mod logs;
pub mod rows;
pub mod transports;
pub mod upstream;
pub mod views;

#[cfg(test)]
mod tests;

use std::future::Future;
use std::sync::Arc;

use crate::auth::AuthState;
use crate::cluster::registry::KindRegistry;
use budgets::limits::{LiveLimits, StreamCounter};
use feeds::hub::WatchHub;

/// What the live routes need, and nothing more.
#[derive(Clone)]
pub struct LiveState {
    pub hub: WatchHub,
    pub kinds: KindRegistry,
    /// Who viewers are, their clients, and whether they may watch.
    pub auth: AuthState,
    /// The portal's own client (whether a namespace exists), and its recent answers.
    pub portal: kube::Client,
    pub namespaces: Arc<budgets::lookups::NamespaceAnswers>,
    /// Bounds on live views, and the streams open now per identity.
    pub limits: Arc<LiveLimits>,
    pub streams: Arc<StreamCounter>,
    /// Live sockets open now per identity.
    pub sockets: Arc<StreamCounter>,
    /// Terminals into containers open now per identity.
    pub terminals: Arc<StreamCounter>,
    /// Home pages open now per identity.
    pub overviews: Arc<StreamCounter>,
    /// People's namespaces, as the home page last found them.
    pub their_namespaces: Arc<budgets::lookups::TheirNamespaces>,
    pub shutdown: Shutdown,
}

/// Set once the server starts shutting down: long-lived streams end so that graceful
/// shutdown does not wait for them forever.
#[derive(Clone, Default)]
pub struct Shutdown(Arc<tokio::sync::watch::Sender<bool>>);

impl Shutdown {
    /// Ends every live stream; call when shutdown begins.
    pub fn begin(&self) {
        self.0.send_replace(true);
    }

    /// Resolves once shutdown has begun.
    pub fn begun(&self) -> impl Future<Output = ()> + Send + use<> {
        let mut rx = self.0.subscribe();
        async move {
            let _ = rx.wait_for(|down| *down).await;
        }
    }
}
