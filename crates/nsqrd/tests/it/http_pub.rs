//! HTTP publishing (`/pub`, `/mpub`): success paths, `defer`, every error in the documented check
//! order, `/mpub` text mode (line splitting, `\r` kept, empty lines skipped) and binary mode
//! (`binary=` parsing, BAD_BODY / BAD_MESSAGE, bytes after the declared messages), all-or-nothing
//! semantics, delivery to a TCP consumer and the topic counters in `/stats`.
use crate::common::*;
use crate::http_common::*;
use std::time::{Duration, Instant};

/// (message_count, message_bytes, depth) of a topic.
fn counts(s: &Server, topic: &str) -> (u64, u64, u64) {
    let t = s
        .topic_stats(topic)
        .unwrap_or_else(|| panic!("topic {topic} missing"));
    (
        t["message_count"].as_u64().expect("message_count"),
        t["message_bytes"].as_u64().expect("message_bytes"),
        t["depth"].as_u64().expect("depth"),
    )
}

/// Receive `n` message bodies on `c`.
fn recv_bodies(c: &mut Conn, n: usize) -> Vec<Vec<u8>> {
    (0..n).map(|_| c.expect_message().body).collect()
}

#[test]
fn pub_ok_counts_and_depth() {
    let s = Server::start(&[]);
    let r = s.post("/pub?topic=p1", b"hello");
    assert_text_ok(&r, "OK");
    assert_text_ok(&s.post("/pub?topic=p1", b"world!"), "OK");
    // No channels: the messages wait in the topic.
    assert_eq!(counts(&s, "p1"), (2, 11, 2));
}

#[test]
fn pub_is_delivered_to_tcp_consumer() {
    let s = Server::start(&[]);
    let mut c = consumer(&s, "p2", "ch", 1);
    assert_text_ok(&s.post("/pub?topic=p2", b"over http"), "OK");
    let m = c.expect_message();
    assert_eq!(m.body, b"over http");
    assert_eq!(m.attempts, 1);
    let ch = s.channel_stats("p2", "ch").expect("channel");
    assert_eq!(ch["message_count"], 1);
    assert_eq!(ch["in_flight_count"], 1);
}

#[test]
fn pub_accepts_binary_body_verbatim() {
    let s = Server::start(&[]);
    let mut c = consumer(&s, "p3", "ch", 1);
    let body: Vec<u8> = (0..=255u8).collect();
    assert_text_ok(&s.post("/pub?topic=p3", &body), "OK");
    assert_eq!(c.expect_message().body, body);
}

#[test]
fn pub_defer_goes_to_deferred_queue() {
    let s = Server::start(&[]);
    assert_empty_ok(&s.post("/topic/create?topic=pd", b""));
    assert_empty_ok(&s.post("/channel/create?topic=pd&channel=a", b""));
    assert_empty_ok(&s.post("/channel/create?topic=pd&channel=b", b""));
    assert_text_ok(&s.post("/pub?topic=pd&defer=60000", b"later"), "OK");
    assert!(wait_until(Duration::from_secs(5), || {
        s.channel_stats("pd", "b").expect("b")["deferred_count"] == 1
    }));
    for ch in ["a", "b"] {
        let c = s.channel_stats("pd", ch).expect("channel");
        assert_eq!(c["deferred_count"], 1, "{ch}");
        assert_eq!(c["depth"], 0, "{ch}");
        assert_eq!(c["message_count"], 1, "{ch}");
        assert_eq!(c["in_flight_count"], 0, "{ch}");
    }
    assert_eq!(counts(&s, "pd"), (1, 5, 0));
    // defer=0 is an ordinary publish.
    assert_text_ok(&s.post("/pub?topic=pd&defer=0", b"now"), "OK");
    assert!(wait_until(Duration::from_secs(5), || {
        s.channel_stats("pd", "a").expect("a")["depth"] == 1
    }));
    assert_eq!(s.channel_stats("pd", "a").expect("a")["deferred_count"], 1);
}

