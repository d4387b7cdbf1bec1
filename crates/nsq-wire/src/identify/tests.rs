//! nsqd's validation order and texts, the reply's exact JSON, and both directions of serde.

use super::*;

fn neg(body: &str) -> Result<Negotiated, String> {
    negotiate(body.as_bytes(), &ServerConfig::default()).map_err(|e| e.to_string())
}

#[test]
fn defaults_reply_matches_nsqd() {
    let n = neg("{}").expect("ok");
    let j = serde_json::to_string(&response(&n, &ServerConfig::default())).expect("json");
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
fn deeply_nested_json_is_a_decode_error() {
    let deep = format!("{{\"x\":{}{}}}", "[".repeat(10_000), "]".repeat(10_000));
    assert_eq!(
        neg(&deep).err().as_deref(),
        Some("E_BAD_BODY IDENTIFY failed to decode JSON body")
    );
}

#[test]
fn upgrades_granted_only_when_offered() {
    let on = ServerConfig {
        tls_available: true,
        max_deflate_level: 4,
        ..ServerConfig::default()
    };
    let body = br#"{"feature_negotiation":true,"tls_v1":true,"deflate":true,"deflate_level":9}"#;
    let n = negotiate(body, &on).expect("ok");
    assert!(n.tls_v1 && n.deflate && !n.snappy);
    assert_eq!(n.deflate_level, 4);
    let n = negotiate(body, &ServerConfig::default()).expect("ok");
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

#[test]
fn a_client_request_serialises_only_what_it_sets_and_the_server_reads_it_back() {
    let req = IdentifyRequest {
        client_id: Some("c".into()),
        feature_negotiation: Some(true),
        heartbeat_interval: Some(5000),
        snappy: Some(true),
        ..IdentifyRequest::default()
    };
    let body = serde_json::to_vec(&req).expect("json");
    assert_eq!(
        body,
        br#"{"client_id":"c","feature_negotiation":true,"heartbeat_interval":5000,"snappy":true}"#
    );
    assert_eq!(decode(&body), Ok(req));
    let n = negotiate(&body, &ServerConfig::default()).expect("ok");
    assert_eq!(n.heartbeat, Some(Duration::from_secs(5)));
    assert!(n.snappy && n.feature_negotiation);
}

#[test]
fn a_client_reads_the_reply_and_an_older_servers_shorter_one() {
    let n = neg(r#"{"feature_negotiation":true,"deflate":true,"deflate_level":3}"#).expect("ok");
    let json = serde_json::to_vec(&response(&n, &ServerConfig::default())).expect("json");
    let back: IdentifyResponse<'static> = serde_json::from_slice(&json).expect("decode");
    assert_eq!(back, response(&n, &ServerConfig::default()));
    assert!(back.deflate && back.deflate_level == 3);
    let old: IdentifyResponse<'static> =
        serde_json::from_slice(br#"{"max_rdy_count":100,"version":"0.3.8"}"#).expect("decode");
    assert_eq!((old.max_rdy_count, &*old.version), (100, "0.3.8"));
    assert!(!old.auth_required);
}
