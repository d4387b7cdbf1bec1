//! Consuming over HTTP (nsqr only): `/channel/receive` (JSON and raw), `/message/*` by receipt
//! (several at once, stale and forged receipts), `/channel/stream` (server-sent events), HTTP
//! consumers in `/stats`, and every bad argument.
use crate::common::*;
use crate::http_common::*;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::time::Duration;

fn receive(s: &Server, query: &str) -> Vec<Value> {
    let r = s.post(&format!("/channel/receive?{query}"), b"");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("Content-Type"), Some(JSON_CT));
    r.json()["messages"].as_array().unwrap().clone()
}

fn body_of(m: &Value) -> String {
    use base64::Engine;
    let b = base64::engine::general_purpose::STANDARD
        .decode(m["body"].as_str().unwrap())
        .unwrap();
    String::from_utf8(b).unwrap()
}

fn receipt(m: &Value) -> String {
    m["receipt"].as_str().unwrap().to_string()
}

fn pub_ok(s: &Server, topic: &str, body: &str) {
    assert_text_ok(
        &s.post(&format!("/pub?topic={topic}"), body.as_bytes()),
        "OK",
    );
}

#[test]
fn receive_several_then_finish_them_at_once() {
    let s = Server::start(&[]);
    assert!(receive(&s, "topic=t&channel=c").is_empty(), "nothing yet");
    for i in 0..3 {
        pub_ok(&s, "t", &format!("m{i}"));
    }
    let got = receive(&s, "topic=t&channel=c&max=10");
    assert_eq!(got.len(), 3);
    for (i, m) in got.iter().enumerate() {
        assert_eq!(body_of(m), format!("m{i}"));
        assert_eq!(m["attempts"], 1);
        assert_eq!(m["id"].as_str().unwrap().len(), 16);
        assert!(m["timestamp"].as_i64().unwrap() > 0);
        assert!(m.get("dead_letter").is_none() && m.get("ordering_key").is_none());
    }
    assert_eq!(s.channel_stat("t", "c", "in_flight_count"), Some(3));
    // two receipts in the query, one in the body
    let path = format!(
        "/message/fin?receipt={}&receipt={}",
        receipt(&got[0]),
        receipt(&got[1])
    );
    let r = s.post(&path, format!("{}\n", receipt(&got[2])).as_bytes());
    assert_eq!((r.status, r.json()), (200, json!({"settled": 3})));
    assert_eq!(s.channel_stat("t", "c", "in_flight_count"), Some(0));
    // the consumer had nothing left: it left the channel
    assert!(wait_until(Duration::from_secs(10), || {
        s.channel_stat("t", "c", "client_count") == Some(0)
    }));
}

#[test]
fn a_long_poll_waits_for_the_first_message() {
    let s = Server::start(&[]);
    s.post("/channel/config?topic=t&channel=c", b"{}");
    let addr = s.http;
    let poll = std::thread::spawn(move || {
        nsqr_testkit::http_request(
            addr,
            "POST",
            "/channel/receive?topic=t&channel=c&max=5&wait=20s",
            &[],
            b"",
        )
    });
    // the poll is a client of the channel while it waits
    assert!(wait_until(Duration::from_secs(10), || {
        s.channel_stat("t", "c", "client_count") == Some(1)
    }));
    let clients = s.client_stats("t", "c");
    assert_eq!(clients[0]["ready_count"], 5);
    pub_ok(&s, "t", "late");
    let r = poll.join().unwrap();
    assert_eq!(r.status, 200);
    let msgs = r.json()["messages"].as_array().unwrap().clone();
    assert_eq!(msgs.len(), 1);
    assert_eq!(body_of(&msgs[0]), "late");
}

#[test]
fn raw_bodies_with_headers_and_204_when_empty() {
    let s = Server::start(&[]);
    let raw = |q: &str| {
        nsqr_testkit::http_request(
            s.http,
            "POST",
            &format!("/channel/receive?{q}"),
            &[("Accept", "application/octet-stream")],
            b"",
        )
    };
    let r = raw("topic=t&channel=c");
    assert_eq!((r.status, r.body.len()), (204, 0));
    assert_text_ok(
        &s.post("/pub?topic=t&ordering_key=k1", b"\x00binary\xff"),
        "OK",
    );
    let r = raw("topic=t&channel=c&wait=5s");
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"\x00binary\xff");
    assert_eq!(r.header("Content-Type"), Some("application/octet-stream"));
    assert_eq!(r.header("X-NSQ-Attempts"), Some("1"));
    assert_eq!(r.header("X-NSQ-Message-Id").map(str::len), Some(16));
    assert_eq!(r.header("X-NSQ-Ordering-Key"), Some("k1"));
    let rec = r.header("X-NSQ-Receipt").unwrap().to_string();
    let r = s.post(&format!("/message/fin?receipt={rec}"), b"");
    assert_eq!(r.status, 200, "{}", r.text());
    let r = raw("topic=t&channel=c&max=2");
    assert_err(
        &r,
        400,
        "INVALID_MAX: a raw body (Accept: application/octet-stream) needs max=1",
    );
}

