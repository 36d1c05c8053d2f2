//! A kube client per caller, so that every read and write a person triggers is made
//! with their own Kubernetes identity: their own token, never the portal's credentials.

use std::sync::OnceLock;
use std::time::Duration;

use kube::config::AuthInfo;

use super::caller::Caller;
use super::connections::{ApiProtocol, Connections, Connector};
use super::request_metrics::ApiRequestsLayer;
use super::request_trace::TracedRequestsLayer;

/// How long a built client is reused.
const CLIENT_TTL: Duration = Duration::from_secs(600);
/// Bound on cached clients (the least used dropped first). A client holds only its
/// person's token (the connections are shared), and rebuilding one for every request
/// of a thousand people was most of their sign-in checks' work.
const MAX_CLIENTS: u64 = 4096;
/// How large the read buffer of a person's HTTP/1.1 connection may grow. hyper
/// doubles it, up to 400 KB, each time a read fills it, as a watch's does when the
/// portal reads it late; at a thousand people each with two watches that was most of
/// the memory.
const READ_BUFFER_MAX: usize = 16 * 1024;

pub struct ClientPool {
    /// The portal's configuration: the server and CA a person's token is sent to.
    /// Without it only the portal's own identity is available (local mode).
    base: Option<kube::Config>,
    portal: kube::Client,
    /// Built once per caller however many ask at once.
    clients: moka::sync::Cache<Caller, kube::Client>,
    protocol: ApiProtocol,
    /// Built with the first person's client.
    transport: OnceLock<Transport>,
    /// Counts people's requests (the portal's metrics; a test's own families).
    counted: ApiRequestsLayer,
}

impl ClientPool {
    /// People's requests are counted by `counted` (the portal's metrics, or a test's
    /// own families).
    pub fn new(
        base: Option<kube::Config>,
        portal: kube::Client,
        counted: ApiRequestsLayer,
    ) -> Self {
        Self {
            base,
            portal,
            clients: moka::sync::Cache::builder()
                .max_capacity(MAX_CLIENTS)
                .time_to_live(CLIENT_TTL)
                .build(),
            protocol: ApiProtocol::default(),
            transport: OnceLock::new(),
            counted,
        }
    }

    /// People's requests reach the API server by `protocol`.
    pub fn with_protocol(mut self, protocol: ApiProtocol) -> Self {
        self.protocol = protocol;
        self
    }

    /// The portal's own client (health checks, the CRD catalog, the reconciler).
    pub fn portal(&self) -> kube::Client {
        self.portal.clone()
    }

    fn config_for(&self, caller: &Caller) -> Option<kube::Config> {
        let Caller::Bearer { token, .. } = caller else {
            return None;
        };
        let mut config = self.base.clone()?;
        // Only the user's token: none of the portal's own credentials.
        config.auth_info = AuthInfo {
            token: Some(token.0.clone().into()),
            ..Default::default()
        };
        Some(config)
    }

    /// A client acting as `caller`, not kept (sign-in checks).
    pub fn build_for(&self, caller: &Caller) -> Result<kube::Client, kube::Error> {
        match self.config_for(caller) {
            Some(config) => self.person_client(config),
            None => self.for_caller(caller),
        }
    }

    /// The client that acts as `caller`.
    pub fn for_caller(&self, caller: &Caller) -> Result<kube::Client, kube::Error> {
        let Some(config) = self.config_for(caller) else {
            if *caller == Caller::Portal {
                return Ok(self.portal.clone());
            }
            // Never fall back to the portal's identity for a person.
            return Err(kube::Error::Service(
                "Portico has no configuration to act as a user".into(),
            ));
        };
        self.clients
            .try_get_with_by_ref(caller, || self.person_client(config))
            // Shared with whoever waited for the same build: theirs is its text.
            .map_err(|shared| {
                std::sync::Arc::try_unwrap(shared)
                    .unwrap_or_else(|shared| kube::Error::Service(shared.to_string().into()))
            })
    }

    /// A client acting as `caller` for a terminal: a connection of its own (a
    /// WebSocket takes one whole) with no read timeout, since a shell may print
    /// nothing for longer than a watch may.
    pub fn for_terminal(&self, caller: &Caller) -> Result<kube::Client, kube::Error> {
        match self.config_for(caller) {
            Some(mut config) => {
                config.read_timeout = None;
                kube::Client::try_from(config)
            }
            None => self.for_caller(caller),
        }
    }

