//! The queue settings as TCP (nsqd protocol) consumers meet them (nsqr only): dead letters by
//! delivery limit (REQ and timeouts), time to live (per publish, and a topic's default for TCP
//! publishers), ordered channels (requeues, timeouts, a disk spill and a restart). The
//! dead-letter topic is read back over HTTP to see each dead letter's record.
use crate::common::*;
use crate::http_common::*;
use serde_json::{json, Value};
use std::time::Duration;

fn configure(s: &Server, path: &str, body: &str) {
    let r = s.post(path, body.as_bytes());
    assert_eq!(r.status, 200, "{path}: {}", r.text());
}

/// Messages of `topic`/`channel` taken over HTTP (finished), waiting up to 20 s for each.
fn drain_http(s: &Server, topic: &str, channel: &str, n: usize) -> Vec<Value> {
    let mut out = Vec::new();
    while out.len() < n {
        let r = s.post(
            &format!("/channel/receive?topic={topic}&channel={channel}&max=100&wait=20s"),
            b"",
        );
        assert_eq!(r.status, 200, "{}", r.text());
        let got = r.json()["messages"].as_array().unwrap().clone();
        assert!(
            !got.is_empty(),
            "{topic}/{channel}: only {} of {n}",
            out.len()
        );
        for m in &got {
            let r = s.post(
                &format!("/message/fin?receipt={}", m["receipt"].as_str().unwrap()),
                b"",
            );
            assert_eq!(r.status, 200);
        }
        out.extend(got);
    }
    out
}

fn body_of(m: &Value) -> String {
    use base64::Engine;
    String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(m["body"].as_str().unwrap())
            .unwrap(),
    )
    .unwrap()
}

#[test]
fn redeliveries_stop_at_max_attempts_and_the_message_is_dead_lettered_once() {
    let s = Server::start(&[]);
    configure(
        &s,
        "/channel/config?topic=jobs&channel=w",
        r#"{"max_attempts": 3}"#,
    );
    let mut c = consumer(&s, "jobs", "w", 1);
    let mut p = s.connect();
    p.publish("jobs", b"poison");
    for attempt in 1..=3 {
        let m = c.expect_message();
        assert_eq!((m.body.as_slice(), m.attempts), (&b"poison"[..], attempt));
        c.req(&m.id_str(), 0);
    }
    let dead = drain_http(&s, "jobs.dead", "inspect", 1);
    assert_eq!(body_of(&dead[0]), "poison");
    let d = &dead[0]["dead_letter"];
    assert_eq!(
        (
            d["reason"].clone(),
            d["topic"].clone(),
            d["channel"].clone(),
            d["attempts"].clone()
        ),
        (json!("delivery_limit"), json!("jobs"), json!("w"), json!(3))
    );
    assert!(
        c.expect_silence(Duration::from_millis(300)),
        "no fourth delivery"
    );
    assert_eq!(
        s.channel_stats("jobs", "w").unwrap()["dead_letters"]["delivery_limit"],
        1
    );
    assert_eq!(s.channel_stat("jobs", "w", "depth"), Some(0));
    assert_eq!(s.topic_stat("jobs.dead", "message_count"), Some(1), "once");
}

#[test]
fn timeouts_count_as_attempts() {
    let s = Server::start(&[]);
    configure(
        &s,
        "/channel/config?topic=t&channel=c",
        r#"{"max_attempts": 2, "msg_timeout": "200ms"}"#,
    );
    let mut c = consumer(&s, "t", "c", 1);
    s.post("/pub?topic=t", b"never answered");
    let a = c.expect_message();
    let b = c.expect_message();
    assert_eq!((a.id, a.attempts, b.attempts), (b.id, 1, 2));
    let dead = drain_http(&s, "t.dead", "x", 1);
    assert_eq!(dead[0]["dead_letter"]["reason"], "delivery_limit");
    assert_eq!(s.channel_stat("t", "c", "timeout_count"), Some(2));
}

