//! The state the router holds. Handlers take the narrow part they need (`FromRef`):
//! `LiveState` for live views, `AuthState` for sign-in, the whole only for pages.

use std::sync::Arc;

use app::backend::SharedBackend;
use axum::extract::FromRef;
use leptos::prelude::LeptosOptions;

use super::assets::SiteAssets;
use super::backend::ClusterBackend;
use crate::auth::AuthState;
use crate::auth::host::AllowedHosts;
use crate::auth::identity::IdentityConfig;
use crate::cluster::caller::Caller;
use crate::cluster::connections::ApiProtocol;
use crate::cluster::pool::ClientPool;
use crate::cluster::registry::KindRegistry;
use crate::live::budgets::limits::LiveLimits;
use crate::live::feeds::hub::WatchHub;
use crate::live::{LiveState, Shutdown};
use crate::portal_metrics::PORTAL;
use crate::reconcile::catalog::LiveCatalog;
use crate::reconcile::stack;

/// How long an upstream watch outlives its last viewer, so a page reload or a quick
/// back-and-forth reuses it.
const WATCH_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

#[derive(Clone)]
pub struct AppState {
    pub leptos_options: LeptosOptions,
    /// The path Portico is served under (`""` at the root).
    pub base: portico_core::base_path::BasePath,
    /// The compiled site's files and which of them are content-hashed.
    pub assets: Arc<SiteAssets>,
    /// The portal's own identity: health checks and the kind registry only.
    pub client: kube::Client,
    pub kinds: KindRegistry,
    pub stacks: LiveCatalog,
    pub auth: AuthState,
    pub live: LiveState,
    /// The host names requests may name (DNS rebinding guard).
    pub hosts: Arc<AllowedHosts>,
    /// Usage reads running, by person.
    pub usage_reads: Arc<crate::web::backend::usage::UsageGate>,
    /// The names of what people may list, kept while they search (the palette).
    pub object_names: Arc<crate::web::backend::find::ObjectNames>,
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(state: &AppState) -> Self {
        state.leptos_options.clone()
    }
}

impl FromRef<AppState> for LiveState {
    fn from_ref(state: &AppState) -> Self {
        state.live.clone()
    }
}

impl FromRef<AppState> for AuthState {
    fn from_ref(state: &AppState) -> Self {
        state.auth.clone()
    }
}

impl AppState {
    /// Wires the state around `client`. The returned future drives the cluster
    /// watches the state reads from; spawn it.
    pub fn new(
        client: kube::Client,
        leptos_options: LeptosOptions,
        stacks: LiveCatalog,
    ) -> (Self, impl std::future::Future<Output = ()> + Send + 'static) {
        let (kinds, driver) = KindRegistry::start(client.clone(), (stack::GROUP, stack::PLURAL));
        let assets = SiteAssets::load(&leptos_options).unwrap_or_else(|error| {
            // Files still serve; they are only revalidated instead of kept a year.
            tracing::error!(%error, "serving the site without long-lived caching");
            SiteAssets::unhashed(&leptos_options)
        });
        let mut auth = AuthState::new(
            IdentityConfig::local(),
            ClientPool::new(None, client.clone(), PORTAL.api_layer()),
        );
        auth.stylesheet = assets.stylesheet();
        let limits = LiveLimits::default();
        let live = LiveState {
            hub: hub_for(&client, &limits, &kinds),
            kinds: kinds.clone(),
            auth: auth.clone(),
            portal: client.clone(),
            namespaces: Arc::default(),
            limits: Arc::new(limits),
            streams: Arc::default(),
            sockets: Arc::default(),
            terminals: Arc::default(),
            overviews: Arc::default(),
            their_namespaces: Arc::default(),
            shutdown: Shutdown::default(),
        };
        let state = Self {
            assets: Arc::new(assets),
            leptos_options,
            base: portico_core::base_path::BasePath::default(),
            client,
            kinds,
            stacks,
            auth,
            live,
            hosts: Arc::default(),
            usage_reads: Arc::default(),
            object_names: Arc::default(),
        };
        (state, driver)
    }

    /// Identifies people as `identity` says, acting for them from `base` (the portal's
    /// configuration, the template for people's own tokens: server and CA).
    pub fn with_identity(self, identity: IdentityConfig, base: kube::Config) -> Self {
        self.with_identity_over(identity, base, ApiProtocol::default())
    }

    /// As [`Self::with_identity`], people's requests reaching the API server by
    /// `protocol`.
    pub fn with_identity_over(
        mut self,
        identity: IdentityConfig,
        base: kube::Config,
        protocol: ApiProtocol,
    ) -> Self {
        let pool = ClientPool::new(Some(base), self.client.clone(), PORTAL.api_layer())
            .with_protocol(protocol);
        self.auth = AuthState::new(identity, pool);
        self.auth.base = self.base.clone();
        self.auth.stylesheet = self.assets.stylesheet();
        self.live.auth = self.auth.clone();
        self
    }

    /// Signs people in with `provider` (single sign-on mode; after `with_identity`).
    pub fn with_single_sign_on(mut self, provider: crate::auth::oidc::OidcProvider) -> Self {
        self.auth.oidc = Some(Arc::new(provider));
        self.live.auth = self.auth.clone();
        self
    }

    /// Bounds live views by `limits` (before serving: the hub starts afresh).
    pub fn with_live_limits(mut self, limits: LiveLimits) -> Self {
        self.live.hub = hub_for(&self.client, &limits, &self.kinds);
        self.live.limits = Arc::new(limits);
        self
    }

    /// Answers requests naming `names` as well as IP addresses and `localhost`.
    pub fn with_allowed_hosts(mut self, names: &[String]) -> Self {
        self.hosts = Arc::new(AllowedHosts::new(names));
        self
    }

    /// Serves Portico under `base` (a normalised path, `""` for the root).
    pub fn with_base_path(mut self, base: portico_core::base_path::BasePath) -> Self {
        self.auth.base = base.clone();
        self.live.auth.base = base.clone();
        self.base = base;
        self
    }

    /// The backend acting as `caller`.
    pub fn backend_for(&self, caller: &Caller) -> Result<SharedBackend, kube::Error> {
        Ok(Arc::new(ClusterBackend {
            kinds: self.kinds.clone(),
            client: self.auth.pool.for_caller(caller)?,
            stacks: self.stacks.clone(),
            reviews: self.auth.reviews.clone(),
            who: caller.clone(),
            usage_reads: self.usage_reads.clone(),
            object_names: self.object_names.clone(),
        }))
    }

    /// Ends every live stream; call when shutdown begins.
    pub fn begin_shutdown(&self) {
        self.live.shutdown.begin();
    }
}

fn hub_for(client: &kube::Client, limits: &LiveLimits, kinds: &KindRegistry) -> WatchHub {
    WatchHub::bounded(client.clone(), WATCH_GRACE, limits, kinds.clone())
}