#[test]
fn a_stale_receipt_is_refused_after_a_timeout_and_redelivery() {
    let s = Server::start(&[]);
    pub_ok(&s, "t", "slow");
    let first = receive(&s, "topic=t&channel=c&timeout=200ms");
    assert_eq!(first.len(), 1);
    let again = receive(&s, "topic=t&channel=c&wait=20s");
    assert_eq!(again.len(), 1, "redelivered after its timeout");
    assert_eq!(
        (again[0]["id"].clone(), again[0]["attempts"].clone()),
        (first[0]["id"].clone(), json!(2))
    );
    assert_ne!(receipt(&first[0]), receipt(&again[0]));
    let r = s.post(&format!("/message/fin?receipt={}", receipt(&first[0])), b"");
    assert_eq!(r.status, 404, "{}", r.text());
    let j = r.json();
    assert_eq!(j["failed"][0]["error"], "STALE_RECEIPT");
    assert!(j["message"]
        .as_str()
        .unwrap()
        .starts_with("STALE_RECEIPT: the message was delivered again since"));
    assert_eq!(j["settled"], 0);
    let r = s.post(&format!("/message/fin?receipt={}", receipt(&again[0])), b"");
    assert_eq!((r.status, r.json()), (200, json!({"settled": 1})));
    // once finished, the current receipt is not in flight any more
    let r = s.post(
        &format!("/message/touch?receipt={}", receipt(&again[0])),
        b"",
    );
    assert_eq!(
        (r.status, r.json()["failed"][0]["error"].clone()),
        (404, json!("NOT_IN_FLIGHT"))
    );
}

/// One request's receipts from several channels: the failures come invalid ones first, then
/// channel by channel in the order of their (topic, channel) names (`a`/`bc` and `ab`/`c` are
/// two channels), each channel's in the order given.
#[test]
fn receipts_of_several_channels_at_once() {
    let s = Server::start(&[]);
    for (t, c) in [("a", "b"), ("a", "bc"), ("ab", "c")] {
        s.post(&format!("/channel/config?topic={t}&channel={c}"), b"{}");
    }
    for t in ["a", "ab"] {
        pub_ok(&s, t, "m0");
        pub_ok(&s, t, "m1");
    }
    let take = |t: &str, c: &str| -> Vec<String> {
        let got = receive(&s, &format!("topic={t}&channel={c}&max=2&wait=10s"));
        assert_eq!(got.len(), 2, "{t}/{c}");
        got.iter().map(receipt).collect()
    };
    let (a_b, a_bc, ab_c) = (take("a", "b"), take("a", "bc"), take("ab", "c"));
    let pre = format!("{}\n{}\n{}\n", ab_c[0], ab_c[1], a_b[1]);
    let r = s.post("/message/fin", pre.as_bytes());
    assert_eq!((r.status, r.json()), (200, json!({"settled": 3})));
    let batch = [
        &ab_c[1][..],
        &a_b[1],
        "AQAAAAAAAAAB",
        &ab_c[0],
        &a_b[0],
        &a_bc[0],
        &a_bc[1],
    ];
    let r = s.post("/message/fin", batch.join("\n").as_bytes());
    assert_eq!(r.status, 400, "{}", r.text());
    let j = r.json();
    assert_eq!(j["settled"], 3);
    assert!(j["message"]
        .as_str()
        .unwrap()
        .starts_with("INVALID_RECEIPT: not a receipt issued by this server"));
    let failed: Vec<(String, String)> = j["failed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let s = |k: &str| f[k].as_str().unwrap().to_string();
            (s("receipt"), s("error"))
        })
        .collect();
    let want = |r: &str, e: &str| (r.to_string(), e.to_string());
    assert_eq!(
        failed,
        [
            want("AQAAAAAAAAAB", "INVALID_RECEIPT"),
            want(&a_b[1], "NOT_IN_FLIGHT"),
            want(&ab_c[1], "NOT_IN_FLIGHT"),
            want(&ab_c[0], "NOT_IN_FLIGHT"),
        ]
    );
}

