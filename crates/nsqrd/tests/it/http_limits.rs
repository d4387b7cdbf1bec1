//! The HTTP connection limits nsqrd adds to nsqd's API (docs/compatibility.md): an idle
//! keep-alive connection is closed after `--http-idle-timeout`, a request that does not arrive
//! whole (headers or body) within `--http-read-timeout` of its first byte is cut (a stalled body
//! gets 408 `REQUEST_TIMEOUT`), a client that stops reading its responses is cut after
//! `--http-write-timeout`, and at most `--http-max-connections` connections are served at once
//! while the others wait to be accepted. Each test uses short limits; the waits are
//! event-driven with generous bounds. nsqd has none of these flags, so against `NSQD_BIN` the
//! tests return at once.
use crate::http_common;
use crate::proc_common;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crate::common::*;

/// Longest any wait for the server may take before the test fails.
const WAIT: Duration = Duration::from_secs(20);

/// A raw HTTP/1.1 client connection (keep-alive), reading exactly one response at a time.
struct Raw {
    s: TcpStream,
    buf: Vec<u8>,
}

impl Raw {
    fn connect(addr: SocketAddr) -> Raw {
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(WAIT)).unwrap();
        Raw { s, buf: Vec::new() }
    }

    fn send(&mut self, b: &[u8]) {
        self.s.write_all(b).unwrap();
    }

    fn get(&mut self, path: &str) -> HttpResponse {
        self.send(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
        self.response().expect("a response")
    }

    /// Read until `pred` holds for the buffered bytes; false on EOF or timeout.
    fn fill_until(&mut self, pred: impl Fn(&[u8]) -> bool) -> bool {
        let mut chunk = [0u8; 16384];
        while !pred(&self.buf) {
            match self.s.read(&mut chunk) {
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Ok(0) | Err(_) => return false,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
        true
    }

    /// The next response with a Content-Length body (nsqrd's API answers with one); None on EOF.
    fn response(&mut self) -> Option<HttpResponse> {
        let end = |b: &[u8]| b.windows(4).position(|w| w == b"\r\n\r\n");
        if !self.fill_until(|b| end(b).is_some()) {
            return None;
        }
        let head_end = end(&self.buf)? + 4;
        let head = nsqr_testkit::parse_http_response(&self.buf[..head_end]);
        let len: usize = head
            .header("Content-Length")
            .map_or(0, |v| v.parse().expect("content length"));
        if !self.fill_until(|b| b.len() >= head_end + len) {
            return None;
        }
        let raw: Vec<u8> = self.buf.drain(..head_end + len).collect();
        Some(nsqr_testkit::parse_http_response(&raw))
    }

    /// True once the server has closed the connection (EOF or reset), reading and discarding
    /// anything before it; false if it is still open after `WAIT`.
    fn closed(&mut self) -> bool {
        let mut chunk = [0u8; 65536];
        let deadline = Instant::now() + WAIT;
        while Instant::now() < deadline {
            match self.s.read(&mut chunk) {
                Ok(0) => return true,
                Ok(_) => continue,
                Err(e) if e.kind() == ErrorKind::ConnectionReset => return true,
                // A signal, or the socket's read timeout: the connection is still open.
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return false
                }
                Err(e) => panic!("reading until the server closes: unexpected error {e:?}"),
            }
        }
        false
    }

    /// True if nothing arrives within `t` (the connection stays open and silent).
    fn silent_for(&mut self, t: Duration) -> bool {
        self.s.set_read_timeout(Some(t)).unwrap();
        let mut b = [0u8; 1];
        let silent = matches!(self.s.peek(&mut b), Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut));
        self.s.set_read_timeout(Some(WAIT)).unwrap();
        silent
    }
}

#[test]
fn an_idle_keep_alive_connection_is_closed_after_the_idle_timeout() {
    if is_reference() {
        return; // nsqr-only flag
    }
    let s = Server::start(&["--http-idle-timeout=1s", "--http-read-timeout=30s"]);
    let mut c = Raw::connect(s.http);
    // Keep-alive works: two requests on one connection.
    assert_eq!(c.get("/ping").text(), "OK");
    let after = Instant::now();
    assert_eq!(c.get("/ping").text(), "OK");
    assert!(c.closed(), "idle connection still open");
    let idle = after.elapsed();
    assert!(idle >= Duration::from_millis(900), "closed after {idle:?}");
    // A connection that never sends anything goes the same way.
    let mut mute = Raw::connect(s.http);
    assert!(mute.closed(), "silent connection still open");
    assert_eq!(s.get("/ping").text(), "OK");
}

