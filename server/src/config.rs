//! Command-line flags with environment fallbacks.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, ValueEnum};

use crate::identity::{Cidr, IdentityConfig, IdentityMode};
use crate::session::SessionKey;

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

    /// Who people act as: `local` (the kubeconfig's identity, for development),
    /// `token` (a bearer token given at sign-in) or `proxy` (an authenticating
    /// proxy's headers, impersonated).
    #[arg(long, env = "PORTICO_IDENTITY", value_enum, default_value_t = IdentityMode::Local)]
    pub identity: IdentityMode,

    /// Proxy mode: the header naming the user.
    #[arg(
        long,
        env = "PORTICO_PROXY_USER_HEADER",
        default_value = "X-Forwarded-User"
    )]
    pub proxy_user_header: String,

    /// Proxy mode: the header with the user's groups: comma-separated in one header, or
    /// one group per header when repeated (then never split on commas).
    #[arg(
        long,
        env = "PORTICO_PROXY_GROUPS_HEADER",
        default_value = "X-Forwarded-Groups"
    )]
    pub proxy_groups_header: String,

    /// Proxy mode: addresses (CIDR, comma-separated) whose identity headers are
    /// believed; headers from anywhere else are ignored.
    #[arg(long, env = "PORTICO_TRUSTED_PROXIES", value_delimiter = ',')]
    pub trusted_proxies: Vec<String>,

    /// Serve under this path (e.g. `/portico`): every link, asset and API call
    /// follows it. `/healthz` and `/readyz` also answer at the root.
    #[arg(long, env = "PORTICO_BASE_PATH", default_value = "")]
    pub base_path: String,

    /// Local mode acts for every visitor with Portico's own Kubernetes identity, so it
    /// serves only on a loopback address and never inside a cluster. This flag lifts
    /// that: anyone who can reach Portico then acts as Portico.
    #[arg(
        long,
        env = "PORTICO_INSECURE_LOCAL_IDENTITY_FOR_EVERYONE",
        default_value_t = false
    )]
    pub insecure_local_identity_for_everyone: bool,

    /// Token mode: file holding the 64-hex-digit key that seals session cookies (the
    /// same for every replica). Without it a random key is used.
    #[arg(long, env = "PORTICO_SESSION_KEY_FILE")]
    pub session_key_file: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum SiteConfigError {
    #[error(transparent)]
    Leptos(#[from] leptos::config::errors::LeptosConfigError),
    #[error(
        "LEPTOS_HASH_FILES is set but {0} is missing: serve the binary beside the hash.txt its build wrote"
    )]
    NoHashFile(std::path::PathBuf),
}

/// Leptos' site options: cargo-leptos' LEPTOS_* variables where set, Portico's
/// defaults otherwise, and `site_root` over both. Without LEPTOS_HASH_FILES, file
/// hashing follows the build: on when cargo-leptos left a hash list beside the binary
/// (as `scripts/release.sh` and the image do).
pub fn leptos_options(
    site_root: Option<&std::path::Path>,
) -> Result<leptos::prelude::LeptosOptions, SiteConfigError> {
    let mut options = leptos::config::get_configuration(None)?.leptos_options;
    if options.output_name.is_empty() {
        options.output_name = "portico".into();
    }
    if let Some(root) = site_root {
        options.site_root = root.to_string_lossy().as_ref().into();
    }
    let hash_file = crate::assets::hash_file_path(&options);
    if std::env::var_os("LEPTOS_HASH_FILES").is_none() {
        options.hash_files = hash_file.is_file();
    } else if options.hash_files && !hash_file.is_file() {
        return Err(SiteConfigError::NoHashFile(hash_file));
    }
    Ok(options)
}

/// Why local mode must not serve here: it would give every visitor Portico's identity.
#[derive(Debug, thiserror::Error)]
pub enum LocalExposure {
    #[error(
        "local mode gives every visitor Portico's own Kubernetes identity, so it serves only \
         on a loopback address, not {0}: use --identity token or proxy, or listen on 127.0.0.1 \
         (--insecure-local-identity-for-everyone overrides this)"
    )]
    NotLoopback(SocketAddr),
    #[error(
        "local mode gives every visitor Portico's own Kubernetes identity, so it does not run \
         inside a cluster: use --identity token or proxy \
         (--insecure-local-identity-for-everyone overrides this)"
    )]
    InCluster,
}

/// Whether serving on `listen` in `mode` would hand Portico's identity to others:
/// local mode on a non-loopback address, or inside a cluster (`in_cluster`, where the
/// pod network and Services reach it).
pub fn local_exposure(
    mode: IdentityMode,
    listen: SocketAddr,
    in_cluster: bool,
) -> Option<LocalExposure> {
    if mode != IdentityMode::Local {
        None
    } else if !listen.ip().is_loopback() {
        Some(LocalExposure::NotLoopback(listen))
    } else if in_cluster {
        Some(LocalExposure::InCluster)
    } else {
        None
    }
}

/// Whether this process runs in a Kubernetes pod (the kubelet sets this variable).
pub fn in_cluster() -> bool {
    std::env::var_os("KUBERNETES_SERVICE_HOST").is_some()
}

#[derive(Debug, thiserror::Error)]
pub enum IdentityConfigError {
    #[error(
        "proxy mode needs --trusted-proxies: identity headers from unknown addresses are never believed"
    )]
    NoTrustedProxies,
    #[error("--trusted-proxies: {0}")]
    BadRange(String),
    #[error("{0} is not a valid header name")]
    BadHeader(String),
    #[error(transparent)]
    Session(#[from] crate::session::SessionError),
}

impl Config {
    /// How requests are identified, from the flags.
    pub fn identity_config(&self) -> Result<IdentityConfig, IdentityConfigError> {
        let header = |name: &str| {
            axum::http::HeaderName::from_bytes(name.to_ascii_lowercase().as_bytes())
                .map_err(|_| IdentityConfigError::BadHeader(name.to_string()))
        };
        let trusted = self
            .trusted_proxies
            .iter()
            .filter(|t| !t.trim().is_empty())
            .map(|t| t.parse::<Cidr>().map_err(IdentityConfigError::BadRange))
            .collect::<Result<Vec<_>, _>>()?;
        if self.identity == IdentityMode::Proxy && trusted.is_empty() {
            return Err(IdentityConfigError::NoTrustedProxies);
        }
        let sessions = match self.identity {
            IdentityMode::Token => Some(SessionKey::load(self.session_key_file.as_deref())?),
            _ => None,
        };
        Ok(IdentityConfig {
            mode: self.identity,
            user_header: header(&self.proxy_user_header)?,
            groups_header: header(&self.proxy_groups_header)?,
            trusted,
            sessions,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_mode_serves_only_loopback_outside_a_cluster() {
        let at = |a: &str| a.parse::<SocketAddr>().expect("address");
        let local = IdentityMode::Local;
        assert!(local_exposure(local, at("127.0.0.1:3000"), false).is_none());
        assert!(local_exposure(local, at("[::1]:3000"), false).is_none());
        for open in ["0.0.0.0:3000", "[::]:3000", "10.1.2.3:3000"] {
            assert!(
                matches!(
                    local_exposure(local, at(open), false),
                    Some(LocalExposure::NotLoopback(_))
                ),
                "{open}"
            );
        }
        assert!(matches!(
            local_exposure(local, at("127.0.0.1:3000"), true),
            Some(LocalExposure::InCluster)
        ));
        for mode in [IdentityMode::Token, IdentityMode::Proxy] {
            assert!(local_exposure(mode, at("0.0.0.0:3000"), true).is_none());
        }
    }
}
