//! The HTTP listener: accept loop, one task per connection, HTTP/1.1 keep-alive, Go-style
//! header case, the connection time limits of `nsq_common::http::deadline` (idle, read, write;
//! their defaults), and a graceful stop: the listener closes, idle connections close, requests in progress get a
//! bounded grace period. The loop and the connection setup are nsqd's too, shared in
//! `nsq_common::net` and `nsq_common::http::server`; the log lines are nsqlookupd's.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use nsq_common::http::server;
use nsq_common::net::{self, Connections, StopSignal, SHUTDOWN_GRACE};
use tokio::net::{TcpListener, TcpStream};

use super::{handle, HttpState};

/// Serves HTTP on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    state: Arc<HttpState>,
    shutdown: impl Future<Output = ()>,
) {
    let on_accept = |(stream, remote): (TcpStream, SocketAddr), conns: &mut Connections| {
        let _ = stream.set_nodelay(true);
        let state = Arc::clone(&state);
        conns.spawn(serve_connection(stream, remote, state, conns.stop_signal()));
    };
    let conns = net::accept_until(
        shutdown,
        || listener.accept(),
        on_accept,
        |e| tracing::warn!("HTTP: accept failed - {e}"),
    )
    .await;
    if let Ok(addr) = listener.local_addr() {
        tracing::info!("HTTP: closing {addr}");
    }
    drop(listener);
    conns.shutdown(SHUTDOWN_GRACE).await;
}

async fn serve_connection(
    stream: TcpStream,
    remote: SocketAddr,
    state: Arc<HttpState>,
    stop: StopSignal,
) {
    let handler = move |req, _deadline| {
        let state = Arc::clone(&state);
        async move { handle(&state, req, remote).await }
    };
    if let Err(e) =
        server::serve_connection(stream, handler, stop, server::Timeouts::default()).await
    {
        tracing::debug!("HTTP: connection error - {e}");
    }
}
