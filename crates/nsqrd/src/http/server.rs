//! The listener: accept loop, one task per connection on a serving thread (`workers`; at most
//! `--http-max-connections`; the others wait to be accepted), HTTP/1.1 with keep-alive and the connection time limits
//! (`--http-idle-timeout`, `--http-read-timeout`, `--http-write-timeout`), and a graceful stop:
//! when `shutdown` resolves the listener closes, idle connections close, requests in progress
//! get a bounded grace period to finish. The same loop serves HTTPS: each accepted connection
//! then does its TLS handshake (bounded) in its own task first.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use nsq_common::http::server;
use nsq_common::net::{self, Connections, StopSignal, SHUTDOWN_GRACE};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpStream, UnixStream};
use tokio_rustls::TlsAcceptor;

use super::service::handle;
use super::workers::Workers;
use super::{HttpState, RequestCtx};
use crate::listener::{Accepted, Listener};

/// Go's default TLS handshake bound for HTTPS servers is none; ours is this.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Serve HTTP (HTTPS with `tls`) on `listener` until `shutdown` resolves; connections run on
/// `workers`' threads.
pub async fn serve(
    listener: Listener,
    state: Arc<HttpState>,
    tls: Option<TlsAcceptor>,
    workers: Arc<Workers>,
    shutdown: impl Future<Output = ()>,
) {
    let on_accept = |accepted: Accepted, conns: &mut Connections| {
        tracing::debug!("HTTP: connection from {}", accepted.remote_address());
        let (state, stop) = (Arc::clone(&state), conns.stop_signal());
        let Some(conn) = Handover::take(accepted) else {
            return;
        };
        let tls = tls.clone();
        conns.spawn_on(
            async move {
                match conn.resume() {
                    Ok(Resumed::Tcp(s, peer)) => match tls {
                        None => serve_connection(s, state, stop, Some(peer)).await,
                        Some(acceptor) => serve_tls(acceptor, s, peer, state, stop).await,
                    },
                    // The HTTPS listener is TCP only.
                    Ok(Resumed::Unix(s)) => serve_connection(s, state, stop, None).await,
                    Err(e) => tracing::error!("HTTP: cannot take over a connection - {e}"),
                }
            },
            workers.next(),
        );
    };
    let limit = net::Limit {
        max: state.settings.max_connections,
        on_full: |max| {
            tracing::warn!("HTTP: {max} connections open (--http-max-connections); new ones wait")
        },
    };
    let conns = net::accept_bounded(
        shutdown,
        limit,
        || listener.accept(),
        on_accept,
        |e| tracing::warn!("HTTP: accept failed: {e}"),
    )
    .await;
    drop(listener);
    let cut = conns.shutdown(SHUTDOWN_GRACE).await;
    if cut > 0 {
        tracing::warn!("HTTP: {cut} connection(s) cut at shutdown");
    }
}

/// The TLS handshake (bounded), then the connection.
async fn serve_tls(
    acceptor: TlsAcceptor,
    s: TcpStream,
    peer: SocketAddr,
    state: Arc<HttpState>,
    stop: StopSignal,
) {
    match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(s)).await {
        Ok(Ok(tls)) => serve_connection(tls, state, stop, Some(peer)).await,
        Ok(Err(e)) => tracing::debug!("HTTPS: TLS handshake with {peer} failed - {e}"),
        Err(_) => tracing::debug!("HTTPS: TLS handshake with {peer} timed out"),
    }
}

/// An accepted connection on its way to a serving thread: a socket registers with one
/// runtime's reactor, so it leaves the accepting runtime's as a std socket and joins the
/// serving thread's there.
enum Handover {
    Tcp(std::net::TcpStream, SocketAddr),
    Unix(std::os::unix::net::UnixStream),
}

enum Resumed {
    Tcp(TcpStream, SocketAddr),
    Unix(UnixStream),
}

impl Handover {
    fn take(accepted: Accepted) -> Option<Handover> {
        let taken = match accepted {
            Accepted::Tcp(s, peer) => s.into_std().map(|s| Handover::Tcp(s, peer)),
            Accepted::Unix(s) => s.into_std().map(Handover::Unix),
        };
        taken
            .map_err(|e| tracing::error!("HTTP: cannot hand over a connection - {e}"))
            .ok()
    }

    /// On the serving thread.
    fn resume(self) -> std::io::Result<Resumed> {
        Ok(match self {
            Handover::Tcp(s, peer) => Resumed::Tcp(TcpStream::from_std(s)?, peer),
            Handover::Unix(s) => Resumed::Unix(UnixStream::from_std(s)?),
        })
    }
}

/// Serve one connection (plain TCP, or a TLS stream for an HTTPS listener) until the client
/// closes it or the listener stops. Each request's handler gets the peer's address.
async fn serve_connection<I>(
    io: I,
    state: Arc<HttpState>,
    stop: StopSignal,
    peer: Option<SocketAddr>,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let timeouts = state.settings.timeouts;
    let handler = move |req: hyper::Request<hyper::body::Incoming>, deadline| {
        handle(Arc::clone(&state), req, RequestCtx { peer, deadline })
    };
    if let Err(e) = server::serve_connection(io, handler, stop, timeouts).await {
        tracing::debug!("HTTP: connection error: {e}");
    }
}
