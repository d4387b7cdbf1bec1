//! Topic and channel administration over HTTP: `/topic/*` and `/channel/*` create / delete / empty
//! / pause / unpause — success (200, empty body), every error of the table in check order, and the
//! effects visible in `/stats`, on consumers and in `nsqd.dat`.
use crate::common::*;
use crate::http_common::*;
use std::time::Duration;

const CHANNEL_ROUTES: [&str; 5] = ["create", "delete", "empty", "pause", "unpause"];

fn topic_names(s: &Server) -> Vec<String> {
    s.stats()["topics"]
        .as_array()
        .expect("topics")
        .iter()
        .map(|t| t["topic_name"].as_str().expect("name").to_string())
        .collect()
}

fn channel_names(s: &Server, topic: &str) -> Vec<String> {
    s.topic_stats(topic).expect("topic")["channels"]
        .as_array()
        .expect("channels")
        .iter()
        .map(|c| c["channel_name"].as_str().expect("name").to_string())
        .collect()
}

fn post_ok(s: &Server, path: &str) {
    assert_empty_ok(&s.post(path, b""));
}

fn meta_topic(s: &Server, topic: &str) -> serde_json::Value {
    try_meta_topic(s, topic).unwrap_or_else(|| panic!("{topic} not in nsqd.dat"))
}

/// The topic's entry in `nsqd.dat`, if it has one yet (the file is rewritten in the
/// background after creations).
fn try_meta_topic(s: &Server, topic: &str) -> Option<serde_json::Value> {
    let raw = std::fs::read(s.data_path.join("nsqd.dat")).ok()?;
    let md: serde_json::Value = serde_json::from_slice(&raw).ok()?;
    md["topics"]
        .as_array()?
        .iter()
        .find(|t| t["name"] == topic)
        .cloned()
}

#[test]
fn topic_create() {
    let s = Server::start(&[]);
    post_ok(&s, "/topic/create?topic=tc");
    post_ok(&s, "/topic/create?topic=tc");
    let t = s.topic_stats("tc").expect("tc");
    assert_eq!(t["channels"], serde_json::json!([]));
    assert_eq!(t["depth"], 0);
    assert_eq!(t["paused"], false);
    post_ok(&s, "/topic/create?topic=tc2%23ephemeral");
    assert_eq!(topic_names(&s), vec!["tc", "tc2#ephemeral"]);
}

#[test]
fn topic_create_errors() {
    let s = Server::start(&[]);
    assert_err(&s.post("/topic/create", b""), 400, "MISSING_ARG_TOPIC");
    assert_err(
        &s.post("/topic/create?channel=c", b""),
        400,
        "MISSING_ARG_TOPIC",
    );
    let long = "x".repeat(65);
    for t in ["", "bad$", "a%20b", "%23ephemeral", long.as_str()] {
        let r = s.post(&format!("/topic/create?topic={t}"), b"");
        assert_err(&r, 400, "INVALID_TOPIC");
    }
    assert_eq!(topic_names(&s), Vec::<String>::new());
}

#[test]
fn topic_delete() {
    let s = Server::start(&[]);
    post_ok(&s, "/topic/create?topic=td");
    post_ok(&s, "/channel/create?topic=td&channel=c1");
    post_ok(&s, "/topic/create?topic=keep");
    let mut c = consumer(&s, "td", "c2", 1);
    post_ok(&s, "/topic/delete?topic=td");
    assert_eq!(topic_names(&s), vec!["keep"]);
    // Its consumers are disconnected.
    assert!(c.expect_closed(), "consumer of a deleted topic is closed");
    assert_err(
        &s.post("/topic/delete?topic=td", b""),
        404,
        "TOPIC_NOT_FOUND",
    );
}

#[test]
fn topic_delete_errors() {
    let s = Server::start(&[]);
    assert_err(&s.post("/topic/delete", b""), 400, "MISSING_ARG_TOPIC");
    // Name validity is not checked: an invalid name is simply not found.
    for t in ["nosuch", "bad$", "", "%23ephemeral"] {
        let r = s.post(&format!("/topic/delete?topic={t}"), b"");
        assert_err(&r, 404, "TOPIC_NOT_FOUND");
    }
}

#[test]
fn topic_delete_then_recreate_starts_fresh() {
    let s = Server::start(&[]);
    assert_text_ok(&s.post("/pub?topic=tr", b"old"), "OK");
    post_ok(&s, "/topic/delete?topic=tr");
    post_ok(&s, "/topic/create?topic=tr");
    let t = s.topic_stats("tr").expect("tr");
    assert_eq!(
        (t["depth"].clone(), t["message_count"].clone()),
        (0.into(), 0.into())
    );
}