#[test]
fn expired_messages_are_never_delivered_to_tcp_consumers() {
    let s = Server::start(&[]);
    assert_empty_ok(&s.post("/topic/create?topic=t", b""));
    assert_empty_ok(&s.post("/channel/create?topic=t&channel=c", b""));
    assert_text_ok(&s.post("/pub?topic=t&ttl=200ms", b"short"), "OK");
    assert_text_ok(&s.post("/pub?topic=t&ttl=1h", b"long"), "OK");
    // the sweep sends the expired one to the dead letters though nobody reads the channel
    let dead = drain_http(&s, "t.dead", "x", 1);
    assert_eq!(
        (body_of(&dead[0]), dead[0]["dead_letter"]["reason"].clone()),
        ("short".into(), json!("expired"))
    );
    let mut c = consumer(&s, "t", "c", 10);
    let m = c.expect_message();
    assert_eq!(m.body, b"long");
    c.fin(&m.id_str());
    assert!(c.expect_silence(Duration::from_millis(200)));
    // A topic's message_ttl covers TCP publishers; this channel drops what expires.
    configure(&s, "/topic/config?topic=tcp", r#"{"message_ttl": "200ms"}"#);
    configure(
        &s,
        "/channel/config?topic=tcp&channel=c",
        r#"{"expired": "drop"}"#,
    );
    let mut p = s.connect();
    p.publish("tcp", b"old");
    assert!(wait_until(Duration::from_secs(20), || {
        s.channel_stats("tcp", "c").unwrap()["dead_letters"]["expired_dropped"] == 1
    }));
    assert_eq!(s.channel_stat("tcp", "c", "depth"), Some(0));
    assert!(
        s.topic_stats("tcp.dead").is_none(),
        "dropped, not dead-lettered"
    );
}

#[test]
fn an_ordered_channel_keeps_order_under_requeues_and_timeouts() {
    let s = Server::start(&[]);
    configure(
        &s,
        "/channel/config?topic=t&channel=c",
        r#"{"ordered": true, "msg_timeout": "300ms"}"#,
    );
    let mut p = s.connect();
    p.cmd_body("MPUB t", &mpub_body(&[b"m0", b"m1", b"m2", b"m3"]));
    p.expect_ok();
    let mut c = consumer(&s, "t", "c", 10);
    let m0 = c.expect_message();
    assert_eq!(m0.body, b"m0");
    assert!(
        c.expect_silence(Duration::from_millis(100)),
        "one at a time"
    );
    c.req(&m0.id_str(), 0);
    let again = c.expect_message();
    assert_eq!((again.body.as_slice(), again.attempts), (&b"m0"[..], 2));
    c.fin(&again.id_str());
    let m1 = c.expect_message();
    assert_eq!(m1.body, b"m1");
    // left to time out: m1 comes back before m2
    let m1b = c.expect_message();
    assert_eq!((m1b.body.as_slice(), m1b.attempts), (&b"m1"[..], 2));
    c.fin(&m1b.id_str());
    for want in [&b"m2"[..], b"m3"] {
        let m = c.expect_message();
        assert_eq!(m.body, want);
        c.fin(&m.id_str());
    }
}

#[test]
fn order_holds_per_key_across_a_disk_spill_and_a_restart() {
    let s = Server::start(&["--mem-queue-size=3"]);
    configure(
        &s,
        "/channel/config?topic=t&channel=c",
        r#"{"ordered": true}"#,
    );
    let keys = ["a", "b", "c"];
    let n = 60;
    for i in 0..n {
        let k = keys[i % 3];
        assert_text_ok(
            &s.post(
                &format!("/pub?topic=t&ordering_key={k}"),
                format!("{k}{i}").as_bytes(),
            ),
            "OK",
        );
    }
    assert!(
        s.channel_stat("t", "c", "backend_depth").unwrap() > 0,
        "spilled"
    );
    // one of each key in flight; finish a's, requeue b's, leave c's in flight; restart
    let mut c = consumer(&s, "t", "c", 10);
    let first: Vec<Msg> = c.expect_messages(3);
    let bodies: Vec<&[u8]> = first.iter().map(|m| m.body.as_slice()).collect();
    assert_eq!(bodies, [&b"a0"[..], b"b1", b"c2"]);
    c.fin(&first[0].id_str());
    c.req(&first[1].id_str(), 0);
    let next: Vec<Msg> = c.expect_messages(2);
    let mut got: Vec<String> = next
        .iter()
        .map(|m| String::from_utf8(m.body.clone()).unwrap())
        .collect();
    got.sort();
    assert_eq!(got, ["a3", "b1"], "b1 again, a goes on, c waits");
    let (_, dir) = s.terminate_keep();
    let s = Server::start_in(dir, &["--mem-queue-size=3"]);
    let mut c = consumer(&s, "t", "c", 10);
    let mut seen: Vec<Vec<usize>> = vec![Vec::new(); 3];
    let mut total = 0;
    while total < n - 1 {
        let m = c.expect_message();
        let text = String::from_utf8(m.body.clone()).unwrap();
        let (k, i) = text.split_at(1);
        let slot = keys.iter().position(|x| *x == k).unwrap();
        seen[slot].push(i.parse().unwrap());
        c.fin(&m.id_str());
        total += 1;
    }
    for (slot, got) in seen.iter().enumerate() {
        let want: Vec<usize> = (0..n).filter(|i| i % 3 == slot && *i != 0).collect();
        assert_eq!(got, &want, "key {}", keys[slot]);
    }
    assert!(c.expect_silence(Duration::from_millis(300)), "no copies");
}
