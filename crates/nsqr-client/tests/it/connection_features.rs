//! What IDENTIFY negotiates, checked against nsqd (nsqrd, or `NSQD_BIN`): TLS (with and
//! without a client certificate, and required by the server), snappy, deflate, TLS with
//! compression, large compressible bodies through compression, AUTH against an auth server,
//! and heartbeats keeping an idle connection open.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{config, fixture, strs, tls_flags, within, Daemon};
use nsqr_client::tls::TlsFiles;
use nsqr_client::{Compression, Config, Consumer, Error, ErrorCode, Producer};

/// Publish a few messages and read them back through a consumer with the same config.
async fn exchange(nsqd: &Daemon, cfg: Config, topic: &str) {
    let producer = Producer::connect(&nsqd.url(), cfg.clone()).await.unwrap();
    let bodies: Vec<String> = (0..50)
        .map(|i| format!("{topic}-{i}-{}", "z".repeat(i * 40)))
        .collect();
    for b in &bodies {
        producer.publish(topic, b.clone()).await.unwrap();
    }
    producer
        .multi_publish(topic, bodies.iter().map(|b| format!("m{b}")))
        .await
        .unwrap();
    let mut consumer = Consumer::new(topic, "c", cfg).unwrap();
    consumer.connect(&nsqd.url()).await.unwrap();
    consumer.change_max_in_flight(100);
    let mut got = Vec::new();
    while got.len() < 100 {
        let m = within("messages", consumer.next()).await.unwrap();
        got.push(String::from_utf8(m.body().to_vec()).unwrap());
        m.finish().unwrap();
    }
    got.sort();
    let mut want: Vec<String> = bodies
        .iter()
        .cloned()
        .chain(bodies.iter().map(|b| format!("m{b}")))
        .collect();
    want.sort();
    assert_eq!(got, want);
    consumer.stop().await;
    producer.stop().await;
}

/// Large compressible bodies over a compressed connection, each published and consumed before
/// the next is sent, so nothing follows one on either connection that could push the end of
/// its plaintext out of a decompressor: the server must decode each PUB whole (to answer it),
/// the consumer each message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_compressible_bodies_arrive_whole() {
    let nsqd = Daemon::nsqd(&[]);
    let cases = [
        ("large_deflate6", Compression::Deflate(6)),
        ("large_deflate1", Compression::Deflate(1)),
        ("large_deflate9", Compression::Deflate(9)),
        ("large_snappy", Compression::Snappy),
    ];
    let pattern =
        |p: &[u8], len: usize| -> Vec<u8> { p.iter().copied().cycle().take(len).collect() };
    let bodies = [
        pattern(b"x", 20_000),
        pattern(b"0123456789", 33_000),
        pattern(b"the same message body, again and again; ", 70_000),
        pattern(b"0123456789", 33_000),
        pattern(b"ab", 65_536),
        b"small".to_vec(),
        pattern(b"0123456789", 70_000),
    ];
    for (topic, compression) in cases {
        let mut cfg = config();
        cfg.compression = compression;
        let producer = Producer::connect(&nsqd.url(), cfg.clone()).await.unwrap();
        let mut consumer = Consumer::new(topic, "c", cfg).unwrap();
        consumer.connect(&nsqd.url()).await.unwrap();
        for (i, body) in bodies.iter().enumerate() {
            within(
                &format!("{topic}: publish body {i}"),
                producer.publish(topic, body.clone()),
            )
            .await
            .unwrap();
            let m = within(&format!("{topic}: message {i}"), consumer.next())
                .await
                .unwrap();
            assert!(
                m.body().as_ref() == &body[..],
                "{topic}: body {i} ({} B) came back as {} B",
                body.len(),
                m.body().len()
            );
            m.finish().unwrap();
        }
        consumer.stop().await;
        producer.stop().await;
    }
}