#[test]
fn topic_empty_drains_topic_queue_memory_and_disk() {
    let s = Server::start(&["--mem-queue-size=2"]);
    for i in 0..5 {
        assert_text_ok(&s.post("/pub?topic=te", format!("m{i}").as_bytes()), "OK");
    }
    let t = s.topic_stats("te").expect("te");
    let on_disk = if has_disk_queue() { 3 } else { 0 };
    assert_eq!(
        (t["depth"].as_i64(), t["backend_depth"].as_i64()),
        (Some(5), Some(on_disk))
    );
    post_ok(&s, "/topic/empty?topic=te");
    let t = s.topic_stats("te").expect("te");
    assert_eq!(
        (t["depth"].as_i64(), t["backend_depth"].as_i64()),
        (Some(0), Some(0))
    );
    assert_eq!(t["message_count"], 5, "counters are not reset by empty");
    // A channel created afterwards gets nothing of the old backlog.
    let mut c = consumer(&s, "te", "c", 10);
    assert!(c.expect_silence(Duration::from_millis(300)));
    assert_text_ok(&s.post("/pub?topic=te", b"new"), "OK");
    assert_eq!(c.expect_message().body, b"new");
}

#[test]
fn topic_empty_does_not_touch_channels() {
    let s = Server::start(&[]);
    post_ok(&s, "/topic/create?topic=tec");
    post_ok(&s, "/channel/create?topic=tec&channel=c");
    assert_text_ok(&s.post("/mpub?topic=tec", b"a\nb"), "OK");
    assert!(wait_until(Duration::from_secs(5), || {
        s.channel_stats("tec", "c").expect("c")["depth"] == 2
    }));
    // While paused, new messages stay in the topic's own queue.
    post_ok(&s, "/topic/pause?topic=tec");
    assert_text_ok(&s.post("/mpub?topic=tec", b"c\nd\ne"), "OK");
    assert_eq!(s.topic_stats("tec").expect("t")["depth"], 3);
    post_ok(&s, "/topic/empty?topic=tec");
    assert_eq!(s.topic_stats("tec").expect("t")["depth"], 0);
    assert_eq!(s.channel_stats("tec", "c").expect("c")["depth"], 2);
    post_ok(&s, "/topic/unpause?topic=tec");
    // A message published after the unpause reaches the channel: the emptied ones would have
    // come before it.
    assert_text_ok(&s.post("/pub?topic=tec", b"f"), "OK");
    assert!(wait_until(Duration::from_secs(20), || {
        s.channel_stats("tec", "c").expect("c")["depth"] != 2
    }));
    assert_eq!(s.channel_stats("tec", "c").expect("c")["depth"], 3);
}

#[test]
fn topic_empty_errors() {
    let s = Server::start(&[]);
    assert_err(&s.post("/topic/empty", b""), 400, "MISSING_ARG_TOPIC");
    // Unlike delete/pause, empty validates the name first.
    for t in ["bad$", ""] {
        let r = s.post(&format!("/topic/empty?topic={t}"), b"");
        assert_err(&r, 400, "INVALID_TOPIC");
    }
    assert_err(
        &s.post("/topic/empty?topic=nosuch", b""),
        404,
        "TOPIC_NOT_FOUND",
    );
    assert!(s.topic_stats("nosuch").is_none(), "empty does not create");
}

#[test]
fn topic_pause_and_unpause() {
    let s = Server::start(&[]);
    let mut c = consumer(&s, "tp", "ch", 10);
    post_ok(&s, "/topic/pause?topic=tp");
    assert_eq!(s.topic_stats("tp").expect("tp")["paused"], true);
    assert_eq!(
        meta_topic(&s, "tp")["paused"],
        true,
        "pause is persisted at once"
    );
    post_ok(&s, "/topic/pause?topic=tp");
    assert_text_ok(&s.post("/pub?topic=tp", b"held"), "OK");
    assert!(c.expect_silence(Duration::from_millis(400)));
    let t = s.topic_stats("tp").expect("tp");
    assert_eq!(t["depth"], 1);
    assert_eq!(t["channels"][0]["depth"], 0);
    assert_eq!(t["channels"][0]["paused"], false);
    post_ok(&s, "/topic/unpause?topic=tp");
    assert_eq!(c.expect_message().body, b"held");
    let t = s.topic_stats("tp").expect("tp");
    assert_eq!(t["paused"], false);
    assert_eq!(t["depth"], 0);
    assert_eq!(meta_topic(&s, "tp")["paused"], false);
    post_ok(&s, "/topic/unpause?topic=tp");
}

