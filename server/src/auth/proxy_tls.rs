//! How proxy mode knows a request came through the authenticating proxy: Portico
//! serves TLS and believes identity headers only on a connection whose client
//! certificate chains to the proxy CA and names an allowed proxy (kube-apiserver's
//! requestheader scheme). An address proves nothing: any pod in a range can send
//! headers, but only the proxy holds its key.
//!
//! A client certificate is asked for, not demanded, so kubelet probes (which present
//! none) still reach `/healthz`; every other path refuses a connection without one.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::server::WebPkiClientVerifier;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, mpsc};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// A TLS handshake that has not finished by then is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Handshakes in progress at once; more wait in the kernel's accept queue.
const MAX_HANDSHAKES: usize = 256;

#[derive(Debug, thiserror::Error)]
pub enum ProxyTlsError {
    #[error("cannot read {path}: {source}")]
    Pem {
        path: String,
        source: rustls::pki_types::pem::Error,
    },
    #[error("{0} holds no certificate")]
    NoCertificate(String),
    #[error("the proxy client CA: {0}")]
    ClientCa(String),
    #[error("TLS settings: {0}")]
    Tls(#[from] rustls::Error),
    #[error("proxy mode needs --proxy-allowed-names: which client certificates are the proxy")]
    NoAllowedNames,
    #[error("{0:?} is not a DNS name a certificate can carry")]
    BadName(String),
}

/// Files and names for serving TLS to the authenticating proxy.
#[derive(Debug, Clone)]
pub struct ProxyTlsFiles {
    /// Portico's serving certificate chain (PEM).
    pub cert: PathBuf,
    /// Its private key (PEM).
    pub key: PathBuf,
    /// The CA that signs the proxy's client certificate (PEM).
    pub client_ca: PathBuf,
    /// DNS names (subject alternative names) a proxy certificate must carry one of.
    pub allowed_names: Vec<String>,
}

/// TLS serving settings with the proxy check.
#[derive(Clone)]
pub struct ProxyTls {
    acceptor: TlsAcceptor,
    allowed: Arc<Vec<ServerName<'static>>>,
}

fn pem_error(path: &Path) -> impl FnOnce(rustls::pki_types::pem::Error) -> ProxyTlsError + '_ {
    move |source| ProxyTlsError::Pem {
        path: path.display().to_string(),
        source,
    }
}

fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, ProxyTlsError> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(pem_error(path))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(pem_error(path))?;
    if certs.is_empty() {
        return Err(ProxyTlsError::NoCertificate(path.display().to_string()));
    }
    Ok(certs)
}

