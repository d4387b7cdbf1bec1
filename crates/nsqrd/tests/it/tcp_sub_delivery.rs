//! TCP consuming: SUB and its errors (state, params, names, heartbeats disabled,
//! `--max-channel-consumers`), RDY and its errors (parse, range against `--max-rdy-count`, default
//! 1, empty = 0), the client state machine, the message frame layout and message ids, fan-out to
//! channels and load-splitting within one, RDY as an in-flight limit, FIN and its errors, and CLS.
use crate::common::*;

use std::collections::HashSet;
use std::io::Read;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const QUIET: Duration = Duration::from_millis(500);

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_nanos() as i64
}

fn client(s: &Server, topic: &str, channel: &str) -> serde_json::Value {
    let cl = s.client_stats(topic, channel);
    assert_eq!(cl.len(), 1, "clients: {cl:?}");
    cl[0].clone()
}

#[test]
fn sub_creates_topic_and_channel() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    c.sub("st", "ch");
    let ch = s.channel_stats("st", "ch").expect("channel created by SUB");
    assert_eq!(ch["client_count"], 1);
    assert_eq!(ch["depth"], 0);
    let cl = client(&s, "st", "ch");
    assert_eq!(cl["state"], 3);
    assert_eq!(cl["ready_count"], 0);
    assert_eq!(cl["in_flight_count"], 0);
    // after SUB the RDY count is 0: nothing is delivered
    s.connect().publish("st", b"x");
    assert!(c.expect_silence(QUIET));
    assert_eq!(s.channel_stat("st", "ch", "depth"), Some(1));
}

#[test]
fn sub_errors() {
    let s = Server::start(&[]);
    for (line, err) in [
        ("SUB", "E_INVALID SUB insufficient number of parameters"),
        ("SUB t", "E_INVALID SUB insufficient number of parameters"),
        (
            "SUB bad$ c",
            "E_BAD_TOPIC SUB topic name \"bad$\" is not valid",
        ),
        (
            "SUB bad$ bad$",
            "E_BAD_TOPIC SUB topic name \"bad$\" is not valid",
        ),
        (
            "SUB t bad$",
            "E_BAD_CHANNEL SUB channel name \"bad$\" is not valid",
        ),
        (
            "SUB t  c",
            "E_BAD_CHANNEL SUB channel name \"\" is not valid",
        ),
        ("SUB  c", "E_BAD_TOPIC SUB topic name \"\" is not valid"),
    ] {
        let mut c = s.connect();
        c.cmd(line);
        c.expect_fatal(err);
    }
    // a second SUB on the same connection
    let mut c = s.connect();
    c.sub("t", "c");
    c.cmd("SUB t c2");
    c.expect_fatal("E_INVALID cannot SUB in current state");
    // nothing invalid was created
    assert!(s.topic_stats("bad$").is_none());
    assert!(s.channel_stats("t", "c2").is_none());
}

