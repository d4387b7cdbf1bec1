//! Heartbeats and the client read deadline (spec §5, §20): with IDENTIFY
//! `heartbeat_interval:1000` the server sends `_heartbeat_` response frames about every second,
//! subscribed or not; a client that sends nothing for 2 × the interval is disconnected without
//! an error frame; any command (NOP, PUB) resets that deadline; `heartbeat_interval:-1` turns
//! heartbeats and the deadline off.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::*;

use std::io::Read;
use std::time::{Duration, Instant};

const HB: &[u8] = b"_heartbeat_";

fn identify_hb(c: &mut Conn, ms: i64) {
    assert_eq!(
        c.identify(&format!(r#"{{"heartbeat_interval":{ms}}}"#)),
        Frame::Response(b"OK".to_vec())
    );
}

/// Wait for the next heartbeat (within 2 s); panics on anything else.
fn next_heartbeat(c: &mut Conn) {
    match c.read_frame_within(Duration::from_secs(2)) {
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
    for _ in 0..3 {
        next_heartbeat(&mut c);
        times.push(t0.elapsed());
        c.cmd("NOP");
    }
    assert!(
        times[0] >= Duration::from_millis(600) && times[0] <= Duration::from_millis(1600),
        "first heartbeat at {:?}",
        times[0]
    );
    for w in times.windows(2) {
        let gap = w[1] - w[0];
        assert!(
            gap >= Duration::from_millis(600) && gap <= Duration::from_millis(1600),
            "heartbeat gap {gap:?} ({times:?})"
        );
    }
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
    loop {
        assert!(
            t0.elapsed() < Duration::from_secs(4),
            "still open after 4 s of client silence"
        );
        match c.read_frame_within(Duration::from_secs(4)) {
            Some(Frame::Response(b)) if b == HB => continue,
            None => break,
            Some(other) => panic!("unexpected frame {other:?}"),
        }
    }
    let at = t0.elapsed();
    assert!(
        at >= Duration::from_millis(1500) && at <= Duration::from_secs(4),
        "closed at {at:?}, expected ~2 s"
    );
    assert!(c.expect_closed(), "timed out reading instead of EOF");
}

#[test]
fn silent_subscriber_is_disconnected() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    identify_hb(&mut c, 1000);
    c.sub("hb", "c");
    let t0 = Instant::now();
    assert!(c.expect_closed());
    let at = t0.elapsed();
    assert!(
        at >= Duration::from_millis(1500) && at <= Duration::from_secs(4),
        "closed at {at:?}, expected ~2 s"
    );
    assert!(wait_until(Duration::from_secs(3), || s.channel_stat(
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
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(3) {
        c.cmd("NOP");
        // drain heartbeats; anything else (or EOF) is a failure
        match c.read_frame_within(Duration::from_millis(500)) {
            None => {}
            Some(Frame::Response(b)) if b == HB => {}
            Some(other) => panic!("unexpected frame {other:?}"),
        }
    }
    c.publish("hb", b"still alive");
}

#[test]
fn any_command_resets_the_deadline() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    identify_hb(&mut c, 1000);
    let t0 = Instant::now();
    let mut n = 0;
    while t0.elapsed() < Duration::from_secs(3) {
        c.cmd_body("PUB hb", format!("m{n}").as_bytes());
        n += 1;
        c.expect_ok();
        std::thread::sleep(Duration::from_millis(700));
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
