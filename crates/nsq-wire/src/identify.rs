//! IDENTIFY: the JSON a client sends right after the magic to describe itself and ask for
//! features, and the JSON the server answers with when `feature_negotiation` is set.
//!
//! The types serve both sides: a client serialises an [`IdentifyRequest`] and reads an
//! [`IdentifyResponse`], a server decodes the request with [`negotiate`] (nsqd's validation,
//! in nsqd's order, with nsqd's error texts) and answers with [`response`]. What the server
//! allows (its flags) comes in a [`ServerConfig`]; what it then does with the result (apply
//! timeouts, upgrade the connection) is the server's business.

use std::borrow::Cow;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::defaults;
use crate::error::{Code, ProtocolError};
use crate::Limits;

/// The request body. Every field is optional; `null` counts as absent (as Go's decoder does),
/// and absent fields are not serialised.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct IdentifyRequest {
    /// An identifier of the client (go-nsq sends the short hostname).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The client's hostname.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// The client library and version, e.g. `go-nsq/1.1.0`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_agent: Option<String>,
    /// Ask for the JSON reply (and for the upgrades below).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feature_negotiation: Option<bool>,
    /// Milliseconds between heartbeats; -1 disables them, 0 takes the server's default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heartbeat_interval: Option<i64>,
    /// Bytes the server may buffer before writing; -1 disables buffering.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_buffer_size: Option<i64>,
    /// Milliseconds the server may hold buffered output; -1 disables the timeout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_buffer_timeout: Option<i64>,
    /// Upgrade to TLS after the reply.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_v1: Option<bool>,
    /// Upgrade to raw DEFLATE after the reply.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deflate: Option<bool>,
    /// The DEFLATE level asked for, in [1, 9] (capped by the server's maximum).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deflate_level: Option<i64>,
    /// Upgrade to snappy framing after the reply.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snappy: Option<bool>,
    /// Percentage of messages to deliver, in [0, 99]; 0 delivers all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample_rate: Option<i64>,
    /// Milliseconds a delivered message may stay in flight before it is requeued.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub msg_timeout: Option<i64>,
    /// The client's region (for topology-aware consumers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topology_region: Option<String>,
    /// The client's zone (for topology-aware consumers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topology_zone: Option<String>,
}

/// What the server allows and defaults to: the part of its flags IDENTIFY is checked against
/// and reports, and the command limits a connection starts with. `Default` is nsqd's
/// ([`crate::defaults`]), without TLS or auth.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The version string the reply reports (nsqd's, for compatible servers).
    pub version: &'static str,
    /// The command limits; IDENTIFY reports `max_rdy_count` from them.
    pub limits: Limits,
    /// Heartbeat interval when the client asks for 0.
    pub default_heartbeat: Duration,
    pub max_heartbeat_interval: Duration,
    pub default_output_buffer_size: usize,
    pub max_output_buffer_size: i64,
    /// Output buffer timeout when the client asks for 0.
    pub output_buffer_timeout: Duration,
    pub min_output_buffer_timeout: Duration,
    pub max_output_buffer_timeout: Duration,
    /// In-flight timeout when the client asks for 0.
    pub msg_timeout: Duration,
    pub max_msg_timeout: Duration,
    /// DEFLATE may be granted.
    pub deflate: bool,
    /// Snappy may be granted.
    pub snappy: bool,
    pub max_deflate_level: i64,
    /// The client must AUTH before it may do anything else.
    pub auth_required: bool,
    /// TLS may be granted (a certificate and key are configured).
    pub tls_available: bool,
    pub topology_region: String,
    pub topology_zone: String,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            version: defaults::NSQD_VERSION,
            limits: Limits::default(),
            default_heartbeat: defaults::DEFAULT_HEARTBEAT,
            max_heartbeat_interval: defaults::MAX_HEARTBEAT_INTERVAL,
            default_output_buffer_size: defaults::DEFAULT_OUTPUT_BUFFER_SIZE,
            max_output_buffer_size: defaults::MAX_OUTPUT_BUFFER_SIZE,
            output_buffer_timeout: defaults::OUTPUT_BUFFER_TIMEOUT,
            min_output_buffer_timeout: defaults::MIN_OUTPUT_BUFFER_TIMEOUT,
            max_output_buffer_timeout: defaults::MAX_OUTPUT_BUFFER_TIMEOUT,
            msg_timeout: defaults::MSG_TIMEOUT,
            max_msg_timeout: defaults::MAX_MSG_TIMEOUT,
            deflate: defaults::DEFLATE,
            snappy: defaults::SNAPPY,
            max_deflate_level: defaults::MAX_DEFLATE_LEVEL,
            auth_required: false,
            tls_available: false,
            topology_region: String::new(),
            topology_zone: String::new(),
        }
    }
}