#[test]
fn bad_receipts_and_arguments() {
    let s = Server::start(&["--max-msg-size=100"]);
    assert_err(&s.post("/message/fin", b""), 400, "MISSING_ARG_RECEIPT");
    let r = s.post("/message/fin?receipt=AQAAAAAAAAAB", b"");
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["failed"][0]["error"], "INVALID_RECEIPT");
    // a well-formed receipt another server issued
    let other = Server::start(&[]);
    pub_ok(&other, "t", "x");
    let foreign = receipt(&receive(&other, "topic=t&channel=c")[0]);
    let r = s.post(&format!("/message/req?receipt={foreign}"), b"");
    assert_eq!(
        (r.status, r.json()["failed"][0]["error"].clone()),
        (400, json!("INVALID_RECEIPT"))
    );
    for (q, msg) in [
        ("channel=c", "MISSING_ARG_TOPIC"),
        ("topic=t", "MISSING_ARG_CHANNEL"),
        ("topic=a%20b&channel=c", "INVALID_TOPIC"),
        ("topic=t&channel=a%20b", "INVALID_CHANNEL"),
        ("topic=t&channel=c&max=0", "INVALID_MAX: max must be an integer from 1 to 1000"),
        ("topic=t&channel=c&max=1001", "INVALID_MAX: max must be an integer from 1 to 1000"),
        ("topic=t&channel=c&max=x", "INVALID_MAX: max must be an integer from 1 to 1000"),
        ("topic=t&channel=c&wait=31s", "INVALID_WAIT: wait must be a duration (250ms, 2s) or integer milliseconds, 0 to 30s"),
        ("topic=t&channel=c&wait=-1s", "INVALID_WAIT: wait must be a duration (250ms, 2s) or integer milliseconds, 0 to 30s"),
        ("topic=t&channel=c&wait=soon", "INVALID_WAIT: wait must be a duration (250ms, 2s) or integer milliseconds, 0 to 30s"),
        ("topic=t&channel=c&timeout=0", "INVALID_TIMEOUT: timeout must be a duration (250ms, 2s) or integer milliseconds, above 0 to 15m0s (--max-msg-timeout)"),
        ("topic=t&channel=c&timeout=16m", "INVALID_TIMEOUT: timeout must be a duration (250ms, 2s) or integer milliseconds, above 0 to 15m0s (--max-msg-timeout)"),
        ("topic=t&channel=c&timeout=%zz", "INVALID_REQUEST"),
    ] {
        assert_err(&s.post(&format!("/channel/receive?{q}"), b""), 400, msg);
    }
    for (q, msg) in [
        ("topic=t&channel=c&max_in_flight=0", "INVALID_MAX_IN_FLIGHT: max_in_flight must be an integer from 1 to 2500"),
        (
            "topic=t&channel=c&max_in_flight=2501",
            "INVALID_MAX_IN_FLIGHT: max_in_flight must be an integer from 1 to 2500",
        ),
        ("topic=t&channel=c&heartbeat=1ms", "INVALID_HEARTBEAT: heartbeat must be a duration (250ms, 2s) or integer milliseconds, 100ms to 1m0s"),
        ("topic=t&channel=c&timeout=-5s", "INVALID_TIMEOUT: timeout must be a duration (250ms, 2s) or integer milliseconds, above 0 to 15m0s (--max-msg-timeout)"),
        ("topic=t", "MISSING_ARG_CHANNEL"),
    ] {
        assert_err(&s.get(&format!("/channel/stream?{q}")), 400, msg);
    }
    assert_err(
        &s.post("/message/req?receipt=x&delay=2h", b""),
        400,
        "INVALID_DELAY: delay must be a duration (250ms, 2s) or integer milliseconds, 0 to 1h0m0s (--max-req-timeout)",
    );
    assert_err(
        &s.post("/message/req?receipt=x&count_attempt=maybe", b""),
        400,
        "INVALID_COUNT_ATTEMPT: count_attempt must be true, false, 1 or 0",
    );
    for (q, msg) in [
        ("topic=t&ttl=0", "INVALID_TTL: ttl must be a duration (250ms, 2s) or integer milliseconds, above 0 to 8760h0m0s"),
        ("topic=t&ttl=soon", "INVALID_TTL: ttl must be a duration (250ms, 2s) or integer milliseconds, above 0 to 8760h0m0s"),
        ("topic=t&ttl=8761h", "INVALID_TTL: ttl must be a duration (250ms, 2s) or integer milliseconds, above 0 to 8760h0m0s"),
        ("topic=t&ordering_key=", "INVALID_ORDERING_KEY: ordering_key must be 1 to 256 bytes"),
    ] {
        assert_err(&s.post(&format!("/pub?{q}"), b"x"), 400, msg);
        assert_err(&s.post(&format!("/mpub?{q}"), b"x\n"), 400, msg);
    }
    let long_key = "k".repeat(257);
    assert_err(
        &s.post(&format!("/pub?topic=t&ordering_key={long_key}"), b"x"),
        400,
        "INVALID_ORDERING_KEY: ordering_key must be 1 to 256 bytes",
    );
    // nsqd's own size limit comes first
    assert_err(
        &s.post("/pub?topic=t&ttl=1s", &[b'x'; 101]),
        413,
        "MSG_TOO_BIG",
    );
    let many = "x\n".repeat(10_001);
    assert_err(
        &s.post("/message/fin", many.as_bytes()),
        413,
        "TOO_MANY_RECEIPTS",
    );
    assert_err(
        &s.get("/channel/receive?topic=t&channel=c"),
        405,
        "METHOD_NOT_ALLOWED",
    );
}

