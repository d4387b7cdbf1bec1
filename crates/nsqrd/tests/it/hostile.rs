//! Hostile clients: what a careless or malicious peer can send or withhold, on the TCP protocol
//! and the HTTP API. Each probe asserts the exact answer (nsqd's error strings, reference
//! `nsqd.md`), then that the server still serves a fresh client, and that its peak memory
//! (`VmHWM`) stayed under a generous bound: no probe may make it allocate what a header
//! declares, buffer an endless body, or keep a dead connection.
//!
//! Runs against `NSQD_BIN` too; where nsqd answers differently the probe says so and asserts
//! nsqd's answer, and the difference is in `docs/compatibility.md`.
use crate::http_common;
use crate::proc_common;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use crate::common::*;
use crate::layers_common::{strs, tls_flags, Client, TlsClient};

/// How long to wait for something the server must do.
const WAIT: Duration = Duration::from_secs(20);
/// Peak resident memory the server may reach in any probe (a debug nsqrd idles near 10 MiB;
/// the largest probe queues 20 MiB of messages).
const MEMORY_BOUND_KIB: u64 = 256 * 1024;

/// After a probe: a fresh client publishes and consumes, HTTP answers, and memory is bounded.
#[track_caller]
fn still_healthy(s: &Server, tag: &str) {
    let topic = format!("alive_{tag}");
    let mut sub = s.connect();
    sub.sub(&topic, "c");
    sub.rdy(1);
    s.connect().publish(&topic, b"alive");
    let m = sub.message_within(WAIT).expect("served after the probe");
    assert_eq!(m.body, b"alive");
    assert_eq!(s.get("/ping").text(), "OK");
    let (rss, hwm) = (proc_common::rss_kib(s.pid()), proc_common::hwm_kib(s.pid()));
    println!("{tag}: VmRSS {rss} KiB, VmHWM {hwm} KiB");
    assert!(hwm < MEMORY_BOUND_KIB, "{tag}: peak memory {hwm} KiB");
}

/// A connection that sent the magic and `bytes`; returns it for reading.
fn send(s: &Server, bytes: &[u8]) -> Conn {
    let mut c = s.connect();
    c.write(bytes);
    c
}

/// Send `bytes` on a fresh connection and expect this fatal error, then the close.
#[track_caller]
fn fatal(s: &Server, bytes: &[u8], error: &str) {
    send(s, bytes).expect_fatal(error);
}

/// True if the server closes the connection without sending anything.
fn closed_silently(c: &mut Conn) -> bool {
    let mut b = [0u8; 64];
    match c.s.read(&mut b) {
        Ok(0) => true,
        Ok(n) => panic!("expected a silent close, got {:?}", &b[..n]),
        Err(e) => e.kind() == ErrorKind::ConnectionReset,
    }
}

fn size(n: i32) -> [u8; 4] {
    n.to_be_bytes()
}

fn cmd(line: &str, body: Option<&[u8]>) -> Vec<u8> {
    let mut v = line.as_bytes().to_vec();
    v.push(b'\n');
    if let Some(b) = body {
        v.extend_from_slice(&size(b.len() as i32));
        v.extend_from_slice(b);
    }
    v
}

fn with_size(line: &str, n: i32) -> Vec<u8> {
    let mut v = cmd(line, None);
    v.extend_from_slice(&size(n));
    v
}

#[test]
fn wrong_magic_and_garbage() {
    let s = Server::start(&[]);
    // Exactly four bytes: more, left unread at the close, could turn it into a reset that
    // destroys the error frame.
    let mut c = s.connect_raw();
    c.write(b"GET ");
    c.expect_fatal("E_BAD_PROTOCOL");
    fatal(&s, b"GARBAGE\n", "E_INVALID invalid command GARBAGE");
    fatal(&s, b"\n", "E_INVALID invalid command ");
    fatal(&s, b"pub t\n", "E_INVALID invalid command pub");
    // Binary garbage: the same error (nsqd echoes the raw bytes; nsqrd replaces bytes that
    // are not UTF-8, which this harness's lossy reading cannot tell apart).
    match send(&s, b"\x00\xff\x10 x\n").read_frame() {
        Frame::Error(e) => assert!(e.starts_with("E_INVALID invalid command \0"), "{e:?}"),
        other => panic!("{other:?}"),
    }
    // 200 KiB without a newline: past the 16 KiB line limit, dropped without a frame.
    let mut noise = Vec::with_capacity(200 * 1024);
    let mut x: u32 = 12345;
    while noise.len() < 200 * 1024 {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        let b = (x >> 16) as u8;
        noise.push(if b == b'\n' { b'.' } else { b });
    }
    let mut c = s.connect();
    let _ = c.s.write_all(&noise);
    assert!(closed_silently(&mut c), "garbage line not dropped");
    still_healthy(&s, "garbage");
}