/// A valid IDENTIFY, resolved against the server's defaults: what the server applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Negotiated {
    pub client_id: String,
    pub hostname: String,
    pub user_agent: String,
    /// None: heartbeats disabled.
    pub heartbeat: Option<Duration>,
    pub output_buffer_size: usize,
    pub output_buffer_timeout: Duration,
    pub sample_rate: i32,
    pub msg_timeout: Duration,
    /// The client asked for the JSON reply.
    pub feature_negotiation: bool,
    pub topology_region: String,
    pub topology_zone: String,
    /// Upgrades granted (only with `feature_negotiation`), applied after the reply, as nsqd's
    /// protocol_v2 does (TLS first, then snappy or deflate).
    pub tls_v1: bool,
    pub snappy: bool,
    pub deflate: bool,
    /// The level reported, and used when `deflate` is granted.
    pub deflate_level: i64,
}

/// The feature-negotiation reply, in nsqd's key order. A client decodes it with serde
/// (missing keys take their defaults, so older servers' replies decode too).
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct IdentifyResponse<'a> {
    pub max_rdy_count: i64,
    pub version: Cow<'a, str>,
    pub max_msg_timeout: i64,
    pub msg_timeout: i64,
    pub tls_v1: bool,
    pub deflate: bool,
    pub deflate_level: i64,
    pub max_deflate_level: i64,
    pub snappy: bool,
    pub sample_rate: i32,
    pub auth_required: bool,
    pub output_buffer_size: usize,
    pub output_buffer_timeout: i64,
    pub topology_region: Cow<'a, str>,
    pub topology_zone: Cow<'a, str>,
}

fn bad_body(text: String) -> ProtocolError {
    ProtocolError::new(Code::BadBody, format!("IDENTIFY {text}"))
}

fn ms(d: Duration) -> i64 {
    d.as_millis() as i64
}

/// Decode a request body as nsqd does: only a JSON object (serde alone would also take `[]`),
/// with fields of the right types.
pub fn decode(body: &[u8]) -> Result<IdentifyRequest, ProtocolError> {
    let decode_error = || ProtocolError::new(Code::BadBody, "IDENTIFY failed to decode JSON body");
    let value: serde_json::Value = serde_json::from_slice(body).map_err(|_| decode_error())?;
    if !value.is_object() {
        return Err(decode_error());
    }
    serde_json::from_value(value).map_err(|_| decode_error())
}

