//! nsqd → nsqlookupd: IDENTIFY and the full REGISTER on connect, REGISTER / UNREGISTER as topics
//! and channels come and go, reconnection, PING every 15 s, the live peer swap of
//! `PUT /config/nsqlookupd_tcp_addresses`, channel pre-creation from lookupd's `/channels`, and
//! that a lookupd that is down, slow or answers garbage never holds up publishing or consuming.
//! Against a scripted lookupd (`lookupd_common`), so every line is checked; all of it passes
//! against the reference nsqd too (`NSQD_BIN`).

use std::time::{Duration, Instant};

use crate::common::*;
use crate::lookupd_common::{FakeLookupd, Mode, Seen};

const SEC5: Duration = Duration::from_secs(5);

fn is_identify(e: &Seen) -> bool {
    matches!(e, Seen::Command(_, l, _) if l == "IDENTIFY")
}

/// Wait for the IDENTIFY of a new connection and return its body.
fn identify_body(l: &FakeLookupd) -> serde_json::Value {
    let seen = l.until(SEC5, "IDENTIFY", is_identify);
    match seen.last() {
        Some(Seen::Command(_, _, Some(body))) => body.clone(),
        other => panic!("IDENTIFY without a JSON body: {other:?}"),
    }
}

/// Wait until the node has read lookupd's IDENTIFY reply (which names lookupd's HTTP address,
/// used for channel pre-creation): a command sent after it must have arrived.
fn identified(s: &Server, l: &FakeLookupd) {
    identify_body(l);
    post_ok(s, "/topic/create?topic=warmup");
    l.lines_until("REGISTER warmup");
}

#[track_caller]
fn post_ok(s: &Server, path: &str) {
    let r = s.post(path, b"");
    assert_eq!(r.status, 200, "{path}: {}", r.text());
}

#[test]
fn identify_then_register_everything_on_connect() {
    // Topics from nsqd.dat exist before the first connection.
    let dir = nsqr_testkit::temp_dir("nsqr-lookupd");
    let ch = |n: &str| serde_json::json!({"name": n, "paused": false});
    let md = serde_json::json!({"topics": [
        {"channels": [ch("a"), ch("b")], "name": "busy", "paused": false},
        {"channels": [], "name": "lonely", "paused": false},
    ], "version": "1.3.0"});
    std::fs::write(dir.join("nsqd.dat"), md.to_string()).unwrap();
    let l = FakeLookupd::start(Mode::Normal);
    let s = Server::start_in(dir, &[&l.flag()]);
    assert_eq!(l.next(SEC5), Some(Seen::Connected(1)));
    let body = identify_body(&l);
    let info = s.get("/info").json();
    let keys: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for k in [
        "broadcast_address",
        "hostname",
        "http_port",
        "tcp_port",
        "version",
    ] {
        assert!(keys.contains(&k), "{k} missing from {body}");
    }
    assert_eq!(body["broadcast_address"], "127.0.0.1");
    assert_eq!(body["hostname"], info["hostname"]);
    assert_eq!(body["tcp_port"], s.tcp.port());
    assert_eq!(body["http_port"], s.http.port());
    assert_eq!(body["version"], "1.3.0");
    let want = ["REGISTER busy a", "REGISTER busy b", "REGISTER lonely"];
    let mut lines: Vec<String> = Vec::new();
    while !want.iter().all(|w| lines.iter().any(|l| l == w)) {
        match l.next(SEC5) {
            Some(Seen::Command(1, line, _)) => lines.push(line),
            Some(_) => {}
            None => panic!("registration incomplete: {lines:?}"),
        }
    }
    // nsqd follows the full registration with the notifications queued while nsqd.dat was
    // loaded (the same REGISTERs again, and one for the bare topic): harmless repeats.
    lines.sort();
    lines.dedup();
    lines.retain(|l| l != "REGISTER busy");
    assert_eq!(lines, want);
}

#[test]
fn broadcast_flags_are_what_lookupd_is_told() {
    let l = FakeLookupd::start(Mode::Normal);
    let flag = l.flag();
    let mut flags = vec![
        flag.as_str(),
        "--broadcast-address=node7.example",
        "--broadcast-tcp-port=4999",
        "--broadcast-http-port=5999",
    ];
    if !is_reference() {
        // nsqd 1.3.0 has no topology flags yet (nsqd's master does).
        flags.extend(["--topology-zone=z1", "--topology-region=r1"]);
    }
    let _s = Server::start(&flags);
    let body = identify_body(&l);
    assert_eq!(body["broadcast_address"], "node7.example");
    assert_eq!(
        (body["tcp_port"].as_u64(), body["http_port"].as_u64()),
        (Some(4999), Some(5999))
    );
    if body.get("topology_zone").is_some() {
        assert_eq!(
            (&body["topology_zone"], &body["topology_region"]),
            (&"z1".into(), &"r1".into())
        );
    }
}