    /// The HTTP/2 connections people's requests share now, and the requests on them
    /// (none before the first person's request).
    pub fn shared_connections(&self) -> (usize, usize) {
        self.transport
            .get()
            .map_or((0, 0), Connections::multiplexed)
    }

    /// A client for a person's `config` over the shared transport. Through a proxy,
    /// kube's own builder is used as it is (without the bound or the shared pool; this
    /// build of kube knows no proxies, so it refuses, as the portal's own client does).
    fn person_client(&self, config: kube::Config) -> Result<kube::Client, kube::Error> {
        if config.proxy_url.is_some() {
            return kube::Client::try_from(config);
        }
        let shared = match self.transport.get() {
            Some(shared) => shared.clone(),
            None => {
                let built = transport(&config, self.protocol)?;
                self.transport.get_or_init(|| built).clone()
            }
        };
        client_over(shared, config, &self.counted)
    }
}

/// Connections to the API server, shared by every person's client (see
/// [`Connections`]). What is per person is only the token; the TLS configuration and
/// the connections are not kept a thousand times.
type Transport = Connections;

/// The transport for `config`'s API server: its address, CA and timeouts, as kube
/// builds them, with [`READ_BUFFER_MAX`] over HTTP/1.1. Never credentials: a client
/// certificate here would be every person's, as the API server trusts it before any
/// token.
fn transport(config: &kube::Config, protocol: ApiProtocol) -> Result<Transport, kube::Error> {
    use kube::client::ConfigExt;
    let mut anonymous = config.clone();
    anonymous.auth_info = AuthInfo::default();
    let http1 = anonymous.rustls_https_connector_with_connector(http_connector())?;
    let mut builder =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new());
    builder.http1_max_buf_size(READ_BUFFER_MAX);
    let http1 = builder.build(with_timeouts(http1, config));
    let http2 = match protocol {
        ApiProtocol::Http2 => Some(with_timeouts(http2_connector(&anonymous)?, config)),
        ApiProtocol::Http1 => None,
    };
    Ok(Connections::new(http2, http1))
}

fn http_connector() -> hyper_util::client::legacy::connect::HttpConnector {
    let mut http = hyper_util::client::legacy::connect::HttpConnector::new();
    http.enforce_http(false);
    http
}

/// TLS as kube configures it for `config` (CA, server name), offering HTTP/2 first.
fn http2_connector(
    config: &kube::Config,
) -> Result<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    kube::Error,
> {
    use kube::client::ConfigExt;
    let builder = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(config.rustls_client_config()?)
        .https_or_http();
    let builder = match &config.tls_server_name {
        Some(name) => {
            let name = rustls_pki_types::ServerName::try_from(name.clone()).map_err(|error| {
                kube::Error::Service(format!("invalid TLS server name {name:?}: {error}").into())
            })?;
            builder.with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(name))
        }
        None => builder,
    };
    // HTTP/1.1 offered too: a Go server without HTTP/2 refuses a handshake that
    // offers only `h2`, where it chooses HTTP/1.1 here and Portico then uses it.
    Ok(builder
        .enable_http1()
        .enable_http2()
        .wrap_connector(http_connector()))
}

fn with_timeouts(
    https: hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    config: &kube::Config,
) -> Connector {
    let mut connector = hyper_timeout::TimeoutConnector::new(https);
    connector.set_connect_timeout(config.connect_timeout);
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    connector.set_reset_reader_on_write(config.reset_reader_on_write);
    connector
}

/// A client for one person's token over `transport`, as kube builds one (the API
/// server's address, retries of 429/503/504, the token).
fn client_over(
    transport: Transport,
    config: kube::Config,
    counted: &ApiRequestsLayer,
) -> Result<kube::Client, kube::Error> {
    use kube::client::ConfigExt;
    use kube::client::retry::RetryPolicy;
    let retry = config
        .default_retry
        .then(|| tower::retry::RetryLayer::new(RetryPolicy::server_retry()));
    // Counted outermost, as kube's `with_layer` places it: one count per request as
    // made, after retries, with its path before the server's address is prepended.
    let service = tower::ServiceBuilder::new()
        .layer(TracedRequestsLayer)
        .layer(counted.clone())
        .layer(config.base_uri_layer())
        .option_layer(retry)
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_err(tower::BoxError::from)
        .service(transport);
    Ok(kube::Client::new(service, config.default_namespace))
}
