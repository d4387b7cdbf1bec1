//! AUTH against an auth server, with a small auth server inside the test: allowed and denied PUB /
//! MPUB / DPUB / SUB, the exact request nsqd sends (GET and POST), TTL expiry and re-query, every
//! AUTH error string, and an auth server that is down, hangs or answers garbage. Passes against
//! nsqd too (`NSQD_BIN`).

use crate::common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use crate::common::{mpub_body, Frame, Server};

/// What the fake auth server answers.
#[derive(Clone)]
enum Answer {
    Reply(u16, String),
    Hang,
}

#[derive(Default)]
struct Seen {
    /// Request line, then the body, per request.
    requests: Vec<(String, String, String)>,
}

struct AuthServer {
    addr: SocketAddr,
    answer: Arc<Mutex<Answer>>,
    seen: Arc<Mutex<Seen>>,
}

fn read_request(s: &mut TcpStream) -> Option<(String, String, String)> {
    let mut buf = Vec::new();
    let mut b = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = s.read(&mut b).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&b[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let len: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    while buf.len() < head_end + len {
        let n = s.read(&mut b).ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&b[..n]);
    }
    let line = head.lines().next().unwrap_or("").to_string();
    let body = String::from_utf8_lossy(&buf[head_end..]).into_owned();
    Some((line, head, body))
}

impl AuthServer {
    fn start(answer: Answer) -> AuthServer {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let answer = Arc::new(Mutex::new(answer));
        let seen = Arc::new(Mutex::new(Seen::default()));
        let (a, sn) = (Arc::clone(&answer), Arc::clone(&seen));
        thread::spawn(move || {
            for s in l.incoming() {
                let Ok(mut s) = s else { return };
                let (a, sn) = (Arc::clone(&a), Arc::clone(&sn));
                thread::spawn(move || {
                    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                    while let Some(req) = read_request(&mut s) {
                        sn.lock().unwrap().requests.push(req);
                        let answer = a.lock().unwrap().clone();
                        match answer {
                            Answer::Hang => {
                                thread::sleep(Duration::from_secs(20));
                                return;
                            }
                            Answer::Reply(status, body) => {
                                let resp = format!(
                                    "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                                    body.len()
                                );
                                if s.write_all(resp.as_bytes()).is_err() {
                                    return;
                                }
                            }
                        }
                    }
                });
            }
        });
        AuthServer { addr, answer, seen }
    }

    fn set(&self, a: Answer) {
        *self.answer.lock().unwrap() = a;
    }

    fn requests(&self) -> Vec<(String, String, String)> {
        self.seen.lock().unwrap().requests.clone()
    }

    fn flag(&self) -> String {
        format!("--auth-http-address={}", self.addr)
    }
}

fn ok(ttl: u32) -> Answer {
    Answer::Reply(
        200,
        format!(
            r#"{{"ttl":{ttl},"identity":"test-id","identity_url":"http://id.example/u","authorizations":[
              {{"topic":"^allowed","channels":[".*"],"permissions":["publish","subscribe"]}},
              {{"topic":"^subonly$","channels":["^ch$"],"permissions":["subscribe"]}}]}}"#
        ),
    )
}

fn start(auth: &AuthServer, extra: &[&str]) -> Server {
    let mut flags = vec![auth.flag()];
    flags.extend(extra.iter().map(|s| s.to_string()));
    Server::start(&flags.iter().map(String::as_str).collect::<Vec<_>>())
}

fn auth(c: &mut common::Conn, secret: &str) -> Frame {
    c.cmd_body("AUTH", secret.as_bytes());
    c.read_non_heartbeat()
}

