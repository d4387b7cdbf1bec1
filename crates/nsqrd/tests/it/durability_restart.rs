//! What a graceful restart (SIGTERM, then start on the same `--data-path`) keeps: topics, channels
//! and paused flags (`nsqd.dat`), the backlog in memory and on disk, in-flight messages
//! (redelivered, attempts kept) and deferred messages with their remaining delay. Each scenario
//! runs in the default (nsqd) mode and in `--durability=strict`; all but the deferred one also pass
//! against the reference nsqd (`NSQD_BIN`).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::common::*;

/// The flag of each mode to run (against a reference nsqd: its only mode, no flag).
fn modes() -> Vec<&'static str> {
    if is_reference() {
        vec!["--log-level=info"]
    } else {
        vec!["--durability=default", "--durability=strict"]
    }
}

fn post_ok(s: &Server, path: &str) {
    let r = s.post(path, b"");
    assert_eq!(r.status, 200, "{path}: {}", r.text());
}

fn mpub(s: &Server, topic: &str, bodies: &[String]) {
    let r = s.post(
        &format!("/mpub?topic={topic}"),
        bodies.join("\n").as_bytes(),
    );
    assert_eq!(r.status, 200, "mpub {topic}: {}", r.text());
}

fn bodies(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i:03}")).collect()
}

fn consumer(s: &Server, topic: &str, channel: &str, rdy: u64) -> Conn {
    let mut c = s.connect();
    c.sub(topic, channel);
    c.rdy(rdy);
    c
}

/// Receive `n` messages, FIN each; their bodies.
fn take_fin(c: &mut Conn, n: usize) -> Vec<String> {
    (0..n)
        .map(|_| {
            let m = c.expect_message();
            c.fin(&m.id_str());
            String::from_utf8(m.body).unwrap()
        })
        .collect()
}

fn unix_nanos() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

fn restart(s: Server, flags: &[&str]) -> Server {
    let (code, dir) = s.terminate_keep();
    assert_eq!(code, Some(0), "clean exit");
    Server::start_in(dir, flags)
}

#[test]
fn restart_keeps_topics_channels_paused_flags_and_backlog() {
    for mode in modes() {
        let flags = ["--mem-queue-size=5", mode];
        let s = Server::start(&flags);
        post_ok(&s, "/topic/create?topic=rt");
        post_ok(&s, "/channel/create?topic=rt&channel=a");
        post_ok(&s, "/channel/create?topic=rt&channel=b");
        post_ok(&s, "/channel/pause?topic=rt&channel=b");
        post_ok(&s, "/topic/create?topic=rp");
        post_ok(&s, "/topic/pause?topic=rp");
        mpub(&s, "rt", &bodies("rt", 20));
        mpub(&s, "rt2", &bodies("rt2-", 12));
        mpub(&s, "rp", &bodies("rp", 7));
        assert!(wait_until(Duration::from_secs(5), || {
            s.channel_stat("rt", "a", "depth") == Some(20)
                && s.channel_stat("rt", "a", "backend_depth") == Some(15)
        }));

        let s = restart(s, &flags);
        let a = s.channel_stats("rt", "a").expect("rt/a");
        let b = s.channel_stats("rt", "b").expect("rt/b");
        assert_eq!(
            (a["depth"].as_i64(), a["paused"].as_bool()),
            (Some(20), Some(false)),
            "{mode}"
        );
        assert_eq!(
            (b["depth"].as_i64(), b["paused"].as_bool()),
            (Some(20), Some(true)),
            "{mode}"
        );
        let rp = s.topic_stats("rp").expect("rp");
        assert_eq!(
            (rp["depth"].as_i64(), rp["paused"].as_bool()),
            (Some(7), Some(true)),
            "{mode}"
        );
        assert_eq!(s.topic_stat("rt2", "depth"), Some(12), "{mode}");

        let mut c = consumer(&s, "rt", "a", 100);
        let got: BTreeSet<String> = take_fin(&mut c, 20).into_iter().collect();
        assert_eq!(got, bodies("rt", 20).into_iter().collect(), "{mode}");
        // The topic's own backlog goes to its first channel.
        let mut c2 = consumer(&s, "rt2", "x", 100);
        let got: BTreeSet<String> = take_fin(&mut c2, 12).into_iter().collect();
        assert_eq!(got, bodies("rt2-", 12).into_iter().collect(), "{mode}");
        post_ok(&s, "/topic/unpause?topic=rp");
        let mut c3 = consumer(&s, "rp", "x", 100);
        assert_eq!(take_fin(&mut c3, 7).len(), 7, "{mode}");
        assert!(
            c.expect_silence(Duration::from_millis(200)),
            "{mode}: no duplicates"
        );
    }
}

