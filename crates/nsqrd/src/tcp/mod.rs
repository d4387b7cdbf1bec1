//! The TCP listener: accepts clients, checks the `  V2` magic, and runs one `Conn` task each.

pub mod client;
pub mod compress;
pub mod conn;
pub mod read_buffer;
pub mod transport;

use std::sync::Arc;
use std::time::Duration;

use nsq_wire::frame::put_error;
use nsq_wire::identify::ServerConfig;
use nsq_wire::Limits;
use nsqr_broker::{Broker, ConsumerInfo, ConsumerKind};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_rustls::TlsAcceptor;

use crate::auth::Authenticator;
use crate::listener::{Accepted, Listener};
use crate::options::{Options, TlsRequired};

/// The options the TCP protocol reads, derived once from the flags so the connection code
/// reads plain fields instead of re-deriving them per command.
#[derive(Debug, Clone)]
pub struct TcpSettings {
    /// What IDENTIFY checks against and reports, and the command limits every connection
    /// starts from.
    pub server: ServerConfig,
    /// `--tls-required` (true or tcp-https): nothing but IDENTIFY before the TLS upgrade.
    pub tls_required: bool,
}

impl TcpSettings {
    /// The TCP view of the options.
    pub fn from_options(o: &Options) -> TcpSettings {
        TcpSettings {
            server: ServerConfig {
                version: nsqr_broker::NSQD_COMPAT_VERSION,
                limits: Limits {
                    max_msg_size: o.max_msg_size,
                    max_body_size: o.max_body_size,
                    max_rdy_count: o.max_rdy_count,
                    max_req_timeout_ms: i64::try_from(o.max_req_timeout.as_millis())
                        .unwrap_or(i64::MAX),
                    ..Limits::default()
                },
                max_heartbeat_interval: o.max_heartbeat_interval,
                max_output_buffer_size: o.max_output_buffer_size,
                output_buffer_timeout: o.output_buffer_timeout,
                min_output_buffer_timeout: o.min_output_buffer_timeout,
                max_output_buffer_timeout: o.max_output_buffer_timeout,
                msg_timeout: o.msg_timeout,
                max_msg_timeout: o.max_msg_timeout,
                deflate: o.deflate,
                snappy: o.snappy,
                max_deflate_level: o.max_deflate_level,
                auth_required: !o.auth_http_addresses.is_empty(),
                tls_available: !o.tls_cert.is_empty() || !o.tls_key.is_empty(),
                topology_region: o.topology_region.clone(),
                topology_zone: o.topology_zone.clone(),
                ..ServerConfig::default()
            },
            tls_required: o.tls_required != TlsRequired::False,
        }
    }

    /// `--max-req-timeout`, the bound of a REQ delay.
    pub fn max_req_timeout(&self) -> Duration {
        Duration::from_millis(self.server.limits.max_req_timeout_ms.max(0) as u64)
    }
}

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
        shared.settings.server.default_heartbeat * 2,
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

#[cfg(test)]
mod tests {
    use super::*;
    use nsq_wire::identify::{negotiate, response, Negotiated};

    fn defaults() -> ServerConfig {
        TcpSettings::from_options(&Options::default()).server
    }

    fn neg(body: &str) -> Result<Negotiated, String> {
        negotiate(body.as_bytes(), &defaults()).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_reply_matches_nsqd() {
        let n = neg("{}").expect("ok");
        let j = serde_json::to_string(&response(&n, &defaults())).expect("json");
        assert_eq!(
            j,
            r#"{"max_rdy_count":2500,"version":"1.3.0","max_msg_timeout":900000,"msg_timeout":60000,"tls_v1":false,"deflate":false,"deflate_level":6,"max_deflate_level":6,"snappy":false,"sample_rate":0,"auth_required":false,"output_buffer_size":16384,"output_buffer_timeout":250,"topology_region":"","topology_zone":""}"#
        );
        assert_eq!(n.client_id, "");
    }

    #[test]
    fn options_reach_the_negotiation_and_the_reply() {
        let o = Options {
            tls_cert: "c.pem".into(),
            max_deflate_level: 4,
            max_heartbeat_interval: std::time::Duration::from_secs(5),
            topology_zone: "z1".into(),
            auth_http_addresses: vec!["auth:4181".into()],
            ..Options::default()
        };
        let s = TcpSettings::from_options(&o).server;
        assert_eq!(
            negotiate(br#"{"heartbeat_interval":6000}"#, &s).map_err(|e| e.to_string()),
            Err("E_BAD_BODY IDENTIFY heartbeat interval (6000) is invalid".to_string())
        );
        let body =
            br#"{"feature_negotiation":true,"tls_v1":true,"deflate":true,"deflate_level":9}"#;
        let n = negotiate(body, &s).expect("ok");
        assert!(n.tls_v1 && n.deflate && !n.snappy);
        assert_eq!(n.deflate_level, 4);
        let r = response(&n, &s);
        assert!(r.auth_required && r.tls_v1);
        assert_eq!((&*r.topology_zone, r.max_deflate_level), ("z1", 4));
        let n = negotiate(body, &defaults()).expect("ok");
        assert!(!n.tls_v1 && n.deflate);
    }
}
