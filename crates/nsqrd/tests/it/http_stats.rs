//! `/stats`: JSON schema and key order at every level (top, topic, channel, client, producer,
//! pub_counts, memory, e2e), values in a scripted scenario, sorting, the `topic` / `channel` /
//! `include_clients` / `include_mem` parameters, and the text format with its exact padding.
use crate::common::*;
use crate::http_common::*;
use serde_json::{json, Value};
use std::time::Duration;

#[rustfmt::skip]
const TOP: [&str; 6] = ["version", "health", "start_time", "topics", "memory", "producers"];
#[rustfmt::skip]
const TOPIC: [&str; 8] = [
    "topic_name", "channels", "depth", "backend_depth", "message_count", "message_bytes",
    "paused", "e2e_processing_latency",
];
#[rustfmt::skip]
const MEMORY: [&str; 9] = [
    "heap_objects", "heap_idle_bytes", "heap_in_use_bytes", "heap_released_bytes",
    "gc_pause_usec_100", "gc_pause_usec_99", "gc_pause_usec_95", "next_gc_bytes", "gc_total_runs",
];

/// Channel keys in order; `?` marks keys that may be absent (post-1.3.0 / omitempty).
#[rustfmt::skip]
const CHANNEL: [&str; 15] = [
    "channel_name", "depth", "backend_depth", "in_flight_count", "deferred_count",
    "message_count", "?zone_local_msg_count", "?region_local_msg_count", "?global_msg_count",
    "requeue_count", "timeout_count", "client_count", "clients", "paused",
    "e2e_processing_latency",
];

/// Client keys in order (auth keys are omitted when not authed; pub_counts only for producers).
#[rustfmt::skip]
fn client_keys(with_pub_counts: bool) -> Vec<&'static str> {
    let mut v = vec![
        "client_id", "hostname", "version", "remote_address", "state", "ready_count",
        "in_flight_count", "message_count", "?zone_local_msg_count", "?region_local_msg_count",
        "?global_msg_count", "finish_count", "requeue_count", "connect_ts", "sample_rate",
        "deflate", "snappy", "user_agent", "?topology_zone", "?topology_region",
    ];
    if with_pub_counts {
        v.push("pub_counts");
    }
    v.extend([
        "tls", "tls_cipher_suite", "tls_version", "tls_negotiated_protocol",
        "tls_negotiated_protocol_is_mutual",
    ]);
    v
}

/// Assert `actual` equals `expected` in order, where `?key` entries may be missing.
#[track_caller]
fn assert_keys(actual: &OJson, expected: &[&str]) {
    let got = actual.keys();
    let mut i = 0;
    for e in expected {
        let (key, optional) = match e.strip_prefix('?') {
            Some(k) => (k, true),
            None => (*e, false),
        };
        if got.get(i) == Some(&key) {
            i += 1;
        } else if !optional {
            panic!("missing or misplaced key {key}: got {got:?}");
        }
    }
    assert_eq!(
        i,
        got.len(),
        "unexpected keys: got {got:?}, expected {expected:?}"
    );
}

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64
}

/// A consumer that IDENTIFYs with the given JSON, subscribes, and sets RDY.
fn identified_consumer(s: &Server, ident: &str, topic: &str, ch: &str, rdy: u32) -> Conn {
    let mut c = s.connect();
    assert_eq!(c.identify(ident), Frame::Response(b"OK".to_vec()));
    c.sub(topic, ch);
    c.cmd(&format!("RDY {rdy}"));
    c
}

fn local_addr(c: &Conn) -> String {
    c.s.local_addr().expect("local addr").to_string()
}

fn text_stats(s: &Server, query: &str) -> String {
    let r = s.get(&format!("/stats{query}"));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Content-Type"), Some(TEXT_CT));
    assert_eq!(r.header("X-NSQ-Content-Type"), Some(V1_HEADER));
    r.text()
}