#[test]
fn sub_with_heartbeats_disabled() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    assert_eq!(
        c.identify(r#"{"heartbeat_interval":-1}"#),
        Frame::Response(b"OK".to_vec())
    );
    c.cmd("SUB t c");
    c.expect_fatal("E_INVALID cannot SUB with heartbeats disabled");
    // checked before the params
    let mut c = s.connect();
    c.identify(r#"{"heartbeat_interval":-1}"#);
    c.cmd("SUB");
    c.expect_fatal("E_INVALID cannot SUB with heartbeats disabled");
    assert!(s.channel_stats("t", "c").is_none());
}

#[test]
fn max_channel_consumers() {
    let s = Server::start(&["--max-channel-consumers=1"]);
    let mut a = s.connect();
    a.sub("t", "c");
    let mut b = s.connect();
    b.cmd("SUB t c");
    b.expect_fatal("E_SUB_FAILED SUB failed consumers for t:c exceeds limit of 1");
    // the limit is per channel
    let mut d = s.connect();
    d.sub("t", "other");
    // once the first consumer leaves, the slot is free again
    a.close();
    assert!(wait_until(Duration::from_secs(5), || s.channel_stat(
        "t",
        "c",
        "client_count"
    ) == Some(0)));
    s.connect().sub("t", "c");
}

#[test]
fn commands_before_sub_are_state_errors() {
    let s = Server::start(&[]);
    for (line, err) in [
        ("RDY 1", "E_INVALID cannot RDY in current state"),
        (
            "FIN 0123456789abcdef",
            "E_INVALID cannot FIN in current state",
        ),
        (
            "REQ 0123456789abcdef 0",
            "E_INVALID cannot REQ in current state",
        ),
        (
            "TOUCH 0123456789abcdef",
            "E_INVALID cannot TOUCH in current state",
        ),
        ("CLS", "E_INVALID cannot CLS in current state"),
        // state is checked before params
        ("FIN", "E_INVALID cannot FIN in current state"),
        ("RDY x", "E_INVALID cannot RDY in current state"),
    ] {
        // fresh, and after IDENTIFY (still the init state)
        for identify in [false, true] {
            let mut c = s.connect();
            if identify {
                c.identify("{}");
            }
            c.cmd(line);
            c.expect_fatal(err);
        }
    }
}

#[test]
fn rdy_errors() {
    let s = Server::start(&[]);
    for (line, err) in [
        ("RDY x", "E_INVALID RDY could not parse count x"),
        ("RDY -1", "E_INVALID RDY could not parse count -1"),
        ("RDY 1.0", "E_INVALID RDY could not parse count 1.0"),
        ("RDY 2501", "E_INVALID RDY count 2501 out of range 0-2500"),
    ] {
        let mut c = s.connect();
        c.sub("t", "c");
        c.cmd(line);
        c.expect_fatal(err);
    }
    let mut c = s.connect();
    c.sub("t", "c");
    c.rdy(2500);
    c.publish("other", b"max rdy is fine");
}

#[test]
fn rdy_range_follows_max_rdy_count() {
    let s = Server::start(&["--max-rdy-count=10"]);
    let mut c = s.connect();
    c.sub("t", "c");
    c.rdy(11);
    c.expect_fatal("E_INVALID RDY count 11 out of range 0-10");
    let mut c = s.connect();
    c.sub("t", "c");
    c.rdy(10);
    s.wait_ready("t", "c", 10);
}

#[test]
fn rdy_without_count_means_one_and_empty_means_zero() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    c.sub("t", "c");
    c.cmd("RDY");
    s.wait_ready("t", "c", 1);
    c.rdy(5);
    s.wait_ready("t", "c", 5);
    c.cmd("RDY ");
    s.wait_ready("t", "c", 0);
}

#[test]
fn message_frame_layout() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    c.sub("layout", "c");
    c.rdy(1);
    s.wait_ready("layout", "c", 1);
    let before = now_ns();
    s.connect().publish("layout", b"hello");
    let after = now_ns();
    let mut raw = vec![0u8; 8 + 26 + 5];
    c.s.read_exact(&mut raw).expect("message frame");
    assert_eq!(&raw[0..4], &(4 + 26 + 5i32).to_be_bytes());
    assert_eq!(&raw[4..8], &FRAME_MESSAGE.to_be_bytes());
    let ts = i64::from_be_bytes(raw[8..16].try_into().expect("8"));
    assert!(
        ts >= before - 1_000_000_000 && ts <= after + 1_000_000_000,
        "timestamp {ts} not within [{before}, {after}]"
    );
    assert_eq!(&raw[16..18], &[0, 1], "attempts");
    let id = &raw[18..34];
    assert!(
        id.iter()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b)),
        "id not lowercase hex: {:?}",
        String::from_utf8_lossy(id)
    );
    assert_eq!(&raw[34..], b"hello");
}