#[test]
fn pub_defer_delivers_after_delay() {
    let s = Server::start(&[]);
    let mut c = consumer(&s, "pdd", "ch", 5);
    let start = Instant::now();
    assert_text_ok(&s.post("/pub?topic=pdd&defer=500", b"deferred"), "OK");
    // Not before the delay; the scanner may need up to ~5 s more on a new channel.
    assert!(c.expect_silence(Duration::from_millis(300)));
    let m = c.expect_message();
    assert!(
        start.elapsed() >= Duration::from_millis(450),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(m.body, b"deferred");
    assert_eq!(m.attempts, 1);
}

#[test]
fn pub_defer_bound_is_max_req_timeout() {
    let s = Server::start(&["--max-req-timeout=10s"]);
    assert_text_ok(&s.post("/pub?topic=pb&defer=10000", b"x"), "OK");
    assert_err(
        &s.post("/pub?topic=pb&defer=10001", b"x"),
        400,
        "INVALID_DEFER",
    );
}

#[test]
fn pub_invalid_defer_values() {
    let s = Server::start(&[]);
    assert_text_ok(&s.post("/pub?topic=pv&defer=3600000", b"x"), "OK");
    for d in [
        "-1",
        "abc",
        "3600001",
        "",
        "1.5",
        "%205",
        "1e3",
        "99999999999999999999",
    ] {
        let r = s.post(&format!("/pub?topic=pv&defer={d}"), b"x");
        assert_err(&r, 400, "INVALID_DEFER");
    }
    assert_eq!(counts(&s, "pv").0, 1, "rejected publishes are not counted");
}

#[test]
fn pub_invalid_and_missing_topic() {
    let s = Server::start(&[]);
    assert_err(&s.post("/pub", b"x"), 400, "MISSING_ARG_TOPIC");
    assert_err(&s.post("/pub?defer=5", b"x"), 400, "MISSING_ARG_TOPIC");
    let long = "a".repeat(65);
    // `#` must be escaped in a URL (a raw one starts the fragment, which HTTP servers drop).
    let eph_long = format!("{}%23ephemeral", "a".repeat(55));
    for t in [
        "",
        "bad$",
        "a%20b",
        "%23ephemeral",
        "a%23ephemeral%23ephemeral",
        long.as_str(),
        eph_long.as_str(),
    ] {
        assert_err(
            &s.post(&format!("/pub?topic={t}"), b"x"),
            400,
            "INVALID_TOPIC",
        );
    }
    // Valid edge cases.
    let max = "b".repeat(64);
    let eph_max = format!("{}%23ephemeral", "c".repeat(54));
    for t in ["a.b-c_d", max.as_str(), eph_max.as_str()] {
        assert_text_ok(&s.post(&format!("/pub?topic={t}"), b"x"), "OK");
    }
    let st = s.stats();
    let names: Vec<&str> = st["topics"]
        .as_array()
        .expect("topics")
        .iter()
        .map(|t| t["topic_name"].as_str().expect("name"))
        .collect();
    let eph = format!("{}#ephemeral", "c".repeat(54));
    assert_eq!(names, vec!["a.b-c_d", max.as_str(), eph.as_str()]);
}

#[test]
fn pub_check_order() {
    // Content-Length vs max-msg-size, then body read, then empty, then topic, then defer.
    let s = Server::start(&["--max-msg-size=10"]);
    assert_err(&s.post("/pub", b"12345678901"), 413, "MSG_TOO_BIG");
    assert_err(
        &s.post("/pub?topic=bad$&defer=x", b"12345678901"),
        413,
        "MSG_TOO_BIG",
    );
    assert_err(&s.post("/pub", b""), 400, "MSG_EMPTY");
    assert_err(&s.post("/pub?topic=bad$&defer=-1", b""), 400, "MSG_EMPTY");
    assert_err(&s.post("/pub?topic=ok&defer=-1", b""), 400, "MSG_EMPTY");
    assert_err(&s.post("/pub?defer=-1", b"x"), 400, "MISSING_ARG_TOPIC");
    assert_err(
        &s.post("/pub?topic=bad$&defer=-1", b"x"),
        400,
        "INVALID_TOPIC",
    );
    assert_err(
        &s.post("/pub?topic=ok&defer=-1", b"x"),
        400,
        "INVALID_DEFER",
    );
    assert!(s.topic_stats("bad$").is_none());
}

#[test]
fn pub_max_msg_size_boundary() {
    let s = Server::start(&["--max-msg-size=10"]);
    let mut c = consumer(&s, "pm", "ch", 1);
    assert_text_ok(&s.post("/pub?topic=pm", b"1234567890"), "OK");
    assert_err(&s.post("/pub?topic=pm", b"12345678901"), 413, "MSG_TOO_BIG");
    assert_eq!(c.expect_message().body, b"1234567890");
    assert_eq!(counts(&s, "pm").0, 1);
}

#[test]
fn topic_is_created_before_later_checks_fail() {
    // The topic lookup (which creates it) comes before the defer / body checks.
    let s = Server::start(&["--max-msg-size=10"]);
    assert_err(
        &s.post("/pub?topic=c1&defer=-1", b"x"),
        400,
        "INVALID_DEFER",
    );
    assert_err(
        &s.post("/mpub?topic=c2", b"12345678901"),
        413,
        "MSG_TOO_BIG",
    );
    assert_err(&s.post("/mpub?topic=c3&binary=true", b"1"), 413, "BAD_BODY");
    for t in ["c1", "c2", "c3"] {
        assert_eq!(counts(&s, t), (0, 0, 0), "{t}");
    }
    // But not for errors before the topic check.
    assert_err(&s.post("/pub?topic=c4", b""), 400, "MSG_EMPTY");
    assert!(s.topic_stats("c4").is_none());
}

#[test]
fn mpub_text_mode_splits_lines() {
    let s = Server::start(&[]);
    let mut c = consumer(&s, "mt", "ch", 10);
    let r = s.post("/mpub?topic=mt", b"one\ntwo\n\n\nthree\r\nfour\n");
    assert_text_ok(&r, "OK");
    let got = recv_bodies(&mut c, 4);
    assert_eq!(
        got,
        vec![
            b"one".to_vec(),
            b"two".to_vec(),
            b"three\r".to_vec(),
            b"four".to_vec()
        ]
    );
    assert!(
        c.expect_silence(Duration::from_millis(300)),
        "no empty messages"
    );
    assert_eq!(counts(&s, "mt").0, 4);
    assert_eq!(counts(&s, "mt").1, 3 + 3 + 6 + 4);
}

#[test]
fn mpub_text_mode_last_line_without_newline() {
    let s = Server::start(&[]);
    assert_text_ok(&s.post("/mpub?topic=ml", b"a\nbc"), "OK");
    assert_eq!(counts(&s, "ml"), (2, 3, 2));
    assert_text_ok(&s.post("/mpub?topic=ml&binary=false", b"\n\nd"), "OK");
    assert_text_ok(&s.post("/mpub?topic=ml&binary=0", b"e\n"), "OK");
    assert_eq!(counts(&s, "ml"), (4, 5, 4));
}

#[test]
fn mpub_empty_body_is_ok_with_zero_messages() {
    let s = Server::start(&[]);
    assert_text_ok(&s.post("/mpub?topic=me", b""), "OK");
    assert_text_ok(&s.post("/mpub?topic=me", b"\n\n\n"), "OK");
    assert_eq!(counts(&s, "me"), (0, 0, 0));
}

#[test]
fn mpub_text_errors() {
    let s = Server::start(&["--max-msg-size=10", "--max-body-size=30"]);
    // Content-Length vs max-body-size comes first, even before the topic.
    assert_err(&s.post("/mpub", &[b'a'; 31]), 413, "BODY_TOO_BIG");
    assert_err(
        &s.post("/mpub?topic=bad$", &[b'a'; 31]),
        413,
        "BODY_TOO_BIG",
    );
    assert_err(&s.post("/mpub", b""), 400, "MISSING_ARG_TOPIC");
    assert_err(&s.post("/mpub?topic=", b"x"), 400, "INVALID_TOPIC");
    assert_err(&s.post("/mpub?topic=bad$", b"x"), 400, "INVALID_TOPIC");
    // A line longer than max-msg-size (the `\r` counts) rejects the whole batch.
    assert_err(
        &s.post("/mpub?topic=mx", b"ok\n12345678901\n"),
        413,
        "MSG_TOO_BIG",
    );
    assert_err(
        &s.post("/mpub?topic=mx", b"1234567890\r\n"),
        413,
        "MSG_TOO_BIG",
    );
    assert_eq!(counts(&s, "mx"), (0, 0, 0), "all or nothing");
    // Exactly max-body-size with lines of exactly max-msg-size is accepted.
    let body = b"1234567890\n1234567890\n12345678";
    assert_eq!(body.len(), 30);
    assert_text_ok(&s.post("/mpub?topic=mx", body), "OK");
    assert_eq!(counts(&s, "mx"), (3, 28, 3));
}

#[test]
fn mpub_binary_mode() {
    let s = Server::start(&[]);
    let mut c = consumer(&s, "mb", "ch", 10);
    let body = mpub_body(&[b"first", b"line\nwith newline", b"\r\n"]);
    assert_text_ok(&s.post("/mpub?topic=mb&binary=true", &body), "OK");
    let got = recv_bodies(&mut c, 3);
    assert_eq!(
        got,
        vec![
            b"first".to_vec(),
            b"line\nwith newline".to_vec(),
            b"\r\n".to_vec()
        ]
    );
    assert_eq!(counts(&s, "mb").0, 3);
}

#[test]
fn mpub_binary_param_values() {
    let s = Server::start(&[]);
    let body = mpub_body(&[b"ab", b"cd"]);
    // Binary: 2 messages of 2 bytes; text: 1 message of the whole body (no newline in it).
    let cases = [
        ("true", true),
        ("1", true),
        ("false", false),
        ("0", false),
        ("yes", true),
        ("TRUE", true),
        ("f", true),
        ("", true),
    ];
    for (i, (v, binary)) in cases.iter().enumerate() {
        let t = format!("bp{i}");
        let r = s.post(&format!("/mpub?topic={t}&binary={v}"), &body);
        assert_text_ok(&r, "OK");
        let expect = if *binary {
            (2, 4, 2)
        } else {
            (1, body.len() as u64, 1)
        };
        assert_eq!(counts(&s, &t), expect, "binary={v}");
    }
}

#[test]
fn mpub_binary_bad_body() {
    let s = Server::start(&["--max-body-size=30"]);
    let i32s = |v: &[i32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_be_bytes()).collect() };
    // Empty, short count, count <= 0, count > (max-body-size - 4) / 5 = 5.
    for body in [
        vec![],
        vec![0, 0],
        i32s(&[0]),
        i32s(&[-1]),
        i32s(&[6]),
        i32s(&[7, 1]),
    ] {
        let r = s.post("/mpub?topic=bb&binary=true", &body);
        assert_err(&r, 413, "BAD_BODY");
    }
    // count 5 passes the count check and fails on the first message.
    assert_err(
        &s.post("/mpub?topic=bb&binary=true", &i32s(&[5])),
        413,
        "BAD_MESSAGE",
    );
    assert_err(&s.post("/mpub?binary=true", b""), 400, "MISSING_ARG_TOPIC");
    assert_err(
        &s.post("/mpub?topic=bad$&binary=true", b""),
        400,
        "INVALID_TOPIC",
    );
    assert_eq!(counts(&s, "bb"), (0, 0, 0));
}