#[test]
fn restart_redelivers_in_flight_messages_with_attempts_kept() {
    for mode in modes() {
        let flags = [mode];
        let s = Server::start(&flags);
        let mut c = consumer(&s, "inf", "c", 3);
        mpub(&s, "inf", &bodies("i", 5));
        let first: Vec<Msg> = c.expect_messages(3);
        assert!(first.iter().all(|m| m.attempts == 1));
        // Finish one, leave two in flight (RDY 0 first, or the freed slot takes another).
        c.rdy(0);
        s.wait_conn_ready("inf", "c", &c, 0);
        c.fin(&first[0].id_str());
        assert!(wait_until(Duration::from_secs(5), || {
            s.channel_stat("inf", "c", "in_flight_count") == Some(2)
        }));
        let s = restart(s, &flags);
        assert_eq!(s.channel_stat("inf", "c", "depth"), Some(4), "{mode}");
        let mut c = consumer(&s, "inf", "c", 10);
        let mut got: Vec<(String, u16)> = (0..4)
            .map(|_| {
                let m = c.expect_message();
                c.fin(&m.id_str());
                (String::from_utf8(m.body).unwrap(), m.attempts)
            })
            .collect();
        got.sort();
        let was_in_flight: Vec<String> = first[1..]
            .iter()
            .map(|m| String::from_utf8(m.body.clone()).unwrap())
            .collect();
        for (body, attempts) in &got {
            let want = if was_in_flight.contains(body) { 2 } else { 1 };
            assert_eq!(*attempts, want, "{mode}: {body}");
        }
        assert!(!got
            .iter()
            .any(|(b, _)| b.as_bytes() == first[0].body.as_slice()));
        assert!(
            c.expect_silence(Duration::from_millis(200)),
            "{mode}: nothing more"
        );
    }
}

#[test]
fn restart_keeps_the_remaining_delay_of_deferred_messages() {
    if is_reference() {
        return; // nsqd delivers them at once after a restart: beyond nsqd
    }
    for mode in modes() {
        let flags = [mode];
        let s = Server::start(&flags);
        post_ok(&s, "/topic/create?topic=dt");
        post_ok(&s, "/channel/create?topic=dt&channel=c");
        let t0 = Instant::now();
        for (path, body) in [
            ("/pub?topic=dt&defer=3000", "channel-later"),
            ("/pub?topic=dt&defer=1", "channel-soon"),
            ("/pub?topic=dt2&defer=3000", "topic-later"),
        ] {
            let r = s.post(path, body.as_bytes());
            assert_eq!(r.status, 200, "{path}: {}", r.text());
        }
        assert!(wait_until(Duration::from_secs(5), || {
            s.channel_stat("dt", "c", "deferred_count") == Some(1)
        }));
        let s = restart(s, &flags);
        let mut c = consumer(&s, "dt", "c", 10);
        let mut c2 = consumer(&s, "dt2", "c", 10);
        // Due already: at once.
        let m = c.message_within(Duration::from_secs(2)).expect("soon");
        assert_eq!(m.body, b"channel-soon", "{mode}");
        c.fin(&m.id_str());
        // Not before their time (3 s after publishing, as the message timestamp says), in the
        // channel's queue and in the topic's backlog alike.
        for (conn, body) in [(&mut c, "channel-later"), (&mut c2, "topic-later")] {
            let m = conn
                .message_within(Duration::from_secs(8))
                .unwrap_or_else(|| panic!("{mode}: {body} never came"));
            let waited = unix_nanos() - m.timestamp;
            assert_eq!(m.body, body.as_bytes(), "{mode}");
            assert!(waited >= 2_950_000_000, "{mode}: {body} after {waited} ns");
            assert!(
                t0.elapsed() >= Duration::from_millis(2950),
                "{mode}: {body} early"
            );
        }
    }
}