#[test]
fn message_ids_encode_node_and_time_and_increase() {
    let s = Server::start(&["--node-id=617"]);
    let mut c = s.connect();
    c.sub("ids", "c");
    c.rdy(100);
    s.wait_ready("ids", "c", 100);
    let mut p = s.connect();
    let bodies: Vec<Vec<u8>> = (0..20).map(|i| format!("m{i}").into_bytes()).collect();
    let refs: Vec<&[u8]> = bodies.iter().map(|b| b.as_slice()).collect();
    let mp = mpub_body(&refs);
    p.cmd_body("MPUB ids", &mp);
    p.expect_ok();
    for i in 0..5 {
        p.publish("ids", format!("p{i}").as_bytes());
    }
    let msgs = c.expect_messages(25);
    let now_units = now_ns() >> 20;
    let mut by_body: Vec<(Vec<u8>, u64)> = msgs
        .iter()
        .map(|m| {
            let s = m.id_str();
            assert_eq!(s.len(), 16);
            assert_eq!(s, s.to_ascii_lowercase(), "id {s}");
            (m.body.clone(), u64::from_str_radix(&s, 16).expect("hex id"))
        })
        .collect();
    for (_, id) in &by_body {
        assert_eq!((id >> 12) & 0x3ff, 617, "node id in {id:016x}");
        let ts = (id >> 22) as i64 + 1_288_834_974_288;
        assert!((now_units - ts).abs() < 20_000, "time part of {id:016x}");
    }
    // ids increase in publish order (MPUB order, then the PUBs)
    let order: Vec<Vec<u8>> = bodies
        .iter()
        .cloned()
        .chain((0..5).map(|i| format!("p{i}").into_bytes()))
        .collect();
    by_body.sort_by_key(|(b, _)| order.iter().position(|o| o == b).expect("known body"));
    assert!(
        by_body.windows(2).all(|w| w[0].1 < w[1].1),
        "ids not strictly increasing: {by_body:?}"
    );
}

#[test]
fn each_channel_gets_its_own_copy() {
    let s = Server::start(&[]);
    let mut a = s.connect();
    a.sub("fan", "one");
    a.rdy(10);
    let mut b = s.connect();
    b.sub("fan", "two");
    b.rdy(10);
    s.wait_ready("fan", "one", 10);
    s.wait_ready("fan", "two", 10);
    s.connect().publish("fan", b"copy");
    let ma = a.expect_message();
    let mb = b.expect_message();
    assert_eq!(ma.body, b"copy");
    assert_eq!(ma, mb, "same id, timestamp, attempts and body");
    // finishing on one channel does not affect the other
    a.fin(&ma.id_str());
    assert!(wait_until(Duration::from_secs(5), || {
        s.channel_stat("fan", "one", "in_flight_count") == Some(0)
    }));
    assert_eq!(s.channel_stat("fan", "two", "in_flight_count"), Some(1));
    assert_eq!(s.channel_stat("fan", "one", "message_count"), Some(1));
    assert_eq!(s.channel_stat("fan", "two", "message_count"), Some(1));
}

#[test]
fn one_channel_splits_between_consumers() {
    let s = Server::start(&[]);
    let mut a = s.connect();
    a.sub("split", "c");
    let mut b = s.connect();
    b.sub("split", "c");
    let mut p = s.connect();
    p.publish("split", b"m1");
    p.publish("split", b"m2");
    // A may only hold one, so the second goes to B
    a.rdy(1);
    let ma = a.expect_message();
    b.rdy(1);
    let mb = b.expect_message();
    assert_ne!(ma.id, mb.id);
    let mut bodies = vec![ma.body.clone(), mb.body.clone()];
    bodies.sort();
    assert_eq!(bodies, vec![b"m1".to_vec(), b"m2".to_vec()]);
    assert!(a.expect_silence(Duration::from_millis(200)));
    assert!(b.expect_silence(Duration::from_millis(200)));

    // both ready for 5: ten messages split five and five, no duplicates
    a.fin(&ma.id_str());
    b.fin(&mb.id_str());
    a.rdy(5);
    b.rdy(5);
    s.wait_ready("split", "c", 10);
    for i in 0..10 {
        p.publish("split", format!("n{i}").as_bytes());
    }
    let got_a = a.expect_messages(5);
    let got_b = b.expect_messages(5);
    let ids: HashSet<[u8; 16]> = got_a.iter().chain(&got_b).map(|m| m.id).collect();
    assert_eq!(ids.len(), 10);
    assert!(a.expect_silence(Duration::from_millis(200)));
    assert!(b.expect_silence(Duration::from_millis(200)));
}

