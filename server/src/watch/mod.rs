//! Live views: the Table API client ([`table_api`], behind [`source`]; a watch's
//! events split by [`event_lines`]), the feeds
//! that keep one upstream watch per (resource, namespace, selectors) and identity
//! ([`feed`], shared through [`hub`]), a viewer's side of a feed ([`subscription`]),
//! the checks that open a view ([`open`]), a live children view ([`children`]), container logs ([`logs`], split into
//! lines by [`log_lines`] and bounded by [`log_flow`]; a workload's merged:
//! [`workload_logs`]) and the two transports: the tab's
//! WebSocket ([`socket`]) and SSE for scripts ([`sse`]). Uses `auth` (a viewer's
//! access is reviewed before a feed is joined) and `kube`.

pub(crate) mod access;
pub mod added_columns;
pub mod children;
pub(crate) mod coalesce;
pub(crate) mod event_lines;
pub mod feed;
pub mod history;
pub mod hub;
pub mod intern;
pub mod limits;
pub mod log_flow;
pub mod log_lines;
pub(crate) mod logs;
pub mod memory;
pub(crate) mod open;
pub(crate) mod overview;
pub(crate) mod overview_scope;
pub mod sizes;
pub(crate) mod socket;
pub mod source;
pub(crate) mod sse;
pub mod subscription;
pub mod table_api;
pub mod table_rows;
pub(crate) mod transitions;
pub(crate) mod workload_logs;

#[cfg(test)]
mod tests;

use std::future::Future;
use std::sync::Arc;

use crate::auth::AuthState;
use crate::cluster::registry::KindRegistry;
use hub::WatchHub;
use limits::{LiveLimits, StreamCounter};

/// What the live routes need, and nothing more.
#[derive(Clone)]
pub struct LiveState {
    pub hub: WatchHub,
    pub kinds: KindRegistry,
    /// Who viewers are, their clients, and whether they may watch.
    pub auth: AuthState,
    /// The portal's own client (whether a namespace exists), and its recent answers.
    pub portal: kube::Client,
    pub namespaces: Arc<access::NamespaceAnswers>,
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
    pub their_namespaces: Arc<overview_scope::TheirNamespaces>,
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