/// The negotiated features of the channel's client, as nsqd's /stats shows them.
fn client_features(nsqd: &Daemon, topic: &str) -> serde_json::Value {
    let s = nsqd.stats();
    let t = s["topics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["topic_name"] == topic)
        .unwrap()
        .clone();
    t["channels"][0]["clients"][0].clone()
}

fn tls(cert: bool) -> nsqr_client::TlsConfig {
    let (c, k) = (fixture("client.pem"), fixture("client.key"));
    let ca = fixture("ca.pem");
    TlsFiles {
        root_ca_file: Some(&ca),
        cert_file: cert.then_some(c.as_path()),
        key_file: cert.then_some(k.as_path()),
        insecure_skip_verify: false,
    }
    .build()
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_snappy_deflate_and_their_combinations() {
    let flags = tls_flags();
    let nsqd = Daemon::nsqd(&strs(&flags));
    let cases = [
        ("plain", false, Compression::None),
        ("tls", true, Compression::None),
        ("snappy", false, Compression::Snappy),
        ("deflate", false, Compression::Deflate(6)),
        ("tls_snappy", true, Compression::Snappy),
        ("tls_deflate", true, Compression::Deflate(1)),
    ];
    for (topic, use_tls, compression) in cases {
        let mut cfg = config();
        cfg.tls = use_tls.then(|| tls(false));
        cfg.compression = compression;
        // A consumer stays connected while the stats are read.
        let mut watcher = Consumer::new(topic, "c", cfg.clone()).unwrap();
        watcher.connect(&nsqd.url()).await.unwrap();
        let c = client_features(&nsqd, topic);
        assert_eq!(c["tls"], use_tls, "{topic}: {c}");
        assert_eq!(
            c["snappy"],
            compression == Compression::Snappy,
            "{topic}: {c}"
        );
        assert_eq!(
            c["deflate"],
            matches!(compression, Compression::Deflate(_)),
            "{topic}: {c}"
        );
        watcher.stop().await;
        exchange(&nsqd, cfg, topic).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_client_certificates_and_required_tls() {
    let mut flags = tls_flags();
    flags.push("--tls-client-auth-policy=require-verify".into());
    flags.push("--tls-required=true".into());
    let nsqd = Daemon::nsqd(&strs(&flags));
    // Without TLS the server refuses the publish.
    let e = Producer::connect(&nsqd.url(), config())
        .await
        .unwrap()
        .publish("t", "x")
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::Invalid), "{e}");
    // TLS without the client certificate the server requires: the handshake fails.
    let mut cfg = config();
    cfg.tls = Some(tls(false));
    let e = Producer::connect(&nsqd.url(), cfg).await.unwrap_err();
    assert!(
        matches!(e, Error::Tls(_) | Error::Io { .. } | Error::Closed(_)),
        "{e}"
    );
    // With it, everything works.
    let mut cfg = config();
    cfg.tls = Some(tls(true));
    exchange(&nsqd, cfg, "certified").await;

    // A server without TLS cannot grant it: the client refuses to go on in clear.
    let plain = Daemon::nsqd(&[]);
    let mut cfg = config();
    cfg.tls = Some(tls(false));
    let e = Producer::connect(&plain.url(), cfg).await.unwrap_err();
    assert!(matches!(e, Error::Tls(_)), "{e}");
}

/// An auth server that grants publish and subscribe on topics starting with `ok` to the
/// secret `s3cret` and nothing to anyone else; it records the secrets it is asked about.
fn auth_server() -> (String, Arc<Mutex<Vec<String>>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = Arc::clone(&seen);
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            let mut buf = [0u8; 4096];
            let n = s.read(&mut buf).unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]).into_owned();
            let secret = head
                .split("secret=")
                .nth(1)
                .and_then(|r| r.split(['&', ' ']).next())
                .unwrap_or("")
                .to_string();
            s2.lock().unwrap().push(secret.clone());
            let body = if secret == "s3cret" {
                r#"{"ttl":60,"identity":"tester","identity_url":"","authorizations":[{"topic":"^ok","channels":[".*"],"permissions":["publish","subscribe"]}]}"#
            } else {
                r#"{"ttl":60,"identity":"nobody","identity_url":"","authorizations":[]}"#
            };
            let resp = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = s.write_all(resp.as_bytes());
        }
    });
    (addr, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_secret_is_sent_when_the_server_requires_it() {
    let (auth, seen) = auth_server();
    let nsqd = Daemon::nsqd(&[&format!("--auth-http-address={auth}")]);
    // No secret configured: refused before anything is published.
    let e = Producer::connect(&nsqd.url(), config()).await.unwrap_err();
    assert!(matches!(e, Error::AuthRequired), "{e}");

    let mut cfg = config();
    cfg.auth_secret = Some("s3cret".into());
    exchange(&nsqd, cfg.clone(), "ok_topic").await;
    // Authenticated, but not for this topic: nsqd's E_UNAUTHORIZED.
    let p = Producer::connect(&nsqd.url(), cfg.clone()).await.unwrap();
    let e = p.publish("other", "x").await.unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::Unauthorized), "{e}");
    let mut c = Consumer::new("other", "c", cfg).unwrap();
    let e = c.connect(&nsqd.url()).await.unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::Unauthorized), "{e}");
    // A wrong secret is granted nothing, which AUTH itself refuses.
    let mut bad = config();
    bad.auth_secret = Some("wrong".into());
    let e = Producer::connect(&nsqd.url(), bad).await.unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::Unauthorized), "{e}");
    assert!(
        e.to_string().contains("AUTH no authorizations found"),
        "{e}"
    );
    let seen = seen.lock().unwrap().clone();
    assert!(
        seen.contains(&"s3cret".to_string()) && seen.contains(&"wrong".to_string()),
        "{seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeats_keep_an_idle_connection_open() {
    let nsqd = Daemon::nsqd(&[]);
    let mut cfg = config();
    cfg.heartbeat_interval = Some(Duration::from_secs(1));
    cfg.read_timeout = Duration::from_millis(2500);
    let mut consumer = Consumer::new("hb", "c", cfg.clone()).unwrap();
    consumer.connect(&nsqd.url()).await.unwrap();
    let port = |n: &Daemon| client_features(n, "hb")["remote_address"].clone();
    let before = port(&nsqd);
    // Idle for longer than the read timeout: heartbeats arrive, NOPs answer them.
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(port(&nsqd), before, "the same connection");
    let producer = Producer::connect(&nsqd.url(), cfg).await.unwrap();
    producer.publish("hb", "after the wait").await.unwrap();
    let m = within("message", consumer.next()).await.unwrap();
    assert_eq!(m.body().as_ref(), b"after the wait");
    m.finish().unwrap();
    assert_eq!(consumer.stats().connections, 1);
    consumer.stop().await;
}
