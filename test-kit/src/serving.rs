//! Serving Portico in a test: its router over a cluster on a free loopback port (local,
//! token or single sign-on mode; under a base path; with live limits), the shared test
//! cluster's configuration people's clients are built from, and the kind registry.

use portico_server::auth::identity::{IdentityConfig, IdentityMode};
use portico_server::auth::session::SessionKey;
use portico_server::live::budgets::limits::LiveLimits;
use portico_server::web::state::AppState;

/// Portico's router over `client`, serving on a free loopback port with connection
/// info (sign-in attempts are counted per peer); `identity` switches from local mode.
/// Returns the origin (`http://127.0.0.1:PORT`) and the state, once the CRD catalog
/// has loaded.
pub async fn serve(
    client: &kube::Client,
    identity: Option<(IdentityConfig, kube::Config)>,
) -> (String, AppState) {
    serve_limited(client, identity, None).await
}

/// Portico in token mode over `client` (people act from the shared test cluster's
/// configuration with their own tokens), with `live` limits if given.
pub async fn serve_token_mode(
    client: &kube::Client,
    live: Option<LiveLimits>,
) -> (String, AppState) {
    let identity = (with_sessions(IdentityMode::Token), shared_config().await);
    serve_limited(client, Some(identity), live).await
}

/// As `serve`, with `live` limits if given.
pub async fn serve_limited(
    client: &kube::Client,
    identity: Option<(IdentityConfig, kube::Config)>,
    live: Option<LiveLimits>,
) -> (String, AppState) {
    let (state, watches) = new_state(client);
    let state = match identity {
        Some((identity, config)) => state.with_identity(identity, config),
        None => state,
    };
    let state = match live {
        Some(limits) => state.with_live_limits(limits),
        None => state,
    };
    start(state, watches).await
}

/// Portico in single sign-on mode over `client`, its provider at `issuer` (which the
/// tests that use this never reach: they attack what comes before the provider).
pub async fn serve_oidc_mode(client: &kube::Client, issuer: &str) -> (String, AppState) {
    let provider =
        portico_server::auth::oidc::OidcProvider::new(portico_server::auth::oidc::OidcSettings {
            issuer: issuer.into(),
            client_id: "portico".into(),
            client_secret: None,
            redirect_url: "http://127.0.0.1/auth/callback".into(),
            scopes: vec!["openid".into()],
            auth_params: vec![],
            ca_pem: None,
            post_logout_redirect_url: None,
        })
        .expect("settings");
    let (state, watches) = new_state(client);
    let state = state
        .with_identity(with_sessions(IdentityMode::Oidc), shared_config().await)
        .with_single_sign_on(provider);
    start(state, watches).await
}

/// People identified as `mode` says, with sessions sealed by a key of the test's own.
fn with_sessions(mode: IdentityMode) -> IdentityConfig {
    IdentityConfig {
        mode,
        sessions: Some(SessionKey::random().expect("key")),
        ..IdentityConfig::local()
    }
}

/// The shared test cluster's configuration: what people's clients are built from.
pub async fn shared_config() -> kube::Config {
    portico_server::cluster::config::config(
        Some(portico_control_plane::cluster::TestCluster::shared().admin_kubeconfig()),
        None,
    )
    .await
    .expect("admin config")
}

/// The state over `client` in local mode, and the future driving its watches.
fn new_state(
    client: &kube::Client,
) -> (
    AppState,
    impl std::future::Future<Output = ()> + Send + 'static,
) {
    let options = portico_server::config::leptos_options(None).expect("leptos options");
    let catalog = portico_server::reconcile::catalog::Catalog::load(None).expect("catalog");
    let catalog = portico_server::reconcile::catalog::LiveCatalog::fixed(catalog);
    AppState::new(client.clone(), options, catalog)
}

/// Portico served under the base path `base` (e.g. `/portico`), in local mode.
pub async fn serve_at(client: &kube::Client, base: &str) -> (String, AppState) {
    let (state, watches) = new_state(client);
    let base = portico_core::base_path::BasePath::new(base).expect("a base path");
    start(state.with_base_path(base), watches).await
}

async fn start(
    state: AppState,
    watches: impl std::future::Future<Output = ()> + Send + 'static,
) -> (String, AppState) {
    tokio::spawn(watches);
    assert!(
        state
            .kinds
            .wait_loaded(std::time::Duration::from_secs(30))
            .await
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("addr");
    let router = portico_server::web::router::router(state.clone());
    tokio::spawn(portico_server::web::router::serve(
        listener,
        router,
        std::future::pending(),
    ));
    (format!("http://{addr}"), state)
}

/// The kind registry over `client`, loaded (its driver runs until the test ends).
pub async fn kinds(client: &kube::Client) -> portico_server::cluster::registry::KindRegistry {
    let (kinds, driver) = portico_server::cluster::registry::KindRegistry::start(
        client.clone(),
        ("portico.dev", "stacks"),
    );
    tokio::spawn(driver);
    assert!(kinds.wait_loaded(std::time::Duration::from_secs(30)).await);
    kinds
}
