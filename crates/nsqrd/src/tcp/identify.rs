//! IDENTIFY for nsqrd: the protocol (the request and reply types, nsqd's validation order and
//! messages, the reply's key order) is `nsq_wire::identify`, shared with clients; this maps the
//! daemon's settings onto what it checks against.

use nsq_wire::identify::{self, ServerConfig};
pub use nsq_wire::identify::{IdentifyResponse, Negotiated};
use nsq_wire::ProtocolError;

use crate::settings::{TcpSettings, NSQD_COMPAT_VERSION};

/// What the flags allow, as IDENTIFY sees it (borrowed: free to build per IDENTIFY).
pub fn server_config(s: &TcpSettings) -> ServerConfig<'_> {
    ServerConfig {
        version: NSQD_COMPAT_VERSION,
        default_heartbeat: s.default_heartbeat,
        max_heartbeat_interval: s.max_heartbeat_interval,
        default_output_buffer_size: s.default_output_buffer_size,
        max_output_buffer_size: s.max_output_buffer_size,
        output_buffer_timeout: s.output_buffer_timeout,
        min_output_buffer_timeout: s.min_output_buffer_timeout,
        max_output_buffer_timeout: s.max_output_buffer_timeout,
        msg_timeout: s.msg_timeout,
        max_msg_timeout: s.max_msg_timeout,
        max_rdy_count: s.max_rdy_count,
        deflate: s.deflate,
        snappy: s.snappy,
        max_deflate_level: s.max_deflate_level,
        auth_required: s.auth_required,
        tls_available: s.tls_available,
        topology_region: &s.topology_region,
        topology_zone: &s.topology_zone,
    }
}

/// Decode and validate a client's IDENTIFY against the daemon's settings.
pub fn negotiate(body: &[u8], s: &TcpSettings) -> Result<Negotiated, ProtocolError> {
    identify::negotiate(body, &server_config(s))
}

/// The JSON reply.
pub fn response<'a>(n: &Negotiated, s: &'a TcpSettings) -> IdentifyResponse<'a> {
    identify::response(n, &server_config(s))
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
    fn settings_reach_the_negotiation_and_the_reply() {
        let s = TcpSettings {
            tls_available: true,
            max_deflate_level: 4,
            max_heartbeat_interval: std::time::Duration::from_secs(5),
            topology_zone: "z1".into(),
            auth_required: true,
            ..TcpSettings::default()
        };
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
        let n = negotiate(body, &TcpSettings::default()).expect("ok");
        assert!(!n.tls_v1 && n.deflate);
    }
}