#[test]
fn empty_instance_json() {
    let s = Server::start(&[]);
    let o = get_ojson(&s, "/stats?format=json");
    assert_keys(&o, &TOP);
    assert_keys(o.get("memory"), &MEMORY);
    for k in MEMORY {
        assert!(
            matches!(o.get("memory").get(k), OJson::Num(n) if n.parse::<u64>().is_ok()),
            "memory.{k} is not an unsigned integer"
        );
    }
    let v = s.stats();
    assert!(!v["version"].as_str().expect("version").is_empty());
    assert_eq!(v["health"], "OK");
    let st = v["start_time"].as_i64().expect("start_time");
    assert!((now_secs() - 60..=now_secs() + 1).contains(&st));
    assert_eq!(v["topics"], json!([]));
    assert_eq!(v["producers"], Value::Null);
}

#[test]
fn include_mem_parameter() {
    let s = Server::start(&[]);
    let without: Vec<&str> = TOP.iter().copied().filter(|k| *k != "memory").collect();
    for q in ["false", "0"] {
        let o = get_ojson(&s, &format!("/stats?format=json&include_mem={q}"));
        assert_keys(&o, &without);
    }
    for q in ["true", "1", "yes", ""] {
        let o = get_ojson(&s, &format!("/stats?format=json&include_mem={q}"));
        assert_keys(&o, &TOP);
    }
}

#[test]
fn topic_and_channel_schema_and_order() {
    let s = Server::start(&[]);
    assert_empty_ok(&s.post("/topic/create?topic=t", b""));
    assert_empty_ok(&s.post("/channel/create?topic=t&channel=c", b""));
    let o = get_ojson(&s, "/stats?format=json");
    let t = o.get("topics").at(0);
    assert_keys(t, &TOPIC);
    let c = t.get("channels").at(0);
    assert_keys(c, &CHANNEL);
    let e2e = json!({"count": 0, "percentiles": null});
    assert_keys(c.get("e2e_processing_latency"), &["count", "percentiles"]);
    let v = s.stats();
    assert_eq!(v["topics"][0]["e2e_processing_latency"], e2e);
    assert_eq!(v["topics"][0]["channels"][0]["e2e_processing_latency"], e2e);
    assert_eq!(
        v["topics"][0]["channels"][0],
        json!({
            "channel_name": "c", "depth": 0, "backend_depth": 0, "in_flight_count": 0,
            "deferred_count": 0, "message_count": 0, "requeue_count": 0, "timeout_count": 0,
            "client_count": 0, "clients": [], "paused": false, "e2e_processing_latency": e2e
        })
    );
}

#[test]
fn consumer_client_fields() {
    let s = Server::start(&[]);
    let ident = r#"{"client_id":"cid","hostname":"hn","user_agent":"ua/1.0"}"#;
    let mut c = identified_consumer(&s, ident, "cl", "ch", 3);
    assert_text_ok(&s.post("/mpub?topic=cl", b"a\nb"), "OK");
    let m1 = c.expect_message();
    let _m2 = c.expect_message();
    let o = get_ojson(&s, "/stats?format=json");
    let cl = o
        .get("topics")
        .at(0)
        .get("channels")
        .at(0)
        .get("clients")
        .at(0);
    assert_keys(cl, &client_keys(false));
    let v = s.channel_stats("cl", "ch").expect("ch")["clients"][0].clone();
    assert_eq!(v["client_id"], "cid");
    assert_eq!(v["hostname"], "hn");
    assert_eq!(v["version"], "V2");
    assert_eq!(v["remote_address"], local_addr(&c));
    assert_eq!(v["state"], 3);
    assert_eq!(v["ready_count"], 3);
    assert_eq!(v["in_flight_count"], 2);
    assert_eq!(v["message_count"], 2);
    assert_eq!(v["finish_count"], 0);
    assert_eq!(v["requeue_count"], 0);
    let ts = v["connect_ts"].as_i64().expect("connect_ts");
    assert!((now_secs() - 30..=now_secs() + 1).contains(&ts));
    assert_eq!(v["sample_rate"], 0);
    assert_eq!(v["deflate"], false);
    assert_eq!(v["snappy"], false);
    assert_eq!(v["user_agent"], "ua/1.0");
    assert_eq!(v["tls"], false);
    assert_eq!(v["tls_cipher_suite"], "");
    assert_eq!(v["tls_version"], "");
    assert_eq!(v["tls_negotiated_protocol"], "");
    assert_eq!(v["tls_negotiated_protocol_is_mutual"], false);
    if v.get("topology_zone").is_some() {
        assert_eq!(
            (v["topology_zone"].as_str(), v["topology_region"].as_str()),
            (Some(""), Some(""))
        );
    }
    // FIN and CLS are reflected.
    c.cmd(&format!("FIN {}", m1.id_str()));
    c.cmd("CLS");
    assert_eq!(
        c.read_non_heartbeat(),
        Frame::Response(b"CLOSE_WAIT".to_vec())
    );
    let v = s.channel_stats("cl", "ch").expect("ch")["clients"][0].clone();
    assert_eq!(
        (v["finish_count"].as_i64(), v["in_flight_count"].as_i64()),
        (Some(1), Some(1))
    );
    assert_eq!(
        (v["state"].as_i64(), v["ready_count"].as_i64()),
        (Some(4), Some(0))
    );
}

