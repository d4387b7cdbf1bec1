//! Every HTTP endpoint, black box: exact bodies and headers, every error, and how TCP
//! registrations show up (ephemeral cleanup, keys outliving producers, HTTP mutations).
//! Lists are compared sorted: nsqlookupd's order is arbitrary.

use std::time::Duration;

use serde_json::json;

use crate::common::*;

/// Asserts a V1 JSON answer: status, both content-type headers, exact body.
fn assert_v1(r: &HttpResponse, status: u16, body: &str) {
    assert_eq!((r.status, r.text().as_str()), (status, body));
    assert_eq!(
        r.header("Content-Type"),
        Some("application/json; charset=utf-8")
    );
    assert_eq!(r.header("X-NSQ-Content-Type"), Some("nsq; version=1.0"));
}

/// Asserts an empty V1 success: 200, no body, no Content-Type, the X-NSQ header.
fn assert_empty_ok(r: &HttpResponse) {
    assert_eq!((r.status, r.text().as_str()), (200, ""), "{r:?}");
    assert_eq!(r.header("Content-Type"), None);
    assert_eq!(r.header("X-NSQ-Content-Type"), Some("nsq; version=1.0"));
}

fn sorted(v: &serde_json::Value) -> Vec<String> {
    let mut v: Vec<String> = v
        .as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_str().expect("str").to_string())
        .collect();
    v.sort();
    v
}