impl ProxyTls {
    pub fn load(files: &ProxyTlsFiles) -> Result<Self, ProxyTlsError> {
        let allowed = files
            .allowed_names
            .iter()
            .map(|n| n.trim())
            .filter(|n| !n.is_empty())
            .map(|n| {
                ServerName::try_from(n.to_string()).map_err(|_| ProxyTlsError::BadName(n.into()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if allowed.is_empty() {
            return Err(ProxyTlsError::NoAllowedNames);
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        for ca in certificates(&files.client_ca)? {
            roots
                .add(ca)
                .map_err(|e| ProxyTlsError::ClientCa(e.to_string()))?;
        }
        let verifier = WebPkiClientVerifier::builder_with_provider(roots.into(), provider.clone())
            .allow_unauthenticated()
            .build()
            .map_err(|e| ProxyTlsError::ClientCa(e.to_string()))?;
        let key = PrivateKeyDer::from_pem_file(&files.key).map_err(pem_error(&files.key))?;
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_client_cert_verifier(verifier)
            .with_single_cert(certificates(&files.cert)?, key)?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Self {
            acceptor: TlsAcceptor::from(Arc::new(config)),
            allowed: Arc::new(allowed),
        })
    }

    /// The allowed name the connection's client certificate carries, if any. The
    /// chain itself was verified against the proxy CA during the handshake.
    fn proxy_name(&self, stream: &TlsStream<TcpStream>) -> Option<String> {
        let leaf = stream.get_ref().1.peer_certificates()?.first()?;
        let cert = webpki::EndEntityCert::try_from(leaf).ok()?;
        self.allowed
            .iter()
            .find(|name| cert.verify_is_valid_for_subject_name(name).is_ok())
            .map(|name| name.to_str().into_owned())
    }
}

/// Who is at the other end of a connection.
#[derive(Debug, Clone)]
pub struct Peer {
    pub addr: SocketAddr,
    /// The allowed proxy name its client certificate proved; `None` for plain HTTP
    /// or a TLS client without an allowed certificate.
    pub proxy: Option<String>,
    /// Whether the connection is TLS (Portico's own listener, proxy mode).
    pub tls: bool,
}

// One impl per listener: a generic one over `Listener<Addr = Peer>` would overlap
// axum's own impl for `TapIo`.
impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, TlsListener>> for Peer {
    fn connect_info(stream: axum::serve::IncomingStream<'_, TlsListener>) -> Self {
        stream.remote_addr().clone()
    }
}

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, PlainListener>>
    for Peer
{
    fn connect_info(stream: axum::serve::IncomingStream<'_, PlainListener>) -> Self {
        stream.remote_addr().clone()
    }
}

/// Plain HTTP (local and token modes): no peer is a proxy.
pub struct PlainListener(pub TcpListener);

impl axum::serve::Listener for PlainListener {
    type Io = TcpStream;
    type Addr = Peer;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let (tcp, addr) = axum::serve::Listener::accept(&mut self.0).await;
        // Live tables write many small SSE messages: without TCP_NODELAY, Nagle's
        // algorithm and delayed ACKs hold each one back for ~40 ms.
        if let Err(error) = tcp.set_nodelay(true) {
            tracing::debug!(%error, "could not set TCP_NODELAY");
        }
        (
            tcp,
            Peer {
                addr,
                proxy: None,
                tls: false,
            },
        )
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(Peer {
            addr: self.0.local_addr()?,
            proxy: None,
            tls: false,
        })
    }
}

/// A listener whose connections are finished TLS handshakes. Handshakes run in their
/// own tasks, so a client that stalls one delays nobody else.
pub struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, Peer)>,
    local: SocketAddr,
}

impl TlsListener {
    pub fn new(listener: TcpListener, tls: ProxyTls) -> std::io::Result<Self> {
        let local = listener.local_addr()?;
        let (send, ready) = mpsc::channel(64);
        tokio::spawn(accept_loop(listener, tls, send));
        Ok(Self { ready, local })
    }
}

async fn accept_loop(
    listener: TcpListener,
    tls: ProxyTls,
    ready: mpsc::Sender<(TlsStream<TcpStream>, Peer)>,
) {
    let handshakes = Arc::new(Semaphore::new(MAX_HANDSHAKES));
    loop {
        let Ok(permit) = handshakes.clone().acquire_owned().await else {
            return;
        };
        let (tcp, addr) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                tracing::debug!(%error, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        if let Err(error) = tcp.set_nodelay(true) {
            tracing::debug!(%error, "could not set TCP_NODELAY");
        }
        let tls = tls.clone();
        let sender = ready.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let stream =
                match tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.acceptor.accept(tcp)).await {
                    Ok(Ok(stream)) => stream,
                    Ok(Err(error)) => {
                        tracing::debug!(%addr, %error, "TLS handshake refused");
                        return;
                    }
                    Err(_) => {
                        tracing::debug!(%addr, "TLS handshake timed out");
                        return;
                    }
                };
            let proxy = tls.proxy_name(&stream);
            let peer = Peer {
                addr,
                proxy,
                tls: true,
            };
            let _ = sender.send((stream, peer)).await;
        });
        if ready.is_closed() {
            return;
        }
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = Peer;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(connection) => connection,
            // The accept loop only ends when this listener is gone.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(Peer {
            addr: self.local,
            proxy: None,
            tls: true,
        })
    }
}