#[test]
fn topics_and_channels_are_registered_as_they_come_and_go() {
    let l = FakeLookupd::start(Mode::Normal);
    let s = Server::start(&[&l.flag()]);
    identify_body(&l);
    post_ok(&s, "/topic/create?topic=t");
    l.lines_until("REGISTER t");
    post_ok(&s, "/channel/create?topic=t&channel=c");
    l.lines_until("REGISTER t c");
    post_ok(&s, "/channel/delete?topic=t&channel=c");
    l.lines_until("UNREGISTER t c");
    post_ok(&s, "/channel/create?topic=t&channel=c2");
    l.lines_until("REGISTER t c2");
    post_ok(&s, "/topic/delete?topic=t");
    let mut got = [l.lines_until_any(), l.lines_until_any()];
    got.sort();
    assert_eq!(got, ["UNREGISTER t", "UNREGISTER t c2"]);

    // Ephemeral topics and channels are registered too, and go with their last consumer.
    let mut c = s.connect();
    c.sub("e#ephemeral", "ch#ephemeral");
    l.lines_until("REGISTER e#ephemeral ch#ephemeral");
    c.close();
    let mut got = [l.lines_until_any(), l.lines_until_any()];
    got.sort();
    assert_eq!(
        got,
        [
            "UNREGISTER e#ephemeral",
            "UNREGISTER e#ephemeral ch#ephemeral"
        ]
    );
}

trait NextLine {
    fn lines_until_any(&self) -> String;
}

