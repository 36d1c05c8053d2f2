//! Connections to the API server that every person's requests share. Each request
//! carries its own person's token, which the API server checks per request, so one
//! connection can carry anyone's requests.
//!
//! Over HTTP/2, which the API server offers over TLS, one connection carries up to
//! [`STREAMS_PER_CONNECTION`] requests at once. A thousand people's two watches each,
//! open for minutes, then take 32 connections instead of two thousand, each of
//! which held its own TLS state, read buffer and dispatch (about 40 KB a watch).
//! hyper's pooled client keeps a single HTTP/2 connection per server and queues
//! requests past what the server allows on it; a watch does not end for minutes, so
//! the request after them would wait that long. This pool opens another connection
//! instead. Without HTTP/2 (plain HTTP, or a server or proxy that does not offer it)
//! requests go over HTTP/1.1, a connection per request in flight.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use http::{Request, Response, Uri};
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper::client::conn::http2;
use hyper_util::client::legacy::connect::{Connection as _, HttpConnector};
use hyper_util::rt::{TokioExecutor, TokioTimer};
use kube::client::Body;
use tower::{BoxError, Service, ServiceExt as _};

/// Requests one connection carries at once. It must not be more than the server
/// allows: past that, hyper holds the next request and every one after it on that
/// connection until a stream ends, which a watch does not do for minutes.
/// kube-apiserver allows 1,000, a Go server 250, nginx 128 and HAProxy 100.
pub const STREAMS_PER_CONNECTION: usize = 64;
/// How much of one response may arrive before Portico reads it (HTTP/2's default).
/// Only what a reader has not yet taken is held, but when Portico falls behind every
/// stream holds its window: measured at a thousand people on a saturated machine, a
/// 1 MB window took Portico from 193 to 230 MB (while it cost a big list fewer flow
/// control round trips), and 64 KB bounds what 2,000 watches can hold to 128 MB.
const STREAM_WINDOW: u32 = 64 * 1024;
/// Every stream's window fits in the connection's, so one person's stalled stream
/// never holds up another's.
const CONNECTION_WINDOW: u32 = STREAM_WINDOW * STREAMS_PER_CONNECTION as u32;
/// A connection carrying requests is pinged when quiet this long, and given up when
/// a ping goes unanswered for [`KEEP_ALIVE_TIMEOUT`]: its watches then end with an
/// error and start again, as when the API server restarts.
const KEEP_ALIVE: Duration = Duration::from_secs(30);
const KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(20);
/// Connections a request is tried on, when the one it was given closed before taking
/// it (the API server sends GOAWAY at random with `--goaway-chance`, and to a
/// connection left idle).
const ATTEMPTS: usize = 3;

/// How Portico reaches the API server: TCP, TLS with the server's CA and name, and
/// kube's timeouts. Never a client certificate (see [`super::pool`]).
pub type Connector = hyper_timeout::TimeoutConnector<hyper_rustls::HttpsConnector<HttpConnector>>;
type Http1 = hyper_util::client::legacy::Client<Connector, Body>;

/// How people's requests reach the API server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ApiProtocol {
    /// A few connections shared by everyone, up to [`STREAMS_PER_CONNECTION`]
    /// requests each (HTTP/1.1 where the server does not offer HTTP/2).
    #[default]
    Http2,
    /// A connection per request in flight.
    Http1,
}

impl ApiProtocol {
    /// The names flags and settings give the protocols.
    pub const NAMES: [&'static str; 2] = ["http2", "http1"];
}

impl std::str::FromStr for ApiProtocol {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, String> {
        match name {
            "http2" => Ok(Self::Http2),
            "http1" => Ok(Self::Http1),
            other => Err(format!("{other:?} is not a protocol: http2 or http1")),
        }
    }
}

/// Every person's requests to one API server: a tower service for kube's client.
#[derive(Clone)]
pub struct Connections(Arc<Shared>);

struct Shared {
    /// Offers HTTP/2 first (ALPN `h2`, then `http/1.1`); `None` when HTTP/2 is never
    /// tried.
    http2: Option<Connector>,
    http1: Http1,
    /// Set once the API server finished TLS without choosing HTTP/2.
    http1_only: AtomicBool,
    open: Mutex<Vec<Arc<Multiplexed>>>,
}

/// One HTTP/2 connection, opened by the first request given it.
#[derive(Default)]
struct Multiplexed {
    /// Requests given this connection whose answers are still being read.
    streams: AtomicUsize,
    closed: AtomicBool,
    sender: tokio::sync::OnceCell<http2::SendRequest<Body>>,
    /// Why the handshake failed, for the requests that waited on it.
    failure: std::sync::OnceLock<String>,
}

impl Multiplexed {
    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire) || self.sender.get().is_some_and(|s| s.is_closed())
    }

    fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }
}