#[test]
fn oversized_sizes_and_lines() {
    let s = Server::start(&[]);
    let max = i32::MAX;
    fatal(
        &s,
        &with_size("PUB t", max),
        "E_BAD_MESSAGE PUB message too big 2147483647 > 1048576",
    );
    fatal(
        &s,
        &with_size("PUB t", -1),
        "E_BAD_MESSAGE PUB invalid message body size -1",
    );
    fatal(
        &s,
        &with_size("DPUB t 100", max),
        "E_BAD_MESSAGE DPUB message too big 2147483647 > 1048576",
    );
    fatal(
        &s,
        &with_size("MPUB t", max),
        "E_BAD_BODY MPUB body too big 2147483647 > 5242880",
    );
    fatal(
        &s,
        &with_size("MPUB t", i32::MIN),
        "E_BAD_BODY MPUB invalid body size -2147483648",
    );
    fatal(
        &s,
        &with_size("IDENTIFY", max),
        "E_BAD_BODY IDENTIFY body too big 2147483647 > 5242880",
    );
    fatal(
        &s,
        &with_size("AUTH", max),
        "E_BAD_BODY AUTH body too big 2147483647 > 5242880",
    );
    // A command line longer than 16 KiB is dropped without a frame.
    let mut c = send(&s, format!("PUB {}\n", "a".repeat(20_000)).as_bytes());
    assert!(closed_silently(&mut c), "long line not dropped");
    still_healthy(&s, "oversized");
}

/// An MPUB body: `[count][size][data]...` with the declared `count`.
fn mpub_body(count: i32, msgs: &[&[u8]]) -> Vec<u8> {
    let mut v = size(count).to_vec();
    for m in msgs {
        v.extend_from_slice(&size(m.len() as i32));
        v.extend_from_slice(m);
    }
    v
}

#[test]
fn inconsistent_mpub() {
    let s = Server::start(&[]);
    fatal(
        &s,
        &cmd("MPUB t", Some(&mpub_body(0, &[]))),
        "E_BAD_BODY MPUB invalid message count 0",
    );
    if !is_reference() {
        // nsqd reads the one message, answers OK and waits for the rest to end a command line.
        fatal(
            &s,
            &cmd("MPUB t", Some(&mpub_body(1, &[b"x", b""]))),
            "E_BAD_BODY MPUB body size 13 does not match its messages (9 bytes)",
        );
    }
    // One message declared, two sent (and the body size counts both).
    let under = mpub_body(1, &[b"hello", b"trailing"]);
    let mut c = send(&s, &cmd("MPUB under", Some(&under)));
    if is_reference() {
        // nsqd answers OK for the first message and reads the rest as commands.
        c.expect_ok();
    } else {
        c.expect_fatal("E_BAD_BODY MPUB body size 25 does not match its messages (13 bytes)");
        assert_eq!(s.topic_stat("under", "message_count"), Some(0));
    }
    if !is_reference() {
        // More messages declared than the body holds: nsqd would read on past the body, into
        // whatever the client sends next (or wait for it).
        fatal(
            &s,
            &cmd("MPUB t", Some(&mpub_body(3, &[b"a", b"b"]))),
            "E_BAD_MESSAGE MPUB failed to read message(2) body size",
        );
        let mut short = mpub_body(1, &[b"abc"]);
        short[7] = 9; // the message claims 9 bytes, the body has 3
        fatal(
            &s,
            &cmd("MPUB t", Some(&short)),
            "E_BAD_MESSAGE MPUB failed to read message body",
        );
    }
    still_healthy(&s, "mpub");
}

