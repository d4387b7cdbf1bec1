//! TCP publishing: PUB, MPUB and DPUB success paths and every error string in check order (params,
//! topic name, sizes against `--max-msg-size` / `--max-body-size`, message count, DPUB timeout
//! parsing and range against `--max-req-timeout`, truncated input), topic auto-creation visible in
//! /stats, MPUB all-or-nothing, the topic/channel name validation rules, and a long pipelined
//! publish stream whose commands straddle the server's read buffers.
use crate::common::*;

use std::time::Duration;

/// `CMD\n` + a raw int32 size (no body).
fn line_and_size(line: &str, size: i32) -> Vec<u8> {
    let mut v = format!("{line}\n").into_bytes();
    v.extend_from_slice(&size.to_be_bytes());
    v
}

/// Send `bytes` on a fresh connection and expect a fatal error.
fn fatal(s: &Server, bytes: &[u8], err: &str) {
    let mut c = s.connect();
    c.write(bytes);
    c.expect_fatal(err);
}

/// Same, but half-close after sending so the server sees EOF mid-command.
fn fatal_eof(s: &Server, bytes: &[u8], err: &str) {
    let mut c = s.connect();
    c.write(bytes);
    c.shutdown_write();
    c.expect_fatal(err);
}

/// An MPUB command with a correct outer size around `body`.
fn mpub_cmd(topic: &str, body: &[u8]) -> Vec<u8> {
    let mut v = line_and_size(&format!("MPUB {topic}"), body.len() as i32);
    v.extend_from_slice(body);
    v
}

fn consume(s: &Server, topic: &str, n: usize) -> Vec<Msg> {
    let mut c = s.connect();
    c.sub(topic, "reader");
    c.rdy(n as u64 + 1);
    let msgs = c.expect_messages(n);
    assert!(
        c.expect_silence(Duration::from_millis(300)),
        "extra messages"
    );
    msgs
}

#[test]
fn pub_creates_topic_and_stores_message() {
    let s = Server::start(&[]);
    assert!(s.topic_stats("fresh").is_none());
    let mut c = s.connect();
    c.publish("fresh", b"hello");
    c.publish("fresh", b"world!");
    let t = s.topic_stats("fresh").expect("topic created by PUB");
    assert_eq!(t["depth"], 2);
    assert_eq!(t["message_count"], 2);
    assert_eq!(t["message_bytes"], 11);
    assert_eq!(t["channels"], serde_json::json!([]));
    assert_eq!(t["paused"], false);
    let msgs = consume(&s, "fresh", 2);
    let mut bodies: Vec<Vec<u8>> = msgs.iter().map(|m| m.body.clone()).collect();
    bodies.sort();
    assert_eq!(bodies, vec![b"hello".to_vec(), b"world!".to_vec()]);
}

#[test]
fn pub_binary_body_preserved() {
    let s = Server::start(&[]);
    let body: Vec<u8> = (0..=255u8).chain([b'\n', b'\r', 0, 0]).collect();
    s.connect().publish("bin", &body);
    let m = &consume(&s, "bin", 1)[0];
    assert_eq!(m.body, body);
}

#[test]
fn pub_errors() {
    let s = Server::start(&["--max-msg-size=10"]);
    fatal(
        &s,
        b"PUB\n",
        "E_INVALID PUB insufficient number of parameters",
    );
    // topic is checked before the body is read (no body sent)
    fatal(
        &s,
        b"PUB bad$\n",
        "E_BAD_TOPIC PUB topic name \"bad$\" is not valid",
    );
    // ... and before the size is checked
    fatal(
        &s,
        &line_and_size("PUB bad$", 0),
        "E_BAD_TOPIC PUB topic name \"bad$\" is not valid",
    );
    fatal(
        &s,
        &line_and_size("PUB t", 0),
        "E_BAD_MESSAGE PUB invalid message body size 0",
    );
    fatal(
        &s,
        &line_and_size("PUB t", -5),
        "E_BAD_MESSAGE PUB invalid message body size -5",
    );
    fatal(
        &s,
        &line_and_size("PUB t", 11),
        "E_BAD_MESSAGE PUB message too big 11 > 10",
    );
    fatal_eof(
        &s,
        b"PUB t\n\x00\x00\x00",
        "E_BAD_MESSAGE PUB failed to read message body size",
    );
    fatal_eof(
        &s,
        b"PUB t\n\x00\x00\x00\x05abc",
        "E_BAD_MESSAGE PUB failed to read message body",
    );
    // none of the failed publishes created the topic or stored anything
    assert!(s.topic_stats("t").is_none());
    assert!(s.topic_stats("bad$").is_none());
    // exactly max-msg-size is fine
    s.connect().publish("t", b"0123456789");
    assert_eq!(s.topic_stat("t", "depth"), Some(1));
}

