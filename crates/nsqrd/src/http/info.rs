//! `/ping` (the health string, plain text, no V1 header) and `/info` (this node's identity and
//! the limits clients negotiate against, in nsqd's key order).

use hyper::StatusCode;
use nsq_common::http::response::{self, ApiError, Reply, Resp};
use serde::Serialize;

use super::HttpState;

/// `OK`, or `500 NOK - <error>` while the last disk write failed.
pub fn ping(state: &HttpState) -> Resp {
    let health = state.broker.health();
    let status = if state.broker.is_healthy() {
        StatusCode::OK
    } else {
        StatusCode::INTERNAL_SERVER_ERROR
    };
    response::plain(status, health)
}

/// nsqd's `/info` document; durations are integer nanoseconds as Go marshals `time.Duration`.
#[derive(Debug, Serialize)]
struct Info<'a> {
    version: &'a str,
    broadcast_address: &'a str,
    hostname: &'a str,
    http_port: i32,
    tcp_port: i32,
    start_time: i64,
    max_heartbeat_interval: i64,
    max_output_buffer_size: i64,
    max_output_buffer_timeout: i64,
    max_deflate_level: i64,
    topology_zone: &'a str,
    topology_region: &'a str,
}

pub fn info(state: &HttpState) -> Result<Reply, ApiError> {
    let s = &state.settings;
    Reply::json(&Info {
        version: s.version(),
        broadcast_address: &s.broadcast_address,
        hostname: &s.hostname,
        http_port: s.http_port,
        tcp_port: s.tcp_port,
        start_time: state.broker.start_time(),
        max_heartbeat_interval: nanos(s.max_heartbeat_interval),
        max_output_buffer_size: s.max_output_buffer_size,
        max_output_buffer_timeout: nanos(s.max_output_buffer_timeout),
        max_deflate_level: s.max_deflate_level,
        topology_zone: &s.topology_zone,
        topology_region: &s.topology_region,
    })
}

/// A duration as Go's `time.Duration` integer (saturating).
pub fn nanos(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)
}