#[test]
fn rdy_limits_in_flight() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    c.sub("lim", "c");
    let mut p = s.connect();
    for i in 0..3 {
        p.publish("lim", format!("m{i}").as_bytes());
    }
    c.rdy(1);
    let m1 = c.expect_message();
    assert_eq!(m1.attempts, 1);
    assert!(c.expect_silence(QUIET), "second message before FIN");
    assert_eq!(s.channel_stat("lim", "c", "in_flight_count"), Some(1));
    assert_eq!(s.channel_stat("lim", "c", "depth"), Some(2));
    c.fin(&m1.id_str());
    let m2 = c.expect_message();
    assert_ne!(m1.id, m2.id);
    assert!(c.expect_silence(QUIET));
    // raising RDY lets the rest flow; RDY is absolute, not additive
    c.rdy(2);
    let m3 = c.expect_message();
    assert_ne!(m3.id, m2.id);
    for i in 3..6 {
        p.publish("lim", format!("m{i}").as_bytes());
    }
    c.rdy(2);
    assert!(c.expect_silence(QUIET), "RDY 2 twice must not mean 4");
    assert_eq!(client(&s, "lim", "c")["in_flight_count"], 2);
    assert_eq!(client(&s, "lim", "c")["ready_count"], 2);
}

#[test]
fn rdy_zero_stops_delivery() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    c.sub("zero", "c");
    c.rdy(1);
    let mut p = s.connect();
    p.publish("zero", b"m1");
    let m1 = c.expect_message();
    c.rdy(0);
    s.wait_ready("zero", "c", 0);
    // in-flight messages stay in flight
    assert_eq!(s.channel_stat("zero", "c", "in_flight_count"), Some(1));
    c.fin(&m1.id_str());
    p.publish("zero", b"m2");
    assert!(c.expect_silence(QUIET));
    assert_eq!(s.channel_stat("zero", "c", "depth"), Some(1));
    c.rdy(1);
    assert_eq!(c.expect_message().body, b"m2");
}

#[test]
fn fin_errors() {
    let s = Server::start(&[]);
    for (line, err) in [
        ("FIN", "E_INVALID FIN insufficient number of params"),
        ("FIN abc", "E_INVALID invalid message ID"),
        ("FIN 0123456789abcdef0", "E_INVALID invalid message ID"),
        ("FIN 0123456789abcde", "E_INVALID invalid message ID"),
        ("FIN ", "E_INVALID invalid message ID"),
    ] {
        let mut c = s.connect();
        c.sub("t", "c");
        c.cmd(line);
        c.expect_fatal(err);
    }
}

#[test]
fn fin_not_in_flight_is_not_fatal() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    c.sub("t", "c");
    c.rdy(1);
    // 16 bytes that are not a real id: only the length is validated
    for id in ["0000000000000000", "zzzzzzzzzzzzzzzz", "ABCDEF0123456789"] {
        c.fin(id);
        c.expect_error(&format!("E_FIN_FAILED FIN {id} failed ID not in flight"));
    }
    s.connect().publish("t", b"x");
    let m = c.expect_message();
    c.fin(&m.id_str());
    // a second FIN of the same id
    c.fin(&m.id_str());
    c.expect_error(&format!(
        "E_FIN_FAILED FIN {} failed ID not in flight",
        m.id_str()
    ));
    // still usable
    s.connect().publish("t", b"y");
    let m2 = c.expect_message();
    assert_eq!(m2.body, b"y");
    c.fin(&m2.id_str());
    c.publish("other", b"z");
    let cl = client(&s, "t", "c");
    assert_eq!(cl["finish_count"], 2);
    assert_eq!(cl["message_count"], 2);
}

#[test]
fn fin_of_another_consumers_message() {
    let s = Server::start(&[]);
    let mut a = s.connect();
    a.sub("own", "c");
    let mut b = s.connect();
    b.sub("own", "c");
    s.connect().publish("own", b"x");
    a.rdy(1);
    let m = a.expect_message();
    let id = m.id_str();
    b.fin(&id);
    b.expect_error(&format!(
        "E_FIN_FAILED FIN {id} failed client does not own message"
    ));
    // non-fatal for B, and the message is still in flight for A
    b.publish("other", b"y");
    assert_eq!(s.channel_stat("own", "c", "in_flight_count"), Some(1));
    a.fin(&id);
    assert!(wait_until(Duration::from_secs(5), || {
        s.channel_stat("own", "c", "in_flight_count") == Some(0)
    }));
}