#[test]
fn client_defaults_without_identify_and_sample_rate() {
    let s = Server::start(&[]);
    let mut plain = s.connect();
    plain.sub("cd", "plain");
    let sampled = identified_consumer(&s, r#"{"sample_rate":42}"#, "cd", "sampled", 0);
    let p = s.channel_stats("cd", "plain").expect("plain")["clients"][0].clone();
    // Before IDENTIFY client_id and hostname are the remote IP.
    assert_eq!(p["client_id"], "127.0.0.1");
    assert_eq!(p["hostname"], "127.0.0.1");
    assert_eq!(p["user_agent"], "");
    assert_eq!(p["ready_count"], 0);
    assert_eq!(p["remote_address"], local_addr(&plain));
    let q = s.channel_stats("cd", "sampled").expect("sampled")["clients"][0].clone();
    assert_eq!(q["sample_rate"], 42);
    assert_eq!(
        q["client_id"], "",
        "IDENTIFY without client_id stores an empty one"
    );
    assert_eq!(q["remote_address"], local_addr(&sampled));
}

#[test]
fn producers_list_tcp_publishers_only() {
    let s = Server::start(&[]);
    assert_text_ok(&s.post("/pub?topic=pa", b"http"), "OK");
    assert_eq!(
        s.stats()["producers"],
        Value::Null,
        "HTTP publishers are not producers"
    );
    let mut p = s.connect();
    p.publish("pa", b"x");
    p.publish("pa", b"y");
    p.publish("pb", b"z");
    let o = get_ojson(&s, "/stats?format=json");
    let prod = o.get("producers").at(0);
    assert_keys(prod, &client_keys(true));
    assert_keys(prod.get("pub_counts").at(0), &["topic", "count"]);
    let v = s.stats();
    let producers = v["producers"].as_array().expect("producers");
    assert_eq!(producers.len(), 1);
    let pr = &producers[0];
    assert_eq!(pr["client_id"], "127.0.0.1");
    assert_eq!(pr["hostname"], "127.0.0.1");
    assert_eq!(pr["remote_address"], local_addr(&p));
    assert_eq!(pr["state"], 0);
    assert_eq!(pr["version"], "V2");
    // Upstream lists at most one topic; every entry listed must be right.
    let counts = pr["pub_counts"].as_array().expect("pub_counts");
    assert!(!counts.is_empty());
    for e in counts {
        let ok =
            *e == json!({"topic": "pa", "count": 2}) || *e == json!({"topic": "pb", "count": 1});
        assert!(ok, "bad pub_count {e}");
    }
    // With topic= only that topic's count is listed.
    let v: Value = s.get("/stats?format=json&topic=pb").json();
    assert_eq!(
        v["producers"][0]["pub_counts"],
        json!([{"topic": "pb", "count": 1}])
    );
    // Gone once disconnected.
    p.close();
    assert!(wait_until(Duration::from_secs(5), || s.stats()
        ["producers"]
        .is_null()));
}

#[test]
fn consumer_that_publishes_is_listed_in_both_places() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    c.sub("both", "ch");
    c.publish("both", b"self");
    let v = s.stats();
    assert_eq!(v["topics"][0]["channels"][0]["client_count"], 1);
    let pr = &v["producers"][0];
    assert_eq!(pr["remote_address"], local_addr(&c));
    assert_eq!(pr["state"], 3);
    assert_eq!(pr["pub_counts"], json!([{"topic": "both", "count": 1}]));
}

