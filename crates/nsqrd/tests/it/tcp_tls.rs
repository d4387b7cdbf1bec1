//! TLS through IDENTIFY `tls_v1`, `--tls-required` on TCP and HTTP, client-certificate policies,
//! `--tls-min-version`, the HTTPS listener, TLS fields in `/stats`, and bad input where a handshake
//! is due. Passes against nsqd too (`NSQD_BIN`), except where a test says it checks an nsqrd-only
//! choice.

use std::io::Write;
use std::time::{Duration, Instant};

use crate::common::{is_reference, run_to_exit, wait_until, Frame, Server};
use crate::layers_common::{contains, fixture, strs, tls_flags, Client, TlsClient};

fn tls_server(extra: &[&str]) -> Server {
    let mut flags = tls_flags();
    flags.extend(extra.iter().map(|s| s.to_string()));
    Server::start(&strs(&flags))
}

#[test]
fn identify_grants_tls_and_traffic_is_encrypted() {
    let s = tls_server(&[]);
    let body = b"a secret message body that must not be seen on the wire".repeat(4);
    let mut p = Client::connect(s.tcp, r#""tls_v1":true"#, &TlsClient::default()).unwrap();
    assert_eq!(p.identify["tls_v1"], true);
    assert_eq!(p.identify["snappy"], false);
    assert_eq!(p.identify["deflate"], false);
    let mut c = Client::connect(s.tcp, r#""tls_v1":true"#, &TlsClient::default()).unwrap();
    c.sub("tls_t", "ch");
    c.cmd("RDY 1");
    p.publish("tls_t", &body);
    let m = c.expect_message();
    assert_eq!(m.body, body);
    c.cmd(&format!("FIN {}", m.id_str()));
    for raw in [p.raw(), c.raw()] {
        assert!(!contains(&raw.sent, b"secret message"));
        assert!(!contains(&raw.received, b"secret message"));
        assert!(!contains(&raw.sent, b"SUB tls_t"));
    }
    // /stats shows the session.
    let me = c.local_addr();
    let ok = wait_until(Duration::from_secs(5), || {
        s.client_stats("tls_t", "ch")
            .iter()
            .any(|x| x["remote_address"] == me.as_str() && x["tls"] == true)
    });
    assert!(ok, "stats never showed tls for {me}");
    let st = s
        .client_stats("tls_t", "ch")
        .into_iter()
        .find(|x| x["remote_address"] == me.as_str())
        .unwrap();
    assert_eq!(st["tls_version"], "TLS1.3");
    assert!(!st["tls_cipher_suite"].as_str().unwrap().is_empty());
    assert_eq!(st["tls_negotiated_protocol"], "");
    assert_eq!(st["tls_negotiated_protocol_is_mutual"], true);
}

#[test]
fn tls_1_2_client_and_min_version() {
    let s = tls_server(&[]);
    let tls12 = TlsClient {
        tls12_only: true,
        ..TlsClient::default()
    };
    let mut c = Client::connect(s.tcp, r#""tls_v1":true"#, &tls12).unwrap();
    c.publish("t12", b"x");
    let s = tls_server(&["--tls-min-version=tls1.3"]);
    assert!(Client::connect(s.tcp, r#""tls_v1":true"#, &tls12).is_err());
    let mut c = Client::connect(s.tcp, r#""tls_v1":true"#, &TlsClient::default()).unwrap();
    c.publish("t13", b"x");
}

#[test]
fn tls_not_offered_without_cert() {
    let s = Server::start(&[]);
    let mut c = Client::connect(s.tcp, r#""tls_v1":true"#, &TlsClient::default()).unwrap();
    assert_eq!(c.identify["tls_v1"], false);
    c.publish("t", b"plain");
}

#[test]
fn tls_required_refuses_commands_before_upgrade() {
    for mode in ["--tls-required", "--tls-required=tcp-https"] {
        let s = tls_server(&[mode]);
        let mut c = s.connect();
        c.cmd("NOP");
        c.expect_fatal("E_INVALID cannot NOP in current state (TLS required)");
        let mut c = s.connect();
        c.cmd_body("PUB t", b"x");
        c.expect_fatal("E_INVALID cannot PUB in current state (TLS required)");
        // IDENTIFY without TLS is answered, but the next command is still refused.
        let mut c = s.connect();
        c.identify(r#"{"client_id":"x"}"#);
        c.cmd("SUB t c");
        c.expect_fatal("E_INVALID cannot SUB in current state (TLS required)");
        // After the upgrade everything works.
        let mut t = Client::connect(s.tcp, r#""tls_v1":true"#, &TlsClient::default()).unwrap();
        t.publish("t", b"x");
    }
}

fn https_port(s: &Server) -> u16 {
    let mut port = None;
    let ok = wait_until(Duration::from_secs(5), || {
        for l in s.log_lines() {
            if let Some(i) = l.find("HTTPS: listening on ") {
                let addr = l[i + 20..].split_whitespace().next().unwrap_or("");
                port = addr.rsplit(':').next().and_then(|p| p.parse().ok());
            }
        }
        port.is_some()
    });
    assert!(ok, "no HTTPS listener line");
    port.unwrap()
}

/// GET over HTTPS with the test CA; returns the raw response text.
fn https_get(port: u16, path: &str) -> String {
    let cfg = TlsClient::default().config();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let mut conn = rustls::ClientConnection::new(cfg, name).unwrap();
    let mut sock = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut tls = rustls::Stream::new(&mut conn, &mut sock);
    write!(
        tls,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = Vec::new();
    let _ = std::io::Read::read_to_end(&mut tls, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn https_listener_and_http_tls_required() {
    let s = tls_server(&["--https-address=127.0.0.1:0", "--tls-required=true"]);
    let port = https_port(&s);
    let r = s.get("/ping");
    assert_eq!(r.status, 403);
    assert_eq!(
        r.text(),
        format!(r#"{{"message": "TLS_REQUIRED", "https_port": {port}}}"#)
    );
    let resp = https_get(port, "/ping");
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    assert!(resp.ends_with("OK"), "{resp}");
    let resp = https_get(port, "/info");
    assert!(resp.contains("\"version\":\"1.3.0\""), "{resp}");
    // tcp-https leaves plain HTTP open.
    let s = tls_server(&["--https-address=127.0.0.1:0", "--tls-required=tcp-https"]);
    assert_eq!(s.get("/ping").status, 200);
}

#[test]
fn plain_bytes_instead_of_handshake() {
    let s = tls_server(&[]);
    let mut c = s.connect();
    let f = c.identify(r#"{"feature_negotiation":true,"tls_v1":true}"#);
    assert!(matches!(f, Frame::Response(_)));
    c.cmd_body("PUB t", b"not a client hello at all, just a command");
    // Refused for what it is, not by the 5 s handshake deadline.
    c.expect_error(
        "E_IDENTIFY_FAILED IDENTIFY failed tls: first record does not look like a TLS handshake",
    );
    assert!(c.expect_closed());
    // The server and other clients go on.
    let mut p = Client::connect(s.tcp, r#""tls_v1":true"#, &TlsClient::default()).unwrap();
    p.publish("t", b"after");
}

#[test]
fn silent_client_is_dropped_after_handshake_deadline() {
    let s = tls_server(&[]);
    let mut c = s.connect();
    c.identify(r#"{"feature_negotiation":true,"tls_v1":true}"#);
    let t0 = Instant::now();
    c.set_timeout(Duration::from_secs(30));
    assert!(c.expect_closed());
    let took = t0.elapsed();
    // The 5 s handshake deadline, not sooner (a bound from above would fail on a slow machine).
    assert!(took >= Duration::from_secs(4), "{took:?}");
}

#[test]
fn client_cert_policies() {
    let s = tls_server(&["--tls-client-auth-policy=require-verify"]);
    let signed = TlsClient {
        cert: Some("client"),
        ..TlsClient::default()
    };
    let rogue = TlsClient {
        cert: Some("rogue"),
        ..TlsClient::default()
    };
    Client::connect(s.tcp, r#""tls_v1":true"#, &signed)
        .unwrap()
        .publish("t", b"x");
    // A failed client handshake surfaces at the client's first read (TLS 1.3).
    let refused = |c: Result<Client, String>| match c {
        Err(_) => true,
        Ok(mut c) => {
            c.cmd_body("PUB t", b"x");
            c.try_read_frame().is_none()
        }
    };
    assert!(refused(Client::connect(s.tcp, r#""tls_v1":true"#, &rogue)));
    assert!(refused(Client::connect(
        s.tcp,
        r#""tls_v1":true"#,
        &TlsClient::default()
    )));
    // The policy forces TLS on.
    let mut c = s.connect();
    c.cmd("NOP");
    c.expect_fatal("E_INVALID cannot NOP in current state (TLS required)");

    let s = tls_server(&["--tls-client-auth-policy=require"]);
    Client::connect(s.tcp, r#""tls_v1":true"#, &rogue)
        .unwrap()
        .publish("t", b"x");
    assert!(refused(Client::connect(
        s.tcp,
        r#""tls_v1":true"#,
        &TlsClient::default()
    )));
}

#[test]
fn bad_certificate_files_fail_startup() {
    let dir = nsqr_testkit::temp_dir("nsqr-tls-bad");
    let data = format!("--data-path={}", dir.display());
    let cert = format!("--tls-cert={}", fixture("server.pem"));
    // The client key does not belong to the server certificate.
    let wrong_key = format!("--tls-key={}", fixture("client.key"));
    let (code, out) = run_to_exit(&[&data, "--tcp-address=127.0.0.1:0", &cert, &wrong_key]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("FATAL: ") && out.contains("failed to build TLS config - "),
        "{out}"
    );
    // A key file holding a certificate.
    let bad_key = format!("--tls-key={}", fixture("ca.pem"));
    let (code, out) = run_to_exit(&[&data, "--tcp-address=127.0.0.1:0", &cert, &bad_key]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("FATAL: ") && out.contains("failed to build TLS config - "),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Against nsqrd only: `require-verify` without a CA file is refused at startup (nsqd would
/// verify against the system roots, which nsqrd does not read; docs/compatibility.md).
#[test]
fn require_verify_needs_a_ca_file() {
    if is_reference() {
        return;
    }
    let dir = nsqr_testkit::temp_dir("nsqr-tls-ca");
    let data = format!("--data-path={}", dir.display());
    let cert = format!("--tls-cert={}", fixture("server.pem"));
    let key = format!("--tls-key={}", fixture("server.key"));
    let (code, out) = run_to_exit(&[
        &data,
        "--tcp-address=127.0.0.1:0",
        &cert,
        &key,
        "--tls-client-auth-policy=require-verify",
    ]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("needs --tls-root-ca-file"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}
