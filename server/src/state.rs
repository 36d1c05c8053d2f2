//! What every request handler can reach.

use std::sync::Arc;

use app::backend::SharedBackend;
use axum::extract::FromRef;
use leptos::prelude::LeptosOptions;

use crate::cluster_backend::ClusterBackend;
use crate::discovery::CrdCatalog;
use crate::watch::hub::WatchHub;

/// How long an upstream watch outlives its last viewer, so a page reload or a quick
/// back-and-forth reuses it.
const WATCH_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

#[derive(Clone)]
pub struct AppState {
    pub leptos_options: LeptosOptions,
    pub client: kube::Client,
    pub catalog: CrdCatalog,
    pub backend: SharedBackend,
    pub hub: WatchHub,
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(state: &AppState) -> Self {
        state.leptos_options.clone()
    }
}

impl AppState {
    /// Wires the state around `client`. The returned future drives the cluster
    /// watches the state reads from; spawn it.
    pub fn new(
        client: kube::Client,
        leptos_options: LeptosOptions,
    ) -> (Self, impl std::future::Future<Output = ()> + Send + 'static) {
        let (catalog, driver) = CrdCatalog::start(client.clone());
        let backend: SharedBackend = Arc::new(ClusterBackend {
            catalog: catalog.clone(),
            client: client.clone(),
        });
        let state = Self {
            leptos_options,
            hub: WatchHub::new(client.clone(), WATCH_GRACE),
            client,
            catalog,
            backend,
        };
        (state, driver)
    }
}