#[test]
fn restored_deferred_messages_are_counted_as_deferred_from_the_start() {
    if is_reference() {
        return; // nsqd delivers them at once after a restart: beyond nsqd
    }
    for mode in modes() {
        let flags = [mode];
        let s = Server::start(&flags);
        post_ok(&s, "/topic/create?topic=dst");
        post_ok(&s, "/channel/create?topic=dst&channel=c");
        for body in ["a", "b"] {
            let r = s.post("/pub?topic=dst&defer=600000", body.as_bytes());
            assert_eq!(r.status, 200, "{}", r.text());
        }
        let r = s.post("/pub?topic=dst", b"now");
        assert_eq!(r.status, 200, "{}", r.text());
        assert!(wait_until(Duration::from_secs(5), || {
            s.channel_stat("dst", "c", "deferred_count") == Some(2)
        }));
        let s = restart(s, &flags);
        // Before anything reads the channel: the two deferred messages are deferred, the
        // other one is the depth.
        let figures = |s: &Server| {
            (
                s.channel_stat("dst", "c", "depth"),
                s.channel_stat("dst", "c", "deferred_count"),
            )
        };
        assert_eq!(figures(&s), (Some(1), Some(2)), "{mode}");
        let mut c = consumer(&s, "dst", "c", 10);
        let m = c.message_within(Duration::from_secs(5)).expect("now");
        assert_eq!(m.body, b"now", "{mode}");
        c.fin(&m.id_str());
        assert!(
            wait_until(Duration::from_secs(5), || figures(&s) == (Some(0), Some(2))),
            "{mode}: {:?}",
            figures(&s)
        );
    }
}

#[test]
fn finished_messages_are_not_redelivered_after_a_restart() {
    for mode in modes() {
        let flags = ["--mem-queue-size=3", mode];
        let s = Server::start(&flags);
        let mut c = consumer(&s, "fin", "c", 100);
        mpub(&s, "fin", &bodies("f", 10));
        assert_eq!(take_fin(&mut c, 10).len(), 10);
        assert!(wait_until(Duration::from_secs(5), || {
            s.channel_stat("fin", "c", "in_flight_count") == Some(0)
        }));
        let s = restart(s, &flags);
        assert_eq!(s.channel_stat("fin", "c", "depth"), Some(0), "{mode}");
        let mut c = consumer(&s, "fin", "c", 100);
        assert!(c.expect_silence(Duration::from_millis(300)), "{mode}");
    }
}

#[test]
fn deleted_topics_and_channels_leave_nothing_behind() {
    for mode in modes() {
        let flags = ["--mem-queue-size=2", mode];
        let s = Server::start(&flags);
        post_ok(&s, "/topic/create?topic=del");
        post_ok(&s, "/channel/create?topic=del&channel=c");
        mpub(&s, "del", &bodies("old", 10));
        post_ok(&s, "/channel/delete?topic=del&channel=c");
        post_ok(&s, "/channel/create?topic=del&channel=c");
        assert_eq!(s.channel_stat("del", "c", "depth"), Some(0), "{mode}");
        mpub(&s, "del", &bodies("mid", 3));
        post_ok(&s, "/topic/delete?topic=del");
        let leftovers: Vec<String> = std::fs::read_dir(&s.data_path)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("del"))
            .collect();
        assert!(leftovers.is_empty(), "{mode}: {leftovers:?}");
        post_ok(&s, "/topic/create?topic=del");
        post_ok(&s, "/channel/create?topic=del&channel=c");
        mpub(&s, "del", &bodies("new", 5));
        let s = restart(s, &flags);
        let mut c = consumer(&s, "del", "c", 100);
        let got: BTreeSet<String> = take_fin(&mut c, 5).into_iter().collect();
        assert_eq!(got, bodies("new", 5).into_iter().collect(), "{mode}");
        assert!(
            c.expect_silence(Duration::from_millis(300)),
            "{mode}: old messages came back"
        );
    }
}
