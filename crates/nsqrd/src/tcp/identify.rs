//! IDENTIFY: decode the client's JSON, validate it in nsqd's order with nsqd's messages, and
//! build the negotiated reply (keys in nsqd's order).

use std::time::Duration;

use nsq_wire::{Code, ProtocolError};
use serde::{Deserialize, Serialize};

use crate::settings::{TcpSettings, NSQD_COMPAT_VERSION};

/// The request body. Every field is optional; `null` counts as absent (as Go's decoder does).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct IdentifyRequest {
    pub client_id: Option<String>,
    pub hostname: Option<String>,
    pub user_agent: Option<String>,
    pub feature_negotiation: Option<bool>,
    pub heartbeat_interval: Option<i64>,
    pub output_buffer_size: Option<i64>,
    pub output_buffer_timeout: Option<i64>,
    pub tls_v1: Option<bool>,
    pub deflate: Option<bool>,
    pub deflate_level: Option<i64>,
    pub snappy: Option<bool>,
    pub sample_rate: Option<i64>,
    pub msg_timeout: Option<i64>,
    pub topology_region: Option<String>,
    pub topology_zone: Option<String>,
}

/// What the connection applies after a successful IDENTIFY.
#[derive(Debug, Clone)]
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
    /// The client asked for its own `msg_timeout` (else a channel's setting applies).
    pub msg_timeout_requested: bool,
    pub feature_negotiation: bool,
    pub topology_region: String,
    pub topology_zone: String,
    /// Upgrades granted (only with `feature_negotiation`), applied after the reply (§4.4).
    pub tls_v1: bool,
    pub snappy: bool,
    pub deflate: bool,
    /// The level reported, and used when `deflate` is granted.
    pub deflate_level: i64,
}

/// The feature-negotiation reply, in nsqd's key order.
#[derive(Debug, Serialize)]
pub struct IdentifyResponse {
    pub max_rdy_count: i64,
    pub version: &'static str,
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
    pub topology_region: String,
    pub topology_zone: String,
}

fn bad_body(text: String) -> ProtocolError {
    ProtocolError::new(Code::BadBody, format!("IDENTIFY {text}"))
}

fn ms(d: Duration) -> i64 {
    d.as_millis() as i64
}

/// Decode and validate. Like nsqd, absent `client_id` / `hostname` overwrite the defaults (the
/// remote IP) with "".
pub fn negotiate(body: &[u8], s: &TcpSettings) -> Result<Negotiated, ProtocolError> {
    // Only a JSON object decodes into nsqd's struct (serde alone would also take `[]`).
    let decode_error = || ProtocolError::new(Code::BadBody, "IDENTIFY failed to decode JSON body");
    let value: serde_json::Value = serde_json::from_slice(body).map_err(|_| decode_error())?;
    if !value.is_object() {
        return Err(decode_error());
    }
    let req: IdentifyRequest = serde_json::from_value(value).map_err(|_| decode_error())?;

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
    let mut deflate_level = 6;
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
        msg_timeout_requested: req.msg_timeout.unwrap_or(0) != 0,
        feature_negotiation: negotiating,
        topology_region: req.topology_region.unwrap_or_default(),
        topology_zone: req.topology_zone.unwrap_or_default(),
        tls_v1,
        snappy,
        deflate,
        deflate_level,
    })
}

/// The JSON reply.
pub fn response(n: &Negotiated, s: &TcpSettings) -> IdentifyResponse {
    IdentifyResponse {
        max_rdy_count: s.max_rdy_count,
        version: NSQD_COMPAT_VERSION,
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
        topology_region: s.topology_region.clone(),
        topology_zone: s.topology_zone.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn neg(body: &str) -> Result<Negotiated, String> {
        negotiate(body.as_bytes(), &TcpSettings::default()).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_reply_matches_nsqd() {
        let n = neg("{}").expect("ok");
        let j = serde_json::to_string(&response(&n, &TcpSettings::default())).expect("json");
        assert_eq!(
            j,
            r#"{"max_rdy_count":2500,"version":"1.3.0","max_msg_timeout":900000,"msg_timeout":60000,"tls_v1":false,"deflate":false,"deflate_level":6,"max_deflate_level":6,"snappy":false,"sample_rate":0,"auth_required":false,"output_buffer_size":16384,"output_buffer_timeout":250,"topology_region":"","topology_zone":""}"#
        );
        assert_eq!(n.client_id, "");
    }

    #[test]
    fn validation_errors_in_order() {
        assert_eq!(
            neg("{\"heartbeat_interval\":999,\"sample_rate\":100}")
                .err()
                .as_deref(),
            Some("E_BAD_BODY IDENTIFY heartbeat interval (999) is invalid")
        );
        assert_eq!(
            neg("{\"output_buffer_timeout\":1}").err().as_deref(),
            Some("E_BAD_BODY IDENTIFY output buffer timeout (1) is invalid")
        );
        assert_eq!(
            neg("{\"output_buffer_size\":63}").err().as_deref(),
            Some("E_BAD_BODY IDENTIFY output buffer size (63) is invalid")
        );
        assert_eq!(
            neg("{\"sample_rate\":100}").err().as_deref(),
            Some("E_BAD_BODY IDENTIFY sample rate (100) is invalid")
        );
        assert_eq!(
            neg("{\"msg_timeout\":999}").err().as_deref(),
            Some("E_BAD_BODY IDENTIFY msg timeout (999) is invalid")
        );
        assert_eq!(
            neg("[]").err().as_deref(),
            Some("E_BAD_BODY IDENTIFY failed to decode JSON body")
        );
        assert_eq!(
            neg("{\"client_id\":5}").err().as_deref(),
            Some("E_BAD_BODY IDENTIFY failed to decode JSON body")
        );
        assert_eq!(
            neg("{\"deflate\":true,\"snappy\":true,\"feature_negotiation\":true}")
                .err()
                .as_deref(),
            Some("E_IDENTIFY_FAILED cannot enable both deflate and snappy compression")
        );
        // Without feature negotiation nothing is negotiated, so nothing conflicts (as nsqd).
        assert!(neg("{\"deflate\":true,\"snappy\":true}").is_ok());
    }

    #[test]
    fn upgrades_granted_only_when_offered() {
        let on = TcpSettings {
            tls_available: true,
            max_deflate_level: 4,
            ..TcpSettings::default()
        };
        let body =
            br#"{"feature_negotiation":true,"tls_v1":true,"deflate":true,"deflate_level":9}"#;
        let n = negotiate(body, &on).expect("ok");
        assert!(n.tls_v1 && n.deflate && !n.snappy);
        assert_eq!(n.deflate_level, 4);
        let n = negotiate(body, &TcpSettings::default()).expect("ok");
        assert!(!n.tls_v1 && n.deflate);
        assert_eq!(n.deflate_level, 6);
        let plain = br#"{"tls_v1":true,"deflate":true,"deflate_level":2}"#;
        let n = negotiate(plain, &on).expect("ok");
        assert!(!n.tls_v1 && !n.deflate);
        assert_eq!(n.deflate_level, 4);
    }

    #[test]
    fn unbuffered_output() {
        let n = neg("{\"output_buffer_size\":-1,\"heartbeat_interval\":-1}").expect("ok");
        assert_eq!(n.output_buffer_size, 1);
        assert_eq!(n.output_buffer_timeout, Duration::ZERO);
        assert_eq!(n.heartbeat, None);
    }
}