#[test]
fn topic_pause_errors() {
    let s = Server::start(&[]);
    for route in ["pause", "unpause"] {
        assert_err(
            &s.post(&format!("/topic/{route}"), b""),
            400,
            "MISSING_ARG_TOPIC",
        );
        for t in ["nosuch", "bad$", ""] {
            let r = s.post(&format!("/topic/{route}?topic={t}"), b"");
            assert_err(&r, 404, "TOPIC_NOT_FOUND");
        }
    }
    assert_eq!(topic_names(&s), Vec::<String>::new());
}

#[test]
fn channel_create() {
    let s = Server::start(&[]);
    post_ok(&s, "/topic/create?topic=cc");
    post_ok(&s, "/channel/create?topic=cc&channel=zz");
    post_ok(&s, "/channel/create?topic=cc&channel=aa");
    post_ok(&s, "/channel/create?topic=cc&channel=aa");
    post_ok(&s, "/channel/create?topic=cc&channel=e%23ephemeral");
    assert_eq!(channel_names(&s, "cc"), vec!["aa", "e#ephemeral", "zz"]);
    let c = s.channel_stats("cc", "aa").expect("aa");
    assert_eq!(c["client_count"], 0);
    assert_eq!(c["clients"], serde_json::json!([]));
    assert_eq!(c["paused"], false);
    // An HTTP-created ephemeral channel without clients stays, even after another ephemeral
    // channel of the topic was deleted with its last client.
    let mut c = s.connect();
    c.sub("cc", "ctl#ephemeral");
    c.close();
    assert!(wait_until(Duration::from_secs(20), || s
        .channel_stats("cc", "ctl#ephemeral")
        .is_none()));
    assert!(s.channel_stats("cc", "e#ephemeral").is_some());
    // Non-ephemeral channels are persisted, ephemeral ones are not.
    assert!(wait_until(Duration::from_secs(5), || {
        let Some(t) = try_meta_topic(&s, "cc") else {
            return false;
        };
        let mut names: Vec<String> = t["channels"]
            .as_array()
            .map(|a| a.iter().map(|c| c["name"].to_string()).collect())
            .unwrap_or_default();
        names.sort();
        names == ["\"aa\"", "\"zz\""]
    }));
}

#[test]
fn channel_create_requires_existing_topic() {
    let s = Server::start(&[]);
    let r = s.post("/channel/create?topic=nosuch&channel=c", b"");
    assert_err(&r, 404, "TOPIC_NOT_FOUND");
    assert!(
        s.topic_stats("nosuch").is_none(),
        "topic is not auto-created"
    );
}

#[test]
fn first_channel_gets_the_topic_backlog() {
    let s = Server::start(&[]);
    assert_text_ok(&s.post("/mpub?topic=bl", b"1\n2\n3"), "OK");
    assert_eq!(s.topic_stats("bl").expect("bl")["depth"], 3);
    post_ok(&s, "/channel/create?topic=bl&channel=first");
    assert!(wait_until(Duration::from_secs(5), || {
        s.channel_stats("bl", "first").expect("first")["depth"] == 3
    }));
    assert_eq!(s.topic_stats("bl").expect("bl")["depth"], 0);
    post_ok(&s, "/channel/create?topic=bl&channel=second");
    assert_text_ok(&s.post("/pub?topic=bl", b"4"), "OK");
    assert!(wait_until(Duration::from_secs(5), || {
        s.channel_stats("bl", "first").expect("first")["depth"] == 4
    }));
    let second = s.channel_stats("bl", "second").expect("second");
    assert_eq!(
        (second["depth"].as_i64(), second["message_count"].as_i64()),
        (Some(1), Some(1))
    );
}

