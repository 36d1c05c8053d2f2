//! The `portico` binary: reads configuration, starts the CRD catalog and serves HTTP
//! until SIGTERM or Ctrl-C.

use anyhow::Context;
use clap::Parser;
use std::sync::Arc;

use portico_server::cluster::request_trace::TracedRequestsLayer;
use portico_server::config::{self, Config, ReconcilerMode};
use portico_server::reconcile::catalog::{Catalog, LiveCatalog};
use portico_server::reconcile::metrics::Metrics;
use portico_server::reconcile::{self, leader::LeaseSettings};
use portico_server::web::metrics_route;
use portico_server::web::router as http;
use portico_server::web::state::AppState;
use portico_server::{cluster::config as kube_client, self_check, telemetry};

/// Stack for each runtime thread. Rendering is bounded in depth (forms turn deeper
/// parts into YAML editors), so this is headroom, not the guard: a debug build's
/// view code takes several times the stack of a release build's.
const THREAD_STACK_BYTES: usize = 16 << 20;

fn main() -> anyhow::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(THREAD_STACK_BYTES)
        .build()
        .context("starting the async runtime")?
        .block_on(run())
}

async fn run() -> anyhow::Result<()> {
    let config = Config::parse();
    let _flush_traces = telemetry::init(&config.log, config.log_format, config.traces().as_ref())
        .context("starting logs and traces")?;
    if !config.checks.is_empty() {
        return check(&config).await;
    }

    let leptos_options = config::leptos_options(config.site_root.as_deref())
        .context("reading Leptos configuration")?;
    let addr = config.listen.unwrap_or(leptos_options.site_addr);

    let identity = config.identity_config().context("identity settings")?;
    let single_sign_on = config.oidc_provider().context("single sign-on settings")?;
    refuse_local_exposure(&config, identity.mode, addr)?;
    let base_path = portico_core::base_path::BasePath::new(&config.base_path)
        .with_context(|| format!("--base-path {:?} is not a path", config.base_path))?;
    let kube_config = kube_client::config(config.kubeconfig.as_deref(), config.context.as_deref())
        .await
        .context("reading the Kubernetes configuration")?;
    // The portal's own requests are counted in its /metrics, as people's are.
    let client = kube::client::ClientBuilder::try_from(kube_config.clone())
        .context("connecting to Kubernetes")?
        .with_layer(&portico_server::portal_metrics::PORTAL.api_layer())
        .with_layer(&TracedRequestsLayer)
        .build();
    let stack_catalog = stack_catalog(&config)?;
    let (stop_reconciler, shutdown) = tokio::sync::watch::channel(false);
    let metrics = Arc::new(Metrics::new());
    let reconciler = start_reconciler(
        &config,
        &kube_config,
        stack_catalog.clone(),
        metrics.clone(),
        shutdown,
    )
    .await?;
    if config.reconciler == ReconcilerMode::Only {
        serve_metrics(config.metrics_listen, metrics, None).await?;
        shutdown_signal().await;
        return stop(stop_reconciler, reconciler).await;
    }

    tracing::info!(mode = ?identity.mode, "identity");
    let (state, watches) = AppState::new(client, leptos_options, stack_catalog);
    let mut state = state.with_identity_over(identity, kube_config, config.api_protocol);
    if let Some(provider) = single_sign_on {
        state = state.with_single_sign_on(provider);
        // Read the provider's discovery document now, without holding up the start:
        // a misconfiguration is in the log at once, not at someone's first sign-in.
        if let Some(provider) = state.auth.oidc.clone() {
            tokio::spawn(async move { provider.warm_up().await });
        }
    }
    let state = state
        .with_live_limits(config.live_limits())
        .with_base_path(base_path)
        .with_allowed_hosts(&config.allowed_hosts);
    let watch_task = tokio::spawn(watches);
    serve_metrics(config.metrics_listen, metrics, Some(state.live.clone())).await?;

    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("listening on {addr}"))?;
    tracing::info!(%addr, "Portico is serving");
    let on_shutdown = state.clone();
    http::serve(listener, http::router(state), async move {
        shutdown_signal().await;
        on_shutdown.begin_shutdown();
    })
    .await
    .context("serving HTTP")?;
    watch_task.abort();
    stop(stop_reconciler, reconciler).await?;
    tracing::info!("stopped");
    Ok(())
}

