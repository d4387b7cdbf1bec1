//! TCP IDENTIFY: `OK` without feature negotiation, the exact JSON reply with defaults and its key
//! order, effective values reflected in the reply (flags and client values, `-1` specials), every
//! IDENTIFY error string with its validation order, body-size errors, truncated bodies, IDENTIFY
//! after SUB, repeated IDENTIFY, and the identity fields showing up in /stats.
use crate::common::*;

use serde_json::{json, Value};

/// IDENTIFY with feature negotiation; returns the raw JSON text of the reply.
fn negotiate(c: &mut Conn, extra: &str) -> String {
    let body = if extra.is_empty() {
        r#"{"feature_negotiation":true}"#.to_string()
    } else {
        format!(r#"{{"feature_negotiation":true,{extra}}}"#)
    };
    let text = c.identify(&body).response_text();
    assert!(text.starts_with('{'), "not a JSON reply: {text}");
    text
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("bad JSON {e}: {text}"))
}

/// The 13 keys of the 1.3.0 reply, in emitted order.
const KEYS: [&str; 13] = [
    "max_rdy_count",
    "version",
    "max_msg_timeout",
    "msg_timeout",
    "tls_v1",
    "deflate",
    "deflate_level",
    "max_deflate_level",
    "snappy",
    "sample_rate",
    "auth_required",
    "output_buffer_size",
    "output_buffer_timeout",
];

/// Position of `"key":` in a JSON text.
fn key_pos(text: &str, key: &str) -> Option<usize> {
    text.find(&format!("\"{key}\":"))
}

/// Drop the post-1.3.0 topology keys after checking they are empty strings when present.
fn strip_topology(mut v: Value) -> Value {
    let o = v.as_object_mut().expect("object");
    for k in ["topology_region", "topology_zone"] {
        if let Some(x) = o.remove(k) {
            assert_eq!(x, json!(""), "{k}");
        }
    }
    v
}

#[test]
fn identify_without_feature_negotiation_is_ok() {
    let s = Server::start(&[]);
    for body in [
        "{}",
        r#"{"feature_negotiation":false}"#,
        r#"{"client_id":"a","hostname":"h","user_agent":"ua/1.0","unknown_key":[1,2,3]}"#,
        // go-nsq still sends these deprecated fields
        r#"{"short_id":"s","long_id":"l","heartbeat_interval":0,"msg_timeout":0}"#,
    ] {
        let mut c = s.connect();
        assert_eq!(
            c.identify(body),
            Frame::Response(b"OK".to_vec()),
            "body {body}"
        );
        c.publish("t", b"x");
    }
}

#[test]
fn identify_defaults_reply_exact() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let text = negotiate(&mut c, "");
    let got = strip_topology(parse(&text));
    let want = json!({
        "max_rdy_count": 2500,
        "version": "1.3.0",
        "max_msg_timeout": 900000,
        "msg_timeout": 60000,
        "tls_v1": false,
        "deflate": false,
        "deflate_level": 6,
        "max_deflate_level": 6,
        "snappy": false,
        "sample_rate": 0,
        "auth_required": false,
        "output_buffer_size": 16384,
        "output_buffer_timeout": 250
    });
    assert_eq!(got, want, "reply: {text}");
    // the connection stays usable
    c.publish("t", b"x");
}

#[test]
fn identify_reply_key_order() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let text = negotiate(&mut c, "");
    let pos: Vec<usize> = KEYS
        .iter()
        .map(|k| key_pos(&text, k).unwrap_or_else(|| panic!("key {k} missing: {text}")))
        .collect();
    assert!(
        pos.windows(2).all(|w| w[0] < w[1]),
        "keys out of order: {text}"
    );
    // post-1.3.0 topology keys: optional, but if present they come last, region then zone
    let last = *pos.last().expect("13 keys");
    match (
        key_pos(&text, "topology_region"),
        key_pos(&text, "topology_zone"),
    ) {
        (Some(r), Some(z)) => assert!(last < r && r < z, "topology keys misplaced: {text}"),
        (None, None) => {}
        _ => panic!("only one topology key: {text}"),
    }
    assert_eq!(
        parse(&text).as_object().expect("object").len(),
        if key_pos(&text, "topology_zone").is_some() {
            15
        } else {
            13
        },
        "unexpected keys: {text}"
    );
}

