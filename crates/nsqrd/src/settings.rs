//! The daemon's runtime settings for the TCP protocol, derived once from the flags so the
//! connection code reads plain fields instead of re-deriving them per command.

use std::time::Duration;

use nsq_wire::Limits;

pub use nsqr_broker::NSQD_COMPAT_VERSION;

#[derive(Debug, Clone)]
pub struct TcpSettings {
    pub limits: Limits,
    /// nsqd's hard-coded client timeout is 60 s; the default heartbeat is half of it.
    pub default_heartbeat: Duration,
    pub max_heartbeat_interval: Duration,
    pub default_output_buffer_size: usize,
    pub max_output_buffer_size: i64,
    pub output_buffer_timeout: Duration,
    pub min_output_buffer_timeout: Duration,
    pub max_output_buffer_timeout: Duration,
    pub msg_timeout: Duration,
    pub max_msg_timeout: Duration,
    pub max_req_timeout: Duration,
    pub max_rdy_count: i64,
    pub deflate: bool,
    pub snappy: bool,
    pub max_deflate_level: i64,
    pub auth_required: bool,
    /// A TLS cert and key are configured: IDENTIFY may grant `tls_v1`.
    pub tls_available: bool,
    /// `--tls-required` (true or tcp-https): nothing but IDENTIFY before the TLS upgrade.
    pub tls_required: bool,
    pub topology_region: String,
    pub topology_zone: String,
}

impl Default for TcpSettings {
    fn default() -> Self {
        TcpSettings {
            limits: Limits::default(),
            default_heartbeat: Duration::from_secs(30),
            max_heartbeat_interval: Duration::from_secs(60),
            default_output_buffer_size: 16 * 1024,
            max_output_buffer_size: 65536,
            output_buffer_timeout: Duration::from_millis(250),
            min_output_buffer_timeout: Duration::from_millis(25),
            max_output_buffer_timeout: Duration::from_secs(30),
            msg_timeout: Duration::from_secs(60),
            max_msg_timeout: Duration::from_secs(15 * 60),
            max_req_timeout: Duration::from_secs(3600),
            max_rdy_count: 2500,
            deflate: true,
            snappy: true,
            max_deflate_level: 6,
            auth_required: false,
            tls_available: false,
            tls_required: false,
            topology_region: String::new(),
            topology_zone: String::new(),
        }
    }
}