#[test]
fn pub_too_big_default_limit() {
    let s = Server::start(&[]);
    fatal(
        &s,
        &line_and_size("PUB t", 1_048_577),
        "E_BAD_MESSAGE PUB message too big 1048577 > 1048576",
    );
    let body = vec![b'x'; 1_048_576];
    s.connect().publish("t", &body);
}

#[test]
fn mpub_ok() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    c.write(&mpub_cmd("multi", &mpub_body(&[b"one", b"two", b"three"])));
    c.expect_ok();
    let t = s.topic_stats("multi").expect("topic created by MPUB");
    assert_eq!(t["depth"], 3);
    assert_eq!(t["message_count"], 3);
    assert_eq!(t["message_bytes"], 11);
    // a single-message MPUB is fine too
    c.write(&mpub_cmd("multi", &mpub_body(&[b"four"])));
    c.expect_ok();
    let msgs = consume(&s, "multi", 4);
    let mut bodies: Vec<&[u8]> = msgs.iter().map(|m| m.body.as_slice()).collect();
    bodies.sort();
    assert_eq!(
        bodies,
        vec![&b"four"[..], &b"one"[..], &b"three"[..], &b"two"[..]]
    );
    // all ids distinct
    let mut ids: Vec<String> = msgs.iter().map(|m| m.id_str()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 4);
}

#[test]
fn mpub_param_and_topic_errors() {
    let s = Server::start(&[]);
    fatal(
        &s,
        b"MPUB\n",
        "E_INVALID MPUB insufficient number of parameters",
    );
    // upstream quirk: the code appears twice
    fatal(
        &s,
        b"MPUB bad$\n",
        "E_BAD_TOPIC E_BAD_TOPIC MPUB topic name \"bad$\" is not valid",
    );
    fatal(
        &s,
        b"MPUB \n",
        "E_BAD_TOPIC E_BAD_TOPIC MPUB topic name \"\" is not valid",
    );
}

#[test]
fn mpub_body_errors() {
    let s = Server::start(&["--max-body-size=100", "--max-msg-size=10"]);
    fatal(
        &s,
        &line_and_size("MPUB t", 0),
        "E_BAD_BODY MPUB invalid body size 0",
    );
    fatal(
        &s,
        &line_and_size("MPUB t", -1),
        "E_BAD_BODY MPUB invalid body size -1",
    );
    fatal(
        &s,
        &line_and_size("MPUB t", 101),
        "E_BAD_BODY MPUB body too big 101 > 100",
    );
    // message count: <= 0, or more than (max-body-size - 4) / 5 = 19
    for (n, err) in [
        (0i32, "E_BAD_BODY MPUB invalid message count 0"),
        (-3, "E_BAD_BODY MPUB invalid message count -3"),
        (20, "E_BAD_BODY MPUB invalid message count 20"),
    ] {
        // the whole declared body is sent, so the test does not depend on whether the
        // count is checked before or after the body has been read
        let mut v = line_and_size("MPUB t", 100);
        v.extend_from_slice(&n.to_be_bytes());
        v.extend_from_slice(&[b'x'; 96]);
        fatal(&s, &v, err);
    }
    // per-message size errors (zero-based index)
    let mut body = mpub_body(&[b"ok"]);
    body[3] = 2; // count 2; the second message has size 0
    body.extend_from_slice(&0i32.to_be_bytes());
    fatal(
        &s,
        &mpub_cmd("t", &body),
        "E_BAD_MESSAGE MPUB invalid message(1) body size 0",
    );
    let mut body = 3i32.to_be_bytes().to_vec();
    body.extend_from_slice(&1i32.to_be_bytes());
    body.push(b'a');
    body.extend_from_slice(&1i32.to_be_bytes());
    body.push(b'b');
    body.extend_from_slice(&(-7i32).to_be_bytes());
    fatal(
        &s,
        &mpub_cmd("t", &body),
        "E_BAD_MESSAGE MPUB invalid message(2) body size -7",
    );
    let mut body = 1i32.to_be_bytes().to_vec();
    body.extend_from_slice(&11i32.to_be_bytes());
    fatal(
        &s,
        &mpub_cmd("t", &body),
        "E_BAD_MESSAGE MPUB message too big 11 > 10",
    );
    // exactly max-msg-size inside an MPUB is fine
    let mut c = s.connect();
    c.write(&mpub_cmd("t", &mpub_body(&[b"0123456789", b"x"])));
    c.expect_ok();
}

