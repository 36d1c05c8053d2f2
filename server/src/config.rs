//! Command-line flags with environment fallbacks.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, ValueEnum};

use crate::auth::identity::{IdentityConfig, IdentityMode};
use crate::auth::session::SessionKey;
use crate::cluster::connections::ApiProtocol;
use crate::telemetry::LogFormat;

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
    /// Checks instead of serving (the chart's `helm test`), repeatable: `answers=URL` (a
    /// GET answers 2xx) and `lease=NAMESPACE/NAME` (a reconciler holds the Lease and
    /// renews it). Exits non-zero saying what does not hold.
    #[arg(long = "check", value_name = "CHECK")]
    pub checks: Vec<crate::self_check::Check>,

    /// The `Host` that `answers=` checks send: a name the portal answers to.
    #[arg(long, env = "PORTICO_CHECK_HOST")]
    pub check_host: Option<String>,

    /// Address to listen on. Defaults to LEPTOS_SITE_ADDR, then 127.0.0.1:3000.
    #[arg(long, env = "PORTICO_LISTEN")]
    pub listen: Option<SocketAddr>,

    /// Host names (comma-separated) Portico answers to besides IP addresses and
    /// `localhost`, e.g. the Ingress' host. Requests naming any other host are refused,
    /// so a DNS-rebinding page cannot reach Portico under a name of its own.
    #[arg(long, env = "PORTICO_ALLOWED_HOSTS", value_delimiter = ',')]
    pub allowed_hosts: Vec<String>,

    /// Proxies in front of Portico (an Ingress controller: 1) whose `X-Forwarded-For`
    /// entries say who the client is; sign-in attempts are limited per client.
    #[arg(long, env = "PORTICO_FORWARDED_HOPS", default_value_t = 0)]
    pub forwarded_hops: usize,

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

    /// Stacks the reconciler works on at the same time.
    #[arg(long, env = "PORTICO_RECONCILE_CONCURRENCY", default_value_t = crate::reconcile::controller::CONCURRENCY)]
    pub reconcile_concurrency: u16,

    /// An OpenTelemetry collector's OTLP/HTTP URL (`http://collector:4318`): the spans of
    /// requests and reconciles are sent there as traces (`/v1/traces`). Off when unset.
    #[arg(long, env = "OTEL_EXPORTER_OTLP_ENDPOINT")]
    pub otlp_endpoint: Option<String>,

    /// The traces' `service.name`.
    #[arg(long, env = "OTEL_SERVICE_NAME", default_value = "portico")]
    pub otel_service_name: String,

    /// Where to serve Prometheus metrics (`/metrics`: the portal's, the reconciler's and
    /// the process'; docs/metrics.md), e.g. 0.0.0.0:9090: a listener of its own, never
    /// the portal's port (which the Ingress exposes). Off when unset.
    #[arg(long, env = "PORTICO_METRICS_LISTEN")]
    pub metrics_listen: Option<std::net::SocketAddr>,

    /// Namespace of the reconciler's leader Lease (the pod's own in a cluster).
    #[arg(long, env = "POD_NAMESPACE", default_value = "default")]
    pub lease_namespace: String,

    /// This replica's name in the leader Lease. Defaults to the host name and pid.
    #[arg(long, env = "POD_NAME")]
    pub replica_name: Option<String>,

    /// Who people act as: `local` (the kubeconfig's identity, for development),
    /// `token` (a bearer token given at sign-in) or `oidc` (single sign-on with an
    /// OpenID Connect provider, `--oidc-*`).
    #[arg(long, env = "PORTICO_IDENTITY", value_enum, default_value_t = IdentityMode::Local)]
    pub identity: IdentityMode,

    /// How people's requests reach the API server: `http2` shares a few connections
    /// among everyone (far less memory with many people), `http1` opens one per
    /// request in flight (less of the API server's CPU per event).
    #[arg(long, env = "PORTICO_API_PROTOCOL", default_value = "http2", value_parser = api_protocol())]
    pub api_protocol: ApiProtocol,

    /// Live views (streams) one person may hold open at once [default: 64].
    #[arg(long, env = "PORTICO_MAX_LIVE_VIEWS_PER_PERSON")]
    pub max_live_views_per_person: Option<usize>,

    /// Live views open at once, everyone together [default: 4096].
    #[arg(long, env = "PORTICO_MAX_LIVE_VIEWS")]
    pub max_live_views: Option<usize>,

    /// Live connections (one WebSocket per tab) one person may hold open at once
    /// [default: 32].
    #[arg(long, env = "PORTICO_MAX_LIVE_SOCKETS_PER_PERSON")]
    pub max_live_sockets_per_person: Option<usize>,

    /// Upstream watches (one per distinct list) running for one person, idle ones
    /// kept for reuse included [default: 512].
    #[arg(long, env = "PORTICO_MAX_WATCHES_PER_PERSON")]
    pub max_watches_per_person: Option<usize>,

    /// Upstream watches running, everyone together [default: 20000].
    #[arg(long, env = "PORTICO_MAX_WATCHES")]
    pub max_watches: Option<usize>,

    /// MiB of live tables (rows and recent changes) and log views (each sets aside
    /// what its queue may hold, about 1 MiB) kept for one person; a list that outgrows
    /// it stops, and a view past it is refused, with a sentence [default: 64].
    #[arg(long, env = "PORTICO_MAX_LIVE_MIB_PER_PERSON")]
    pub max_live_mib_per_person: Option<usize>,

    /// MiB of live tables kept for everyone together; keep it well under the
    /// container's memory limit [default: 256].
    #[arg(long, env = "PORTICO_MAX_LIVE_MIB")]
    pub max_live_mib: Option<usize>,

    /// Terminals into containers one person may hold open at once [default: 8].
    #[arg(long, env = "PORTICO_MAX_TERMINALS_PER_PERSON")]
    pub max_terminals_per_person: Option<usize>,

    /// Seconds a terminal may go without a keystroke before it is closed
    /// [default: 1800].
    #[arg(long, env = "PORTICO_TERMINAL_IDLE_SECONDS")]
    pub terminal_idle_seconds: Option<u64>,

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

    /// Token and single sign-on modes: file holding the 64-hex-digit key that seals
    /// session cookies (the same for every replica). Without it a random key is used.
    #[arg(long, env = "PORTICO_SESSION_KEY_FILE")]
    pub session_key_file: Option<PathBuf>,

    /// Single sign-on: the OpenID Connect issuer URL (its
    /// `/.well-known/openid-configuration` is read). The API server must trust the
    /// same issuer for `--oidc-client-id` (docs/sso.md).
    #[arg(long, env = "PORTICO_OIDC_ISSUER")]
    pub oidc_issuer: Option<String>,

    /// Single sign-on: Portico's client ID at the provider.
    #[arg(long, env = "PORTICO_OIDC_CLIENT_ID")]
    pub oidc_client_id: Option<String>,

    /// Single sign-on: file holding the client secret (mounted from a Secret).
    /// Without it Portico is a public client, proven by PKCE alone.
    #[arg(long, env = "PORTICO_OIDC_CLIENT_SECRET_FILE")]
    pub oidc_client_secret_file: Option<PathBuf>,

    /// Single sign-on: where the provider sends people back, registered there:
    /// Portico's public URL with its base path and `/auth/callback`.
    #[arg(long, env = "PORTICO_OIDC_REDIRECT_URL")]
    pub oidc_redirect_url: Option<String>,

    /// Single sign-on: the scopes asked for (comma-separated). `offline_access` asks
    /// for a refresh token, so the ID token is renewed without a new sign-in.
    #[arg(
        long,
        env = "PORTICO_OIDC_SCOPES",
        value_delimiter = ',',
        default_value = "openid,email,profile,groups,offline_access"
    )]
    pub oidc_scopes: Vec<String>,

    /// Single sign-on: extra `name=value` parameters for the authorization request
    /// (comma-separated), e.g. Google's `access_type=offline,prompt=consent`.
    #[arg(long, env = "PORTICO_OIDC_AUTH_PARAMS", value_delimiter = ',')]
    pub oidc_auth_params: Vec<String>,

    /// Single sign-on: a CA (PEM) that signed the provider's certificate, beside the
    /// usual public roots.
    #[arg(long, env = "PORTICO_OIDC_CA_FILE")]
    pub oidc_ca_file: Option<PathBuf>,

    /// Single sign-on: where the provider sends people after its own sign-out
    /// (registered there; e.g. Portico's `/login`). Without it the provider shows
    /// its own signed-out page.
    #[arg(long, env = "PORTICO_OIDC_POST_LOGOUT_REDIRECT_URL")]
    pub oidc_post_logout_redirect_url: Option<String>,
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
    let hash_file = crate::web::assets::hash_file_path(&options);
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
         on a loopback address, not {0}: use --identity token or oidc, or listen on 127.0.0.1 \
         (--insecure-local-identity-for-everyone overrides this)"
    )]
    NotLoopback(SocketAddr),
    #[error(
        "local mode gives every visitor Portico's own Kubernetes identity, so it does not run \
         inside a cluster: use --identity token or oidc \
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
    #[error(transparent)]
    Session(#[from] crate::auth::session::SessionError),
    #[error("single sign-on needs --oidc-issuer, --oidc-client-id and --oidc-redirect-url")]
    OidcIncomplete,
    #[error("the --oidc-* flags are for --identity oidc only")]
    OidcOutsideOidcMode,
    #[error("cannot read {path}: {source}")]
    OidcFile {
        path: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Oidc(#[from] crate::auth::oidc::OidcError),
}

fn non_empty(items: &[String]) -> Vec<String> {
    items
        .iter()
        .map(|i| i.trim().to_string())
        .filter(|i| !i.is_empty())
        .collect()
}

impl Config {
    /// Where traces go, when a collector is named.
    pub fn traces(&self) -> Option<crate::telemetry::Traces> {
        let endpoint = self.otlp_endpoint.as_deref()?.trim();
        (!endpoint.is_empty()).then(|| crate::telemetry::Traces {
            endpoint: endpoint.to_string(),
            service: self.otel_service_name.clone(),
        })
    }

    /// How requests are identified, from the flags.
    pub fn identity_config(&self) -> Result<IdentityConfig, IdentityConfigError> {
        let sessions = match self.identity {
            IdentityMode::Token | IdentityMode::Oidc => {
                Some(SessionKey::load(self.session_key_file.as_deref())?)
            }
            IdentityMode::Local => None,
        };
        Ok(IdentityConfig {
            mode: self.identity,
            sessions,
            forwarded_hops: self.forwarded_hops,
        })
    }

    /// Bounds on live views, defaults where no flag is given.
    pub fn live_limits(&self) -> crate::live::budgets::limits::LiveLimits {
        let defaults = crate::live::budgets::limits::LiveLimits::default();
        crate::live::budgets::limits::LiveLimits {
            streams_per_person: self
                .max_live_views_per_person
                .unwrap_or(defaults.streams_per_person),
            streams_overall: self.max_live_views.unwrap_or(defaults.streams_overall),
            sockets_per_person: self
                .max_live_sockets_per_person
                .unwrap_or(defaults.sockets_per_person),
            feeds_per_person: self
                .max_watches_per_person
                .unwrap_or(defaults.feeds_per_person),
            feeds_overall: self.max_watches.unwrap_or(defaults.feeds_overall),
            bytes_per_person: self
                .max_live_mib_per_person
                .map_or(defaults.bytes_per_person, |mib| mib << 20),
            bytes_overall: self
                .max_live_mib
                .map_or(defaults.bytes_overall, |mib| mib << 20),
            terminals_per_person: self
                .max_terminals_per_person
                .unwrap_or(defaults.terminals_per_person),
            terminal_idle: self
                .terminal_idle_seconds
                .map_or(defaults.terminal_idle, std::time::Duration::from_secs),
            ..defaults
        }
    }

    /// Single sign-on's provider (required in oidc mode, refused elsewhere).
    pub fn oidc_provider(
        &self,
    ) -> Result<Option<crate::auth::oidc::OidcProvider>, IdentityConfigError> {
        let read = |path: &PathBuf| {
            std::fs::read(path).map_err(|source| IdentityConfigError::OidcFile {
                path: path.display().to_string(),
                source,
            })
        };
        let named = (
            &self.oidc_issuer,
            &self.oidc_client_id,
            &self.oidc_redirect_url,
        );
        match (self.identity, named) {
            (IdentityMode::Oidc, (Some(issuer), Some(client_id), Some(redirect_url))) => {
                let client_secret = match &self.oidc_client_secret_file {
                    Some(path) => Some(String::from_utf8_lossy(&read(path)?).trim().to_string()),
                    None => None,
                };
                let settings = crate::auth::oidc::OidcSettings {
                    issuer: issuer.clone(),
                    client_id: client_id.clone(),
                    client_secret,
                    redirect_url: redirect_url.clone(),
                    scopes: non_empty(&self.oidc_scopes),
                    auth_params: crate::auth::oidc::provider::parse_auth_params(
                        &self.oidc_auth_params,
                    )?,
                    ca_pem: self.oidc_ca_file.as_ref().map(read).transpose()?,
                    post_logout_redirect_url: self.oidc_post_logout_redirect_url.clone(),
                };
                Ok(Some(crate::auth::oidc::OidcProvider::new(settings)?))
            }
            (IdentityMode::Oidc, _) => Err(IdentityConfigError::OidcIncomplete),
            (_, (None, None, None)) => Ok(None),
            _ => Err(IdentityConfigError::OidcOutsideOidcMode),
        }
    }
}

/// `--api-protocol`'s parser: one of [`ApiProtocol::NAMES`], listed in `--help` (the
/// protocol is the cluster layer's, which knows nothing of flags).
fn api_protocol() -> impl clap::builder::TypedValueParser<Value = ApiProtocol> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(ApiProtocol::NAMES)
        .map(|name| name.parse().unwrap_or_default())
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
        for mode in [IdentityMode::Token, IdentityMode::Oidc] {
            assert!(local_exposure(mode, at("0.0.0.0:3000"), true).is_none());
        }
    }
}
