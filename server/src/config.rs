//! Command-line flags with environment fallbacks.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, ValueEnum};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// Where the Stack reconciler runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReconcilerMode {
    /// In this process, beside the portal (the leader Lease decides which replica acts).
    On,
    /// Not at all (another deployment runs it).
    Off,
    /// Only the reconciler: no HTTP server.
    Only,
}

#[derive(Debug, Clone, Parser)]
#[command(
    name = "portico",
    about = "A live dashboard and self-service portal for Kubernetes custom resources"
)]
pub struct Config {
    /// Address to listen on. Defaults to LEPTOS_SITE_ADDR, then 127.0.0.1:3000.
    #[arg(long, env = "PORTICO_LISTEN")]
    pub listen: Option<SocketAddr>,

    /// Log filter in tracing's EnvFilter syntax.
    #[arg(
        long,
        env = "PORTICO_LOG",
        default_value = "info,portico_server=debug,portico=debug"
    )]
    pub log: String,

    /// Log line format.
    #[arg(long, env = "PORTICO_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// Kubeconfig to use. Without it kube's standard resolution applies:
    /// $KUBECONFIG, ~/.kube/config, then the in-cluster service account.
    #[arg(long = "kubeconfig", env = "PORTICO_KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,

    /// Kubeconfig context to use instead of the current one.
    #[arg(long, env = "PORTICO_KUBE_CONTEXT")]
    pub context: Option<String>,

    /// Directory holding the compiled site (pkg/ and public assets). Defaults to
    /// LEPTOS_SITE_ROOT, then target/site.
    #[arg(long, env = "PORTICO_SITE_ROOT")]
    pub site_root: Option<PathBuf>,

    /// Whether this process runs the Stack reconciler.
    #[arg(long, env = "PORTICO_RECONCILER", value_enum, default_value_t = ReconcilerMode::On)]
    pub reconciler: ReconcilerMode,

    /// The Stack catalog (YAML). Defaults to the built-in MySQL 8.4 / Tomcat 10.1 one.
    #[arg(long, env = "PORTICO_STACK_CATALOG")]
    pub stack_catalog: Option<PathBuf>,

    /// Namespace of the reconciler's leader Lease (the pod's own in a cluster).
    #[arg(long, env = "POD_NAMESPACE", default_value = "default")]
    pub lease_namespace: String,

    /// This replica's name in the leader Lease. Defaults to the host name and pid.
    #[arg(long, env = "POD_NAME")]
    pub replica_name: Option<String>,
}

/// Leptos' site options: cargo-leptos' LEPTOS_* variables where set, Portico's
/// defaults otherwise, and `site_root` over both.
pub fn leptos_options(
    site_root: Option<&std::path::Path>,
) -> Result<leptos::prelude::LeptosOptions, leptos::config::errors::LeptosConfigError> {
    let mut options = leptos::config::get_configuration(None)?.leptos_options;
    if options.output_name.is_empty() {
        options.output_name = "portico".into();
    }
    if let Some(root) = site_root {
        options.site_root = root.to_string_lossy().as_ref().into();
    }
    Ok(options)
}