#[test]
fn mpub_truncated_input() {
    let s = Server::start(&[]);
    fatal_eof(
        &s,
        b"MPUB t\n\x00\x00",
        "E_BAD_BODY MPUB failed to read body size",
    );
    let mut v = line_and_size("MPUB t", 20);
    v.extend_from_slice(&[0, 0]);
    fatal_eof(&s, &v, "E_BAD_BODY MPUB failed to read message count");
    let mut v = line_and_size("MPUB t", 20);
    v.extend_from_slice(&2i32.to_be_bytes());
    v.extend_from_slice(&1i32.to_be_bytes());
    v.push(b'a');
    v.extend_from_slice(&[0, 0, 0]);
    fatal_eof(
        &s,
        &v,
        "E_BAD_MESSAGE MPUB failed to read message(1) body size",
    );
    let mut v = line_and_size("MPUB t", 20);
    v.extend_from_slice(&1i32.to_be_bytes());
    v.extend_from_slice(&5i32.to_be_bytes());
    v.extend_from_slice(b"ab");
    fatal_eof(&s, &v, "E_BAD_MESSAGE MPUB failed to read message body");
    // nothing was stored
    assert_eq!(s.topic_stat("t", "depth").unwrap_or(0), 0);
}

#[test]
fn mpub_is_all_or_nothing() {
    let s = Server::start(&["--max-msg-size=10"]);
    let mut c = s.connect();
    c.sub("aon", "c");
    // first two messages valid, third too big
    let body = mpub_body(&[b"a", b"b", b"this is too long"]);
    fatal(
        &s,
        &mpub_cmd("aon", &body),
        "E_BAD_MESSAGE MPUB message too big 16 > 10",
    );
    let t = s.topic_stats("aon").expect("topic");
    assert_eq!(t["message_count"], 0);
    assert_eq!(t["depth"], 0);
    assert_eq!(s.channel_stat("aon", "c", "message_count"), Some(0));
    c.rdy(10);
    assert!(c.expect_silence(Duration::from_millis(400)));
}

#[test]
fn mpub_creates_topic_before_reading_body() {
    let s = Server::start(&[]);
    fatal(
        &s,
        &line_and_size("MPUB early", 0),
        "E_BAD_BODY MPUB invalid body size 0",
    );
    let t = s
        .topic_stats("early")
        .expect("topic created although body invalid");
    assert_eq!(t["depth"], 0);
}

#[test]
fn dpub_ok() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    c.cmd_body("DPUB later 60000", b"deferred");
    c.expect_ok();
    let t = s.topic_stats("later").expect("topic created by DPUB");
    assert_eq!(t["message_count"], 1);
    assert_eq!(t["message_bytes"], 8);
    // 0 and an empty param both mean "no delay"
    c.cmd_body("DPUB now 0", b"a");
    c.expect_ok();
    c.cmd_body("DPUB now ", b"b");
    c.expect_ok();
    let msgs = consume(&s, "now", 2);
    assert_eq!(msgs.len(), 2);
}

