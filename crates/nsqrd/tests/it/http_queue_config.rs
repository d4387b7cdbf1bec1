//! Topic and channel settings (nsqr only): `GET`/`POST /topic/config` and `/channel/config`,
//! every bad input answered 400 with nothing changed, the settings in `/stats` only when set,
//! in `nsqd.dat` (as `nsqr_config`, which nsqd ignores) across a restart, and from the
//! `--config` file.
use crate::common::*;
use crate::http_common::*;
use serde_json::json;

/// A 400 whose message (which may hold quotes, escaped in the JSON) is `msg`.
#[track_caller]
fn assert_refused(r: &HttpResponse, msg: &str) {
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json(), json!({ "message": msg }));
    assert_eq!(r.header("X-NSQ-Content-Type"), Some(V1_HEADER));
}

fn config_ok(r: &HttpResponse) -> serde_json::Value {
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("Content-Type"), Some(JSON_CT));
    r.json()
}

#[test]
fn channel_settings_are_set_read_back_and_inherited() {
    let s = Server::start(&["--msg-timeout=30s"]);
    let r = s.post(
        "/channel/config?topic=orders&channel=billing",
        br#"{"max_attempts": 5, "ordered": true, "message_ttl": "1h"}"#,
    );
    let eff = config_ok(&r);
    assert_eq!(
        eff,
        json!({"max_attempts": 5, "dead_letter_topic": "orders.dead", "ordered": true,
               "message_ttl": "1h0m0s", "expired": "dead_letter", "msg_timeout": "30s",
               "mem_queue_size": 10000, "replicas": 1})
    );
    // The order of the keys is documented: check it on the raw text.
    let keys = OJson::parse(&r.body);
    assert_eq!(
        keys.keys(),
        [
            "max_attempts",
            "dead_letter_topic",
            "ordered",
            "message_ttl",
            "expired",
            "msg_timeout",
            "mem_queue_size",
            "replicas"
        ]
    );
    assert_eq!(
        config_ok(&s.get("/channel/config?topic=orders&channel=billing")),
        eff
    );
    // A topic's settings are its channels' defaults; the channel's own win.
    let t = config_ok(&s.post(
        "/topic/config?topic=orders",
        br#"{"max_attempts": 9, "msg_timeout": "10s", "dead_letter_topic": "errors"}"#,
    ));
    assert_eq!(t["max_attempts"], 9);
    let c = config_ok(&s.get("/channel/config?topic=orders&channel=billing"));
    assert_eq!(
        (
            &c["max_attempts"],
            &c["msg_timeout"],
            &c["dead_letter_topic"]
        ),
        (&json!(5), &json!("10s"), &json!("errors"))
    );
    // null unsets: back to the topic's value
    let c = config_ok(&s.post(
        "/channel/config?topic=orders&channel=billing",
        br#"{"max_attempts": null}"#,
    ));
    assert_eq!(c["max_attempts"], 9);
    // integer milliseconds are durations too
    let c = config_ok(&s.post(
        "/channel/config?topic=orders&channel=other",
        br#"{"msg_timeout": 1500}"#,
    ));
    assert_eq!(c["msg_timeout"], "1.5s");
}

