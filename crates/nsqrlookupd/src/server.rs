//! The daemon's lifecycle, in nsqlookupd's order: bind both listeners (a failure is fatal
//! before anything is served), serve until SIGINT / SIGTERM, then close the TCP listener and
//! every nsqd connection, then the HTTP listener.

use std::sync::Arc;

use serde::Serialize;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::http::{self, HttpState};
use crate::json::to_go_json;
use crate::options::{hostname, Options};
use crate::registry::{Registry, Windows};
use crate::tcp::{self, TcpContext};

/// The IDENTIFY reply: a Go map, so keys sorted.
#[derive(Serialize)]
struct IdentifyReply<'a> {
    broadcast_address: &'a str,
    hostname: &'a str,
    http_port: u16,
    tcp_port: u16,
    version: &'a str,
}

async fn bind(addr: &str) -> Result<TcpListener, String> {
    TcpListener::bind(addr)
        .await
        .map_err(|e| format!("listen ({addr}) failed - {e}"))
}

/// Runs until a signal; `Err` is a fatal startup error.
pub async fn run(opts: Options) -> Result<(), String> {
    // The SIGINT / SIGTERM handlers are installed before the listeners are announced, so a
    // signal sent right after `listening on` is always a graceful stop.
    let signal = nsq_common::net::shutdown_signal();
    tracing::info!(
        "nsqrlookupd v{} (nsqlookupd v{} compatible)",
        env!("CARGO_PKG_VERSION"),
        http::VERSION
    );
    let tcp_listener = bind(&opts.tcp_address).await?;
    let http_listener = bind(&opts.http_address).await?;
    let tcp_addr = tcp_listener.local_addr().map_err(|e| e.to_string())?;
    let http_addr = http_listener.local_addr().map_err(|e| e.to_string())?;

    let registry = Arc::new(Registry::new());
    let host = hostname();
    let tcp_ctx = Arc::new(TcpContext {
        registry: Arc::clone(&registry),
        identify_reply: to_go_json(&IdentifyReply {
            broadcast_address: &opts.broadcast_address,
            hostname: &host,
            http_port: http_addr.port(),
            tcp_port: tcp_addr.port(),
            version: http::VERSION,
        }),
    });
    let http_state = Arc::new(HttpState {
        registry,
        windows: Windows {
            inactive_producer_timeout: opts.inactive_producer_timeout,
            tombstone_lifetime: opts.tombstone_lifetime,
        },
    });

    let (stop_tx, stop_rx) = watch::channel(false);
    let stopped = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|v| *v).await;
    };
    tracing::info!("TCP: listening on {tcp_addr}");
    let tcp_task = tokio::spawn(tcp::serve(tcp_listener, tcp_ctx, stopped(stop_rx.clone())));
    tracing::info!("HTTP: listening on {http_addr}");
    let (http_stop_tx, http_stop_rx) = watch::channel(false);
    let http_task = tokio::spawn(http::serve(
        http_listener,
        http_state,
        stopped(http_stop_rx),
    ));

    signal.await;
    tracing::info!("TERM: shutting down");
    let _ = stop_tx.send(true);
    let _ = tcp_task.await;
    let _ = http_stop_tx.send(true);
    let _ = http_task.await;
    Ok(())
}
