//! nsqd's HTTP API (`/pub`, `/mpub`, `/stats`, `/topic/*`, `/channel/*`, `/config/*`, `/ping`,
//! `/info`) on hyper, with nsqd's router and response conventions reproduced by hand so status
//! codes, headers and bodies match what nsqd clients and nsqadmin expect.
//!
//! Layout: `server` (listener, connections on `workers`' threads, shutdown) -> `service` (one request: routing and
//! dispatch) -> one file per route group. `router` holds nsqd's route table; the conventions
//! nsqd shares with nsqlookupd (router rules, query and path parsing, response shapes, the
//! per-connection hyper setup) are in `nsq_common::http`.

mod body;
pub mod config_opt;
mod consume;
pub mod consumers;
mod info;
mod metrics;
mod pub_batch;
mod publish;
mod query;
mod queue_settings;
mod receipt;
mod router;
mod server;
mod service;
mod settle;
mod stats;
mod stats_text;
mod stream;
mod topics;
mod wake_relay;
pub mod workers;

#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use nsqr_broker::Broker;

pub use config_opt::{ConfigPutError, ConfigStore, ConfigValue};
pub use server::serve;
pub use stats::MemStats;
pub mod stats_json;

/// Everything the handlers share.
pub struct HttpState {
    pub broker: Arc<Broker>,
    /// The TCP clients (`/stats` producers, the connection count).
    pub clients: Arc<crate::tcp::client::Clients>,
    pub settings: HttpSettings,
    pub config: Arc<dyn ConfigStore>,
    /// HTTP consumers and their receipt key (shared by the HTTP and HTTPS listeners).
    pub consumers: Arc<consumers::HttpConsumers>,
    /// This node's place in the cluster (`/stats` and `/metrics` show its replicated topics),
    /// with the `--cluster-*` flags.
    pub cluster: Option<Arc<crate::cluster::Cluster>>,
}

/// A response body: a whole one (every nsqd route), or a stream of server-sent events
/// (`/channel/stream`).
pub type HttpBody = http_body_util::Either<nsq_common::http::response::Body, stream::EventBody>;

/// What a handler knows of a request besides the request itself, passed along as an argument
/// (request extensions would cost allocations per request).
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestCtx {
    /// The peer of the connection the request came on (none on a unix socket).
    pub peer: Option<std::net::SocketAddr>,
    /// When the whole request must have arrived (`--http-read-timeout`).
    pub deadline: Option<nsq_common::http::server::RequestDeadline>,
}

/// The option values the HTTP API reads, copied from the daemon's options at startup (none of
/// them can change at runtime; `crate::http_wiring::http_settings` derives them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpSettings {
    pub broadcast_address: String,
    /// The OS hostname, for `/info`.
    pub hostname: String,
    /// The bound ports (-1 for a unix socket, 0 when disabled).
    pub tcp_port: i32,
    pub http_port: i32,
    pub max_msg_size: i64,
    pub max_body_size: i64,
    pub max_req_timeout: Duration,
    pub max_heartbeat_interval: Duration,
    pub max_output_buffer_size: i64,
    pub max_output_buffer_timeout: Duration,
    pub max_deflate_level: i64,
    pub topology_zone: String,
    pub topology_region: String,
    /// Set (to the HTTPS port) on the state of the plain-HTTP listener when `--tls-required`
    /// is on: every request there is refused with 403 `TLS_REQUIRED`.
    pub tls_required_https_port: Option<u16>,
    /// `--http-idle-timeout`, `--http-read-timeout`, `--http-write-timeout`.
    pub timeouts: nsq_common::http::server::Timeouts,
    /// Connections a listener serves at once (`--http-max-connections`, resolved).
    pub max_connections: usize,
}

impl HttpSettings {
    /// `version` in `/info` and `/stats`.
    pub fn version(&self) -> &'static str {
        nsqr_broker::NSQD_COMPAT_VERSION
    }

    pub(crate) fn max_msg_size_usize(&self) -> usize {
        usize::try_from(self.max_msg_size).unwrap_or(0)
    }

    pub(crate) fn max_body_size_usize(&self) -> usize {
        usize::try_from(self.max_body_size).unwrap_or(0)
    }

    /// The limits the TCP MPUB body parser needs, for binary `/mpub`.
    pub(crate) fn wire_limits(&self) -> nsq_wire::Limits {
        nsq_wire::Limits {
            max_msg_size: self.max_msg_size,
            max_body_size: self.max_body_size,
            max_req_timeout_ms: i64::try_from(self.max_req_timeout.as_millis()).unwrap_or(i64::MAX),
            ..nsq_wire::Limits::default()
        }
    }
}