#[test]
fn cls_flow() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    c.sub("cls", "c");
    c.rdy(1);
    let mut p = s.connect();
    p.publish("cls", b"m1");
    let m1 = c.expect_message();
    c.cmd("CLS");
    assert_eq!(
        c.read_non_heartbeat(),
        Frame::Response(b"CLOSE_WAIT".to_vec())
    );
    assert_eq!(client(&s, "cls", "c")["state"], 4);
    // FIN is still accepted after CLS
    c.fin(&m1.id_str());
    assert!(wait_until(Duration::from_secs(5), || {
        s.channel_stat("cls", "c", "in_flight_count") == Some(0)
    }));
    assert_eq!(client(&s, "cls", "c")["finish_count"], 1);
    // RDY is silently ignored: no error, no delivery
    c.rdy(5);
    p.publish("cls", b"m2");
    assert!(c.expect_silence(QUIET));
    assert_eq!(s.channel_stat("cls", "c", "depth"), Some(1));
    // the server does not close the connection; it can still publish
    c.publish("cls", b"m3");
    // SUB is not allowed any more
    let mut c2 = s.connect();
    c2.sub("cls", "c2");
    c2.cmd("CLS");
    assert_eq!(
        c2.read_non_heartbeat(),
        Frame::Response(b"CLOSE_WAIT".to_vec())
    );
    c2.cmd("SUB cls c3");
    c2.expect_fatal("E_INVALID cannot SUB in current state");
    // a second CLS is an error
    c.cmd("CLS");
    c.expect_fatal("E_INVALID cannot CLS in current state");
}

#[test]
fn client_counters_in_stats() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    c.sub("cnt", "c");
    c.rdy(3);
    let mut p = s.connect();
    for i in 0..3 {
        p.publish("cnt", format!("m{i}").as_bytes());
    }
    let msgs = c.expect_messages(3);
    let cl = client(&s, "cnt", "c");
    assert_eq!(cl["message_count"], 3);
    assert_eq!(cl["in_flight_count"], 3);
    assert_eq!(cl["ready_count"], 3);
    assert_eq!(cl["finish_count"], 0);
    c.fin(&msgs[0].id_str());
    c.fin(&msgs[1].id_str());
    assert!(wait_until(Duration::from_secs(5), || {
        client(&s, "cnt", "c")["finish_count"] == 2
    }));
    let cl = client(&s, "cnt", "c");
    assert_eq!(cl["in_flight_count"], 1);
    let ch = s.channel_stats("cnt", "c").expect("channel");
    assert_eq!(ch["message_count"], 3);
    assert_eq!(ch["in_flight_count"], 1);
    assert_eq!(ch["depth"], 0);
    assert_eq!(ch["client_count"], 1);
}

/// Bodies large enough to be written from where they lie (16 KiB and more) and small ones,
/// interleaved: every frame arrives whole and in order, each body byte for byte.
#[test]
fn large_and_small_bodies_interleaved() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    c.sub("big", "ch");
    let bodies: Vec<Vec<u8>> = [100, 16 * 1024, 20, 64 * 1024, 70 * 1024, 3, 16 * 1024 - 1]
        .iter()
        .enumerate()
        .map(|(i, &n)| (0..n).map(|j| (i * 31 + j % 251) as u8).collect())
        .collect();
    let refs: Vec<&[u8]> = bodies.iter().map(Vec::as_slice).collect();
    let mut p = s.connect();
    p.cmd_body("MPUB big", &mpub_body(&refs));
    p.expect_ok();
    c.rdy(100);
    let got = c.expect_messages(bodies.len());
    for (m, b) in got.iter().zip(&bodies) {
        assert_eq!(m.body.len(), b.len());
        assert!(m.body == *b, "body of {} bytes differs", b.len());
        c.fin(&m.id_str());
    }
    assert!(c.expect_silence(Duration::from_millis(200)));
}
