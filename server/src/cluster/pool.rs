//! A kube client per caller, so that every read and write a person triggers is made
//! with their own Kubernetes identity: their own token, never the portal's credentials.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use kube::config::AuthInfo;

use super::caller::Caller;

/// How long a built client is reused.
const CLIENT_TTL: Duration = Duration::from_secs(600);
/// Bound on cached clients (oldest dropped first).
const MAX_CLIENTS: usize = 512;
/// How large the read buffer of a person's connection may grow. hyper doubles it, up
/// to 400 KB, each time a read fills it, as a watch's does when the portal reads it
/// late; at a thousand people each with two watches that was most of the memory.
const READ_BUFFER_MAX: usize = 16 * 1024;

pub struct ClientPool {
    /// The portal's configuration: the server and CA a person's token is sent to.
    /// Without it only the portal's own identity is available (local mode).
    base: Option<kube::Config>,
    portal: kube::Client,
    clients: Mutex<HashMap<Caller, (kube::Client, Instant)>>,
}

impl ClientPool {
    pub fn new(base: Option<kube::Config>, portal: kube::Client) -> Self {
        Self {
            base,
            portal,
            clients: Mutex::default(),
        }
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

    /// A client acting as `caller`, built fresh and not kept (sign-in checks).
    pub fn build_for(&self, caller: &Caller) -> Result<kube::Client, kube::Error> {
        match self.config_for(caller) {
            Some(config) => kube::Client::try_from(config),
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
        let mut clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((client, at)) = clients.get(caller)
            && at.elapsed() < CLIENT_TTL
        {
            return Ok(client.clone());
        }
        let client = person_client(config)?;
        if clients.len() >= MAX_CLIENTS {
            clients.retain(|_, (_, at)| at.elapsed() < CLIENT_TTL);
            if clients.len() >= MAX_CLIENTS
                && let Some(oldest) = clients
                    .iter()
                    .min_by_key(|(_, (_, at))| *at)
                    .map(|(k, _)| k.clone())
            {
                clients.remove(&oldest);
            }
        }
        clients.insert(caller.clone(), (client.clone(), Instant::now()));
        Ok(client)
    }
}

/// A client for one person's token, as kube builds one (the API server's address and
/// CA, retries of 429/503/504, the token) but with [`READ_BUFFER_MAX`]. Through a
/// proxy, kube's own builder (which knows proxies) is used as it is.
fn person_client(config: kube::Config) -> Result<kube::Client, kube::Error> {
    use hyper_util::client::legacy::connect::HttpConnector;
    use kube::client::ConfigExt;
    use kube::client::retry::RetryPolicy;
    if config.proxy_url.is_some() {
        return kube::Client::try_from(config);
    }
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_connect_timeout(config.connect_timeout);
    let https = config.rustls_https_connector_with_connector(http)?;
    let mut builder =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new());
    builder.http1_max_buf_size(READ_BUFFER_MAX);
    let retry = config
        .default_retry
        .then(|| tower::retry::RetryLayer::new(RetryPolicy::server_retry()));
    let service = tower::ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(retry)
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_err(tower::BoxError::from)
        .service(builder.build(https));
    Ok(kube::Client::new(service, config.default_namespace))
}
