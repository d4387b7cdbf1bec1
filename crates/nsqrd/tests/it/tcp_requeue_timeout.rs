//! Redelivery: REQ immediate and delayed, the REQ delay clamp (`--max-req-timeout`), REQ and TOUCH
//! errors, TOUCH extending the in-flight deadline and its cap (`--max-msg-timeout`), in-flight
//! timeout and redelivery (attempts incremented, same id / timestamp / body), FIN/REQ/TOUCH of a
//! timed-out message, DPUB deferred delivery, and the requeue / timeout / deferred counters in
//! /stats.
//!
//! Timing: nsqd only processes timeouts and deferred messages of a channel after its queue scanner
//! has listed the channel, up to ~5 s after the channel is created. Tests therefore either allow
//! `SCAN_SLACK` extra, or first "warm up" the channel (a 1 ms REQ that must come back) after which
//! nsqd is accurate to ~100 ms. nsqrd handles both on time.
use crate::common::*;

use std::time::{Duration, Instant};

/// Extra time nsqd may take before it first scans a new channel.
const SCAN_SLACK: Duration = Duration::from_secs(6);
/// How long to wait for something the server must do (generous: a loaded machine is slow;
/// the tests bound times from below only).
const WAIT: Duration = Duration::from_secs(20);

/// Make sure `c` (subscribed to topic/channel, RDY >= 1, nothing in flight) is on a channel whose
/// deferred/timeout processing is active: a 1 ms REQ must come back.
fn warm_up(s: &Server, c: &mut Conn, topic: &str) {
    s.connect().publish(topic, b"warmup");
    let m = c.expect_message();
    assert_eq!(m.body, b"warmup");
    c.req(&m.id_str(), 1);
    let again = c
        .message_within(SCAN_SLACK + WAIT)
        .expect("warm-up message redelivered");
    assert_eq!(again.id, m.id);
    c.fin(&m.id_str());
}

/// A consumer with the given IDENTIFY body, subscribed, with RDY `rdy`.
fn consumer(s: &Server, identify: &str, topic: &str, channel: &str, rdy: u64) -> Conn {
    let mut c = s.connect();
    assert_eq!(c.identify(identify), Frame::Response(b"OK".to_vec()));
    c.sub(topic, channel);
    c.rdy(rdy);
    s.wait_ready(topic, channel, rdy as i64);
    c
}

#[test]
fn req_zero_redelivers_immediately() {
    let s = Server::start(&[]);
    let mut c = consumer(&s, "{}", "rq", "c", 1);
    s.connect().publish("rq", b"again");
    let m1 = c.expect_message();
    assert_eq!(m1.attempts, 1);
    c.req(&m1.id_str(), 0);
    let m2 = c.message_within(WAIT).expect("redelivered");
    assert_eq!(m2.id, m1.id);
    assert_eq!(m2.attempts, 2);
    assert_eq!(m2.timestamp, m1.timestamp);
    assert_eq!(m2.body, m1.body);
    // an empty delay param also means 0
    c.cmd(&format!("REQ {} ", m2.id_str()));
    let m3 = c.message_within(WAIT).expect("redelivered");
    assert_eq!(m3.attempts, 3);
    c.fin(&m3.id_str());
    assert!(wait_until(Duration::from_secs(5), || {
        s.channel_stat("rq", "c", "in_flight_count") == Some(0)
    }));
    let ch = s.channel_stats("rq", "c").expect("channel");
    assert_eq!(ch["requeue_count"], 2);
    assert_eq!(ch["timeout_count"], 0);
    assert_eq!(ch["message_count"], 1);
    let cl = &ch["clients"][0];
    assert_eq!(cl["requeue_count"], 2);
    assert_eq!(cl["finish_count"], 1);
    assert_eq!(cl["message_count"], 3);
}

#[test]
fn req_can_go_to_another_consumer() {
    let s = Server::start(&[]);
    let mut a = consumer(&s, "{}", "rq2", "c", 1);
    let mut b = s.connect();
    b.sub("rq2", "c");
    s.connect().publish("rq2", b"x");
    let m = a.expect_message();
    a.rdy(0);
    b.rdy(1);
    s.wait_conn_ready("rq2", "c", &a, 0);
    s.wait_conn_ready("rq2", "c", &b, 1);
    a.req(&m.id_str(), 0);
    let mb = b.message_within(WAIT).expect("requeued to B");
    assert_eq!(mb.id, m.id);
    assert_eq!(mb.attempts, 2);
    assert!(a.expect_silence(Duration::from_millis(200)));
}