/// Decode and validate, in nsqd's order with nsqd's errors. Like nsqd, absent `client_id` /
/// `hostname` overwrite the defaults (the remote IP) with "".
pub fn negotiate(body: &[u8], s: &ServerConfig) -> Result<Negotiated, ProtocolError> {
    let req = decode(body)?;

    let heartbeat = match req.heartbeat_interval.unwrap_or(0) {
        -1 => None,
        0 => Some(s.default_heartbeat),
        v if v >= 1000 && v <= ms(s.max_heartbeat_interval) => {
            Some(Duration::from_millis(v as u64))
        }
        v => return Err(bad_body(format!("heartbeat interval ({v}) is invalid"))),
    };

    let mut output_buffer_timeout = match req.output_buffer_timeout.unwrap_or(0) {
        -1 => Duration::ZERO,
        0 => s.output_buffer_timeout,
        v if v >= ms(s.min_output_buffer_timeout) && v <= ms(s.max_output_buffer_timeout) => {
            Duration::from_millis(v as u64)
        }
        v => return Err(bad_body(format!("output buffer timeout ({v}) is invalid"))),
    };

    let output_buffer_size = match req.output_buffer_size.unwrap_or(0) {
        -1 => {
            output_buffer_timeout = Duration::ZERO;
            1
        }
        0 => s.default_output_buffer_size,
        v if (64..=s.max_output_buffer_size).contains(&v) => v as usize,
        v => return Err(bad_body(format!("output buffer size ({v}) is invalid"))),
    };

    let sample_rate = match req.sample_rate.unwrap_or(0) {
        v @ 0..=99 => v as i32,
        v => return Err(bad_body(format!("sample rate ({v}) is invalid"))),
    };

    let msg_timeout = match req.msg_timeout.unwrap_or(0) {
        0 => s.msg_timeout,
        v if v >= 1000 && v <= ms(s.max_msg_timeout) => Duration::from_millis(v as u64),
        v => return Err(bad_body(format!("msg timeout ({v}) is invalid"))),
    };

    // As nsqd, features are only negotiated (and their conflict only checked) when asked to.
    let negotiating = req.feature_negotiation.unwrap_or(false);
    let tls_v1 = negotiating && req.tls_v1.unwrap_or(false) && s.tls_available;
    let deflate = negotiating && req.deflate.unwrap_or(false) && s.deflate;
    let snappy = negotiating && req.snappy.unwrap_or(false) && s.snappy;
    if deflate && snappy {
        return Err(ProtocolError::new(
            Code::IdentifyFailed,
            "cannot enable both deflate and snappy compression",
        ));
    }
    let mut deflate_level = defaults::DEFLATE_LEVEL;
    if deflate {
        if let Some(l) = req.deflate_level.filter(|&l| l > 0) {
            deflate_level = l;
        }
    }
    deflate_level = deflate_level.min(s.max_deflate_level);

    Ok(Negotiated {
        client_id: req.client_id.unwrap_or_default(),
        hostname: req.hostname.unwrap_or_default(),
        user_agent: req.user_agent.unwrap_or_default(),
        heartbeat,
        output_buffer_size,
        output_buffer_timeout,
        sample_rate,
        msg_timeout,
        feature_negotiation: negotiating,
        topology_region: req.topology_region.unwrap_or_default(),
        topology_zone: req.topology_zone.unwrap_or_default(),
        tls_v1,
        snappy,
        deflate,
        deflate_level,
    })
}

/// The JSON reply to a negotiated IDENTIFY (serialise it with serde_json).
pub fn response<'a>(n: &Negotiated, s: &'a ServerConfig) -> IdentifyResponse<'a> {
    IdentifyResponse {
        max_rdy_count: s.limits.max_rdy_count,
        version: Cow::Borrowed(s.version),
        max_msg_timeout: ms(s.max_msg_timeout),
        msg_timeout: ms(n.msg_timeout),
        tls_v1: n.tls_v1,
        deflate: n.deflate,
        // nsqd reports the client's level only when deflate is granted, else its default.
        deflate_level: n.deflate_level,
        max_deflate_level: s.max_deflate_level,
        snappy: n.snappy,
        sample_rate: n.sample_rate,
        auth_required: s.auth_required,
        output_buffer_size: n.output_buffer_size,
        output_buffer_timeout: ms(n.output_buffer_timeout),
        topology_region: Cow::Borrowed(&s.topology_region),
        topology_zone: Cow::Borrowed(&s.topology_zone),
    }
}

#[cfg(test)]
mod tests;