#[test]
fn huge_and_deeply_nested_identify() {
    let s = Server::start(&[]);
    // 4 MiB of JSON, within --max-body-size: accepted.
    let big = format!(r#"{{"user_agent":"{}"}}"#, "u".repeat(4 << 20));
    let mut c = send(&s, &cmd("IDENTIFY", Some(big.as_bytes())));
    c.expect_ok();
    c.publish("after_big_identify", b"m");
    fatal(
        &s,
        &with_size("IDENTIFY", 6 << 20),
        "E_BAD_BODY IDENTIFY body too big 6291456 > 5242880",
    );
    let nested = |depth: usize| format!(r#"{{"x":{}{}}}"#, "[".repeat(depth), "]".repeat(depth));
    let error = "E_BAD_BODY IDENTIFY failed to decode JSON body";
    // Deeper than Go's limit (10,000): refused by both.
    fatal(
        &s,
        &cmd("IDENTIFY", Some(nested(100_000).as_bytes())),
        error,
    );
    // 1 MiB of unterminated nesting.
    fatal(
        &s,
        &cmd("IDENTIFY", Some("[".repeat(1 << 20).as_bytes())),
        error,
    );
    // 200 levels inside an ignored key: nsqd accepts it, nsqrd's JSON reader stops at 128.
    let mut c = send(&s, &cmd("IDENTIFY", Some(nested(200).as_bytes())));
    if is_reference() {
        c.expect_ok();
    } else {
        c.expect_fatal(error);
    }
    still_healthy(&s, "identify");
}

#[test]
fn bad_names() {
    let s = Server::start(&[]);
    fatal(
        &s,
        b"SUB bad$ c\n",
        r#"E_BAD_TOPIC SUB topic name "bad$" is not valid"#,
    );
    fatal(
        &s,
        b"SUB t c!\n",
        r#"E_BAD_CHANNEL SUB channel name "c!" is not valid"#,
    );
    fatal(
        &s,
        b"SUB  c\n",
        r#"E_BAD_TOPIC SUB topic name "" is not valid"#,
    );
    let long = "t".repeat(65);
    fatal(
        &s,
        &cmd(&format!("PUB {long}"), Some(b"m")),
        &format!(r#"E_BAD_TOPIC PUB topic name "{long}" is not valid"#),
    );
    fatal(
        &s,
        &cmd("MPUB bad$", Some(&mpub_body(1, &[b"m"]))),
        r#"E_BAD_TOPIC E_BAD_TOPIC MPUB topic name "bad$" is not valid"#,
    );
    fatal(
        &s,
        &cmd("DPUB a\"b 10", Some(b"m")),
        r#"E_BAD_TOPIC DPUB topic name "a\"b" is not valid"#,
    );
    // Bytes that are not UTF-8: nsqd quotes them as \xff\xfe; nsqrd's quoting replaces them
    // (see the report for this test's author; the harness reads both the same way).
    match send(&s, b"SUB \xff\xfe c\n").read_frame() {
        Frame::Error(e) => assert!(e.starts_with("E_BAD_TOPIC SUB topic name \""), "{e:?}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(s.topic_stats("bad$"), None);
    still_healthy(&s, "names");
}

/// A subscribed connection on `t`/`c` that has read its SUB's OK.
fn subscribed(s: &Server) -> Conn {
    let mut c = s.connect();
    c.sub("t", "c");
    c
}

#[test]
fn rdy_fin_req_touch_edge_values() {
    let s = Server::start(&[]);
    fatal(&s, b"RDY 1\n", "E_INVALID cannot RDY in current state");
    let cases: &[(&str, &str)] = &[
        ("RDY -1", "E_INVALID RDY could not parse count -1"),
        ("RDY abc", "E_INVALID RDY could not parse count abc"),
        ("RDY 2501", "E_INVALID RDY count 2501 out of range 0-2500"),
        ("FIN 123", "E_INVALID invalid message ID"),
        ("FIN", "E_INVALID FIN insufficient number of params"),
        (
            "REQ 0123456789abcdef -1",
            "E_INVALID REQ could not parse timeout -1",
        ),
        (
            "REQ 0123456789abcdef abc",
            "E_INVALID REQ could not parse timeout abc",
        ),
        (
            "REQ 0123456789abcdef",
            "E_INVALID REQ insufficient number of params",
        ),
        ("TOUCH 0123456789abcdef0", "E_INVALID invalid message ID"),
    ];
    for (line, error) in cases {
        let mut c = subscribed(&s);
        c.cmd(line);
        c.expect_fatal(error);
    }
    // A count past 2^64 wraps in nsqd (its parser does not check overflow).
    let mut c = subscribed(&s);
    c.cmd("RDY 99999999999999999999");
    c.expect_fatal(if is_reference() {
        "E_INVALID RDY count 7766279631452241919 out of range 0-2500"
    } else {
        "E_INVALID RDY could not parse count 99999999999999999999"
    });
    // Well-formed ids not in flight, and a huge REQ delay (clamped, not refused): non-fatal.
    let mut c = subscribed(&s);
    c.cmd("FIN 0123456789abcdef");
    c.expect_error("E_FIN_FAILED FIN 0123456789abcdef failed ID not in flight");
    c.cmd("REQ 0123456789abcdef 99999999999");
    c.expect_error("E_REQ_FAILED REQ 0123456789abcdef failed ID not in flight");
    c.cmd("TOUCH 0123456789abcdef");
    c.expect_error("E_TOUCH_FAILED TOUCH 0123456789abcdef failed ID not in flight");
    // The connection still works.
    c.rdy(1);
    s.connect().publish("t", b"after");
    let m = c.message_within(WAIT).expect("delivered after the errors");
    c.fin(&m.id_str());
    still_healthy(&s, "rdy");
}

/// Publish `n` messages of `len` bytes to `topic` in one write.
fn flood(s: &Server, topic: &str, n: usize, len: usize) {
    let body = vec![b'x'; len];
    let mut all = Vec::with_capacity(n * (len + 16));
    for _ in 0..n {
        all.extend_from_slice(&cmd(&format!("PUB {topic}"), Some(&body)));
    }
    let mut p = s.connect();
    p.write(&all);
    for _ in 0..n {
        p.expect_ok();
    }
}

/// Wait until the server no longer holds the connection whose client end is `local`.
#[track_caller]
fn released(s: &Server, local: std::net::SocketAddr, what: &str) {
    assert!(
        wait_until(WAIT, || proc_common::holds_connection(s.pid(), local)),
        "{what}: connection never accepted"
    );
    assert!(
        wait_until(WAIT, || !proc_common::holds_connection(s.pid(), local)),
        "{what}: the server still holds the connection"
    );
}

/// Nothing of `n` messages is lost: queued plus in flight (nsqd keeps a gone client's in-flight
/// messages until they time out; nsqrd puts them back at once).
fn all_kept(s: &Server, topic: &str, n: i64) -> bool {
    wait_until(WAIT, || {
        let depth = s.channel_stat(topic, "c", "depth").unwrap_or(0);
        let in_flight = s.channel_stat(topic, "c", "in_flight_count").unwrap_or(0);
        depth + in_flight == n
    })
}

#[test]
fn a_consumer_that_stops_reading_is_cut() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    assert_eq!(
        c.identify(r#"{"heartbeat_interval":1000}"#),
        Frame::Response(b"OK".to_vec())
    );
    c.sub("stuck", "c");
    c.rdy(2500);
    let local = c.s.local_addr().unwrap();
    // 20 MiB for a client that reads nothing: far more than the socket buffers hold.
    flood(&s, "stuck", 320, 64 * 1024);
    // Others are served while the server's writes to it wait.
    still_healthy(&s, "stuck-during");
    released(&s, local, "non-reading consumer");
    assert!(
        all_kept(&s, "stuck", 320),
        "{:?}",
        s.channel_stats("stuck", "c")
    );
    still_healthy(&s, "stuck-after");
}

#[test]
fn a_tls_consumer_that_stops_reading_is_cut() {
    let flags = tls_flags();
    let s = Server::start(&strs(&flags));
    let mut c = Client::connect(
        s.tcp,
        r#""tls_v1":true,"heartbeat_interval":1000"#,
        &TlsClient::default(),
    )
    .unwrap();
    c.sub("stuck_tls", "c");
    c.cmd("RDY 2500");
    let local: std::net::SocketAddr = c.local_addr().parse().unwrap();
    flood(&s, "stuck_tls", 320, 64 * 1024);
    // Closing a TLS connection writes close_notify, which this client never reads: bounded.
    released(&s, local, "non-reading TLS consumer");
    assert!(all_kept(&s, "stuck_tls", 320));
    still_healthy(&s, "stuck-tls");
}

#[test]
fn a_silent_connection_is_closed() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    c.cmd_body("IDENTIFY", br#"{"heartbeat_interval":1000}"#);
    let local = c.s.local_addr().unwrap();
    // Neither reads nor writes: closed after 2 x the heartbeat interval.
    released(&s, local, "silent connection");
    still_healthy(&s, "silent");
}

#[test]
fn many_idle_connections() {
    let s = Server::start(&[]);
    let tcp: Vec<TcpStream> = (0..300)
        .map(|_| TcpStream::connect(s.tcp).unwrap())
        .collect();
    let http: Vec<TcpStream> = (0..300)
        .map(|_| TcpStream::connect(s.http).unwrap())
        .collect();
    still_healthy(&s, "idle");
    assert_eq!(s.post("/pub?topic=idle", b"m").status, 200);
    drop((tcp, http));
    still_healthy(&s, "idle-after");
}

/// Send `head` then stream `body` (bounded), while reading the answer on another thread; the
/// answer is complete when the server closes the connection.
fn http_stream(addr: std::net::SocketAddr, head: &[u8], body: Vec<u8>) -> HttpResponse {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    let mut w = s.try_clone().unwrap();
    w.write_all(head).unwrap();
    let writer = std::thread::spawn(move || {
        // Stops at the first error: the server closed its side.
        let _ = w.write_all(&body);
    });
    let mut raw = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == ErrorKind::ConnectionReset && !raw.is_empty() => break,
            Err(e) => panic!(
                "reading the answer: {e}; got {:?}",
                String::from_utf8_lossy(&raw)
            ),
        }
    }
    let _ = s.shutdown(std::net::Shutdown::Both);
    let _ = writer.join();
    nsqr_testkit::parse_http_response(&raw)
}

/// `n` bytes of chunked encoding (4 KiB chunks), never terminated.
fn endless_chunks(n: usize) -> Vec<u8> {
    let chunk = [b"1000\r\n".as_slice(), &[b'a'; 4096], b"\r\n"].concat();
    chunk.repeat(n / chunk.len() + 1)
}

#[test]
fn http_oversize_and_endless_bodies() {
    let s = Server::start(&[]);
    let head = |path: &str, framing: &str| {
        format!("POST {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n{framing}\r\n\r\n")
            .into_bytes()
    };
    let big = vec![b'a'; 8 << 20];
    let r = http_stream(
        s.http,
        &head("/pub?topic=big", &format!("Content-Length: {}", big.len())),
        big.clone(),
    );
    http_common::assert_err(&r, 413, "MSG_TOO_BIG");
    let r = http_stream(
        s.http,
        &head("/mpub?topic=big", &format!("Content-Length: {}", big.len())),
        big,
    );
    http_common::assert_err(&r, 413, "BODY_TOO_BIG");
    // Chunked bodies that never end (64 MiB offered): each read stops at its limit.
    let r = http_stream(
        s.http,
        &head("/pub?topic=big", "Transfer-Encoding: chunked"),
        endless_chunks(64 << 20),
    );
    http_common::assert_err(&r, 413, "MSG_TOO_BIG");
    let r = http_stream(
        s.http,
        &head("/mpub?topic=big", "Transfer-Encoding: chunked"),
        endless_chunks(64 << 20),
    );
    http_common::assert_err(&r, 413, "BODY_TOO_BIG");
    assert_eq!(s.topic_stat("big", "message_count"), Some(0));
    still_healthy(&s, "http-bodies");
}

#[test]
fn http_header_flood() {
    let s = Server::start(&[]);
    let headers: String = (0..10_000).map(|i| format!("X-Flood-{i}: v\r\n")).collect();
    let req = format!("GET /ping HTTP/1.1\r\nHost: t\r\nConnection: close\r\n{headers}\r\n");
    let r = http_stream(s.http, req.as_bytes(), Vec::new());
    if is_reference() {
        // Go accepts up to 1 MiB of headers.
        assert_eq!((r.status, r.text()), (200, "OK".to_string()));
    } else {
        // hyper accepts 100 headers (docs/compatibility.md).
        assert_eq!((r.status, r.text()), (431, String::new()));
    }
    still_healthy(&s, "headers");
}

#[test]
fn http_bad_percent_escapes() {
    let s = Server::start(&[]);
    let r = s.post("/pub?topic=%zz", b"m");
    http_common::assert_err(&r, 400, "INVALID_REQUEST");
    let r = s.get("/stats?format=json&topic=%zz");
    http_common::assert_err(&r, 400, "INVALID_REQUEST");
    for path in ["/p%zzing", "/%", "/topic/create%"] {
        let r = s.get(path);
        assert_eq!(
            (r.status, r.text(), r.header("Content-Type")),
            (
                400,
                "400 Bad Request".to_string(),
                Some("text/plain; charset=utf-8")
            ),
            "{path}"
        );
    }
    // A bad escape in a parameter nobody reads is ignored, as in Go.
    assert_eq!(s.get("/ping?x=%").text(), "OK");
    still_healthy(&s, "escapes");
}
