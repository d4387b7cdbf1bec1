//! The listener: accept loop, one task per connection (at most `--http-max-connections`; the
//! others wait to be accepted), HTTP/1.1 with keep-alive and the connection time limits
//! (`--http-idle-timeout`, `--http-read-timeout`, `--http-write-timeout`), and a graceful stop:
//! when `shutdown` resolves the listener closes, idle connections close, requests in progress
//! get a bounded grace period to finish. The same loop serves HTTPS: each accepted connection
//! then does its TLS handshake (bounded) in its own task first.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use nsq_common::http::server;
use nsq_common::net::{self, Connections, StopSignal, SHUTDOWN_GRACE};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::TlsAcceptor;

use super::service::handle;
use super::HttpState;
use crate::listener::{Accepted, Listener};

/// Go's default TLS handshake bound for HTTPS servers is none; ours is this.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Serve HTTP (HTTPS with `tls`) on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: Listener,
    state: Arc<HttpState>,
    tls: Option<TlsAcceptor>,
    shutdown: impl Future<Output = ()>,
) {
    let on_accept = |accepted: Accepted, conns: &mut Connections| {
        tracing::debug!("HTTP: connection from {}", accepted.remote_address());
        let (state, stop) = (Arc::clone(&state), conns.stop_signal());
        match (accepted, &tls) {
            (Accepted::Tcp(s, peer), None) => {
                conns.spawn(serve_connection(s, state, stop, Some(peer)))
            }
            (Accepted::Unix(s), None) => conns.spawn(serve_connection(s, state, stop, None)),
            (Accepted::Tcp(s, peer), Some(acceptor)) => {
                let acceptor = acceptor.clone();
                conns.spawn(async move {
                    let hs = tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(s));
                    match hs.await {
                        Ok(Ok(tls)) => serve_connection(tls, state, stop, Some(peer)).await,
                        Ok(Err(e)) => {
                            tracing::debug!("HTTPS: TLS handshake with {peer} failed - {e}")
                        }
                        Err(_) => tracing::debug!("HTTPS: TLS handshake with {peer} timed out"),
                    }
                });
            }
            (Accepted::Unix(_), Some(_)) => {}
        }
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

/// Serve one connection (plain TCP, or a TLS stream for an HTTPS listener) until the client
/// closes it or the listener stops. Each request carries the peer's address (`Peer`).
async fn serve_connection<I>(
    io: I,
    state: Arc<HttpState>,
    stop: StopSignal,
    peer: Option<std::net::SocketAddr>,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let timeouts = state.settings.timeouts;
    let handler = move |mut req: hyper::Request<hyper::body::Incoming>| {
        if let Some(p) = peer {
            req.extensions_mut().insert(super::Peer(p));
        }
        handle(Arc::clone(&state), req)
    };
    if let Err(e) = server::serve_connection(io, handler, stop, timeouts).await {
        tracing::debug!("HTTP: connection error: {e}");
    }
}