#[test]
fn channel_routes_argument_errors() {
    let s = Server::start(&[]);
    post_ok(&s, "/topic/create?topic=ok");
    for route in CHANNEL_ROUTES {
        let p = |q: &str| format!("/channel/{route}{q}");
        assert_err(&s.post(&p(""), b""), 400, "MISSING_ARG_TOPIC");
        assert_err(&s.post(&p("?channel=c"), b""), 400, "MISSING_ARG_TOPIC");
        assert_err(
            &s.post(&p("?topic=bad$&channel=c"), b""),
            400,
            "INVALID_ARG_TOPIC",
        );
        assert_err(
            &s.post(&p("?topic=&channel=c"), b""),
            400,
            "INVALID_ARG_TOPIC",
        );
        assert_err(&s.post(&p("?topic=bad$"), b""), 400, "INVALID_ARG_TOPIC");
        assert_err(&s.post(&p("?topic=ok"), b""), 400, "MISSING_ARG_CHANNEL");
        assert_err(
            &s.post(&p("?topic=nosuch"), b""),
            400,
            "MISSING_ARG_CHANNEL",
        );
        for c in ["bad$", "", "%23ephemeral", &"c".repeat(65)] {
            let r = s.post(&p(&format!("?topic=ok&channel={c}")), b"");
            assert_err(&r, 400, "INVALID_ARG_CHANNEL");
        }
        // Arguments are validated before the topic is looked up.
        let r = s.post(&p("?topic=nosuch&channel=bad$"), b"");
        assert_err(&r, 400, "INVALID_ARG_CHANNEL");
        let r = s.post(&p("?topic=nosuch&channel=c"), b"");
        assert_err(&r, 404, "TOPIC_NOT_FOUND");
        if route != "create" {
            let r = s.post(&p("?topic=ok&channel=nosuch"), b"");
            assert_err(&r, 404, "CHANNEL_NOT_FOUND");
        }
    }
    assert_eq!(topic_names(&s), vec!["ok"]);
    assert_eq!(channel_names(&s, "ok"), Vec::<String>::new());
}

#[test]
fn channel_delete() {
    let s = Server::start(&[]);
    let mut c = consumer(&s, "cd", "gone", 1);
    post_ok(&s, "/channel/create?topic=cd&channel=stay");
    post_ok(&s, "/channel/delete?topic=cd&channel=gone");
    assert_eq!(channel_names(&s, "cd"), vec!["stay"]);
    assert!(
        c.expect_closed(),
        "consumers of a deleted channel are closed"
    );
    assert_err(
        &s.post("/channel/delete?topic=cd&channel=gone", b""),
        404,
        "CHANNEL_NOT_FOUND",
    );
    // The topic keeps working for the remaining channel.
    assert_text_ok(&s.post("/pub?topic=cd", b"x"), "OK");
    assert!(wait_until(Duration::from_secs(5), || {
        s.channel_stats("cd", "stay").expect("stay")["depth"] == 1
    }));
}

#[test]
fn deleting_last_channel_of_ephemeral_topic_deletes_topic() {
    let s = Server::start(&[]);
    // An ephemeral topic that never had channels is kept (checked once et's deletion is done).
    post_ok(&s, "/topic/create?topic=et2%23ephemeral");
    post_ok(&s, "/topic/create?topic=et%23ephemeral");
    post_ok(&s, "/channel/create?topic=et%23ephemeral&channel=c");
    post_ok(&s, "/channel/delete?topic=et%23ephemeral&channel=c");
    assert!(wait_until(Duration::from_secs(20), || s
        .topic_stats("et#ephemeral")
        .is_none()));
    assert!(s.topic_stats("et2#ephemeral").is_some());
}

#[test]
fn channel_empty_drops_queued_in_flight_and_deferred() {
    let s = Server::start(&["--mem-queue-size=2"]);
    let mut c = consumer(&s, "ce", "ch", 1);
    // More than a refill reads back from disk at once (256), so some stay on disk whenever
    // the stats are read.
    let body: Vec<String> = (0..1000).map(|i| format!("m{i}")).collect();
    assert_text_ok(&s.post("/mpub?topic=ce", body.join("\n").as_bytes()), "OK");
    assert_text_ok(&s.post("/pub?topic=ce&defer=60000", b"later"), "OK");
    let m = c.expect_message();
    assert!(wait_until(Duration::from_secs(5), || {
        let ch = s.channel_stats("ce", "ch").expect("ch");
        ch["depth"] == 999 && ch["in_flight_count"] == 1 && ch["deferred_count"] == 1
    }));
    let backend_depth = s.channel_stats("ce", "ch").expect("ch")["backend_depth"].as_i64();
    if has_disk_queue() {
        assert!(backend_depth > Some(0));
    } else {
        assert_eq!(backend_depth, Some(0));
    }
    // RDY 0 first: otherwise the consumer, freed by the reset in-flight count, may race to
    // take a message that empty has not dropped yet (upstream behaviour).
    c.cmd("RDY 0");
    assert!(wait_until(Duration::from_secs(5), || {
        s.channel_stats("ce", "ch").expect("ch")["clients"][0]["ready_count"] == 0
    }));
    post_ok(&s, "/channel/empty?topic=ce&channel=ch");
    let ch = s.channel_stats("ce", "ch").expect("ch");
    for k in [
        "depth",
        "backend_depth",
        "in_flight_count",
        "deferred_count",
    ] {
        assert_eq!(ch[k], 0, "{k}");
    }
    assert_eq!(ch["message_count"], 1001, "counters are kept");
    assert_eq!(ch["clients"][0]["in_flight_count"], 0);
    // The emptied in-flight message can no longer be finished (non-fatal error).
    c.cmd(&format!("FIN {}", m.id_str()));
    c.expect_error(&format!(
        "E_FIN_FAILED FIN {} failed ID not in flight",
        m.id_str()
    ));
    // The consumer still works.
    c.cmd("RDY 1");
    assert_text_ok(&s.post("/pub?topic=ce", b"fresh"), "OK");
    assert_eq!(c.expect_message().body, b"fresh");
}