#[test]
fn mpub_binary_bad_message() {
    let s = Server::start(&["--max-msg-size=10"]);
    let i32s = |v: &[i32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_be_bytes()).collect() };
    let with = |head: &[i32], data: &[u8]| -> Vec<u8> {
        let mut v = i32s(head);
        v.extend_from_slice(data);
        v
    };
    for body in [
        i32s(&[1]),                   // missing size
        i32s(&[1, 0]),                // empty message
        i32s(&[1, -1]),               // negative size
        with(&[1, 11], &[b'x'; 11]),  // > max-msg-size
        with(&[1, 5], b"xxx"),        // truncated
        with(&[2, 2], b"xx"),         // second message missing
        with(&[2, 2], b"xx\0"),       // second size truncated
        with(&[2, 2], b"xx\0\0\0\0"), // second message empty
    ] {
        let r = s.post("/mpub?topic=bm&binary=true", &body);
        assert_err(&r, 413, "BAD_MESSAGE");
    }
    assert_eq!(counts(&s, "bm"), (0, 0, 0), "all or nothing");
    // A message of exactly max-msg-size is fine.
    assert_text_ok(
        &s.post("/mpub?topic=bm&binary=1", &with(&[1, 10], &[b'y'; 10])),
        "OK",
    );
    assert_eq!(counts(&s, "bm"), (1, 10, 1));
}

