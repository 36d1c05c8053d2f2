//! Who is at the other end of a connection: the listener Portico serves on records
//! each connection's remote address, which handlers read as `ConnectInfo<Peer>`
//! (sign-in attempts are counted per client). Portico serves plain HTTP; TLS ends at
//! the Ingress in front.

use std::net::SocketAddr;

use tokio::net::{TcpListener, TcpStream};

/// The remote end of a connection.
#[derive(Debug, Clone)]
pub struct Peer {
    pub addr: SocketAddr,
}

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, PeerListener>>
    for Peer
{
    fn connect_info(stream: axum::serve::IncomingStream<'_, PeerListener>) -> Self {
        stream.remote_addr().clone()
    }
}

/// Accepts TCP connections with `TCP_NODELAY`, each with its [`Peer`].
pub struct PeerListener(pub TcpListener);

impl axum::serve::Listener for PeerListener {
    type Io = TcpStream;
    type Addr = Peer;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let (tcp, addr) = axum::serve::Listener::accept(&mut self.0).await;
        // Live tables write many small SSE messages: without TCP_NODELAY, Nagle's
        // algorithm and delayed ACKs hold each one back for ~40 ms.
        if let Err(error) = tcp.set_nodelay(true) {
            tracing::debug!(%error, "could not set TCP_NODELAY");
        }
        (tcp, Peer { addr })
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(Peer {
            addr: self.0.local_addr()?,
        })
    }
}
