//! The TCP listener: accepts clients, checks the `  V2` magic, and runs one `Conn` task each.

pub mod client;
pub mod compress;
pub mod conn;
pub mod identify;
pub mod read_buffer;
pub mod transport;

use std::sync::Arc;
use std::time::Duration;

use nsq_wire::frame::put_error;
use nsqr_broker::{Broker, ConsumerInfo, ConsumerKind};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_rustls::TlsAcceptor;

use crate::auth::Authenticator;
use crate::listener::{Accepted, Listener};
use crate::settings::TcpSettings;

/// What every connection task shares.
pub struct Shared {
    pub broker: Broker,
    /// Every connected client (for `/stats` producers, the connection count, shutdown).
    pub clients: Arc<client::Clients>,
    pub settings: TcpSettings,
    /// Set when a TLS cert and key are configured.
    pub tls: Option<TlsAcceptor>,
    /// Set when `--auth-http-address` is.
    pub auth: Option<Arc<Authenticator>>,
}

/// Accept until `shutdown` resolves.
pub async fn serve(
    listener: Listener,
    shared: Arc<Shared>,
    shutdown: impl std::future::Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            r = listener.accept() => match r {
                Ok(accepted) => {
                    let shared = Arc::clone(&shared);
                    let (address, ip) = (accepted.remote_address(), accepted.remote_ip());
                    match accepted {
                        Accepted::Tcp(s, _) => tokio::spawn(handle(shared, s, address, ip)),
                        Accepted::Unix(s) => tokio::spawn(handle(shared, s, address, ip)),
                    };
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

async fn handle<S>(shared: Arc<Shared>, mut stream: S, peer: String, remote_ip: String)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    tracing::debug!("TCP: new client({peer})");
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
    let info = Arc::new(client::ClientInfo::new(&peer));
    let consumer = shared.broker.new_consumer(
        ConsumerInfo::new(ConsumerKind::Tcp, peer)
            .details(Arc::clone(&info) as Arc<dyn std::any::Any + Send + Sync>),
    );
    shared.clients.insert(Arc::clone(&consumer));
    if shared.broker.is_exiting() {
        consumer.kick();
    }
    let conn = conn::Conn::new(Arc::clone(&shared), stream, consumer, info, remote_ip);
    conn.run().await;
}
