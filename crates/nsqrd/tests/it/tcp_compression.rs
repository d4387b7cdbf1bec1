//! Snappy and deflate through IDENTIFY, alone and inside TLS: the reply grants them, traffic in
//! both directions is really compressed, `/stats` shows them, the switches and
//! `--max-deflate-level` apply, and a corrupt stream drops only its own client. Passes against nsqd
//! too (`NSQD_BIN`).

use crate::common;

use std::time::Duration;

use crate::common::{wait_until, Frame, Server};
use crate::layers_common::{contains, strs, tls_flags, Client, TlsClient};

/// A body that compresses well and is easy to spot.
fn body() -> Vec<u8> {
    b"compressible payload, compressible payload; ".repeat(200)
}

/// Publish and consume through `mode` JSON fields; returns the two clients.
fn exchange(s: &Server, mode: &str, topic: &str) -> (Client, Client) {
    let mut p = Client::connect(s.tcp, mode, &TlsClient::default()).unwrap();
    let mut c = Client::connect(s.tcp, mode, &TlsClient::default()).unwrap();
    c.sub(topic, "ch");
    c.cmd("RDY 10");
    let b = body();
    for _ in 0..3 {
        p.publish(topic, &b);
    }
    p.cmd_body(
        &format!("MPUB {topic}"),
        &common::mpub_body(&[&b, b"small"]),
    );
    p.expect_ok();
    for expect in [&b[..], &b, &b, &b, b"small"] {
        let m = c.expect_message();
        assert_eq!(m.body, expect);
        c.cmd(&format!("FIN {}", m.id_str()));
    }
    (p, c)
}

fn consumer_stats(s: &Server, topic: &str, c: &Client) -> serde_json::Value {
    let me = c.local_addr();
    let mut found = None;
    wait_until(Duration::from_secs(5), || {
        found = s
            .client_stats(topic, "ch")
            .into_iter()
            .find(|x| x["remote_address"] == me.as_str());
        found.is_some()
    });
    found.expect("consumer in stats")
}

#[test]
fn snappy_both_directions() {
    let s = Server::start(&[]);
    let (p, c) = exchange(&s, r#""snappy":true"#, "snappy_t");
    assert_eq!(c.identify["snappy"], true);
    assert_eq!(c.identify["deflate"], false);
    let plain = body().len() * 4;
    let (pr, cr) = (p.raw(), c.raw());
    assert!(
        pr.sent.len() < plain / 4,
        "publisher sent {} bytes",
        pr.sent.len()
    );
    assert!(
        cr.received.len() < plain / 4,
        "consumer got {} bytes",
        cr.received.len()
    );
    assert!(contains(&cr.received, b"sNaPpY"));
    assert!(!contains(&cr.received, &body()[..200]));
    let st = consumer_stats(&s, "snappy_t", &c);
    assert_eq!(st["snappy"], true);
    assert_eq!(st["deflate"], false);
}

#[test]
fn deflate_both_directions_and_levels() {
    let s = Server::start(&["--max-deflate-level=3"]);
    let (p, c) = exchange(&s, r#""deflate":true,"deflate_level":9"#, "deflate_t");
    assert_eq!(c.identify["deflate"], true);
    assert_eq!(c.identify["deflate_level"], 3);
    assert_eq!(c.identify["max_deflate_level"], 3);
    let plain = body().len() * 4;
    assert!(p.raw().sent.len() < plain / 4);
    assert!(c.raw().received.len() < plain / 4);
    let st = consumer_stats(&s, "deflate_t", &c);
    assert_eq!(st["deflate"], true);
    assert_eq!(st["snappy"], false);
    // Level 1 and a level <= 0 (meaning 6, then capped).
    let c1 = Client::connect(
        s.tcp,
        r#""deflate":true,"deflate_level":1"#,
        &TlsClient::default(),
    )
    .unwrap();
    assert_eq!(c1.identify["deflate_level"], 1);
    let c0 = Client::connect(
        s.tcp,
        r#""deflate":true,"deflate_level":0"#,
        &TlsClient::default(),
    )
    .unwrap();
    assert_eq!(c0.identify["deflate_level"], 3);
}

#[test]
fn compression_inside_tls() {
    let s = Server::start(&strs(&tls_flags()));
    for (mode, topic) in [
        (r#""tls_v1":true,"snappy":true"#, "tls_snappy"),
        (r#""tls_v1":true,"deflate":true"#, "tls_deflate"),
    ] {
        let (p, c) = exchange(&s, mode, topic);
        assert_eq!(c.identify["tls_v1"], true);
        assert!(p.raw().sent.len() < body().len());
        assert!(
            !contains(&c.raw().received, b"sNaPpY"),
            "snappy must be inside TLS"
        );
        let st = consumer_stats(&s, topic, &c);
        assert_eq!(st["tls"], true);
        assert!(st["snappy"] == true || st["deflate"] == true, "{st}");
    }
}

#[test]
fn switches_turn_compression_off() {
    let s = Server::start(&["--snappy=false", "--deflate=false"]);
    for mode in [r#""snappy":true"#, r#""deflate":true"#] {
        let mut c = Client::connect(s.tcp, mode, &TlsClient::default()).unwrap();
        assert_eq!(c.identify["snappy"], false);
        assert_eq!(c.identify["deflate"], false);
        c.publish("t", b"plain");
        assert!(contains(&c.raw().sent, b"plain"));
    }
    // Both asked and both on: nsqd's error.
    let s = Server::start(&[]);
    let mut c = s.connect();
    let f = c.identify(r#"{"feature_negotiation":true,"snappy":true,"deflate":true}"#);
    assert_eq!(
        f,
        Frame::Error("E_IDENTIFY_FAILED cannot enable both deflate and snappy compression".into())
    );
    assert!(c.expect_closed());
}

/// Upgrade to `mode`, then send `garbage` as the compressed stream: the client is dropped in
/// time, and another client on the same server is not disturbed.
fn corrupt_stream(mode: &str, garbage: &[u8]) {
    let s = Server::start(&[]);
    let mut other = Client::connect(s.tcp, mode, &TlsClient::default()).unwrap();
    other.sub("corrupt_t", "ch");
    other.cmd("RDY 1");
    let mut c = s.connect();
    let f = c.identify(&format!(r#"{{"feature_negotiation":true,{mode}}}"#));
    assert!(matches!(f, Frame::Response(_)));
    // The upgrade's OK arrives compressed; skip it and send garbage.
    c.write(garbage);
    // Closed for the corruption (the read deadline is 60 s, past the read timeout of 10 s).
    assert!(
        c.expect_closed(),
        "corrupt stream did not close the connection"
    );
    let mut p = Client::connect(s.tcp, mode, &TlsClient::default()).unwrap();
    p.publish("corrupt_t", b"still fine");
    assert_eq!(other.expect_message().body, b"still fine");
}

#[test]
fn corrupt_snappy_stream() {
    // A compressed chunk before the stream identifier, then a bad checksum.
    corrupt_stream(
        r#""snappy":true"#,
        b"\x00\x08\x00\x00\x01\x02\x03\x04garbage!",
    );
    let mut bad_crc = b"\xff\x06\x00\x00sNaPpY\x01\x09\x00\x00\x00\x00\x00\x00NOP\n".to_vec();
    bad_crc.extend_from_slice(b"\n");
    corrupt_stream(r#""snappy":true"#, &bad_crc);
}

#[test]
fn corrupt_deflate_stream() {
    // 0xff: a reserved block type (BTYPE 11).
    corrupt_stream(r#""deflate":true"#, &[0xff; 64]);
}