#[test]
fn req_touch_and_term() {
    let s = Server::start(&[]);
    s.post(
        "/channel/config?topic=t&channel=c",
        br#"{"max_attempts": 2, "dead_letter_topic": "t.failed"}"#,
    );
    pub_ok(&s, "t", "again");
    pub_ok(&s, "t", "reject");
    let got = receive(&s, "topic=t&channel=c&max=2");
    assert_eq!(got.len(), 2);
    // a requeue that does not count: still attempt 1 next time
    let r = s.post(
        &format!(
            "/message/req?receipt={}&count_attempt=false",
            receipt(&got[0])
        ),
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let r = s.post(&format!("/message/term?receipt={}", receipt(&got[1])), b"");
    assert_eq!(r.status, 200, "{}", r.text());
    let again = receive(&s, "topic=t&channel=c&wait=10s");
    assert_eq!(
        (body_of(&again[0]), again[0]["attempts"].clone()),
        ("again".into(), json!(1))
    );
    // touch keeps it; a counted requeue with a delay brings it back later as attempt 2
    let r = s.post(
        &format!("/message/touch?receipt={}", receipt(&again[0])),
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let r = s.post(
        &format!("/message/req?receipt={}&delay=100", receipt(&again[0])),
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let third = receive(&s, "topic=t&channel=c&wait=10s");
    assert_eq!(third[0]["attempts"], 2);
    // the last attempt fails: dead letter (delivery limit)
    s.post(&format!("/message/req?receipt={}", receipt(&third[0])), b"");
    let mut dead = Vec::new();
    while dead.len() < 2 {
        let got = receive(&s, "topic=t.failed&channel=inspect&wait=10s&max=10");
        assert!(!got.is_empty(), "dead letters arrive");
        dead.extend(got);
    }
    dead.sort_by_key(body_of);
    let rec = |m: &Value| {
        let d = &m["dead_letter"];
        (
            body_of(m),
            d["reason"].clone(),
            d["topic"].clone(),
            d["channel"].clone(),
            d["attempts"].clone(),
        )
    };
    assert_eq!(
        rec(&dead[0]),
        (
            "again".into(),
            json!("delivery_limit"),
            json!("t"),
            json!("c"),
            json!(2)
        )
    );
    assert_eq!(
        rec(&dead[1]),
        (
            "reject".into(),
            json!("rejected"),
            json!("t"),
            json!("c"),
            json!(1)
        )
    );
    assert_eq!(
        dead[0]["dead_letter"]["id"], got[0]["id"],
        "the original id"
    );
    let dl = s.channel_stats("t", "c").unwrap()["dead_letters"].clone();
    assert_eq!(
        dl,
        json!({"topic": "t.failed", "delivery_limit": 1, "rejected": 1, "expired": 0,
               "expired_dropped": 0})
    );
}

#[test]
fn a_vanished_consumer_gets_its_messages_redelivered_after_their_timeout() {
    let s = Server::start(&[]);
    pub_ok(&s, "t", "m");
    let got = receive(&s, "topic=t&channel=c&timeout=300ms");
    assert_eq!(got.len(), 1);
    // it never answers: the message times out, comes back, and the consumer leaves
    let again = receive(&s, "topic=t&channel=c&wait=20s");
    assert_eq!(
        (again[0]["id"].clone(), again[0]["attempts"].clone()),
        (got[0]["id"].clone(), json!(2))
    );
    assert_eq!(s.channel_stat("t", "c", "timeout_count"), Some(1));
    s.post(&format!("/message/fin?receipt={}", receipt(&again[0])), b"");
    assert!(wait_until(Duration::from_secs(10), || {
        s.channel_stat("t", "c", "client_count") == Some(0)
    }));
    let m = s.get("/metrics").text();
    assert!(m.contains("nsq_http_consumers 0"), "{m}");
}

/// A streaming GET: lines as they come.
struct Stream {
    lines: BufReader<std::net::TcpStream>,
}

impl Stream {
    fn open(s: &Server, query: &str) -> Stream {
        let mut c = std::net::TcpStream::connect(s.http).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        write!(
            c,
            "GET /channel/stream?{query} HTTP/1.1\r\nHost: x\r\nUser-Agent: sse-test\r\n\r\n"
        )
        .unwrap();
        let mut st = Stream {
            lines: BufReader::new(c),
        };
        let status = st.line();
        assert!(status.starts_with("HTTP/1.1 200"), "{status}");
        let mut headers = Vec::new();
        loop {
            let l = st.line();
            if l.is_empty() {
                break;
            }
            headers.push(l.to_ascii_lowercase());
        }
        assert!(
            headers.contains(&"content-type: text/event-stream".to_string()),
            "{headers:?}"
        );
        st
    }

    /// One line of the (chunked) body, chunk sizes skipped.
    fn line(&mut self) -> String {
        let mut l = String::new();
        self.lines.read_line(&mut l).expect("a line in time");
        l.trim_end_matches(['\r', '\n']).to_string()
    }

    /// The next event's data (comments and chunk framing skipped); `comments` collects them.
    fn event(&mut self, comments: &mut Vec<String>) -> Value {
        loop {
            let l = self.line();
            if let Some(c) = l.strip_prefix(": ") {
                comments.push(c.to_string());
            } else if let Some(d) = l.strip_prefix("data: ") {
                return serde_json::from_str(d).unwrap();
            }
        }
    }
}

#[test]
fn a_stream_delivers_within_max_in_flight_with_heartbeats() {
    let s = Server::start(&[]);
    let mut st = Stream::open(&s, "topic=t&channel=c&max_in_flight=2&heartbeat=200ms");
    let mut comments = Vec::new();
    for i in 0..3 {
        pub_ok(&s, "t", &format!("e{i}"));
    }
    let a = st.event(&mut comments);
    let b = st.event(&mut comments);
    assert_eq!((body_of(&a), body_of(&b)), ("e0".into(), "e1".into()));
    // the third waits for an answer: heartbeats meanwhile
    let before = comments.len();
    while comments.len() < before + 2 {
        let l = st.line();
        if let Some(c) = l.strip_prefix(": ") {
            comments.push(c.to_string());
        }
        assert!(!l.starts_with("data:"), "nothing beyond max_in_flight: {l}");
    }
    assert!(comments.iter().any(|c| c == "heartbeat"), "{comments:?}");
    assert!(comments[0].starts_with("connected to t/c"));
    let clients = s.client_stats("t", "c");
    assert_eq!(
        (clients.len(), clients[0]["user_agent"].clone()),
        (1, json!("sse-test"))
    );
    let r = s.post(&format!("/message/fin?receipt={}", receipt(&a)), b"");
    assert_eq!(r.status, 200);
    let c = st.event(&mut comments);
    assert_eq!(body_of(&c), "e2");
    // the client goes away: its two unanswered messages wait for their timeout
    drop(st);
    assert!(wait_until(Duration::from_secs(10), || {
        s.channel_stat("t", "c", "in_flight_count") == Some(2)
            && s.client_stats("t", "c")[0]["ready_count"] == 0
    }));
}

#[test]
fn an_expired_message_is_never_received_and_goes_to_the_dead_letters() {
    let s = Server::start(&[]);
    s.post("/channel/config?topic=t&channel=c", b"{}");
    assert_text_ok(&s.post("/pub?topic=t&ttl=150ms", b"stale"), "OK");
    assert_text_ok(&s.post("/pub?topic=t&ttl=1h", b"fresh"), "OK");
    // expired by the time the sweep or a receive looks at it
    let dead = receive(&s, "topic=t.dead&channel=x&wait=20s");
    assert_eq!(body_of(&dead[0]), "stale");
    assert_eq!(dead[0]["dead_letter"]["reason"], "expired");
    assert_eq!(dead[0]["dead_letter"]["attempts"], 0);
    let got = receive(&s, "topic=t&channel=c&max=10&wait=1s");
    assert_eq!(got.len(), 1);
    assert_eq!(body_of(&got[0]), "fresh");
    assert!(got[0]["expires_at"].as_i64().unwrap() > got[0]["timestamp"].as_i64().unwrap());
}