#[test]
fn identify_reply_reflects_server_flags() {
    let s = Server::start(&[
        "--max-rdy-count=100",
        "--max-msg-timeout=120s",
        "--msg-timeout=30s",
        "--max-deflate-level=3",
        "--output-buffer-timeout=100ms",
    ]);
    let mut c = s.connect();
    let v = parse(&negotiate(&mut c, ""));
    assert_eq!(v["max_rdy_count"], 100);
    assert_eq!(v["max_msg_timeout"], 120000);
    assert_eq!(v["msg_timeout"], 30000);
    assert_eq!(v["max_deflate_level"], 3);
    // 6 capped by max-deflate-level, reported even though deflate is off
    assert_eq!(v["deflate_level"], 3);
    assert_eq!(v["deflate"], false);
    assert_eq!(v["output_buffer_timeout"], 100);
    assert_eq!(v["output_buffer_size"], 16384);
}

#[test]
fn identify_reply_reflects_client_values() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let v = parse(&negotiate(
        &mut c,
        r#""msg_timeout":5000,"sample_rate":50,"output_buffer_size":1024,"output_buffer_timeout":100,"heartbeat_interval":2000"#,
    ));
    assert_eq!(v["msg_timeout"], 5000);
    assert_eq!(v["sample_rate"], 50);
    assert_eq!(v["output_buffer_size"], 1024);
    assert_eq!(v["output_buffer_timeout"], 100);
    // server limits are unchanged
    assert_eq!(v["max_msg_timeout"], 900000);
    assert_eq!(v["max_rdy_count"], 2500);
}

#[test]
fn identify_compression_not_granted_when_disabled() {
    let s = Server::start(&["--deflate=false", "--snappy=false"]);
    let mut c = s.connect();
    let v = parse(&negotiate(
        &mut c,
        r#""deflate":true,"deflate_level":2,"snappy":true,"tls_v1":true"#,
    ));
    assert_eq!(v["deflate"], false);
    assert_eq!(v["snappy"], false);
    assert_eq!(v["tls_v1"], false);
    // deflate not granted: the level reported is the default 6
    assert_eq!(v["deflate_level"], 6);
    // no upgrade happened: plain commands still work
    c.publish("t", b"x");
}