#[test]
fn channel_empty_leaves_other_channels() {
    let s = Server::start(&[]);
    post_ok(&s, "/topic/create?topic=ce2");
    post_ok(&s, "/channel/create?topic=ce2&channel=a");
    post_ok(&s, "/channel/create?topic=ce2&channel=b");
    assert_text_ok(&s.post("/mpub?topic=ce2", b"1\n2"), "OK");
    assert!(wait_until(Duration::from_secs(5), || {
        s.channel_stats("ce2", "b").expect("b")["depth"] == 2
    }));
    post_ok(&s, "/channel/empty?topic=ce2&channel=a");
    assert_eq!(s.channel_stats("ce2", "a").expect("a")["depth"], 0);
    assert_eq!(s.channel_stats("ce2", "b").expect("b")["depth"], 2);
}

#[test]
fn channel_pause_and_unpause() {
    let s = Server::start(&[]);
    let mut c = consumer(&s, "cp", "ch", 10);
    post_ok(&s, "/channel/create?topic=cp&channel=other");
    post_ok(&s, "/channel/pause?topic=cp&channel=ch");
    let ch = s.channel_stats("cp", "ch").expect("ch");
    assert_eq!(ch["paused"], true);
    assert_eq!(s.channel_stats("cp", "other").expect("o")["paused"], false);
    assert_eq!(s.topic_stats("cp").expect("t")["paused"], false);
    let meta = meta_topic(&s, "cp");
    let mc = meta["channels"]
        .as_array()
        .expect("channels")
        .iter()
        .find(|c| c["name"] == "ch")
        .cloned()
        .expect("ch in nsqd.dat");
    assert_eq!(mc["paused"], true, "channel pause is persisted at once");

    assert_text_ok(&s.post("/mpub?topic=cp", b"p1\np2"), "OK");
    assert!(c.expect_silence(Duration::from_millis(400)));
    let ch = s.channel_stats("cp", "ch").expect("ch");
    assert_eq!(ch["depth"], 2, "messages accumulate in a paused channel");
    assert_eq!(ch["clients"][0]["ready_count"], 10, "RDY is kept");
    assert!(wait_until(Duration::from_secs(5), || {
        s.channel_stats("cp", "other").expect("o")["depth"] == 2
    }));

    post_ok(&s, "/channel/unpause?topic=cp&channel=ch");
    let mut got = vec![c.expect_message().body, c.expect_message().body];
    got.sort();
    assert_eq!(got, vec![b"p1".to_vec(), b"p2".to_vec()]);
    assert_eq!(s.channel_stats("cp", "ch").expect("ch")["paused"], false);
    post_ok(&s, "/channel/unpause?topic=cp&channel=ch");
}

#[test]
fn pause_flags_survive_a_crash_after_http_pause() {
    // HTTP pause/unpause persist nsqd.dat immediately, so a crash right after keeps them.
    let s = Server::start(&[]);
    post_ok(&s, "/topic/create?topic=pr");
    post_ok(&s, "/channel/create?topic=pr&channel=c");
    post_ok(&s, "/topic/pause?topic=pr");
    post_ok(&s, "/channel/pause?topic=pr&channel=c");
    let t = meta_topic(&s, "pr");
    assert_eq!(t["paused"], true);
    assert_eq!(t["channels"][0]["name"], "c");
    assert_eq!(t["channels"][0]["paused"], true);
    let copy = nsqr_testkit::temp_dir("crash");
    std::fs::copy(s.data_path.join("nsqd.dat"), copy.join("nsqd.dat")).expect("copy");
    drop(s); // SIGKILL
    let s2 = Server::start_in(copy, &[]);
    let t = s2.topic_stats("pr").expect("pr restored");
    assert_eq!(t["paused"], true);
    assert_eq!(t["channels"][0]["channel_name"], "c");
    assert_eq!(t["channels"][0]["paused"], true);
}
