//! The listener: accept loop, one task per connection, HTTP/1.1 with keep-alive, and a graceful
//! stop: when `shutdown` resolves the listener closes, idle connections close, requests in
//! progress get a bounded grace period to finish. The same loop serves HTTPS: each accepted
//! connection then does its TLS handshake (bounded) in its own task first.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

use super::service::handle;
use super::HttpState;
use crate::listener::{Accepted, Listener};

/// How long requests in progress may run after shutdown begins.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// A client must send a request's headers within this time (slowloris bound). hyper also
/// counts idle keep-alive time against it, so it is longer than Go's default client idle
/// timeout (90 s): pooled clients drop idle connections before we close them under a request.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(120);
/// Pause after a failed `accept` (e.g. out of file descriptors) so the loop does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);
/// Go's default TLS handshake bound for HTTPS servers is none; ours is this.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Serve HTTP (HTTPS with `tls`) on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: Listener,
    state: Arc<HttpState>,
    tls: Option<TlsAcceptor>,
    shutdown: impl Future<Output = ()>,
) {
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut conns = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => {
                    tracing::debug!("HTTP: connection from {}", accepted.remote_address());
                    let (state, stop) = (Arc::clone(&state), stop_rx.clone());
                    match (accepted, &tls) {
                        (Accepted::Tcp(s, _), None) => {
                            conns.spawn(serve_connection(s, state, stop));
                        }
                        (Accepted::Unix(s), None) => {
                            conns.spawn(serve_connection(s, state, stop));
                        }
                        (Accepted::Tcp(s, peer), Some(acceptor)) => {
                            let acceptor = acceptor.clone();
                            conns.spawn(async move {
                                let hs = tokio::time::timeout(
                                    TLS_HANDSHAKE_TIMEOUT,
                                    acceptor.accept(s),
                                );
                                match hs.await {
                                    Ok(Ok(tls)) => serve_connection(tls, state, stop).await,
                                    Ok(Err(e)) => {
                                        tracing::debug!("HTTPS: TLS handshake with {peer} failed - {e}")
                                    }
                                    Err(_) => {
                                        tracing::debug!("HTTPS: TLS handshake with {peer} timed out")
                                    }
                                }
                            });
                        }
                        (Accepted::Unix(_), Some(_)) => {}
                    }
                }
                Err(e) => {
                    tracing::warn!("HTTP: accept failed: {e}");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    drop(listener);
    let _ = stop_tx.send(true);
    let drained = tokio::time::timeout(SHUTDOWN_GRACE, async {
        while conns.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!("HTTP: {} connection(s) cut at shutdown", conns.len());
    }
    conns.abort_all();
}

/// Serve one connection (plain TCP, or a TLS stream for an HTTPS listener) until the client
/// closes it or `stop` turns true.
pub async fn serve_connection<I>(io: I, state: Arc<HttpState>, mut stop: watch::Receiver<bool>)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let svc = service_fn(move |req| {
        let state = Arc::clone(&state);
        async move { Ok::<_, Infallible>(handle(state, req).await) }
    });
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .keep_alive(true)
        // A client may shut down its sending side right after the request; still answer it.
        .half_close(true)
        .title_case_headers(true)
        .serve_connection(TokioIo::new(io), svc);
    tokio::pin!(conn);
    tokio::select! {
        res = conn.as_mut() => {
            if let Err(e) = res {
                tracing::debug!("HTTP: connection error: {e}");
            }
        }
        _ = stopped(&mut stop) => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        }
    }
}

/// Resolves once `stop` is true (or its sender is gone).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}
