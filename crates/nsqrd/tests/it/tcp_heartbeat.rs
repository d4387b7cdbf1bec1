//! Heartbeats and the client read deadline: with IDENTIFY `heartbeat_interval:1000` the server
//! sends `_heartbeat_` response frames about every second, subscribed or not; a client that sends
//! nothing for 2 × the interval is disconnected without an error frame; any command (NOP, PUB)
//! resets that deadline; `heartbeat_interval:-1` turns heartbeats and the deadline off.
//!
//! No test bounds an elapsed time from above (a loaded machine is slow): that heartbeats come often
//! enough is shown by the server itself, which keeps open a client that only answers heartbeats,
//! and so must send them more often than its 2 s read deadline.
use crate::common::*;

use std::io::Read;
use std::time::{Duration, Instant};

const HB: &[u8] = b"_heartbeat_";

fn identify_hb(c: &mut Conn, ms: i64) {
    assert_eq!(
        c.identify(&format!(r#"{{"heartbeat_interval":{ms}}}"#)),
        Frame::Response(b"OK".to_vec())
    );
}

/// How long to wait for something the server must do.
const WAIT: Duration = Duration::from_secs(20);

/// Wait for the next heartbeat; panics on anything else.
fn next_heartbeat(c: &mut Conn) {
    match c.read_frame_within(WAIT) {
        Some(Frame::Response(b)) if b == HB => {}
        other => panic!("expected heartbeat, got {other:?}"),
    }
}

#[test]
fn heartbeat_frame_layout() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    identify_hb(&mut c, 1000);
    c.set_timeout(Duration::from_secs(2));
    let mut raw = [0u8; 8 + 11];
    c.s.read_exact(&mut raw).expect("heartbeat frame");
    assert_eq!(&raw[..8], &[0, 0, 0, 15, 0, 0, 0, 0]);
    assert_eq!(&raw[8..], HB);
}

#[test]
fn heartbeats_arrive_about_every_interval() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    identify_hb(&mut c, 1000);
    let t0 = Instant::now();
    let mut times = Vec::new();
    // The client speaks only to answer a heartbeat: the server, whose read deadline is 2 s,
    // keeps it only if heartbeats come within 2 s of each other. Four of them outlast it.
    for _ in 0..4 {
        next_heartbeat(&mut c);
        times.push(t0.elapsed());
        c.cmd("NOP");
    }
    println!("heartbeats at {times:?}");
    // Not more often than the interval (minus timer slack).
    assert!(times[0] >= Duration::from_millis(600), "{times:?}");
    for w in times.windows(2) {
        assert!(w[1] - w[0] >= Duration::from_millis(600), "{times:?}");
    }
    c.publish("hb", b"still open");
}

#[test]
fn heartbeats_while_subscribed() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    identify_hb(&mut c, 1000);
    c.sub("hb", "c");
    c.rdy(1);
    next_heartbeat(&mut c);
    c.cmd("NOP");
    // messages and heartbeats interleave
    s.connect().publish("hb", b"x");
    let m = c.expect_message();
    c.fin(&m.id_str());
    next_heartbeat(&mut c);
    c.cmd("NOP");
    next_heartbeat(&mut c);
    c.publish("hb2", b"alive");
}

#[test]
fn silent_client_is_disconnected() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    identify_hb(&mut c, 1000);
    let t0 = Instant::now();
    // only heartbeats until the server closes: no error frame
    let mut heartbeats = 0;
    loop {
        assert!(
            heartbeats < 20,
            "still open after {heartbeats} heartbeats of silence"
        );
        match c.read_frame_within(WAIT) {
            Some(Frame::Response(b)) if b == HB => heartbeats += 1,
            None => break,
            Some(other) => panic!("unexpected frame {other:?}"),
        }
    }
    let at = t0.elapsed();
    assert!(
        at >= Duration::from_millis(1500),
        "closed at {at:?}, expected ~2 s"
    );
    c.set_timeout(WAIT);
    assert!(c.expect_closed(), "timed out reading instead of EOF");
}

#[test]
fn silent_subscriber_is_disconnected() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    identify_hb(&mut c, 1000);
    c.sub("hb", "c");
    let t0 = Instant::now();
    c.set_timeout(WAIT);
    assert!(c.expect_closed());
    let at = t0.elapsed();
    assert!(
        at >= Duration::from_millis(1500),
        "closed at {at:?}, expected ~2 s"
    );
    assert!(wait_until(WAIT, || s.channel_stat(
        "hb",
        "c",
        "client_count"
    ) == Some(0)));
}

#[test]
fn nop_keeps_the_connection_alive() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    identify_hb(&mut c, 1000);
    // A NOP per heartbeat; past 2 × the interval (the deadline) since the last other command.
    let t0 = Instant::now();
    let mut heartbeats = 0;
    while heartbeats < 4 || t0.elapsed() < Duration::from_secs(3) {
        next_heartbeat(&mut c);
        heartbeats += 1;
        c.cmd("NOP");
    }
    c.publish("hb", b"still alive");
}

#[test]
fn any_command_resets_the_deadline() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    identify_hb(&mut c, 1000);
    // A PUB per heartbeat (its OK and the heartbeats come in any order).
    let t0 = Instant::now();
    let mut n = 0;
    while n < 4 || t0.elapsed() < Duration::from_secs(3) {
        next_heartbeat(&mut c);
        c.cmd_body("PUB hb", format!("m{n}").as_bytes());
        n += 1;
        c.expect_ok();
    }
    c.publish("hb", b"still alive");
    assert_eq!(s.topic_stat("hb", "message_count"), Some(n + 1));
}

#[test]
fn heartbeats_disabled() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    identify_hb(&mut c, -1);
    // no heartbeats and no 2 s read deadline
    assert!(c.expect_silence(Duration::from_millis(2500)));
    c.publish("hb", b"still alive");
}