#[test]
fn ping_and_info() {
    let l = Lookupd::start(&[]);
    let r = l.get("/ping");
    assert_eq!((r.status, r.text().as_str()), (200, "OK"));
    assert_eq!(r.header("Content-Type"), Some("text/plain; charset=utf-8"));
    assert_eq!(r.header("X-NSQ-Content-Type"), None);
    assert_v1(&l.get("/info"), 200, r#"{"version":"1.3.0"}"#);
    // The Accept header clients send is ignored; so is a bearer token.
    let r = http_request(
        l.http,
        "GET",
        "/info",
        &[
            ("Accept", "application/vnd.nsq; version=1.0"),
            ("Authorization", "Bearer x"),
        ],
        b"",
    );
    assert_v1(&r, 200, r#"{"version":"1.3.0"}"#);
}

#[test]
fn empty_directory() {
    let l = Lookupd::start(&[]);
    assert_v1(&l.get("/topics"), 200, r#"{"topics":[]}"#);
    assert_v1(&l.get("/channels?topic=t"), 200, r#"{"channels":[]}"#);
    assert_v1(&l.get("/nodes"), 200, r#"{"producers":[]}"#);
    assert_v1(&l.get("/debug"), 200, "{}");
    assert_v1(
        &l.get("/lookup?topic=t"),
        404,
        r#"{"message":"TOPIC_NOT_FOUND"}"#,
    );
}

#[test]
fn missing_and_unparseable_arguments() {
    let l = Lookupd::start(&[]);
    for (m, p) in [
        ("GET", "/channels"),
        ("GET", "/lookup"),
        ("GET", "/lookup?Topic=t"),
        ("POST", "/topic/create"),
        ("POST", "/topic/delete"),
        ("POST", "/channel/create?channel=c"),
        ("POST", "/channel/delete"),
        ("POST", "/topic/tombstone?node=n"),
    ] {
        assert_v1(&l.http(m, p), 400, r#"{"message":"MISSING_ARG_TOPIC"}"#);
    }
    for (m, p) in [
        ("GET", "/lookup?topic=%zz"),
        ("GET", "/channels?topic=a;b"),
        ("POST", "/topic/create?topic=t&x=%"),
        ("POST", "/channel/delete?topic=t&channel=%g0"),
        ("POST", "/topic/tombstone?topic=t;node=n"),
    ] {
        assert_v1(&l.http(m, p), 400, r#"{"message":"INVALID_REQUEST"}"#);
    }
    // Endpoints without arguments do not parse the query at all.
    assert_v1(&l.get("/topics?%zz"), 200, r#"{"topics":[]}"#);
    assert_v1(
        &l.post("/topic/tombstone?topic=t"),
        400,
        r#"{"message":"MISSING_ARG_NODE"}"#,
    );
}

#[test]
fn lookup_nodes_and_debug_shapes() {
    let l = Lookupd::start(&[]);
    let mut a = l.nsqd("127.0.0.1", 14150, 14151);
    a.ok("REGISTER t ch");
    a.ok("REGISTER t2");
    let me = a.local_addr();
    let peer = format!(
        r#"{{"remote_address":"{me}","hostname":"nsqd-host","broadcast_address":"127.0.0.1","tcp_port":14150,"http_port":14151,"version":"1.3.0","topology_zone":"","topology_region":""}}"#
    );
    assert_v1(
        &l.get("/lookup?topic=t"),
        200,
        &format!(r#"{{"channels":["ch"],"producers":[{peer}]}}"#),
    );
    assert_v1(
        &l.get("/lookup?topic=t2"),
        200,
        &format!(r#"{{"channels":[],"producers":[{peer}]}}"#),
    );
    assert_v1(&l.get("/channels?topic=t"), 200, r#"{"channels":["ch"]}"#);
    assert_eq!(l.list("/topics", "topics"), ["t", "t2"]);

    let nodes = l.get_json("/nodes");
    let node = &nodes["producers"][0];
    assert_eq!(nodes["producers"].as_array().unwrap().len(), 1);
    let mut without_lists = node.clone();
    let obj = without_lists.as_object_mut().unwrap();
    obj.remove("tombstones");
    obj.remove("topics");
    assert_eq!(
        without_lists,
        serde_json::from_str::<serde_json::Value>(&peer).unwrap()
    );
    assert_eq!(sorted(&node["topics"]), ["t", "t2"]);
    assert_eq!(node["tombstones"], json!([false, false]));
    // Field order: the peer's, then tombstones, then topics.
    let raw = l.get("/nodes").text();
    assert!(
        raw.contains(r#""topology_region":"","tombstones":[false,false],"topics":["#),
        "{raw}"
    );

    let debug = l.get_json("/debug");
    let mut keys: Vec<&String> = debug.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["channel:t:ch", "client::", "topic:t2:", "topic:t:"]);
    let p = &debug["topic:t:"][0];
    let last = p["last_update"].as_i64().unwrap();
    assert!(last > 1_600_000_000_000_000_000, "{last}");
    assert_eq!(
        p,
        &json!({"id": me, "hostname": "nsqd-host", "broadcast_address": "127.0.0.1",
                "tcp_port": 14150, "http_port": 14151, "version": "1.3.0",
                "topology_zone": "", "topology_region": "", "last_update": last,
                "tombstoned": false, "tombstoned_at": -6795364578871345152i64})
    );
    // Keys sorted, as a Go map.
    let raw = l.get("/debug").text();
    assert!(raw.starts_with(r#"{"channel:t:ch":[{"broadcast_address":"127.0.0.1","hostname":"nsqd-host","http_port":14151,"id":"#), "{raw}");
}

#[test]
fn strings_are_escaped_like_go() {
    let l = Lookupd::start(&[]);
    let mut c = l.connect();
    let body = r#"{"broadcast_address":"a<b>&c","hostname":"h\u2028","tcp_port":1,"http_port":2,"version":"v","topology_zone":"é"}"#;
    c.identify(body.as_bytes());
    c.ok("REGISTER t");
    let raw = l.get("/lookup?topic=t").text();
    assert!(
        raw.contains(r#""hostname":"h\u2028","broadcast_address":"a\u003cb\u003e\u0026c""#),
        "{raw}"
    );
    assert!(raw.contains(r#""topology_zone":"é""#), "{raw}");
}

#[test]
fn several_producers_and_ephemeral_cleanup() {
    let l = Lookupd::start(&[]);
    let mut a = l.nsqd("127.0.0.1", 1, 2);
    let mut b = l.nsqd("127.0.0.1", 3, 4);
    a.ok("REGISTER t c#ephemeral");
    b.ok("REGISTER t c#ephemeral");
    a.ok("REGISTER e#ephemeral");
    b.ok("REGISTER e#ephemeral x");
    let (am, bm) = (a.local_addr(), b.local_addr());
    let mut both = vec![am.clone(), bm.clone()];
    both.sort();
    assert_eq!(l.lookup_producers("t").unwrap(), both);

    // An ephemeral channel key goes with its last producer; the topic stays.
    a.ok("UNREGISTER t c#ephemeral");
    assert_eq!(l.list("/channels?topic=t", "channels"), ["c#ephemeral"]);
    b.ok("UNREGISTER t c#ephemeral");
    assert!(l.list("/channels?topic=t", "channels").is_empty());
    assert_eq!(l.lookup_producers("t").unwrap(), both);

    // Topic-wide UNREGISTER of an ephemeral topic: the key goes with its last producer, its
    // (non-ephemeral) channel keys stay.
    a.ok("UNREGISTER e#ephemeral");
    assert_eq!(
        l.lookup_producers("e#ephemeral").unwrap(),
        std::slice::from_ref(&bm)
    );
    b.ok("UNREGISTER e#ephemeral");
    assert!(l.lookup_producers("e#ephemeral").is_none());
    assert_eq!(l.list("/channels?topic=e%23ephemeral", "channels"), ["x"]);

    // A non-ephemeral topic stays listed with no producers.
    a.ok("UNREGISTER t");
    b.ok("UNREGISTER t");
    assert_eq!(l.lookup_producers("t").unwrap(), Vec::<String>::new());
    assert!(l.list("/topics", "topics").contains(&"t".to_string()));
}

#[test]
fn topic_and_channel_mutations() {
    let l = Lookupd::start(&[]);
    assert_v1(
        &l.post("/topic/create?topic=bad!"),
        400,
        r#"{"message":"INVALID_ARG_TOPIC"}"#,
    );
    assert_v1(
        &l.post("/topic/create?topic="),
        400,
        r#"{"message":"INVALID_ARG_TOPIC"}"#,
    );
    assert_empty_ok(&l.post("/topic/create?topic=t1"));
    assert_v1(
        &l.get("/lookup?topic=t1"),
        200,
        r#"{"channels":[],"producers":[]}"#,
    );
    assert_empty_ok(&l.post("/topic/create?topic=t1")); // idempotent

    let cases = [
        ("/channel/create?topic=t!&channel=c", "INVALID_ARG_TOPIC"),
        ("/channel/create?topic=t", "MISSING_ARG_CHANNEL"),
        ("/channel/create?topic=t&channel=c!", "INVALID_ARG_CHANNEL"),
        ("/channel/create?topic=t&channel=", "INVALID_ARG_CHANNEL"),
        ("/channel/delete?topic=t!&channel=c", "INVALID_ARG_TOPIC"),
        ("/channel/delete?topic=t", "MISSING_ARG_CHANNEL"),
        ("/channel/delete?topic=t&channel=c!", "INVALID_ARG_CHANNEL"),
    ];
    for (p, msg) in cases {
        assert_v1(&l.post(p), 400, &format!(r#"{{"message":"{msg}"}}"#));
    }
    // /channel/create makes the topic too.
    assert_empty_ok(&l.post("/channel/create?topic=t2&channel=c&channel=ignored"));
    assert_v1(
        &l.get("/lookup?topic=t2"),
        200,
        r#"{"channels":["c"],"producers":[]}"#,
    );
    assert_v1(
        &l.post("/channel/delete?topic=t2&channel=nosuch"),
        404,
        r#"{"message":"CHANNEL_NOT_FOUND"}"#,
    );
    assert_empty_ok(&l.post("/channel/delete?topic=t2&channel=c"));
    assert_v1(
        &l.post("/channel/delete?topic=t2&channel=c"),
        404,
        r#"{"message":"CHANNEL_NOT_FOUND"}"#,
    );

    // /topic/delete removes the topic and its channel keys, even with live producers; it is
    // not validated and answers 200 for unknown topics.
    let mut a = l.nsqd("127.0.0.1", 1, 2);
    a.ok("REGISTER t3 c1");
    a.ok("REGISTER t3 c2");
    assert_empty_ok(&l.post("/topic/delete?topic=t3"));
    assert!(l.lookup_producers("t3").is_none());
    assert!(l.list("/channels?topic=t3", "channels").is_empty());
    assert_empty_ok(&l.post("/topic/delete?topic=never!"));
    assert_eq!(l.list("/topics", "topics"), ["t1", "t2"]);
    // The node keeps its client registration; its topic list no longer has t3.
    assert_eq!(l.get_json("/nodes")["producers"][0]["topics"], json!([]));
    // Re-registering brings it back.
    a.ok("REGISTER t3");
    assert_eq!(l.lookup_producers("t3").unwrap(), [a.local_addr()]);
}

#[test]
fn tombstone_endpoint() {
    let l = Lookupd::start(&[]);
    let mut a = l.nsqd("127.0.0.1", 1, 4151);
    let mut b = l.nsqd("127.0.0.1", 3, 4152);
    for c in [&mut a, &mut b] {
        c.ok("REGISTER t");
        c.ok("REGISTER u");
    }
    assert_empty_ok(&l.post("/topic/tombstone?topic=t&node=nosuch:1"));
    assert_empty_ok(&l.post("/topic/tombstone?topic=nosuch&node=127.0.0.1:4151"));
    assert_eq!(l.lookup_producers("t").unwrap().len(), 2);
    // node = broadcast_address:http_port.
    assert_empty_ok(&l.post("/topic/tombstone?topic=t&node=127.0.0.1%3A4151"));
    assert_eq!(l.lookup_producers("t").unwrap(), [b.local_addr()]);
    assert_eq!(l.lookup_producers("u").unwrap().len(), 2);
    let nodes = l.get_json("/nodes");
    let nodes = nodes["producers"].as_array().unwrap();
    assert_eq!(nodes.len(), 2); // tombstones do not hide nodes
    for n in nodes {
        let tombstoned = n["http_port"] == 4151;
        for (t, flag) in n["topics"]
            .as_array()
            .unwrap()
            .iter()
            .zip(n["tombstones"].as_array().unwrap())
        {
            assert_eq!(flag.as_bool().unwrap(), tombstoned && t == "t", "{n}");
        }
    }
    let debug = l.get_json("/debug");
    let t: Vec<&serde_json::Value> = debug["topic:t:"].as_array().unwrap().iter().collect();
    let a_prod = t.iter().find(|p| p["http_port"] == 4151).unwrap();
    assert_eq!(a_prod["tombstoned"], true);
    assert!(a_prod["tombstoned_at"].as_i64().unwrap() > 0);
    // Re-REGISTER does not clear it.
    a.ok("REGISTER t");
    assert_eq!(l.lookup_producers("t").unwrap(), [b.local_addr()]);
}

#[test]
fn wildcard_topic_quirks() {
    // nsqlookupd matches `*` as a wildcard in the unvalidated topic arguments.
    let l = Lookupd::start(&[]);
    let mut a = l.nsqd("127.0.0.1", 1, 2);
    a.ok("REGISTER t c1");
    a.ok("REGISTER u c2");
    assert_eq!(l.list("/channels?topic=*", "channels"), ["c1", "c2"]);
    let r = l.get_json("/lookup?topic=*");
    assert_eq!(sorted(&r["channels"]), ["c1", "c2"]);
    assert_eq!(r["producers"].as_array().unwrap().len(), 1);
    assert_v1(
        &l.post("/topic/create?topic=*"),
        400,
        r#"{"message":"INVALID_ARG_TOPIC"}"#,
    );
    assert_empty_ok(&l.post("/topic/delete?topic=*"));
    assert_v1(&l.get("/topics"), 200, r#"{"topics":[]}"#);
    assert_v1(
        &l.get("/lookup?topic=*"),
        404,
        r#"{"message":"TOPIC_NOT_FOUND"}"#,
    );
}

#[test]
fn router_conventions() {
    let l = Lookupd::start(&[]);
    for (m, p) in [
        ("GET", "/"),
        ("GET", "/nosuch"),
        ("POST", "/topic"),
        ("PUT", "/x"),
        ("OPTIONS", "/nosuch"),
    ] {
        assert_v1(&l.http(m, p), 404, r#"{"message":"NOT_FOUND"}"#);
    }
    for (m, p, allow) in [
        ("GET", "/topic/create", "OPTIONS, POST"),
        ("POST", "/lookup", "GET, OPTIONS"),
        ("DELETE", "/topics", "GET, OPTIONS"),
        ("PUT", "/topic/tombstone", "OPTIONS, POST"),
    ] {
        let r = l.http(m, p);
        assert_v1(&r, 405, r#"{"message":"METHOD_NOT_ALLOWED"}"#);
        assert_eq!(r.header("Allow"), Some(allow), "{m} {p}");
    }
    // A wrong method never runs the handler.
    l.get("/topic/create?topic=never");
    assert!(l.lookup_producers("never").is_none());

    let r = l.http("HEAD", "/ping");
    assert_eq!((r.status, r.header("Allow")), (405, Some("GET, OPTIONS")));
    let r = l.http("OPTIONS", "/nodes");
    assert_eq!(
        (r.status, r.header("Allow"), r.body.len()),
        (200, Some("GET, OPTIONS"), 0)
    );

    let r = l.get("/Lookup/?topic=a");
    assert_eq!(
        (r.status, r.header("Location")),
        (301, Some("/lookup?topic=a"))
    );
    assert_eq!(r.header("Content-Type"), Some("text/html; charset=utf-8"));
    assert_eq!(
        r.text(),
        "<a href=\"/lookup?topic=a\">Moved Permanently</a>.\n\n"
    );
    let r = l.post("/topic/create/?topic=redir");
    assert_eq!(
        (r.status, r.header("Location"), r.body.len()),
        (307, Some("/topic/create?topic=redir"), 0)
    );
    assert!(l.lookup_producers("redir").is_none());
    let r = l.get("//debug");
    assert_eq!((r.status, r.header("Location")), (301, Some("/debug")));
}

#[test]
fn query_rules() {
    let l = Lookupd::start(&[]);
    assert_empty_ok(&l.post("/topic/create?topic=first&topic=second!"));
    assert_empty_ok(&l.post("/topic/create?topic=t%23ephemeral"));
    assert_v1(
        &l.post("/topic/create?topic=a+b"),
        400,
        r#"{"message":"INVALID_ARG_TOPIC"}"#,
    );
    assert_eq!(l.list("/topics", "topics"), ["first", "t#ephemeral"]);
    // A key without `=` is present with an empty value.
    assert_v1(
        &l.get("/lookup?topic"),
        404,
        r#"{"message":"TOPIC_NOT_FOUND"}"#,
    );
    assert_v1(&l.get("/channels?topic"), 200, r#"{"channels":[]}"#);
    // A raw `#` in the request target: Go keeps it in the query; hyper parses it as the start of
    // a fragment, so nsqrlookupd sees `topic=t` (clients escape it as %23; docs/compatibility.md).
    let r = l.get("/lookup?topic=t#ephemeral");
    assert_eq!(
        r.status,
        if is_upstream() { 200 } else { 404 },
        "{}",
        r.text()
    );
    // Bodies are ignored: arguments come from the query only.
    let r = http_request(
        l.http,
        "POST",
        "/topic/create",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        b"topic=x",
    );
    assert_v1(&r, 400, r#"{"message":"MISSING_ARG_TOPIC"}"#);
}

#[test]
fn keep_alive_serves_several_requests() {
    use std::io::{Read, Write};
    let l = Lookupd::start(&[]);
    let mut s = std::net::TcpStream::connect(l.http).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let req = "GET /ping HTTP/1.1\r\nHost: x\r\n\r\nGET /info HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw);
    assert_eq!(text.matches("HTTP/1.1 200 OK").count(), 2, "{text}");
    assert!(text.ends_with(r#"{"version":"1.3.0"}"#), "{text}");
}

/// Sends raw bytes, half-closes, reads the whole answer.
fn raw_exchange(l: &Lookupd, raw: &[u8]) -> HttpResponse {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(l.http).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(raw).unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    parse_http_response(&out)
}

#[test]
fn server_level_conventions() {
    let l = Lookupd::start(&[]);
    // A client that half-closes after its request still gets the answer.
    for _ in 0..20 {
        let r = raw_exchange(&l, b"GET /a%zz HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!((r.status, r.text().as_str()), (400, "400 Bad Request"));
        assert_eq!(r.header("Connection"), Some("close"));
        let r = raw_exchange(&l, b"GET /info HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(r.status, 200);
    }
    // HTTP/1.1 needs Host; HTTP/1.0 does not.
    let r = raw_exchange(&l, b"GET /ping HTTP/1.1\r\n\r\n");
    assert_eq!(
        (r.status, r.text().as_str()),
        (400, "400 Bad Request: missing required Host header")
    );
    let r = raw_exchange(&l, b"GET /ping HTTP/1.0\r\n\r\n");
    assert_eq!((r.status, r.text().as_str()), (200, "OK"));
    // Argument parsing reads the body: an unreadable one is INVALID_REQUEST, nothing is done.
    let r = raw_exchange(
        &l,
        b"POST /topic/create?topic=x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    );
    assert_v1(&r, 400, r#"{"message":"INVALID_REQUEST"}"#);
    assert!(l.lookup_producers("x").is_none());
    // A readable body is ignored.
    let r = raw_exchange(
        &l,
        b"POST /topic/create?topic=x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    );
    assert_empty_ok(&r);
    assert_eq!(l.lookup_producers("x").unwrap(), Vec::<String>::new());
}