impl NextLine for FakeLookupd {
    /// The next command line.
    fn lines_until_any(&self) -> String {
        match self
            .until(SEC5, "a command", |e| matches!(e, Seen::Command(..)))
            .pop()
        {
            Some(Seen::Command(_, l, _)) => l,
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn reconnects_with_a_full_registration() {
    let l = FakeLookupd::start(Mode::Normal);
    let s = Server::start(&[&l.flag()]);
    identify_body(&l);
    post_ok(&s, "/topic/create?topic=t");
    post_ok(&s, "/channel/create?topic=t&channel=c");
    l.lines_until("REGISTER t c");
    l.drop_connections();
    l.until(SEC5, "close", |e| *e == Seen::Closed(1));
    // The next command finds the connection gone; the node reconnects (nsqd: at the next
    // command, at the latest the next PING), identifies again and registers everything,
    // including the topic whose REGISTER found the connection gone.
    let mut n = 0;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        n += 1;
        post_ok(&s, &format!("/topic/create?topic=u{n}"));
        if let Some(e) = l.next(Duration::from_millis(300)) {
            if e == Seen::Connected(2) {
                break;
            }
        }
        assert!(Instant::now() < deadline, "no reconnection");
    }
    let first = l.until(SEC5, "IDENTIFY", |_| true);
    assert!(is_identify(&first[0]), "{first:?}");
    let want = ["REGISTER t c".to_string(), format!("REGISTER u{n}")];
    let mut lines = Vec::new();
    while !want.iter().all(|w| lines.contains(w)) {
        match l.next(SEC5) {
            Some(Seen::Command(2, line, _)) => lines.push(line),
            other => panic!("{other:?} before the full registration; saw {lines:?}"),
        }
    }
}

#[test]
fn pings_every_fifteen_seconds() {
    let l = FakeLookupd::start(Mode::Normal);
    let _s = Server::start(&[&l.flag()]);
    identify_body(&l);
    let t0 = Instant::now();
    // Nothing but the PING on the idle connection, and not before most of the interval.
    let seen = l.until(
        Duration::from_secs(40),
        "PING",
        |e| matches!(e, Seen::Command(1, line, _) if line == "PING"),
    );
    let waited = t0.elapsed();
    println!("first PING {waited:?} after IDENTIFY");
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(waited > Duration::from_secs(10), "PING after {waited:?}");
}

#[test]
fn put_config_swaps_peers_live() {
    let (a, b) = (
        FakeLookupd::start(Mode::Normal),
        FakeLookupd::start(Mode::Normal),
    );
    let s = Server::start(&[]);
    post_ok(&s, "/topic/create?topic=t");
    let put = |list: &str| {
        let r = s.http("PUT", "/config/nsqlookupd_tcp_addresses", list.as_bytes());
        assert_eq!(r.status, 200, "{}", r.text());
        r.json()
    };
    assert_eq!(
        put(&format!(r#"["{}"]"#, a.tcp)),
        serde_json::json!([a.tcp.to_string()])
    );
    identify_body(&a);
    a.lines_until("REGISTER t");
    let both = put(&format!(r#"["{}","{}"]"#, a.tcp, b.tcp));
    assert_eq!(
        both,
        serde_json::json!([a.tcp.to_string(), b.tcp.to_string()])
    );
    identify_body(&b);
    b.lines_until("REGISTER t");
    // Dropping a closes its connection only; b keeps its own.
    put(&format!(r#"["{}"]"#, b.tcp));
    a.until(SEC5, "close", |e| *e == Seen::Closed(1));
    post_ok(&s, "/topic/create?topic=u");
    b.lines_until("REGISTER u");
    assert!(a.drain(Duration::from_millis(300)).is_empty());
    put("[]");
    b.until(SEC5, "close", |e| *e == Seen::Closed(1));
    let r = s.get("/config/nsqlookupd_tcp_addresses");
    assert_eq!(r.text(), "[]");
}

#[test]
fn new_topics_get_the_channels_lookupd_knows() {
    let l = FakeLookupd::start(Mode::Normal);
    l.channels.lock().unwrap().insert(
        "pre".into(),
        vec!["a".into(), "b".into(), "x#ephemeral".into()],
    );
    let s = Server::start(&[&l.flag()]);
    identified(&s, &l);
    let r = s.post("/pub?topic=pre", b"hello");
    assert_eq!(r.status, 200);
    // Every pre-created channel gets the first message; ephemeral ones are not created.
    assert!(
        wait_until(SEC5, || {
            s.channel_stat("pre", "a", "depth") == Some(1)
                && s.channel_stat("pre", "b", "depth") == Some(1)
        }),
        "{:?}",
        s.topic_stats("pre")
    );
    assert_eq!(s.topic_stat("pre", "depth"), Some(0));
    assert!(s.channel_stats("pre", "x#ephemeral").is_none());
    assert!(l
        .channel_queries
        .lock()
        .unwrap()
        .contains(&"pre".to_string()));
    l.lines_until("REGISTER pre a");
}

/// Consume the one message published to `topic`.
fn consume_one(s: &Server, topic: &str) {
    let mut sub = s.connect();
    sub.sub(topic, "c");
    sub.rdy(1);
    let m = sub.message_within(Duration::from_secs(20));
    assert_eq!(m.map(|m| m.body), Some(b"m".to_vec()), "{topic}");
}

#[test]
fn a_broken_lookupd_never_blocks_publishing_or_consuming() {
    // Nothing listens on a closed port.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_addr = closed.local_addr().unwrap();
    drop(closed);
    let garbage = FakeLookupd::start(Mode::Garbage);
    let silent = FakeLookupd::start(Mode::Silent);
    let s = Server::start(&[
        &format!("--lookupd-tcp-address={closed_addr}"),
        &garbage.flag(),
        &silent.flag(),
    ]);
    // Each new topic sends each lookupd a REGISTER (and a `/channels` query to none, since
    // none identified); publishing and consuming go on regardless.
    for i in 0..3 {
        let topic = format!("t{i}");
        s.connect().publish(&topic, b"m");
        consume_one(&s, &topic);
    }
    assert_eq!(s.get("/ping").text(), "OK");
}

#[test]
fn a_slow_lookupd_http_api_delays_no_publisher() {
    // nsqd blocks the first PUB to a new topic for the whole lookupd query (up to the request
    // timeout); nsqrd holds the message instead and answers at once (docs/compatibility.md).
    // The fake holds its `/channels` answer until released: nsqrd's OK must come meanwhile;
    // nsqd's only once the (short) request timeout gives up.
    let timeout = if is_reference() { "500ms" } else { "60s" };
    let l = FakeLookupd::start(Mode::Normal);
    let s = Server::start(&[
        &l.flag(),
        &format!("--http-client-request-timeout={timeout}"),
    ]);
    identified(&s, &l);
    l.set_mode(Mode::SlowHttp);
    let mut c = s.connect();
    c.publish("slow", b"m");
    // Answered before the fake answers /channels (it is released only now).
    let asked = wait_until(SEC5, || {
        l.channel_queries
            .lock()
            .unwrap()
            .contains(&"slow".to_string())
    });
    assert!(asked, "no /channels query for the new topic");
    l.release_http();
    consume_one(&s, "slow");
}