#[test]
fn topics_and_channels_are_sorted_by_name() {
    let s = Server::start(&[]);
    for t in ["zeta", "a_b", "Mid", "a.b", "a", "a-b"] {
        assert_empty_ok(&s.post(&format!("/topic/create?topic={t}"), b""));
    }
    for c in ["z", "B", "b", "a%23ephemeral", "a"] {
        assert_empty_ok(&s.post(&format!("/channel/create?topic=a&channel={c}"), b""));
    }
    let v = s.stats();
    let names: Vec<&str> = v["topics"]
        .as_array()
        .expect("topics")
        .iter()
        .map(|t| t["topic_name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["Mid", "a", "a-b", "a.b", "a_b", "zeta"]);
    let chans: Vec<&str> = v["topics"][1]["channels"]
        .as_array()
        .expect("channels")
        .iter()
        .map(|c| c["channel_name"].as_str().expect("name"))
        .collect();
    assert_eq!(chans, ["B", "a", "a#ephemeral", "b", "z"]);
}

#[test]
fn topic_and_channel_filters() {
    let s = Server::start(&[]);
    let _c1 = identified_consumer(&s, "{}", "f1", "ch", 0);
    let _c2 = identified_consumer(&s, "{}", "f2", "ch", 0);
    let _c3 = identified_consumer(&s, "{}", "f2", "other", 0);
    let mut p = s.connect();
    p.publish("f1", b"x");

    let v: Value = s.get("/stats?format=json&topic=f2").json();
    let ts = v["topics"].as_array().expect("topics");
    assert_eq!(ts.len(), 1);
    assert_eq!(ts[0]["topic_name"], "f2");
    assert_eq!(ts[0]["channels"].as_array().expect("channels").len(), 2);

    let v: Value = s.get("/stats?format=json&topic=f2&channel=other").json();
    let chans = v["topics"][0]["channels"].as_array().expect("channels");
    assert_eq!(chans.len(), 1);
    assert_eq!(chans[0]["channel_name"], "other");

    // Unknown channel in a known topic: the topic is left out.
    let v: Value = s.get("/stats?format=json&topic=f2&channel=nosuch").json();
    assert_eq!(v["topics"], json!([]));

    // channel= alone filters every topic.
    let v: Value = s.get("/stats?format=json&channel=other").json();
    let ts = v["topics"].as_array().expect("topics");
    assert_eq!(ts.len(), 1);
    assert_eq!(ts[0]["topic_name"], "f2");

    // Unknown topic: topics (and producers) are null.
    let o = get_ojson(&s, "/stats?format=json&topic=nosuch");
    assert_keys(&o, &TOP);
    let v: Value = s.get("/stats?format=json&topic=nosuch").json();
    assert_eq!(v["topics"], Value::Null);
    assert_eq!(v["producers"], Value::Null);
    assert_eq!(v["health"], "OK");
    let text = text_stats(&s, "?topic=nosuch");
    assert!(text.contains("\nTopics: None\n"), "{text}");
    assert!(text.contains("\nProducers: None\n"), "{text}");
}

#[test]
fn include_clients_parameter() {
    let s = Server::start(&[]);
    let _c = identified_consumer(&s, "{}", "ic", "ch", 0);
    let mut p = s.connect();
    p.publish("ic", b"x");
    for q in ["false", "0"] {
        let v: Value = s
            .get(&format!("/stats?format=json&include_clients={q}"))
            .json();
        let ch = &v["topics"][0]["channels"][0];
        assert_eq!(ch["clients"], Value::Null, "include_clients={q}");
        assert_eq!(ch["client_count"], 1);
        assert_eq!(v["producers"], Value::Null);
    }
    for q in ["true", "1", "bogus"] {
        let v: Value = s
            .get(&format!("/stats?format=json&include_clients={q}"))
            .json();
        let ch = &v["topics"][0]["channels"][0];
        assert_eq!(
            ch["clients"].as_array().map(Vec::len),
            Some(1),
            "include_clients={q}"
        );
        assert_eq!(v["producers"].as_array().map(Vec::len), Some(1));
    }
}

#[test]
fn counters_in_a_scripted_scenario() {
    let s = Server::start(&[]);
    let ident = r#"{"msg_timeout":1000,"client_id":"sc"}"#;
    let mut c = identified_consumer(&s, ident, "sc", "c1", 0);
    assert_empty_ok(&s.post("/channel/create?topic=sc&channel=c2", b""));
    assert_text_ok(&s.post("/mpub?topic=sc", b"m1\nm2\nm3\nm4\nm5\nm6"), "OK");
    assert_text_ok(&s.post("/pub?topic=sc&defer=60000", b"deferred"), "OK");
    assert!(wait_until(Duration::from_secs(5), || {
        let ch = s.channel_stats("sc", "c1").expect("c1");
        ch["depth"] == 6 && ch["deferred_count"] == 1
    }));
    let t = s.topic_stats("sc").expect("sc");
    assert_eq!(t["message_count"], 7);
    assert_eq!(t["message_bytes"], 12 + 8);
    assert_eq!(t["depth"], 0);
    let ch = s.channel_stats("sc", "c1").expect("c1");
    assert_eq!(
        (ch["message_count"].as_i64(), ch["in_flight_count"].as_i64()),
        (Some(7), Some(0))
    );

    c.cmd("RDY 4");
    let ms: Vec<Msg> = (0..4).map(|_| c.expect_message()).collect();
    c.cmd("RDY 0");
    assert!(wait_until(Duration::from_secs(5), || {
        let ch = s.channel_stats("sc", "c1").expect("c1");
        ch["clients"][0]["ready_count"] == 0 && ch["in_flight_count"] == 4 && ch["depth"] == 2
    }));
    c.cmd(&format!("FIN {}", ms[0].id_str()));
    c.cmd(&format!("REQ {} 0", ms[1].id_str()));
    c.cmd(&format!("REQ {} 60000", ms[2].id_str()));
    assert!(wait_until(Duration::from_secs(5), || {
        let ch = s.channel_stats("sc", "c1").expect("c1");
        ch["requeue_count"] == 2 && ch["clients"][0]["finish_count"] == 1
    }));
    let ch = s.channel_stats("sc", "c1").expect("c1");
    assert_eq!(ch["depth"], 3);
    assert_eq!(ch["in_flight_count"], 1);
    assert_eq!(ch["deferred_count"], 2);
    assert_eq!(ch["timeout_count"], 0);
    // The last in-flight message times out after msg_timeout (scanner slack).
    assert!(wait_until(Duration::from_secs(9), || {
        s.channel_stats("sc", "c1").expect("c1")["timeout_count"] == 1
    }));
    let ch = s.channel_stats("sc", "c1").expect("c1");
    let got: Vec<i64> = [
        "depth",
        "in_flight_count",
        "deferred_count",
        "message_count",
        "requeue_count",
        "timeout_count",
        "client_count",
    ]
    .iter()
    .map(|k| ch[k].as_i64().expect(k))
    .collect();
    assert_eq!(got, [4, 0, 2, 7, 2, 1, 1]);
    let cl = &ch["clients"][0];
    let got: Vec<i64> = [
        "ready_count",
        "in_flight_count",
        "message_count",
        "finish_count",
        "requeue_count",
    ]
    .iter()
    .map(|k| cl[k].as_i64().expect(k))
    .collect();
    assert_eq!(got, [0, 0, 4, 1, 2]);
    // The other channel only buffered its copies.
    let c2 = s.channel_stats("sc", "c2").expect("c2");
    assert_eq!(
        (c2["depth"].as_i64(), c2["deferred_count"].as_i64()),
        (Some(6), Some(1))
    );
    assert_eq!(c2["message_count"], 7);

    // The same numbers in the text format, exactly padded.
    let text = text_stats(&s, "?include_clients=false&include_mem=false");
    let expect = "\nTopics:\n   [sc             ] depth: 0     be-depth: 0     msgs: 7        e2e%: \n      [c1                       ] depth: 4     be-depth: 0     inflt: 0    def: 2    re-q: 2     timeout: 1     msgs: 7        e2e%: \n      [c2                       ] depth: 6     be-depth: 0     inflt: 0    def: 1    re-q: 0     timeout: 0     msgs: 7        e2e%: \n\nProducers: None\n";
    assert!(text.ends_with(expect), "text stats:\n{text}");
}

#[test]
fn backend_depth_with_small_mem_queue() {
    let s = Server::start(&["--mem-queue-size=2"]);
    assert_empty_ok(&s.post("/topic/create?topic=bd", b""));
    assert_empty_ok(&s.post("/channel/create?topic=bd&channel=c", b""));
    assert_text_ok(&s.post("/mpub?topic=bd", b"1\n2\n3\n4\n5\n6\n7\n8"), "OK");
    let on_disk = if has_disk_queue() { 6 } else { 0 };
    assert!(wait_until(Duration::from_secs(5), || {
        let c = s.channel_stats("bd", "c").expect("c");
        c["depth"] == 8 && c["backend_depth"] == on_disk
    }));
    let text = text_stats(&s, "?topic=bd");
    assert!(
        text.contains(&format!("] depth: 8     be-depth: {on_disk:<5} inflt: 0 ")),
        "{text}"
    );
}

#[test]
fn text_format_layout() {
    let s = Server::start(&[]);
    let text = text_stats(&s, "");
    let lines: Vec<&str> = text.split('\n').collect();
    assert!(lines[0].starts_with("nsqd v"), "{text}");
    assert!(
        lines[1].starts_with("start_time ") && lines[1].len() >= 31,
        "{text}"
    );
    assert!(lines[2].starts_with("uptime "), "{text}");
    assert_eq!(lines[3..6], ["", "Health: OK", ""]);
    assert_eq!(lines[6], "Memory:");
    for (i, k) in MEMORY.iter().enumerate() {
        let l = lines[7 + i];
        let prefix = format!("   {k:<25}\t");
        assert!(l.starts_with(&prefix), "memory line {l:?}");
        assert!(
            l[prefix.len()..].parse::<u64>().is_ok(),
            "memory value {l:?}"
        );
    }
    assert_eq!(lines[16..], ["", "Topics: None", "", "Producers: None", ""]);
    // Without memory the Memory block disappears.
    let text = text_stats(&s, "?include_mem=false");
    let lines: Vec<&str> = text.split('\n').collect();
    assert_eq!(
        lines[3..],
        [
            "",
            "Health: OK",
            "",
            "Topics: None",
            "",
            "Producers: None",
            ""
        ]
    );
    // Any format other than json is text.
    assert!(text_stats(&s, "?format=xml").starts_with("nsqd v"));
}

#[test]
fn text_format_clients_producers_and_paused() {
    let s = Server::start(&[]);
    let ident = r#"{"hostname":"hn","user_agent":"ua/1.0"}"#;
    let mut c = identified_consumer(&s, ident, "tx", "ch", 3);
    let mut p = s.connect();
    p.publish("tx", b"12345");
    p.publish("tx", b"6789");
    let _m = c.expect_message();
    let _m = c.expect_message();
    assert_empty_ok(&s.post("/topic/create?topic=paused", b""));
    assert_empty_ok(&s.post("/channel/create?topic=paused&channel=pc", b""));
    assert_empty_ok(&s.post("/topic/pause?topic=paused", b""));
    assert_empty_ok(&s.post("/channel/pause?topic=paused&channel=pc", b""));
    let text = text_stats(&s, "?include_mem=false");
    let cport = c.s.local_addr().expect("addr").port();
    let pport = p.s.local_addr().expect("addr").port();
    let client = format!(
        "        [V2 {:<21}] state: 3 inflt: 2    rdy: 3    fin: 0        re-q: 0        msgs: 2        connected: ",
        format!("hn:{cport} ua/1.0")
    );
    let producer = format!(
        "   [V2 {:<21}] msgs: 2        topics: tx=2 connected: ",
        format!("127.0.0.1:{pport} ")
    );
    let expect_prefix = [
        "Topics:",
        "*P [paused         ] depth: 0     be-depth: 0     msgs: 0        e2e%: ",
        "   *P [pc                       ] depth: 0     be-depth: 0     inflt: 0    def: 0    re-q: 0     timeout: 0     msgs: 0        e2e%: ",
        "",
        "   [tx             ] depth: 0     be-depth: 0     msgs: 2        e2e%: ",
        "      [ch                       ] depth: 0     be-depth: 0     inflt: 2    def: 0    re-q: 0     timeout: 0     msgs: 2        e2e%: ",
    ];
    let lines: Vec<&str> = text.split('\n').collect();
    let at = lines
        .iter()
        .position(|l| *l == "Topics:")
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(lines[at..at + 6], expect_prefix, "{text}");
    assert!(
        lines[at + 6].starts_with(&client),
        "{:?}\n{client:?}",
        lines[at + 6]
    );
    assert_eq!(lines[at + 7..at + 9], ["", "Producers:"], "{text}");
    assert!(
        lines[at + 9].starts_with(&producer),
        "{:?}\n{producer:?}",
        lines[at + 9]
    );
    assert!(
        lines[at + 9][producer.len()..].ends_with('s'),
        "connected duration"
    );
    assert_eq!(lines[at + 10..], [""], "{text}");
}

#[test]
fn long_names_are_not_truncated_in_text() {
    let s = Server::start(&[]);
    let t = "a".repeat(20);
    let c = "b".repeat(30);
    assert_empty_ok(&s.post(&format!("/topic/create?topic={t}"), b""));
    assert_empty_ok(&s.post(&format!("/channel/create?topic={t}&channel={c}"), b""));
    let text = text_stats(&s, "?include_mem=false");
    assert!(text.contains(&format!("\n   [{t}] depth: 0 ")), "{text}");
    assert!(text.contains(&format!("\n      [{c}] depth: 0 ")), "{text}");
}

#[test]
fn e2e_percentiles_shape() {
    let s = Server::start(&[
        "--e2e-processing-latency-percentile=0.5",
        "--e2e-processing-latency-percentile=0.99,1.0",
    ]);
    assert_empty_ok(&s.post("/topic/create?topic=lonely", b""));
    let mut c = consumer(&s, "lat", "ch", 1);
    assert_eq!(
        s.topic_stats("lonely").expect("lonely")["e2e_processing_latency"],
        json!({"count": 0, "percentiles": null}),
        "a topic without channels reports null percentiles"
    );
    let quantiles = |e: &Value| -> Vec<(f64, f64)> {
        e["percentiles"]
            .as_array()
            .expect("percentiles")
            .iter()
            .map(|p| {
                (
                    p["quantile"].as_f64().expect("q"),
                    p["value"].as_f64().expect("v"),
                )
            })
            .collect()
    };
    let ch = &s.channel_stats("lat", "ch").expect("ch")["e2e_processing_latency"];
    assert_eq!(ch["count"], 0);
    assert_eq!(quantiles(ch), [(1.0, 0.0), (0.99, 0.0), (0.5, 0.0)]);
    let o = get_ojson(&s, "/stats?format=json");
    let p0 = o.get("topics").at(0).get("channels").at(0);
    assert_keys(
        p0.get("e2e_processing_latency").get("percentiles").at(0),
        &["quantile", "value"],
    );
    let text = text_stats(&s, "?topic=lat&include_mem=false&include_clients=false");
    assert!(
        text.contains("msgs: 0        e2e%: 0.0ns, 0.0ns, 0.0ns\n"),
        "{text}"
    );

    assert_text_ok(&s.post("/pub?topic=lat", b"x"), "OK");
    let m = c.expect_message();
    std::thread::sleep(Duration::from_millis(20));
    c.cmd(&format!("FIN {}", m.id_str()));
    assert!(wait_until(Duration::from_secs(5), || {
        s.channel_stats("lat", "ch").expect("ch")["e2e_processing_latency"]["count"] == 1
    }));
    let v = s.topic_stats("lat").expect("lat");
    for e in [
        &v["e2e_processing_latency"],
        &v["channels"][0]["e2e_processing_latency"],
    ] {
        assert_eq!(e["count"], 1);
        let q = quantiles(e);
        assert_eq!(q.iter().map(|x| x.0).collect::<Vec<_>>(), [1.0, 0.99, 0.5]);
        assert!(q.iter().all(|x| x.1 >= 20e6 && x.1 < 10e9), "{q:?}");
    }
}