#[test]
fn bad_settings_are_400_and_change_nothing() {
    let s = Server::start(&[]);
    assert_eq!(
        config_ok(&s.post(
            "/channel/config?topic=t&channel=c",
            br#"{"max_attempts": 3}"#
        ))["max_attempts"],
        3
    );
    for (body, msg) in [
        (
            &br#"{"max_attempts": -1}"#[..],
            "INVALID_CONFIG: max_attempts: expected an integer from 0 (no limit) to 65535, got -1",
        ),
        (
            br#"{"max_attempts": 4, "ordered": "yes"}"#,
            "INVALID_CONFIG: ordered: expected true or false, got \"yes\"",
        ),
        (
            br#"{"message_ttl": "soon"}"#,
            "INVALID_CONFIG: message_ttl: expected a duration (\"90s\", \"1h\") or integer milliseconds, got \"soon\"",
        ),
        (
            br#"{"msg_timeout": "16m"}"#,
            "INVALID_CONFIG: msg_timeout: expected a duration from 1ms to --max-msg-timeout (15m0s), got \"16m\"",
        ),
        (
            br#"{"dead_letter_topic": "t"}"#,
            "INVALID_CONFIG: dead_letter_topic: must not be the topic itself",
        ),
        (
            br#"{"expired": "keep"}"#,
            "INVALID_CONFIG: expired: expected \"dead_letter\" or \"drop\", got \"keep\"",
        ),
        (
            br#"{"mem_queue_size": 1.5}"#,
            "INVALID_CONFIG: mem_queue_size: expected an integer from 0 to 2147483647, got 1.5",
        ),
        (
            br#"{"colour": "blue"}"#,
            "INVALID_CONFIG: unknown setting \"colour\" (known: max_attempts, dead_letter_topic, ordered, message_ttl, expired, msg_timeout, mem_queue_size, replicas)",
        ),
        (br#"[1, 2]"#, "INVALID_CONFIG: settings must be a JSON object"),
    ] {
        let r = s.post("/channel/config?topic=t&channel=c", body);
        assert_refused(&r, msg);
    }
    let r = s.post("/channel/config?topic=t&channel=c", b"{nope");
    assert_eq!(r.status, 400);
    assert!(r.text().contains("INVALID_JSON"), "{}", r.text());
    assert_eq!(
        config_ok(&s.get("/channel/config?topic=t&channel=c"))["max_attempts"],
        3,
        "unchanged"
    );
    // A refused change creates nothing.
    let r = s.post(
        "/channel/config?topic=fresh&channel=c",
        br#"{"ordered": 1}"#,
    );
    assert_eq!(r.status, 400);
    assert!(s.topic_stats("fresh").is_none());
    // Arguments, as nsqd's channel routes check them.
    assert_err(&s.post("/channel/config", b"{}"), 400, "MISSING_ARG_TOPIC");
    assert_err(
        &s.post("/channel/config?topic=t", b"{}"),
        400,
        "MISSING_ARG_CHANNEL",
    );
    assert_err(
        &s.post("/channel/config?topic=a%20b&channel=c", b"{}"),
        400,
        "INVALID_TOPIC",
    );
    assert_err(
        &s.post("/channel/config?topic=t&channel=a%20b", b"{}"),
        400,
        "INVALID_CHANNEL",
    );
    assert_err(&s.post("/topic/config", b"{}"), 400, "MISSING_ARG_TOPIC");
    assert_err(&s.get("/topic/config?topic=nosuch"), 404, "TOPIC_NOT_FOUND");
    assert_err(
        &s.get("/channel/config?topic=t&channel=nosuch"),
        404,
        "CHANNEL_NOT_FOUND",
    );
    assert_err(
        &s.get("/channel/config?topic=t&channel=%zz"),
        400,
        "INVALID_REQUEST",
    );
    let big = vec![b' '; 70 * 1024];
    assert_err(&s.post("/topic/config?topic=t", &big), 413, "BODY_TOO_BIG");
}

#[test]
fn stats_show_settings_only_where_set() {
    let s = Server::start(&[]);
    assert_empty_ok(&s.post("/topic/create?topic=t", b""));
    assert_empty_ok(&s.post("/channel/create?topic=t&channel=plain", b""));
    assert_empty_ok(&s.post("/topic/create?topic=plain", b""));
    let before = s.stats();
    config_ok(&s.post(
        "/channel/config?topic=t&channel=dlq",
        br#"{"max_attempts": 2}"#,
    ));
    config_ok(&s.post("/topic/config?topic=t2", br#"{"message_ttl": "1m"}"#));
    let plain = s.channel_stats("t", "plain").unwrap();
    let keys: Vec<&String> = plain.as_object().unwrap().keys().collect();
    assert!(
        !keys.iter().any(|k| *k == "config" || *k == "dead_letters"),
        "a channel without settings shows nsqd's keys only: {keys:?}"
    );
    let t_before = before["topics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["topic_name"] == "t")
        .unwrap();
    assert_eq!(
        t_before["channels"][0], plain,
        "unchanged by other channels' settings"
    );
    let dlq = s.channel_stats("t", "dlq").unwrap();
    assert_eq!(dlq["config"], json!({"max_attempts": 2}));
    assert_eq!(
        dlq["dead_letters"],
        json!({"topic": "t.dead", "delivery_limit": 0, "rejected": 0, "expired": 0,
               "expired_dropped": 0})
    );
    assert_eq!(
        s.topic_stats("t2").unwrap()["config"],
        json!({"message_ttl": "1m0s"})
    );
    assert!(s.topic_stats("plain").unwrap().get("config").is_none());
    let m = s.get("/metrics").text();
    assert!(
        m.contains(
            "nsq_channel_dead_letters_total{topic=\"t\",channel=\"dlq\",reason=\"delivery_limit\"} 0"
        ),
        "{m}"
    );
    assert!(!m.contains("channel=\"plain\",reason"));
}

#[test]
fn settings_survive_a_restart_in_nsqd_dat() {
    let s = Server::start(&[]);
    config_ok(&s.post(
        "/channel/config?topic=t&channel=c",
        br#"{"max_attempts": 4, "ordered": true}"#,
    ));
    config_ok(&s.post("/topic/config?topic=t", br#"{"mem_queue_size": 7}"#));
    assert_empty_ok(&s.post("/channel/create?topic=t&channel=plain", b""));
    // Creations reach nsqd.dat in the background; settings before the answer.
    let read = || -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(s.data_path.join("nsqd.dat")).unwrap()).unwrap()
    };
    assert!(wait_until(std::time::Duration::from_secs(10), || read()
        .to_string()
        .contains("\"plain\"")));
    let md = read();
    let t = &md["topics"][0];
    assert_eq!(t["nsqr_config"], json!({"mem_queue_size": 7}));
    let chans = t["channels"].as_array().unwrap();
    let c = chans.iter().find(|c| c["name"] == "c").unwrap();
    assert_eq!(
        c["nsqr_config"],
        json!({"max_attempts": 4, "ordered": true})
    );
    let plain = chans.iter().find(|c| c["name"] == "plain").unwrap();
    assert_eq!(
        plain.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["name", "paused"],
        "nsqd's fields only where nothing is set"
    );
    let (_, dir) = s.terminate_keep();
    let s = Server::start_in(dir, &[]);
    let c = config_ok(&s.get("/channel/config?topic=t&channel=c"));
    assert_eq!(
        (&c["max_attempts"], &c["ordered"]),
        (&json!(4), &json!(true))
    );
    assert_eq!(c["mem_queue_size"], 7, "inherited from the topic");
    if let Some(nsqd) = std::env::var_os("NSQD_REF_BIN") {
        // nsqd reads the file (ignoring nsqr_config) and recreates every topic and channel.
        let (_, dir) = s.terminate_keep();
        let r = Server::start_bin_in(nsqd.into(), dir, &[]);
        let names: Vec<String> = r.topic_stats("t").unwrap()["channels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["channel_name"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(names, ["c", "plain"]);
    }
}

#[test]
fn the_config_file_declares_topics_and_channels() {
    let dir = temp_dir();
    let file = dir.join("nsqrd.toml");
    std::fs::write(
        &file,
        "[topics.orders]\nmessage_ttl = \"2h\"\n\
         [topics.orders.channels.billing]\nmax_attempts = 3\nexpired = \"drop\"\n",
    )
    .unwrap();
    let arg = format!("--config={}", file.display());
    let s = Server::start(&[&arg]);
    let c = config_ok(&s.get("/channel/config?topic=orders&channel=billing"));
    assert_eq!(
        (&c["max_attempts"], &c["message_ttl"], &c["expired"]),
        (&json!(3), &json!("2h0m0s"), &json!("drop"))
    );
    drop(s);
    std::fs::write(
        &file,
        "[topics.orders.channels.billing]\nmax_attempts = \"x\"\n",
    )
    .unwrap();
    let data = format!("--data-path={}", dir.display());
    let (code, out) = run_to_exit(&[
        &arg,
        &data,
        "--tcp-address=127.0.0.1:0",
        "--http-address=127.0.0.1:0",
    ]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("invalid setting in topics.orders.channels.billing: max_attempts"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
