//! The one WebSocket client of the integration tests and the benchmarks, on the tab's
//! live socket (`/api/live`) and a terminal's (`/api/exec`): the handshake from
//! Portico's `http://` origin (a person's cookie and a page's `Origin` when given), a
//! refused handshake's status and body, JSON (or raw) frames out, and what comes back,
//! pings and pongs skipped, waiting for ever, each frame within a time, or until a
//! deadline.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::time::Instant;
use tokio::time::error::Elapsed;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{Bytes, Message, Utf8Bytes};

/// Why a handshake or a send failed (a refused handshake is `Error::Http`).
pub use tokio_tungstenite::tungstenite::Error;

/// The tab's live socket.
pub const LIVE: &str = "/api/live";
/// A terminal's socket.
pub const EXEC: &str = "/api/exec";

/// An open socket, the client's end.
pub type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The `ws://` URL of `path` (`LIVE`, `EXEC`) on Portico's `http://` origin `base`.
pub fn url(base: &str, path: &str) -> String {
    format!("{}{path}", base.replacen("http", "ws", 1))
}

/// Opens `path` on `base`, sending `cookie` (a person's session) and `origin` (the
/// page's, as a browser does) when given: the socket, or why the handshake failed.
pub async fn open(
    base: &str,
    path: &str,
    cookie: Option<&str>,
    origin: Option<&str>,
) -> Result<Socket, Error> {
    let mut request = url(base, path).into_client_request().expect("request");
    let headers = request.headers_mut();
    if let Some(cookie) = cookie {
        headers.insert("cookie", cookie.parse().expect("header"));
    }
    if let Some(origin) = origin {
        headers.insert("origin", origin.parse().expect("header"));
    }
    tokio_tungstenite::connect_async(request)
        .await
        .map(|(socket, _)| socket)
}

/// [`open`], which must succeed.
pub async fn connect(base: &str, path: &str, cookie: Option<&str>, origin: Option<&str>) -> Socket {
    open(base, path, cookie, origin)
        .await
        .expect("the socket opens")
}

/// A refused handshake's status and body; a panic if the socket opened or the
/// handshake failed otherwise than by an HTTP answer.
pub fn refusal(result: Result<Socket, Error>) -> (u16, String) {
    match result {
        Err(Error::Http(response)) => (
            response.status().as_u16(),
            String::from_utf8_lossy(response.body().as_deref().unwrap_or_default()).into_owned(),
        ),
        Err(other) => panic!("refused otherwise than by HTTP: {other}"),
        Ok(_) => panic!("the socket opened"),
    }
}

/// Sends `message` as JSON in a text frame.
pub async fn send_json<T: Serialize + ?Sized>(socket: &mut Socket, message: &T) {
    let text = serde_json::to_string(message).expect("encode");
    socket.send(Message::text(text)).await.expect("send");
}

/// Sends `text` as it is in a text frame (what a page would never send): the caller
/// judges the outcome.
pub async fn send_text(socket: &mut Socket, text: impl Into<Utf8Bytes>) -> Result<(), Error> {
    socket.send(Message::text(text)).await
}

/// Sends `bytes` in a binary frame (a terminal's keys).
pub async fn send_binary(socket: &mut Socket, bytes: &[u8]) {
    socket
        .send(Message::binary(bytes.to_vec()))
        .await
        .expect("send");
}

/// What the server said: a text frame or a binary one.
#[derive(Debug)]
pub enum Frame {
    Text(Utf8Bytes),
    Binary(Bytes),
}

/// How long a read may wait.
#[derive(Clone, Copy)]
enum Wait {
    Forever,
    /// Each frame, pings and pongs too, within this long.
    Each(Duration),
    /// Whatever comes (pings and pongs do not count) by then.
    Until(Instant),
}

/// The next text or binary frame, pings and pongs skipped; `None` once the socket is
/// closed (a close frame, its end, or an error); `Err` once the wait is over.
async fn read(socket: &mut Socket, wait: Wait) -> Result<Option<Frame>, Elapsed> {
    loop {
        let frame = match wait {
            Wait::Forever => socket.next().await,
            Wait::Each(wait) => tokio::time::timeout(wait, socket.next()).await?,
            Wait::Until(deadline) => tokio::time::timeout_at(deadline, socket.next()).await?,
        };
        match frame {
            Some(Ok(Message::Text(text))) => return Ok(Some(Frame::Text(text))),
            Some(Ok(Message::Binary(bytes))) => return Ok(Some(Frame::Binary(bytes))),
            Some(Ok(Message::Close(_)) | Err(_)) | None => return Ok(None),
            Some(Ok(_)) => continue,
        }
    }
}

/// The next text or binary frame, however long it takes (pings and pongs skipped);
/// `None` once the socket is closed.
pub async fn next_frame(socket: &mut Socket) -> Option<Frame> {
    read(socket, Wait::Forever).await.ok().flatten()
}

/// [`next_frame`], each frame (pings and pongs too) within `wait`: `Err` when one is
/// late.
pub async fn next_frame_within(
    socket: &mut Socket,
    wait: Duration,
) -> Result<Option<Frame>, Elapsed> {
    read(socket, Wait::Each(wait)).await
}

/// [`next_frame`] by `deadline` (pings and pongs do not count): `Err` when none came.
pub async fn next_frame_by(
    socket: &mut Socket,
    deadline: Instant,
) -> Result<Option<Frame>, Elapsed> {
    read(socket, Wait::Until(deadline)).await
}

/// The next text frame, binary ones skipped, each frame within `wait` (a panic
/// otherwise); `None` once the socket is closed.
pub async fn next_text(socket: &mut Socket, wait: Duration) -> Option<Utf8Bytes> {
    loop {
        match next_frame_within(socket, wait)
            .await
            .expect("a message in time")?
        {
            Frame::Text(text) => return Some(text),
            Frame::Binary(_) => continue,
        }
    }
}

/// [`next_text`] read as JSON (a `ServerMessage`, mostly); a panic if it is not one.
pub async fn next_json<T: DeserializeOwned>(socket: &mut Socket, wait: Duration) -> Option<T> {
    let text = next_text(socket, wait).await?;
    Some(serde_json::from_str(&text).expect("a server message"))
}