#[test]
fn dpub_errors() {
    let s = Server::start(&["--max-msg-size=10"]);
    fatal(
        &s,
        b"DPUB\n",
        "E_INVALID DPUB insufficient number of parameters",
    );
    fatal(
        &s,
        b"DPUB t\n",
        "E_INVALID DPUB insufficient number of parameters",
    );
    fatal(
        &s,
        b"DPUB bad$ 100\n",
        "E_BAD_TOPIC DPUB topic name \"bad$\" is not valid",
    );
    // topic is checked before the timeout
    fatal(
        &s,
        b"DPUB bad$ x\n",
        "E_BAD_TOPIC DPUB topic name \"bad$\" is not valid",
    );
    for bad in ["-1", "abc", "1.5", "+5", "10ms"] {
        fatal(
            &s,
            format!("DPUB t {bad}\n").as_bytes(),
            &format!("E_INVALID DPUB could not parse timeout {bad}"),
        );
    }
    // default max-req-timeout 1h: rejected, not clamped
    fatal(
        &s,
        b"DPUB t 3600001\n",
        "E_INVALID DPUB timeout 3600001 out of range 0-3600000",
    );
    // timeout is checked before the body size
    fatal(
        &s,
        &line_and_size("DPUB t 3600001", 0),
        "E_INVALID DPUB timeout 3600001 out of range 0-3600000",
    );
    fatal(
        &s,
        &line_and_size("DPUB t 100", 0),
        "E_BAD_MESSAGE DPUB invalid message body size 0",
    );
    fatal(
        &s,
        &line_and_size("DPUB t 100", -2),
        "E_BAD_MESSAGE DPUB invalid message body size -2",
    );
    fatal(
        &s,
        &line_and_size("DPUB t 100", 11),
        "E_BAD_MESSAGE DPUB message too big 11 > 10",
    );
    fatal_eof(
        &s,
        b"DPUB t 100\n\x00",
        "E_BAD_MESSAGE DPUB failed to read message body size",
    );
    fatal_eof(
        &s,
        b"DPUB t 100\n\x00\x00\x00\x04ab",
        "E_BAD_MESSAGE DPUB failed to read message body",
    );
    assert!(s.topic_stats("t").is_none());
    // exactly the max
    let mut c = s.connect();
    c.cmd_body("DPUB t 3600000", b"0123456789");
    c.expect_ok();
}

#[test]
fn dpub_range_follows_max_req_timeout() {
    let s = Server::start(&["--max-req-timeout=1s"]);
    fatal(
        &s,
        b"DPUB t 1001\n",
        "E_INVALID DPUB timeout 1001 out of range 0-1000",
    );
    let mut c = s.connect();
    c.cmd_body("DPUB t 1000", b"x");
    c.expect_ok();
}

#[test]
fn topic_name_validation() {
    let s = Server::start(&[]);
    let n64 = "a".repeat(64);
    let n65 = "b".repeat(65);
    let eph64 = format!("{}#ephemeral", "c".repeat(54));
    let eph65 = format!("{}#ephemeral", "d".repeat(55));
    let valid = [
        "a",
        "a.b-c_d",
        "A.Z-09_",
        "...",
        "-",
        "x#ephemeral",
        n64.as_str(),
        eph64.as_str(),
    ];
    let invalid = [
        n65.as_str(),
        eph65.as_str(),
        "#ephemeral",
        "a#ephemeral#ephemeral",
        "a#ephem",
        "a#",
        "#",
        "bad$",
        "a/b",
        "a:b",
        "a*",
        "caf\u{e9}",
    ];
    for name in valid {
        let mut c = s.connect();
        c.publish(name, b"x");
        assert!(s.topic_stats(name).is_some(), "topic {name:?} not created");
    }
    for name in invalid {
        let mut c = s.connect();
        c.cmd(&format!("PUB {name}"));
        c.expect_fatal(&format!(
            "E_BAD_TOPIC PUB topic name \"{name}\" is not valid"
        ));
        assert!(s.topic_stats(name).is_none());
    }
}

#[test]
fn channel_name_validation() {
    let s = Server::start(&[]);
    let n64 = "a".repeat(64);
    let n65 = "b".repeat(65);
    let eph64 = format!("{}#ephemeral", "c".repeat(54));
    for name in ["c", "a.b-c_d", n64.as_str(), eph64.as_str(), "e#ephemeral"] {
        let mut c = s.connect();
        c.sub("names", name);
        assert!(
            s.channel_stats("names", name).is_some(),
            "channel {name:?} not created"
        );
    }
    for name in [n65.as_str(), "#ephemeral", "a#ephemeral#ephemeral", "bad$"] {
        let mut c = s.connect();
        c.cmd(&format!("SUB names {name}"));
        c.expect_fatal(&format!(
            "E_BAD_CHANNEL SUB channel name \"{name}\" is not valid"
        ));
    }
}

