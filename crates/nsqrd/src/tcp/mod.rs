//! The TCP listener: accepts clients, checks the `  V2` magic, and runs one `Conn` task each.

pub mod conn;
pub mod identify;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use nsq_wire::frame::put_error;
use nsqr_broker::Broker;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::settings::TcpSettings;

/// What every connection task shares.
pub struct Shared {
    pub broker: Arc<Broker>,
    pub settings: TcpSettings,
}

/// Accept until `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    shutdown: impl std::future::Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            r = listener.accept() => match r {
                Ok((stream, peer)) => {
                    tokio::spawn(handle(Arc::clone(&shared), stream, peer));
                }
                Err(e) => {
                    tracing::error!("TCP: accept error - {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            _ = &mut shutdown => return,
        }
    }
}

async fn handle(shared: Arc<Shared>, mut stream: TcpStream, peer: SocketAddr) {
    tracing::debug!("TCP: new client({peer})");
    let _ = stream.set_nodelay(true);
    let mut magic = [0u8; 4];
    // nsqd waits for the magic without a deadline; we bound it by the client timeout.
    let read = tokio::time::timeout(
        shared.settings.default_heartbeat * 2,
        stream.read_exact(&mut magic),
    )
    .await;
    if !matches!(read, Ok(Ok(_))) {
        return;
    }
    if &magic != nsq_wire::MAGIC_V2 {
        let mut b = Vec::new();
        put_error(&mut b, "E_BAD_PROTOCOL");
        let _ = stream.write_all(&b).await;
        let _ = stream.shutdown().await;
        tracing::error!(
            "client({peer}) bad protocol magic '{}'",
            String::from_utf8_lossy(&magic)
        );
        return;
    }
    let now = nsqr_broker::now_unix_nanos() / 1_000_000_000;
    let client = shared.broker.register_client(peer.to_string(), now);
    if shared.broker.is_exiting() {
        client.kick();
    }
    let conn = conn::Conn::new(Arc::clone(&shared), stream, client);
    conn.run().await;
}