/// A request's place on a connection, given back when its answer has been read or
/// dropped.
struct Stream(Arc<Multiplexed>);

impl Drop for Stream {
    fn drop(&mut self) {
        self.0.streams.fetch_sub(1, Ordering::AcqRel);
    }
}

#[derive(Debug, thiserror::Error)]
enum ConnectError {
    #[error("the connection failed to open")]
    Closed,
    #[error("the API server did not choose HTTP/2")]
    NoHttp2,
    #[error(transparent)]
    Failed(BoxError),
}

impl Connections {
    /// `http2` connects offering HTTP/2; `http1` is the pool for everything else.
    pub fn new(http2: Option<Connector>, http1: Http1) -> Self {
        Self(Arc::new(Shared {
            http2,
            http1,
            http1_only: AtomicBool::new(false),
            open: Mutex::default(),
        }))
    }

    /// HTTP/2 connections open now, and the requests they carry.
    pub fn multiplexed(&self) -> (usize, usize) {
        let open = lock(&self.0.open);
        let streams = open.iter().map(|c| c.streams.load(Ordering::Acquire)).sum();
        (open.len(), streams)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Shared {
    fn http2_for(&self, uri: &Uri) -> Option<&Connector> {
        let tls = uri.scheme() == Some(&http::uri::Scheme::HTTPS);
        (tls && !self.http1_only.load(Ordering::Acquire))
            .then_some(self.http2.as_ref())
            .flatten()
    }

    /// A place on the oldest open connection with room, else on a new one. Keeps one
    /// idle connection at most: the others are let go here, and close.
    fn reserve(&self) -> Stream {
        let mut open = lock(&self.open);
        let mut idle_kept = false;
        open.retain(|connection| {
            if connection.is_closed() {
                return false;
            }
            let idle = connection.streams.load(Ordering::Acquire) == 0;
            let keep = !(idle && idle_kept);
            idle_kept |= idle;
            keep
        });
        let roomy = open
            .iter()
            .find(|c| c.streams.load(Ordering::Acquire) < STREAMS_PER_CONNECTION)
            .cloned();
        let connection = roomy.unwrap_or_else(|| {
            let new = Arc::new(Multiplexed::default());
            open.push(new.clone());
            new
        });
        // Under the lock, so that no connection is given more than its share.
        connection.streams.fetch_add(1, Ordering::AcqRel);
        Stream(connection)
    }

    async fn send(&self, request: Request<Body>) -> Result<Response<ResponseBody>, BoxError> {
        // Terminals never come here: they have a client of their own
        // (`ClientPool::for_terminal`), as a WebSocket takes a whole connection.
        match self.http2_for(request.uri()) {
            Some(connector) => self.send_http2(connector, request).await,
            None => self.send_http1(request).await,
        }
    }

    async fn send_http1(&self, request: Request<Body>) -> Result<Response<ResponseBody>, BoxError> {
        let response = self.http1.request(request).await?;
        Ok(response.map(|body| ResponseBody { body, stream: None }))
    }

    /// Sends `request` on a connection with room. A request the server did not take
    /// (the connection was closing, or it refused the stream) is sent again on
    /// another, as Go's client does, at most [`ATTEMPTS`] times in all.
    async fn send_http2(
        &self,
        connector: &Connector,
        mut request: Request<Body>,
    ) -> Result<Response<ResponseBody>, BoxError> {
        // Owned: the request's body may not be borrowed across an await.
        let uri = request.uri().clone();
        let mut refused: BoxError = "the API server closed every connection tried".into();
        for _ in 0..ATTEMPTS {
            // Another request found that the server does not speak HTTP/2.
            if self.http1_only.load(Ordering::Acquire) {
                return self.send_http1(request).await;
            }
            let stream = self.reserve();
            let connection = &stream.0;
            let opened = connection
                .sender
                .get_or_try_init(|| async {
                    // Waiting behind a handshake that failed: take another connection
                    // rather than each try this one in turn.
                    if connection.is_closed() {
                        return Err(ConnectError::Closed);
                    }
                    handshake(Arc::downgrade(connection), connector, &uri)
                        .await
                        .inspect_err(|error| {
                            let _ = connection.failure.set(error.to_string());
                            connection.close();
                        })
                })
                .await;
            let mut sender = match opened {
                Ok(sender) => sender.clone(),
                Err(ConnectError::Closed) => {
                    if let Some(failure) = connection.failure.get() {
                        refused = failure.clone().into();
                    }
                    continue;
                }
                Err(ConnectError::NoHttp2) => {
                    self.http1_only.store(true, Ordering::Release);
                    return self.send_http1(request).await;
                }
                Err(ConnectError::Failed(error)) => return Err(error),
            };
            let spare = duplicate(&request);
            let idempotent = !matches!(*request.method(), http::Method::POST | http::Method::PATCH);
            match sender.try_send_request(request).await {
                Ok(response) => {
                    return Ok(response.map(|body| ResponseBody {
                        body,
                        stream: Some(stream),
                    }));
                }
                Err(mut failed) => {
                    // Never sent: the connection is closing.
                    if let Some(unsent) = failed.take_message() {
                        connection.close();
                        request = unsent;
                        continue;
                    }
                    let error = failed.into_error();
                    match spare {
                        Some(spare) if not_taken(&error, idempotent) => {
                            connection.close();
                            request = spare;
                            refused = error.into();
                        }
                        _ => return Err(error.into()),
                    }
                }
            }
        }
        Err(refused)
    }
}

/// A copy of `request` to send again, if its body can be copied (kube's bodies are
/// bytes in memory).
fn duplicate(request: &Request<Body>) -> Option<Request<Body>> {
    let mut copy = Request::new(request.body().try_clone()?);
    *copy.method_mut() = request.method().clone();
    *copy.uri_mut() = request.uri().clone();
    *copy.version_mut() = request.version();
    *copy.headers_mut() = request.headers().clone();
    Some(copy)
}

/// Whether the server did not take the request, so that sending it again is safe: a
/// stream refused, or one past the last it will serve before it goes away. hyper can
/// report a GOAWAY to a request whose stream the server did take (it went out as the
/// GOAWAY came in), so after a GOAWAY only an `idempotent` request is sent again.
fn not_taken(error: &hyper::Error, idempotent: bool) -> bool {
    let mut cause = std::error::Error::source(error);
    while let Some(error) = cause {
        if let Some(h2) = error.downcast_ref::<h2::Error>() {
            let reason = h2.reason();
            return reason == Some(h2::Reason::REFUSED_STREAM)
                || (idempotent && h2.is_go_away() && reason == Some(h2::Reason::NO_ERROR));
        }
        cause = error.source();
    }
    false
}

/// Opens an HTTP/2 connection to `uri`'s server, driven by a task of its own that
/// marks `connection` closed when it ends.
async fn handshake(
    connection: Weak<Multiplexed>,
    connector: &Connector,
    uri: &Uri,
) -> Result<http2::SendRequest<Body>, ConnectError> {
    let io = connector
        .clone()
        .oneshot(uri.clone())
        .await
        .map_err(ConnectError::Failed)?;
    if !io.connected().is_negotiated_h2() {
        return Err(ConnectError::NoHttp2);
    }
    let (sender, driver) = http2::Builder::new(TokioExecutor::new())
        .timer(TokioTimer::new())
        .initial_stream_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .keep_alive_interval(KEEP_ALIVE)
        .keep_alive_timeout(KEEP_ALIVE_TIMEOUT)
        .handshake(io)
        .await
        .map_err(|error| ConnectError::Failed(error.into()))?;
    tracing::debug!("opened an HTTP/2 connection to the API server");
    tokio::spawn(async move {
        if let Err(error) = driver.await {
            tracing::debug!(%error, "an HTTP/2 connection to the API server failed");
        }
        if let Some(connection) = connection.upgrade() {
            connection.close();
        }
    });
    Ok(sender)
}

impl Service<Request<Body>> for Connections {
    type Response = Response<ResponseBody>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Self::Response, BoxError>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let shared = self.0.clone();
        Box::pin(async move { shared.send(request).await })
    }
}

/// An answer's body, holding its request's place on its connection until it has
/// been read to the end or dropped.
pub struct ResponseBody {
    body: Incoming,
    stream: Option<Stream>,
}

impl http_body::Body for ResponseBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let frame = std::pin::Pin::new(&mut self.body).poll_frame(cx);
        if matches!(frame, Poll::Ready(None | Some(Err(_)))) {
            self.stream = None;
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