#[test]
fn req_with_delay_redelivers_later() {
    let s = Server::start(&[]);
    let mut c = consumer(&s, "{}", "rqd", "c", 1);
    s.connect().publish("rqd", b"later");
    let m1 = c.expect_message();
    let t0 = Instant::now();
    c.req(&m1.id_str(), 1500);
    assert!(
        wait_until(Duration::from_secs(1), || {
            s.channel_stat("rqd", "c", "deferred_count") == Some(1)
        }),
        "deferred_count never 1"
    );
    let ch = s.channel_stats("rqd", "c").expect("channel");
    assert_eq!(ch["in_flight_count"], 0);
    assert_eq!(ch["depth"], 0);
    assert_eq!(ch["requeue_count"], 1);
    // sanity lower bound only
    assert!(c.expect_silence(Duration::from_millis(300)));
    let m2 = c
        .message_within(SCAN_SLACK + WAIT)
        .expect("redelivered after the delay");
    assert!(t0.elapsed() >= Duration::from_millis(1000), "too early");
    assert_eq!(m2.id, m1.id);
    assert_eq!(m2.attempts, 2);
    assert_eq!(m2.timestamp, m1.timestamp);
    assert_eq!(s.channel_stat("rqd", "c", "deferred_count"), Some(0));
    c.fin(&m2.id_str());
}

#[test]
fn req_delay_is_clamped_to_max_req_timeout() {
    let s = Server::start(&["--max-req-timeout=1s"]);
    let mut c = consumer(&s, "{}", "clamp", "c", 1);
    warm_up(&s, &mut c, "clamp");
    s.connect().publish("clamp", b"x");
    let m1 = c.expect_message();
    let t0 = Instant::now();
    // an hour: clamped to 1 s, not rejected
    c.req(&m1.id_str(), 3_600_000);
    let m2 = c
        .message_within(WAIT)
        .expect("redelivered after the clamped delay");
    assert_eq!(m2.id, m1.id);
    assert_eq!(m2.attempts, 2);
    assert!(t0.elapsed() >= Duration::from_millis(800), "too early");
    c.fin(&m2.id_str());
}

#[test]
fn req_errors() {
    let s = Server::start(&[]);
    for (line, err) in [
        ("REQ", "E_INVALID REQ insufficient number of params"),
        (
            "REQ 0123456789abcdef",
            "E_INVALID REQ insufficient number of params",
        ),
        ("REQ abc 0", "E_INVALID invalid message ID"),
        ("REQ abc -1", "E_INVALID invalid message ID"),
        (
            "REQ 0123456789abcdef -1",
            "E_INVALID REQ could not parse timeout -1",
        ),
        (
            "REQ 0123456789abcdef 1s",
            "E_INVALID REQ could not parse timeout 1s",
        ),
    ] {
        let mut c = s.connect();
        c.sub("t", "c");
        c.cmd(line);
        c.expect_fatal(err);
    }
    // not in flight: not fatal
    let mut c = s.connect();
    c.sub("t", "c");
    c.req("0123456789abcdef", 0);
    c.expect_error("E_REQ_FAILED REQ 0123456789abcdef failed ID not in flight");
    c.req("0123456789abcdef", 1000);
    c.expect_error("E_REQ_FAILED REQ 0123456789abcdef failed ID not in flight");
    c.publish("t2", b"still open");
}

#[test]
fn req_and_touch_of_another_consumers_message() {
    let s = Server::start(&[]);
    let mut a = consumer(&s, "{}", "own", "c", 1);
    let mut b = s.connect();
    b.sub("own", "c");
    s.connect().publish("own", b"x");
    let m = a.expect_message();
    let id = m.id_str();
    b.req(&id, 0);
    b.expect_error(&format!(
        "E_REQ_FAILED REQ {id} failed client does not own message"
    ));
    b.touch(&id);
    b.expect_error(&format!(
        "E_TOUCH_FAILED TOUCH {id} failed client does not own message"
    ));
    b.publish("other", b"still open");
    assert_eq!(s.channel_stat("own", "c", "in_flight_count"), Some(1));
    assert_eq!(s.channel_stat("own", "c", "requeue_count"), Some(0));
    a.fin(&id);
}