#[test]
fn mpub_binary_refuses_bytes_after_the_declared_messages() {
    let s = Server::start(&[]);
    let mut c = consumer(&s, "bt", "ch", 10);
    // A count lower than the messages sent, and garbage after the last message.
    let mut under = mpub_body(&[b"m1", b"m2", b"m3"]);
    under[3] = 2;
    let mut garbage = mpub_body(&[b"m1", b"m2"]);
    garbage.extend_from_slice(b"trailing garbage\n\0\0\0\x09");
    let cases = [(under, 6), (garbage, 21)];
    if is_reference() {
        // nsqd reads the declared messages and ignores the rest (docs/compatibility.md).
        for (body, _) in &cases {
            assert_text_ok(&s.post("/mpub?topic=bt&binary=true", body), "OK");
            assert_eq!(recv_bodies(&mut c, 2), vec![b"m1".to_vec(), b"m2".to_vec()]);
        }
        assert_eq!(counts(&s, "bt"), (4, 8, 0));
        return;
    }
    for (body, extra) in &cases {
        let r = s.post("/mpub?topic=bt&binary=true", body);
        assert_err(
            &r,
            413,
            &format!("BAD_BODY: {extra} bytes after the 2 declared message(s)"),
        );
    }
    // Nothing of either was published; a well-formed body still is.
    assert_eq!(counts(&s, "bt"), (0, 0, 0));
    let ok = mpub_body(&[b"m1", b"m2"]);
    assert_text_ok(&s.post("/mpub?topic=bt&binary=true", &ok), "OK");
    assert_eq!(recv_bodies(&mut c, 2), vec![b"m1".to_vec(), b"m2".to_vec()]);
    assert_eq!(counts(&s, "bt"), (2, 4, 0));
}