#[test]
fn allowed_and_denied_pub_and_sub() {
    let a = AuthServer::start(ok(60));
    let s = start(&a, &[]);
    let mut c = s.connect();
    let f = c.identify(r#"{"feature_negotiation":true}"#);
    let v: serde_json::Value = serde_json::from_slice(match &f {
        Frame::Response(b) => b,
        other => panic!("{other:?}"),
    })
    .unwrap();
    assert_eq!(v["auth_required"], true);
    c.cmd_body("PUB allowed_t", b"x");
    c.expect_fatal("E_AUTH_FIRST AUTH required before PUB");

    let mut c = s.connect();
    c.cmd("SUB allowed_t ch");
    c.expect_fatal("E_AUTH_FIRST AUTH required before SUB");

    let mut c = s.connect();
    assert_eq!(
        auth(&mut c, "s3cret wörd"),
        Frame::Response(
            br#"{"identity":"test-id","identity_url":"http://id.example/u","permission_count":2}"#
                .to_vec()
        )
    );
    c.publish("allowed_t", b"x");
    c.cmd_body("MPUB allowed_t", &mpub_body(&[b"a", b"b"]));
    c.expect_ok();
    c.cmd_body("DPUB allowed_t 10", b"x");
    c.expect_ok();
    c.cmd_body("PUB subonly", b"x");
    c.expect_fatal(r#"E_UNAUTHORIZED AUTH failed for PUB on "subonly" """#);
    let (line, head, _) = a.requests()[0].clone();
    assert_eq!(
        line,
        "GET /auth?common_name=&remote_ip=127.0.0.1&secret=s3cret+w%C3%B6rd&tls=false HTTP/1.1"
    );
    assert!(
        head.to_ascii_lowercase()
            .contains("accept: application/vnd.nsq; version=1.0"),
        "{head}"
    );

    let mut c = s.connect();
    auth(&mut c, "s");
    c.cmd_body("MPUB denied", &mpub_body(&[b"a"]));
    c.expect_fatal(r#"E_UNAUTHORIZED AUTH failed for MPUB on "denied" """#);
    let mut c = s.connect();
    auth(&mut c, "s");
    c.cmd_body("DPUB denied 5", b"x");
    c.expect_fatal(r#"E_UNAUTHORIZED AUTH failed for DPUB on "denied" """#);

    let mut c = s.connect();
    auth(&mut c, "s");
    c.cmd("SUB subonly other");
    c.expect_fatal(r#"E_UNAUTHORIZED AUTH failed for SUB on "subonly" "other""#);
    let mut c = s.connect();
    auth(&mut c, "s");
    c.sub("subonly", "ch");
    c.cmd("RDY 1");
    let mut p = s.connect();
    auth(&mut p, "s");
    p.publish("allowed_t", b"y");
    // /stats shows the identity; the HTTP API itself is not authorized (as nsqd).
    assert_eq!(s.post("/pub?topic=subonly", b"via http").status, 200);
    assert_eq!(c.expect_message().body, b"via http");
    let st = s.client_stats("subonly", "ch");
    assert_eq!(st[0]["authed"], true);
    assert_eq!(st[0]["auth_identity"], "test-id");
    assert_eq!(st[0]["auth_identity_url"], "http://id.example/u");
}

#[test]
fn auth_command_errors() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    assert_eq!(
        auth(&mut c, "x"),
        Frame::Error("E_AUTH_DISABLED AUTH disabled".into())
    );
    assert!(c.expect_closed());

    let a = AuthServer::start(ok(60));
    let s = start(&a, &[]);
    let mut c = s.connect();
    auth(&mut c, "x");
    assert_eq!(
        auth(&mut c, "x"),
        Frame::Error("E_INVALID AUTH already set".into())
    );
    let mut c = s.connect();
    c.cmd_body("AUTH extra", b"x");
    c.expect_fatal("E_INVALID AUTH invalid number of parameters");

    a.set(Answer::Reply(
        200,
        r#"{"ttl":60,"authorizations":[]}"#.into(),
    ));
    let mut c = s.connect();
    assert_eq!(
        auth(&mut c, "x"),
        Frame::Error("E_UNAUTHORIZED AUTH no authorizations found".into())
    );
    assert!(c.expect_closed());
}

#[test]
fn bad_auth_server_answers() {
    let a = AuthServer::start(Answer::Reply(200, "this is not json".into()));
    let s = start(&a, &[]);
    for answer in [
        Answer::Reply(200, "this is not json".into()),
        Answer::Reply(500, r#"{"message":"boom"}"#.into()),
        Answer::Reply(200, r#"{"ttl":0,"authorizations":[{"topic":".*","channels":[".*"],"permissions":["publish"]}]}"#.into()),
        Answer::Reply(200, r#"{"ttl":5,"authorizations":[{"topic":".*","channels":[".*"],"permissions":["admin"]}]}"#.into()),
        Answer::Reply(200, r#"{"ttl":5,"authorizations":[{"topic":"(","channels":[".*"],"permissions":["publish"]}]}"#.into()),
    ] {
        a.set(answer);
        let mut c = s.connect();
        assert_eq!(auth(&mut c, "x"), Frame::Error("E_AUTH_FAILED AUTH failed".into()));
        assert!(c.expect_closed());
    }
}

#[test]
fn auth_server_down_or_hanging() {
    // Nothing listens on a free port.
    let free = SocketAddr::from(([127, 0, 0, 1], nsqr_testkit::free_port()));
    let s = Server::start(&[&format!("--auth-http-address={free}")]);
    let mut c = s.connect();
    assert_eq!(
        auth(&mut c, "x"),
        Frame::Error("E_AUTH_FAILED AUTH failed".into())
    );
    assert!(c.expect_closed());

    let a = AuthServer::start(Answer::Hang);
    let s = start(&a, &["--http-client-request-timeout=1s"]);
    let mut c = s.connect();
    let mut other = s.connect();
    c.cmd_body("AUTH", b"x");
    // Other clients are not held up meanwhile.
    other.cmd("NOP");
    other.cmd_body("AUTH", b"");
    other.expect_fatal("E_BAD_BODY AUTH invalid body size 0");
    // The auth server never answers (it holds the request for 20 s): only the 1 s request
    // timeout can produce this answer before the read gives up (10 s).
    assert_eq!(
        c.read_non_heartbeat(),
        Frame::Error("E_AUTH_FAILED AUTH failed".into())
    );
    assert!(c.expect_closed());
}

#[test]
fn ttl_expiry_requeries() {
    let a = AuthServer::start(ok(1));
    let s = start(&a, &[]);
    let mut c = s.connect();
    auth(&mut c, "x");
    c.publish("allowed_t", b"1");
    assert_eq!(a.requests().len(), 1);
    thread::sleep(Duration::from_millis(1300));
    c.publish("allowed_t", b"2");
    assert_eq!(a.requests().len(), 2);
    // Once expired again, a failing re-query is E_AUTH_FAILED.
    a.set(Answer::Reply(500, "{}".into()));
    thread::sleep(Duration::from_millis(1300));
    c.cmd_body("PUB allowed_t", b"3");
    c.expect_fatal("E_AUTH_FAILED AUTH failed");
    assert_eq!(a.requests().len(), 3);
}

#[test]
fn post_method_url_form_and_fallback() {
    let a = AuthServer::start(ok(60));
    let free = SocketAddr::from(([127, 0, 0, 1], nsqr_testkit::free_port()));
    let url = format!("--auth-http-address=http://{}/custom/path", a.addr);
    let s = Server::start(&[
        "--auth-http-request-method=post",
        &format!("--auth-http-address={free}"),
        &url,
    ]);
    let mut c = s.connect();
    // One server is down: nsqd tries the others.
    for _ in 0..3 {
        let mut c = s.connect();
        assert!(matches!(auth(&mut c, "pw"), Frame::Response(_)));
    }
    auth(&mut c, "pw");
    c.publish("allowed_t", b"x");
    let (line, head, body) = a.requests()[0].clone();
    assert_eq!(line, "POST /custom/path HTTP/1.1");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/json"),
        "{head}"
    );
    assert_eq!(
        body,
        r#"{"common_name":[""],"remote_ip":["127.0.0.1"],"secret":["pw"],"tls":["false"]}"#
    );
}