/// Refuses a portal that would let everyone who reaches it act as Portico itself
/// (local identity on an address others reach), unless told so in as many words.
fn refuse_local_exposure(
    config: &Config,
    mode: portico_server::auth::identity::IdentityMode,
    addr: std::net::SocketAddr,
) -> anyhow::Result<()> {
    if config.reconciler == ReconcilerMode::Only {
        return Ok(());
    }
    let Some(exposure) = config::local_exposure(mode, addr, config::in_cluster()) else {
        return Ok(());
    };
    if !config.insecure_local_identity_for_everyone {
        return Err(exposure).context("refusing to start");
    }
    tracing::warn!(
        %exposure,
        "--insecure-local-identity-for-everyone: EVERYONE WHO REACHES PORTICO ACTS AS PORTICO"
    );
    Ok(())
}

/// The catalog of stacks people may provision; a mounted ConfigMap changes under the
/// running pod, so a catalog read from a file is followed.
fn stack_catalog(config: &Config) -> anyhow::Result<LiveCatalog> {
    let first_catalog =
        Catalog::load(config.stack_catalog.as_deref()).context("loading the stack catalog")?;
    Ok(match config.stack_catalog.clone() {
        Some(path) => {
            let (live, follow) =
                LiveCatalog::follow(path, first_catalog, std::time::Duration::from_secs(10));
            tokio::spawn(follow);
            live
        }
        None => LiveCatalog::fixed(first_catalog),
    })
}

/// Starts the reconciler (unless `--reconciler off`), elected by its Lease, with a
/// client of its own so that /metrics counts the reconciler's requests only.
async fn start_reconciler(
    config: &Config,
    kube_config: &kube::Config,
    catalog: LiveCatalog,
    metrics: Arc<Metrics>,
    shutdown: tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<Option<tokio::task::JoinHandle<()>>> {
    if config.reconciler == ReconcilerMode::Off {
        return Ok(None);
    }
    let reconciler_client = kube::client::ClientBuilder::try_from(kube_config.clone())
        .context("connecting to Kubernetes")?
        .with_layer(&metrics.api_layer())
        .with_layer(&TracedRequestsLayer)
        .build();
    // Its writes are bounded by an admission policy: no policy API, no reconciler.
    reconcile::requirements::check(&reconciler_client).await?;
    let identity = config
        .replica_name
        .clone()
        .unwrap_or_else(default_replica_name);
    let settings = reconcile::controller::Settings {
        catalog,
        namespace: None,
        stats: Arc::default(),
        metrics,
        concurrency: config.reconcile_concurrency,
    };
    Ok(Some(tokio::spawn(reconcile::run_elected(
        reconciler_client,
        settings,
        LeaseSettings::new(&config.lease_namespace, &identity),
        shutdown,
    ))))
}

/// Tells the reconciler to stop and waits for it to hand its Lease back.
async fn stop(
    stop_reconciler: tokio::sync::watch::Sender<bool>,
    reconciler: Option<tokio::task::JoinHandle<()>>,
) -> anyhow::Result<()> {
    stop_reconciler.send_replace(true);
    if let Some(task) = reconciler {
        task.await.context("the reconciler task")?;
    }
    Ok(())
}

/// `--check`: each check's result on a line; the first that does not hold ends it.
async fn check(config: &Config) -> anyhow::Result<()> {
    let client = if config.checks.iter().any(|c| c.reads_the_cluster()) {
        let kube_config =
            kube_client::config(config.kubeconfig.as_deref(), config.context.as_deref())
                .await
                .context("reading the Kubernetes configuration")?;
        Some(kube::Client::try_from(kube_config).context("connecting to Kubernetes")?)
    } else {
        None
    };
    for one in &config.checks {
        let held =
            self_check::run_until_it_holds(one, config.check_host.as_deref(), client.as_ref())
                .await?;
        println!("ok: {held}");
    }
    Ok(())
}

/// Serves `/metrics` on `addr` (when given): the reconciler's, the portal's with what
/// `live` holds (none with `--reconciler only`), and the process'.
async fn serve_metrics(
    addr: Option<std::net::SocketAddr>,
    reconciler: Arc<Metrics>,
    live: Option<portico_server::live::LiveState>,
) -> anyhow::Result<()> {
    let Some(addr) = addr else {
        return Ok(());
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("listening for metrics on {addr}"))?;
    tracing::info!(%addr, "serving /metrics");
    let app = metrics_route::router(metrics_route::Scraped { reconciler, live });
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(())
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(error) => {
            tracing::warn!(%error, "cannot listen for SIGTERM; stopping on Ctrl-C only");
            let _ = tokio::signal::ctrl_c().await;
        }
    }
    tracing::info!("shutting down");
}

/// This replica's name in the leader Lease outside a cluster (where POD_NAME is unset).
fn default_replica_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "portico".into());
    format!("{host}-{}", std::process::id())
}