#[test]
fn http_publishes_reach_every_channel_and_count_in_stats() {
    let s = Server::start(&[]);
    let mut a = consumer(&s, "fan", "a", 10);
    let mut b = consumer(&s, "fan", "b", 10);
    assert_text_ok(&s.post("/pub?topic=fan", b"p"), "OK");
    assert_text_ok(&s.post("/mpub?topic=fan", b"t1\nt2"), "OK");
    assert_text_ok(
        &s.post("/mpub?topic=fan&binary=true", &mpub_body(&[b"b1"])),
        "OK",
    );
    for c in [&mut a, &mut b] {
        let mut got = recv_bodies(c, 4);
        got.sort();
        assert_eq!(
            got,
            vec![
                b"b1".to_vec(),
                b"p".to_vec(),
                b"t1".to_vec(),
                b"t2".to_vec()
            ]
        );
    }
    assert_eq!(counts(&s, "fan"), (4, 7, 0));
    for ch in ["a", "b"] {
        let c = s.channel_stats("fan", ch).expect("channel");
        assert_eq!(c["message_count"], 4);
        assert_eq!(c["in_flight_count"], 4);
        assert_eq!(c["depth"], 0);
    }
    // HTTP publishers are not producers.
    assert_eq!(s.stats()["producers"], serde_json::Value::Null);
}

#[test]
fn message_ids_are_unique_across_http_publishes() {
    let s = Server::start(&[]);
    let mut c = consumer(&s, "ids", "ch", 50);
    let lines: Vec<String> = (0..20).map(|i| format!("m{i}")).collect();
    assert_text_ok(
        &s.post("/mpub?topic=ids", lines.join("\n").as_bytes()),
        "OK",
    );
    for _ in 0..5 {
        assert_text_ok(&s.post("/pub?topic=ids", b"single"), "OK");
    }
    let mut ids: Vec<[u8; 16]> = (0..25).map(|_| c.expect_message().id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 25);
}

/// `--durability=strict`: `/pub`s sent at once, to two topics, are put together per serving
/// thread and each answered 200 only once fsynced: after a SIGKILL every one of them is
/// delivered, each in its own topic.
#[test]
fn strict_concurrent_pubs_are_all_kept_across_a_sigkill() {
    if is_reference() {
        return; // nsqd has no strict mode
    }
    const THREADS: usize = 8;
    const EACH: usize = 25;
    let flags = ["--durability=strict"];
    let s = Server::start(&flags);
    for t in ["sp0", "sp1"] {
        for path in [
            format!("/topic/create?topic={t}"),
            format!("/channel/create?topic={t}&channel=c"),
        ] {
            let r = s.post(&path, b"");
            assert_eq!(r.status, 200, "{path}: {}", r.text());
        }
    }
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let http = s.http;
            scope.spawn(move || {
                for i in 0..EACH {
                    let body = format!("m{t}-{i}");
                    let path = format!("/pub?topic=sp{}", t % 2);
                    let r = http_request(http, "POST", &path, &[], body.as_bytes());
                    assert_eq!(r.status, 200, "{body}: {}", r.text());
                    assert_eq!(r.text(), "OK");
                }
            });
        }
    });
    let dir = s.kill_keep();
    let s = Server::start_in(dir, &flags);
    for topic in 0..2 {
        let mut c = s.connect();
        c.sub(&format!("sp{topic}"), "c");
        c.rdy((THREADS * EACH) as u64);
        let mut got: Vec<String> = c
            .expect_messages(THREADS * EACH / 2)
            .into_iter()
            .map(|m| String::from_utf8(m.body).unwrap())
            .collect();
        got.sort();
        let mut want: Vec<String> = (0..THREADS)
            .filter(|t| t % 2 == topic)
            .flat_map(|t| (0..EACH).map(move |i| format!("m{t}-{i}")))
            .collect();
        want.sort();
        assert_eq!(got, want, "sp{topic}");
    }
}
