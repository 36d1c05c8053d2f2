//! What every request handler can reach.

use std::sync::Arc;

use app::backend::SharedBackend;
use axum::extract::FromRef;
use leptos::prelude::LeptosOptions;

use crate::assets::SiteAssets;
use crate::clients::ClientPool;
use crate::cluster_backend::ClusterBackend;
use crate::discovery::CrdCatalog;
use crate::identity::{Caller, IdentityConfig};
use crate::watch::hub::WatchHub;
use crate::watch::limits::{LiveLimits, StreamCounter};

/// How long an upstream watch outlives its last viewer, so a page reload or a quick
/// back-and-forth reuses it.
const WATCH_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

/// Sign-in attempts accepted per second in the long run, and in a burst: plenty for
/// people arriving at nine, far too few to guess tokens.
const SIGN_INS_PER_SECOND: std::num::NonZeroU32 = std::num::NonZeroU32::new(5).unwrap();
const SIGN_IN_BURST: std::num::NonZeroU32 = std::num::NonZeroU32::new(20).unwrap();

#[derive(Clone)]
pub struct AppState {
    pub leptos_options: LeptosOptions,
    /// The compiled site's files and which of them are content-hashed.
    pub assets: Arc<SiteAssets>,
    /// The portal's own identity: health checks and the CRD catalog only.
    pub client: kube::Client,
    pub catalog: CrdCatalog,
    pub hub: WatchHub,
    /// A client per person, and access checks as that person.
    pub clients: Arc<ClientPool>,
    pub identity: Arc<IdentityConfig>,
    pub stacks: crate::stacks::catalog::LiveCatalog,
    /// Bounds on live views, and the streams open now per identity.
    pub live: Arc<LiveLimits>,
    pub streams: Arc<StreamCounter>,
    /// Sign-in attempts, everyone together (each costs the API server a review).
    pub sign_ins: Arc<governor::DefaultDirectRateLimiter>,
    /// Set once the server starts shutting down: long-lived streams end so that
    /// graceful shutdown does not wait for them forever.
    shutdown: std::sync::Arc<tokio::sync::watch::Sender<bool>>,
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
        stacks: crate::stacks::catalog::LiveCatalog,
    ) -> (Self, impl std::future::Future<Output = ()> + Send + 'static) {
        let (catalog, driver) = CrdCatalog::start(client.clone());
        let assets = SiteAssets::load(&leptos_options).unwrap_or_else(|error| {
            // Files still serve; they are only revalidated instead of kept a year.
            tracing::error!(%error, "serving the site without long-lived caching");
            SiteAssets::unhashed(&leptos_options)
        });
        let live = LiveLimits::default();
        let state = Self {
            assets: Arc::new(assets),
            leptos_options,
            hub: hub_for(&client, &live),
            live: Arc::new(live),
            streams: Arc::default(),
            sign_ins: Arc::new(governor::RateLimiter::direct(
                governor::Quota::per_second(SIGN_INS_PER_SECOND).allow_burst(SIGN_IN_BURST),
            )),
            shutdown: std::sync::Arc::new(tokio::sync::watch::channel(false).0),
            clients: Arc::new(ClientPool::new(None, client.clone())),
            identity: Arc::new(IdentityConfig::local()),
            client,
            catalog,
            stacks,
        };
        (state, driver)
    }

    /// Identifies people as `identity` says, acting for them from `base` (the portal's
    /// configuration, used for impersonation or as the template for user tokens).
    pub fn with_identity(mut self, identity: IdentityConfig, base: kube::Config) -> Self {
        self.clients = Arc::new(ClientPool::new(Some(base), self.client.clone()));
        self.identity = Arc::new(identity);
        self
    }

    /// Bounds live views by `limits` (before serving: the hub starts afresh).
    pub fn with_live_limits(mut self, limits: LiveLimits) -> Self {
        self.hub = hub_for(&self.client, &limits);
        self.live = Arc::new(limits);
        self
    }

    /// The backend acting as `caller`.
    pub fn backend_for(&self, caller: &Caller) -> Result<SharedBackend, kube::Error> {
        Ok(Arc::new(ClusterBackend {
            catalog: self.catalog.clone(),
            client: self.clients.for_caller(caller)?,
            stacks: self.stacks.clone(),
            clients: self.clients.clone(),
            who: caller.clone(),
        }))
    }
}

fn hub_for(client: &kube::Client, limits: &LiveLimits) -> WatchHub {
    WatchHub::with_limits(
        client.clone(),
        WATCH_GRACE,
        limits.feeds_per_person,
        limits.feeds_overall,
    )
}

impl AppState {
    /// Ends every live stream; call when shutdown begins.
    pub fn begin_shutdown(&self) {
        self.shutdown.send_replace(true);
    }

    /// Resolves once shutdown has begun.
    pub fn shutting_down(&self) -> impl std::future::Future<Output = ()> + Send + use<> {
        let mut rx = self.shutdown.subscribe();
        async move {
            let _ = rx.wait_for(|down| *down).await;
        }
    }
}