#[test]
fn touch_errors() {
    let s = Server::start(&[]);
    for (line, err) in [
        ("TOUCH", "E_INVALID TOUCH insufficient number of params"),
        ("TOUCH abc", "E_INVALID invalid message ID"),
        ("TOUCH 0123456789abcdef0", "E_INVALID invalid message ID"),
    ] {
        let mut c = s.connect();
        c.sub("t", "c");
        c.cmd(line);
        c.expect_fatal(err);
    }
    let mut c = s.connect();
    c.sub("t", "c");
    c.touch("0123456789abcdef");
    c.expect_error("E_TOUCH_FAILED TOUCH 0123456789abcdef failed ID not in flight");
    c.publish("t2", b"still open");
}

#[test]
fn touch_resets_the_deadline() {
    let s = Server::start(&[]);
    let mut c = consumer(&s, r#"{"msg_timeout":1000}"#, "touch", "c", 2);
    warm_up(&s, &mut c, "touch");
    let mut p = s.connect();
    p.publish("touch", b"touched");
    p.publish("touch", b"control");
    let first = c.expect_messages(2);
    let touched = first
        .iter()
        .find(|m| m.body == b"touched")
        .expect("touched")
        .clone();
    let control = first
        .iter()
        .find(|m| m.body == b"control")
        .expect("control")
        .clone();
    let t0 = Instant::now();
    let mut control_back = false;
    // touch every 300 ms for 2.4 s (more than twice msg_timeout); the untouched control
    // message must time out meanwhile, the touched one must not
    while t0.elapsed() < Duration::from_millis(2400) || !control_back {
        assert!(t0.elapsed() < WAIT, "control message never timed out");
        c.touch(&touched.id_str());
        let until = Instant::now() + Duration::from_millis(300);
        while let Some(f) = c.frame_within(until.saturating_duration_since(Instant::now())) {
            match f {
                Frame::Message(m) if m.id == control.id => {
                    assert_eq!(m.attempts, 2);
                    control_back = true;
                    c.fin(&m.id_str());
                }
                other => panic!("unexpected frame while touching: {other:?}"),
            }
        }
    }
    // the touched message is still in flight under its first delivery
    c.fin(&touched.id_str());
    assert!(c.expect_silence(Duration::from_millis(300)), "FIN failed");
    let ch = s.channel_stats("touch", "c").expect("channel");
    assert_eq!(ch["timeout_count"], 1, "only the control timed out");
    assert_eq!(ch["in_flight_count"], 0);
}

#[test]
fn touch_is_capped_by_max_msg_timeout() {
    let s = Server::start(&["--max-msg-timeout=2s"]);
    let mut c = consumer(&s, r#"{"msg_timeout":1000}"#, "cap", "c", 1);
    warm_up(&s, &mut c, "cap");
    s.connect().publish("cap", b"x");
    let m = c.expect_message();
    let t0 = Instant::now();
    let again = loop {
        assert!(
            t0.elapsed() < WAIT,
            "touching kept the message in flight beyond max-msg-timeout"
        );
        c.touch(&m.id_str());
        match c.frame_within(Duration::from_millis(250)) {
            None => continue,
            // touching a message that has just timed out
            Some(Frame::Error(e)) => assert_eq!(
                e,
                format!(
                    "E_TOUCH_FAILED TOUCH {} failed ID not in flight",
                    m.id_str()
                )
            ),
            Some(Frame::Message(again)) => break again,
            Some(other) => panic!("unexpected {other:?}"),
        }
    };
    // touches did extend it past msg_timeout (1 s), up to about max-msg-timeout (2 s)
    assert!(t0.elapsed() >= Duration::from_millis(1500), "not extended");
    assert_eq!(again.id, m.id);
    assert_eq!(again.attempts, 2);
    c.fin(&again.id_str());
}

#[test]
fn timeout_redelivers_with_attempts_incremented() {
    let s = Server::start(&[]);
    let mut c = consumer(&s, r#"{"msg_timeout":1000}"#, "to", "c", 1);
    s.connect().publish("to", b"slow");
    let m1 = c.expect_message();
    assert_eq!(m1.attempts, 1);
    let m2 = c
        .message_within(SCAN_SLACK + WAIT)
        .expect("redelivered after timeout");
    assert_eq!(m2.id, m1.id);
    assert_eq!(m2.attempts, 2);
    assert_eq!(m2.timestamp, m1.timestamp);
    assert_eq!(m2.body, m1.body);
    c.fin(&m2.id_str());
    assert!(c.expect_silence(Duration::from_millis(300)), "FIN failed");
    let ch = s.channel_stats("to", "c").expect("channel");
    assert_eq!(ch["timeout_count"], 1);
    assert_eq!(ch["requeue_count"], 0);
    assert_eq!(ch["in_flight_count"], 0);
    assert_eq!(ch["clients"][0]["finish_count"], 1);
    assert_eq!(ch["clients"][0]["message_count"], 2);
}

#[test]
fn timed_out_message_is_no_longer_in_flight() {
    let s = Server::start(&[]);
    let mut c = consumer(&s, r#"{"msg_timeout":1000}"#, "gone", "c", 1);
    s.connect().publish("gone", b"x");
    let m = c.expect_message();
    c.rdy(0);
    s.wait_ready("gone", "c", 0);
    assert!(
        wait_until(SCAN_SLACK + WAIT, || {
            s.channel_stat("gone", "c", "timeout_count") == Some(1)
        }),
        "message never timed out"
    );
    let ch = s.channel_stats("gone", "c").expect("channel");
    assert_eq!(ch["in_flight_count"], 0);
    assert_eq!(ch["depth"], 1);
    assert_eq!(ch["clients"][0]["in_flight_count"], 0);
    let id = m.id_str();
    c.fin(&id);
    c.expect_error(&format!("E_FIN_FAILED FIN {id} failed ID not in flight"));
    c.touch(&id);
    c.expect_error(&format!(
        "E_TOUCH_FAILED TOUCH {id} failed ID not in flight"
    ));
    c.req(&id, 0);
    c.expect_error(&format!("E_REQ_FAILED REQ {id} failed ID not in flight"));
    // it is back in the queue and comes again
    c.rdy(1);
    let again = c.expect_message();
    assert_eq!(again.id, m.id);
    assert_eq!(again.attempts, 2);
    c.fin(&id);
    assert!(c.expect_silence(Duration::from_millis(300)), "FIN failed");
}

#[test]
fn req_and_touch_accepted_after_cls() {
    let s = Server::start(&[]);
    let mut c = consumer(&s, "{}", "clsreq", "c", 2);
    let mut p = s.connect();
    p.publish("clsreq", b"a");
    p.publish("clsreq", b"b");
    let msgs = c.expect_messages(2);
    c.cmd("CLS");
    assert_eq!(
        c.read_non_heartbeat(),
        Frame::Response(b"CLOSE_WAIT".to_vec())
    );
    c.touch(&msgs[0].id_str());
    c.req(&msgs[0].id_str(), 0);
    c.req(&msgs[1].id_str(), 60_000);
    assert!(c.expect_silence(Duration::from_millis(400)));
    let ch = s.channel_stats("clsreq", "c").expect("channel");
    assert_eq!(ch["requeue_count"], 2);
    assert_eq!(ch["in_flight_count"], 0);
    assert_eq!(ch["depth"], 1);
    assert_eq!(ch["deferred_count"], 1);
}

#[test]
fn dpub_deferred_delivery() {
    let s = Server::start(&[]);
    let mut c = consumer(&s, "{}", "dp", "c", 1);
    let mut other = s.connect();
    other.sub("dp", "c2");
    let mut p = s.connect();
    let t0 = Instant::now();
    p.cmd_body("DPUB dp 2000", b"deferred");
    p.expect_ok();
    // each channel holds it as deferred, not in depth
    assert!(
        wait_until(Duration::from_secs(1), || {
            s.channel_stat("dp", "c", "deferred_count") == Some(1)
                && s.channel_stat("dp", "c2", "deferred_count") == Some(1)
        }),
        "deferred_count never 1"
    );
    let ch = s.channel_stats("dp", "c").expect("channel");
    assert_eq!(ch["depth"], 0);
    assert_eq!(ch["in_flight_count"], 0);
    assert_eq!(ch["message_count"], 1);
    assert_eq!(s.topic_stat("dp", "depth"), Some(0));
    // a plain message published later overtakes it
    p.publish("dp", b"plain");
    let plain = c.expect_message();
    assert_eq!(plain.body, b"plain");
    c.fin(&plain.id_str());
    let m = c.message_within(SCAN_SLACK + WAIT);
    let m = m.expect("deferred message delivered");
    c.fin(&m.id_str());
    assert!(t0.elapsed() >= Duration::from_millis(1500), "too early");
    assert_eq!(m.body, b"deferred");
    assert_eq!(m.attempts, 1);
    let ch = s.channel_stats("dp", "c").expect("channel");
    assert_eq!(ch["deferred_count"], 0);
    assert_eq!(ch["requeue_count"], 0);
}