#[test]
fn publishers_listed_as_producers() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    assert_eq!(
        c.identify(r#"{"client_id":"prod-1"}"#),
        Frame::Response(b"OK".to_vec())
    );
    c.publish("pt", b"x");
    c.write(&mpub_cmd("pt", &mpub_body(&[b"y", b"z"])));
    c.expect_ok();
    let st = s.stats();
    let producers = st["producers"].as_array().expect("producers array");
    let p = producers
        .iter()
        .find(|p| p["client_id"] == "prod-1")
        .expect("publisher listed");
    let counts = p["pub_counts"].as_array().expect("pub_counts");
    assert!(
        counts
            .iter()
            .any(|pc| pc["topic"] == "pt" && pc["count"] == 3),
        "pub_counts: {counts:?}"
    );
}

/// Read up to `n` messages with RDY `rdy`, FIN-ing each; their bodies.
fn drain(s: &Server, topic: &str, n: usize) -> Vec<Vec<u8>> {
    let mut c = s.connect();
    c.sub(topic, "drain");
    c.rdy(500);
    let mut bodies = Vec::with_capacity(n);
    while bodies.len() < n {
        let m = c.expect_message();
        c.fin(&m.id_str());
        bodies.push(m.body);
    }
    assert!(
        c.expect_silence(Duration::from_millis(300)),
        "extra messages"
    );
    bodies
}

/// One connection pipelines megabytes of publishes to two topics (MPUB, PUB, DPUB of varied
/// sizes, commands split across reads and buffers at arbitrary points); every body arrives
/// intact and in order per topic, and a message requeued with a delay still has its body
/// after its neighbours were consumed.
#[test]
fn a_long_publish_stream_keeps_every_body() {
    let s = Server::start(&[]);
    let body = |topic: &str, i: usize| -> Vec<u8> {
        let mut b = format!("{topic}-{i:06}-").into_bytes();
        b.resize(16 + (i * 37) % 1500, b'a' + (i % 26) as u8);
        b
    };
    let mut stream = Vec::new();
    let (mut a, mut b, mut commands) = (Vec::new(), Vec::new(), 0);
    while stream.len() < 4 << 20 {
        let batch: Vec<Vec<u8>> = (a.len()..a.len() + 1 + a.len() % 97)
            .map(|i| body("a", i))
            .collect();
        let refs: Vec<&[u8]> = batch.iter().map(Vec::as_slice).collect();
        stream.extend(mpub_cmd("a", &mpub_body(&refs)));
        a.extend(batch);
        for _ in 0..3 {
            let m = body("b", b.len());
            stream.extend(b"PUB b\n");
            stream.extend((m.len() as i32).to_be_bytes());
            stream.extend(&m);
            b.push(m);
        }
        let m = body("b", b.len());
        stream.extend(b"DPUB b 1\n");
        stream.extend((m.len() as i32).to_be_bytes());
        stream.extend(&m);
        b.push(m);
        commands += 5;
    }
    // Channels first, so each topic's messages go to a channel as they arrive.
    let mut sa = s.connect();
    sa.sub("a", "drain");
    let mut sb = s.connect();
    sb.sub("b", "drain");
    let mut p = s.connect();
    for chunk in stream.chunks(100_003) {
        p.write(chunk);
    }
    for _ in 0..commands {
        p.expect_ok();
    }
    sa.close();
    sb.close();
    assert_eq!(drain(&s, "a", a.len()), a, "topic a, in order");
    let mut got_b = drain(&s, "b", b.len());
    got_b.sort();
    b.sort();
    assert_eq!(got_b, b, "topic b (DPUBs may land after later PUBs)");

    // A requeue with a delay outlives the rest of its publish.
    p.write(&mpub_cmd("c", &mpub_body(&[b"first", b"second", b"third"])));
    p.expect_ok();
    let mut c = s.connect();
    c.sub("c", "r");
    c.rdy(3);
    let msgs = c.expect_messages(3);
    c.req(&msgs[1].id_str(), 200);
    c.fin(&msgs[0].id_str());
    c.fin(&msgs[2].id_str());
    c.rdy(1);
    let again = c.expect_message();
    assert_eq!((again.body.as_slice(), again.attempts), (&b"second"[..], 2));
}