#[test]
fn identify_output_buffer_size_minus_one() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let v = parse(&negotiate(&mut c, r#""output_buffer_size":-1"#));
    assert_eq!(v["output_buffer_size"], 1);
    assert_eq!(v["output_buffer_timeout"], 0);
    // -1 size wins over an explicit timeout too
    let mut c = s.connect();
    let v = parse(&negotiate(
        &mut c,
        r#""output_buffer_size":-1,"output_buffer_timeout":100"#,
    ));
    assert_eq!(v["output_buffer_size"], 1);
    assert_eq!(v["output_buffer_timeout"], 0);
    // delivery still works unbuffered
    c.sub("t", "c");
    c.rdy(1);
    s.connect().publish("t", b"unbuffered");
    assert_eq!(c.expect_message().body, b"unbuffered");
}

#[test]
fn identify_output_buffer_timeout_minus_one() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let v = parse(&negotiate(&mut c, r#""output_buffer_timeout":-1"#));
    assert_eq!(v["output_buffer_timeout"], 0);
    assert_eq!(v["output_buffer_size"], 16384);
}

#[test]
fn identify_boundary_values_accepted() {
    let s = Server::start(&[]);
    for extra in [
        r#""heartbeat_interval":1000"#,
        r#""heartbeat_interval":60000"#,
        r#""heartbeat_interval":-1"#,
        r#""output_buffer_timeout":25"#,
        r#""output_buffer_timeout":30000"#,
        r#""output_buffer_size":64"#,
        r#""output_buffer_size":65536"#,
        r#""sample_rate":99"#,
        r#""msg_timeout":1000"#,
        r#""msg_timeout":900000"#,
    ] {
        let mut c = s.connect();
        let v = parse(&negotiate(&mut c, extra));
        assert_eq!(v["max_rdy_count"], 2500, "{extra}");
    }
}

#[test]
fn identify_invalid_values() {
    let s = Server::start(&[]);
    for (extra, err) in [
        (
            r#""heartbeat_interval":999"#,
            "E_BAD_BODY IDENTIFY heartbeat interval (999) is invalid",
        ),
        (
            r#""heartbeat_interval":60001"#,
            "E_BAD_BODY IDENTIFY heartbeat interval (60001) is invalid",
        ),
        (
            r#""heartbeat_interval":-2"#,
            "E_BAD_BODY IDENTIFY heartbeat interval (-2) is invalid",
        ),
        (
            r#""output_buffer_timeout":24"#,
            "E_BAD_BODY IDENTIFY output buffer timeout (24) is invalid",
        ),
        (
            r#""output_buffer_timeout":30001"#,
            "E_BAD_BODY IDENTIFY output buffer timeout (30001) is invalid",
        ),
        (
            r#""output_buffer_timeout":-2"#,
            "E_BAD_BODY IDENTIFY output buffer timeout (-2) is invalid",
        ),
        (
            r#""output_buffer_size":63"#,
            "E_BAD_BODY IDENTIFY output buffer size (63) is invalid",
        ),
        (
            r#""output_buffer_size":65537"#,
            "E_BAD_BODY IDENTIFY output buffer size (65537) is invalid",
        ),
        (
            r#""output_buffer_size":-2"#,
            "E_BAD_BODY IDENTIFY output buffer size (-2) is invalid",
        ),
        (
            r#""sample_rate":100"#,
            "E_BAD_BODY IDENTIFY sample rate (100) is invalid",
        ),
        (
            r#""sample_rate":-1"#,
            "E_BAD_BODY IDENTIFY sample rate (-1) is invalid",
        ),
        (
            r#""msg_timeout":999"#,
            "E_BAD_BODY IDENTIFY msg timeout (999) is invalid",
        ),
        (
            r#""msg_timeout":900001"#,
            "E_BAD_BODY IDENTIFY msg timeout (900001) is invalid",
        ),
        (
            r#""msg_timeout":-1"#,
            "E_BAD_BODY IDENTIFY msg timeout (-1) is invalid",
        ),
    ] {
        // with and without feature negotiation: same error, same close
        for neg in ["true", "false"] {
            let mut c = s.connect();
            c.cmd_body(
                "IDENTIFY",
                format!(r#"{{"feature_negotiation":{neg},{extra}}}"#).as_bytes(),
            );
            c.expect_fatal(err);
        }
    }
}

#[test]
fn identify_limits_follow_flags() {
    let s = Server::start(&[
        "--max-heartbeat-interval=5s",
        "--max-output-buffer-size=1000",
        "--max-output-buffer-timeout=1s",
        "--min-output-buffer-timeout=50ms",
        "--max-msg-timeout=10s",
    ]);
    for (extra, err) in [
        (
            r#""heartbeat_interval":5001"#,
            Some("E_BAD_BODY IDENTIFY heartbeat interval (5001) is invalid"),
        ),
        (r#""heartbeat_interval":5000"#, None),
        (
            r#""output_buffer_size":1001"#,
            Some("E_BAD_BODY IDENTIFY output buffer size (1001) is invalid"),
        ),
        (r#""output_buffer_size":1000"#, None),
        (
            r#""output_buffer_timeout":1001"#,
            Some("E_BAD_BODY IDENTIFY output buffer timeout (1001) is invalid"),
        ),
        (
            r#""output_buffer_timeout":49"#,
            Some("E_BAD_BODY IDENTIFY output buffer timeout (49) is invalid"),
        ),
        (r#""output_buffer_timeout":50"#, None),
        (
            r#""msg_timeout":10001"#,
            Some("E_BAD_BODY IDENTIFY msg timeout (10001) is invalid"),
        ),
        (r#""msg_timeout":10000"#, None),
    ] {
        let mut c = s.connect();
        c.cmd_body("IDENTIFY", format!("{{{extra}}}").as_bytes());
        match err {
            Some(e) => c.expect_fatal(e),
            None => c.expect_ok(),
        }
    }
}

#[test]
fn identify_validation_order() {
    let s = Server::start(&[]);
    let all = [
        (
            "heartbeat_interval",
            999,
            "heartbeat interval (999) is invalid",
        ),
        (
            "output_buffer_timeout",
            1,
            "output buffer timeout (1) is invalid",
        ),
        ("output_buffer_size", 1, "output buffer size (1) is invalid"),
        ("sample_rate", 100, "sample rate (100) is invalid"),
        ("msg_timeout", 1, "msg timeout (1) is invalid"),
    ];
    // with fields i.. all invalid, the error names field i; JSON key order does not matter
    for i in 0..all.len() {
        let mut fields: Vec<String> = all[i..]
            .iter()
            .map(|(k, v, _)| format!("\"{k}\":{v}"))
            .collect();
        fields.reverse();
        let body = format!("{{{}}}", fields.join(","));
        let mut c = s.connect();
        c.cmd_body("IDENTIFY", body.as_bytes());
        c.expect_fatal(&format!("E_BAD_BODY IDENTIFY {}", all[i].2));
    }
}

#[test]
fn identify_bad_json() {
    let s = Server::start(&[]);
    for body in [
        "{",
        "not json",
        "[]",
        "\"str\"",
        r#"{"heartbeat_interval":"1000"}"#,
        r#"{"feature_negotiation":1}"#,
        r#"{"client_id":5}"#,
        r#"{"msg_timeout":1.5}"#,
    ] {
        let mut c = s.connect();
        c.cmd_body("IDENTIFY", body.as_bytes());
        c.expect_fatal("E_BAD_BODY IDENTIFY failed to decode JSON body");
    }
}

#[test]
fn identify_body_size_errors() {
    let s = Server::start(&["--max-body-size=100"]);
    // only the size is sent: the checks happen before the body is read
    for (size, err) in [
        (101, "E_BAD_BODY IDENTIFY body too big 101 > 100"),
        (0, "E_BAD_BODY IDENTIFY invalid body size 0"),
        (-1, "E_BAD_BODY IDENTIFY invalid body size -1"),
        (
            i32::MIN,
            "E_BAD_BODY IDENTIFY invalid body size -2147483648",
        ),
    ] {
        let mut c = s.connect();
        let mut v = b"IDENTIFY\n".to_vec();
        v.extend_from_slice(&size.to_be_bytes());
        c.write(&v);
        c.expect_fatal(err);
    }
    // exactly max-body-size is allowed
    let mut c = s.connect();
    let mut body = r#"{"client_id":""#.to_string();
    while body.len() < 98 {
        body.push('x');
    }
    body.push_str("\"}");
    assert_eq!(body.len(), 100);
    assert_eq!(c.identify(&body), Frame::Response(b"OK".to_vec()));
}

#[test]
fn identify_body_too_big_default_limit() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let mut v = b"IDENTIFY\n".to_vec();
    v.extend_from_slice(&5_242_881i32.to_be_bytes());
    c.write(&v);
    c.expect_fatal("E_BAD_BODY IDENTIFY body too big 5242881 > 5242880");
}

#[test]
fn identify_truncated_input() {
    let s = Server::start(&[]);
    // EOF inside the size
    let mut c = s.connect();
    c.write(b"IDENTIFY\n\x00\x00");
    c.shutdown_write();
    c.expect_fatal("E_BAD_BODY IDENTIFY failed to read body size");
    // EOF inside the body
    let mut c = s.connect();
    c.write(b"IDENTIFY\n\x00\x00\x00\x10{\"a\":");
    c.shutdown_write();
    c.expect_fatal("E_BAD_BODY IDENTIFY failed to read body");
}

#[test]
fn identify_after_sub_is_fatal() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    c.sub("t", "c");
    c.cmd_body("IDENTIFY", b"{}");
    c.expect_fatal("E_INVALID cannot IDENTIFY in current state");
    // state is checked before the size / body
    let mut c = s.connect();
    c.sub("t", "c");
    c.cmd("IDENTIFY");
    c.expect_fatal("E_INVALID cannot IDENTIFY in current state");
}

#[test]
fn identify_may_be_repeated_before_sub() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    assert_eq!(c.identify("{}"), Frame::Response(b"OK".to_vec()));
    let v = parse(&negotiate(&mut c, r#""msg_timeout":5000"#));
    assert_eq!(v["msg_timeout"], 5000);
    c.sub("t", "c");
}

#[test]
fn identify_fields_show_in_stats() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    assert_eq!(
        c.identify(
            r#"{"client_id":"cid-1","hostname":"host.example","user_agent":"test-agent/1.0","sample_rate":10}"#
        ),
        Frame::Response(b"OK".to_vec())
    );
    c.sub("t", "c");
    let clients = s.client_stats("t", "c");
    assert_eq!(clients.len(), 1);
    let cl = &clients[0];
    assert_eq!(cl["client_id"], "cid-1");
    assert_eq!(cl["hostname"], "host.example");
    assert_eq!(cl["user_agent"], "test-agent/1.0");
    assert_eq!(cl["sample_rate"], 10);
    assert_eq!(cl["version"], "V2");
    assert_eq!(cl["state"], 3);
    assert_eq!(cl["deflate"], false);
    assert_eq!(cl["snappy"], false);
    assert_eq!(cl["tls"], false);
}