#[test]
fn a_half_sent_request_is_closed_after_the_read_timeout() {
    if is_reference() {
        return; // nsqr-only flag
    }
    // The idle limit is long: only the read limit can close these.
    let s = Server::start(&["--http-idle-timeout=60s", "--http-read-timeout=1s"]);
    let mut head = Raw::connect(s.http);
    head.send(b"POST /pub?topic=half HTTP/1.1\r\nHost: t\r\nContent-Le");
    let t0 = Instant::now();
    let mut body = Raw::connect(s.http);
    body.send(b"POST /pub?topic=half HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc");
    let r = body.response().expect("408 for the stalled body");
    http_common::assert_err(&r, 408, "REQUEST_TIMEOUT");
    assert!(body.closed(), "connection kept after a stalled body");
    assert!(head.closed(), "half-sent headers still held");
    assert!(t0.elapsed() >= Duration::from_millis(900));
    // Nothing was published, and the server answers others.
    assert_eq!(s.topic_stats("half"), None);
    assert_eq!(s.post("/pub?topic=whole", b"m").status, 200);
}

#[test]
fn an_unterminated_chunked_body_is_cut_after_the_read_timeout() {
    if is_reference() {
        return; // nsqr-only flag
    }
    let s = Server::start(&["--http-idle-timeout=60s", "--http-read-timeout=1s"]);
    let mut c = Raw::connect(s.http);
    c.send(b"POST /mpub?topic=chunky HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
    c.send(b"6\r\nline1\n\r\n6\r\nline2\n\r\n");
    let r = c.response().expect("408 for the endless body");
    http_common::assert_err(&r, 408, "REQUEST_TIMEOUT");
    assert!(c.closed());
    assert_eq!(s.topic_stat("chunky", "message_count"), Some(0));
    let r = s.post("/mpub?topic=chunky", b"a\nb\n");
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn a_client_that_does_not_read_its_responses_is_cut_after_the_write_timeout() {
    if is_reference() {
        return; // nsqr-only flag
    }
    let s = Server::start(&["--http-write-timeout=1s"]);
    // A /stats answer of about 40 KB, asked for 1,000 times in one go (pipelined), never read:
    // far more than the socket buffers hold.
    for i in 0..200 {
        assert_eq!(
            s.post(&format!("/topic/create?topic=t{i:03}"), b"").status,
            200
        );
    }
    let one = s.get("/stats?format=json").body.len();
    assert!(one > 20_000, "{one}");
    let mut c = Raw::connect(s.http);
    let me = c.s.local_addr().unwrap();
    let req = b"GET /stats?format=json HTTP/1.1\r\nHost: t\r\n\r\n".repeat(1000);
    c.send(&req);
    assert!(wait_until(WAIT, || proc_common::holds_connection(
        s.pid(),
        me
    )));
    // The server fills the buffers, gives up and closes; reading then finds the end before the
    // 1,000th answer.
    assert!(
        wait_until(WAIT, || !proc_common::holds_connection(s.pid(), me)),
        "connection still held"
    );
    let mut answers = 0;
    while c.response().is_some() {
        answers += 1;
    }
    assert!(answers < 1000, "every answer was written ({answers})");
    assert_eq!(s.get("/ping").text(), "OK");
}

#[test]
fn connections_beyond_the_bound_wait_until_one_closes() {
    if is_reference() {
        return; // nsqr-only flag
    }
    let s = Server::start(&["--http-max-connections=2"]);
    let mut a = Raw::connect(s.http);
    let mut b = Raw::connect(s.http);
    assert_eq!(a.get("/ping").text(), "OK");
    assert_eq!(b.get("/ping").text(), "OK");
    let mut extra = Raw::connect(s.http);
    extra.send(b"GET /ping HTTP/1.1\r\nHost: t\r\n\r\n");
    // Not served while two are open (the positive half follows: it is served once one closes).
    assert!(
        extra.silent_for(Duration::from_millis(700)),
        "served beyond the bound"
    );
    // The open ones keep working.
    assert_eq!(a.get("/ping").text(), "OK");
    assert_eq!(b.get("/ping").text(), "OK");
    drop(a);
    let r = extra.response().expect("served once a slot is free");
    assert_eq!(r.text(), "OK");
    assert!(s
        .log_lines()
        .iter()
        .any(|l| l.contains("2 connections open (--http-max-connections)")));
}

#[test]
fn bad_limit_flags_are_refused() {
    let (code, out) = run_to_exit(&["--http-max-connections=-1"]);
    if is_reference() {
        assert_eq!(code, Some(2), "{out}"); // not an nsqd flag
        return;
    }
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("--http-max-connections must be >= 0"), "{out}");
    let (code, out) = run_to_exit(&["--http-read-timeout=-1s"]);
    assert_ne!(code, Some(0), "{out}");
}
