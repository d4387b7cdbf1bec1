//! The HTTP listener: accept loop, one task per connection, HTTP/1.1 keep-alive, Go-style
//! header case, a bound on how long a client may take to send its headers (slowloris), and a
//! graceful stop: the listener closes, idle connections close, requests in progress get a
//! bounded grace period.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::{handle, HttpState};

const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// A client must send a request's headers within this time. hyper counts idle keep-alive time
/// against it too, so it exceeds Go clients' 90 s idle-connection timeout.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(120);
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Serves HTTP on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    state: Arc<HttpState>,
    shutdown: impl Future<Output = ()>,
) {
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut conns = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, remote)) => {
                    let _ = stream.set_nodelay(true);
                    conns.spawn(serve_connection(stream, remote, Arc::clone(&state), stop_rx.clone()));
                }
                Err(e) => {
                    tracing::warn!("HTTP: accept failed - {e}");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    if let Ok(addr) = listener.local_addr() {
        tracing::info!("HTTP: closing {addr}");
    }
    drop(listener);
    let _ = stop_tx.send(true);
    let drained = tokio::time::timeout(SHUTDOWN_GRACE, async {
        while conns.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        conns.abort_all();
    }
}

async fn serve_connection(
    stream: TcpStream,
    remote: SocketAddr,
    state: Arc<HttpState>,
    mut stop: watch::Receiver<bool>,
) {
    let svc = service_fn(move |req| {
        let state = Arc::clone(&state);
        async move { Ok::<_, Infallible>(handle(&state, req, remote).await) }
    });
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .keep_alive(true)
        // A client may shut down its sending side and still wait for the answer, as Go allows.
        .half_close(true)
        .title_case_headers(true)
        .serve_connection(TokioIo::new(stream), svc);
    tokio::pin!(conn);
    tokio::select! {
        res = conn.as_mut() => {
            if let Err(e) = res {
                tracing::debug!("HTTP: connection error - {e}");
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
