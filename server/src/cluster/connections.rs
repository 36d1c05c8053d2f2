//! Connections to the API server that every person's requests share. Each request
//! carries its own person's token, which the API server checks per request, so one
//! connection can carry anyone's requests.
//!
//! Over HTTP/2, which the API server offers over TLS, one connection carries up to
//! [`STREAMS_PER_CONNECTION`] requests at once. A thousand people's two watches each,
//! open for minutes, then take twenty connections instead of two thousand, each of
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

/// Requests one connection carries at once. kube-apiserver allows 1,000 streams on a
/// connection, a Go server 250 by default: far enough below either that no request
/// waits for a stream, few enough connections that each carries many.
pub const STREAMS_PER_CONNECTION: usize = 100;
/// How much of one response may arrive before Portico reads it. A watch's reader
/// keeps up, so this is what a stalled one could hold; a list streams at this window
/// per round trip (on a cluster's network, tens of MB/s).
const STREAM_WINDOW: u32 = 128 * 1024;
/// Every stream's window fits in the connection's, so one person's stalled stream
/// never holds up another's.
const CONNECTION_WINDOW: u32 = STREAM_WINDOW * STREAMS_PER_CONNECTION as u32;
/// A connection is pinged when quiet this long, and given up when a ping goes
/// unanswered as long: its watches then end with an error and start again, as when
/// the API server restarts.
const KEEP_ALIVE: Duration = Duration::from_secs(30);
const KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(20);
/// Times a request moves to another connection when the one it was given is closing
/// (the API server sends GOAWAY at random with `--goaway-chance`) before it was sent.
const REQUEUES: usize = 3;

/// How Portico reaches the API server: TCP, TLS with the server's CA and name, and
/// kube's timeouts. Never a client certificate (see [`super::pool`]).
pub type Connector = hyper_timeout::TimeoutConnector<hyper_rustls::HttpsConnector<HttpConnector>>;
type Http1 = hyper_util::client::legacy::Client<Connector, Body>;

/// Every person's requests to one API server: a tower service for kube's client.
#[derive(Clone)]
pub struct Connections(Arc<Shared>);

struct Shared {
    /// Offers only HTTP/2 (ALPN `h2`); `None` when HTTP/2 is never tried.
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
    #[error("the API server did not choose HTTP/2")]
    NoHttp2,
    #[error(transparent)]
    Failed(BoxError),
}

impl Connections {
    /// `http2` connects offering only HTTP/2; `http1` is the pool for everything else.
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
    /// idle connection at most: the others close as their last answer is read.
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

    async fn send(&self, mut request: Request<Body>) -> Result<Response<ResponseBody>, BoxError> {
        if let Some(connector) = self.http2_for(request.uri()) {
            // Owned: the request's body may not be borrowed across an await.
            let uri = request.uri().clone();
            for _ in 0..REQUEUES {
                let stream = self.reserve();
                let connection = &stream.0;
                let opened = connection
                    .sender
                    .get_or_try_init(|| handshake(Arc::downgrade(connection), connector, &uri))
                    .await;
                let mut sender = match opened {
                    Ok(sender) => sender.clone(),
                    Err(ConnectError::NoHttp2) => {
                        connection.close();
                        self.http1_only.store(true, Ordering::Release);
                        break;
                    }
                    Err(ConnectError::Failed(error)) => {
                        connection.close();
                        return Err(error);
                    }
                };
                match sender.try_send_request(request).await {
                    Ok(response) => {
                        return Ok(response.map(|body| ResponseBody {
                            body,
                            stream: Some(stream),
                        }));
                    }
                    // The connection may be going away (GOAWAY) while its streams
                    // finish: later requests go to another.
                    Err(mut refused) => {
                        connection.close();
                        match refused.take_message() {
                            Some(unsent) => request = unsent,
                            None => return Err(refused.into_error().into()),
                        }
                    }
                }
            }
        }
        let response = self.http1.request(request).await?;
        Ok(response.map(|body| ResponseBody { body, stream: None }))
    }
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
