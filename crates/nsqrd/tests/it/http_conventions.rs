//! HTTP API conventions: router errors (404 / 405 + Allow), trailing-slash and case redirects, HEAD
//! / OPTIONS handling, the `X-NSQ-Content-Type` header, content types, query parsing
//! (INVALID_REQUEST, first value wins, form bodies ignored), `/ping` and `/info`.
use crate::common::*;
use crate::http_common::*;

/// The methods listed in an `Allow` header; nsqd's router lists them sorted.
fn allow_set(r: &HttpResponse) -> Vec<String> {
    let v: Vec<String> = r
        .header("Allow")
        .unwrap_or_else(|| panic!("no Allow header: {:?}", r.headers))
        .split(',')
        .map(|m| m.trim().to_string())
        .collect();
    let mut sorted = v.clone();
    sorted.sort();
    assert_eq!(v, sorted, "Allow is listed sorted");
    v
}

#[test]
fn unknown_path_is_404_not_found() {
    let s = Server::start(&[]);
    for (m, p) in [
        ("GET", "/nosuch"),
        ("POST", "/nosuch"),
        ("GET", "/"),
        ("GET", "/topic"),
        ("POST", "/topic/nosuch"),
        ("GET", "/config/"),
        ("PUT", "/config"),
    ] {
        let r = s.http(m, p, b"");
        assert_err(&r, 404, "NOT_FOUND");
    }
}

#[test]
fn wrong_method_is_405_with_allow() {
    let s = Server::start(&[]);
    let cases: &[(&str, &str, &[&str])] = &[
        ("GET", "/pub", &["OPTIONS", "POST"]),
        ("PUT", "/mpub", &["OPTIONS", "POST"]),
        ("POST", "/stats", &["GET", "OPTIONS"]),
        ("POST", "/ping", &["GET", "OPTIONS"]),
        ("DELETE", "/info", &["GET", "OPTIONS"]),
        ("GET", "/topic/create", &["OPTIONS", "POST"]),
        ("GET", "/channel/pause", &["OPTIONS", "POST"]),
        ("POST", "/config/log_level", &["GET", "OPTIONS", "PUT"]),
        ("DELETE", "/config/nosuch", &["GET", "OPTIONS", "PUT"]),
    ];
    for (m, p, allow) in cases {
        let r = s.http(m, p, b"");
        assert_err(&r, 405, "METHOD_NOT_ALLOWED");
        assert_eq!(allow_set(&r), allow.to_vec(), "{m} {p}");
    }
}

#[test]
fn wrong_method_does_not_run_the_handler() {
    let s = Server::start(&[]);
    let r = s.get("/topic/create?topic=never");
    assert_eq!(r.status, 405);
    let r = s.http("PUT", "/pub?topic=never", b"x");
    assert_eq!(r.status, 405);
    assert!(s.topic_stats("never").is_none());
}

#[test]
fn head_is_not_routed() {
    let s = Server::start(&[]);
    for p in ["/ping", "/stats", "/info"] {
        let r = s.http("HEAD", p, b"");
        assert_eq!(r.status, 405, "HEAD {p}");
        assert_eq!(allow_set(&r), vec!["GET", "OPTIONS"], "HEAD {p}");
        assert!(r.body.is_empty(), "HEAD response has no body");
    }
}

#[test]
fn options_answered_with_allow() {
    let s = Server::start(&[]);
    let cases: &[(&str, &[&str])] = &[
        ("/pub", &["OPTIONS", "POST"]),
        ("/stats", &["GET", "OPTIONS"]),
        ("/ping", &["GET", "OPTIONS"]),
        ("/channel/create", &["OPTIONS", "POST"]),
        ("/config/msg_timeout", &["GET", "OPTIONS", "PUT"]),
    ];
    for (p, allow) in cases {
        let r = s.http("OPTIONS", p, b"");
        assert_eq!(r.status, 200, "OPTIONS {p}");
        assert_eq!(allow_set(&r), allow.to_vec(), "OPTIONS {p}");
        assert!(r.body.is_empty(), "OPTIONS {p} body: {}", r.text());
    }
    // OPTIONS on an unknown path is still a 404.
    assert_err(&s.http("OPTIONS", "/nosuch", b""), 404, "NOT_FOUND");
}

#[test]
fn trailing_slash_redirects_get_with_301() {
    let s = Server::start(&[]);
    let r = s.get("/stats/");
    assert_eq!(r.status, 301);
    assert_eq!(r.header("Location"), Some("/stats"));
    let r = s.get("/ping/");
    assert_eq!(r.status, 301);
    assert_eq!(r.header("Location"), Some("/ping"));
    // The query string is carried over.
    let r = s.get("/stats/?format=json");
    assert_eq!(r.status, 301);
    assert_eq!(r.header("Location"), Some("/stats?format=json"));
}

#[test]
fn trailing_slash_redirects_post_with_307_without_publishing() {
    let s = Server::start(&[]);
    let r = s.post("/pub/?topic=redir", b"x");
    assert_eq!(r.status, 307);
    assert_eq!(r.header("Location"), Some("/pub?topic=redir"));
    let r = s.post("/topic/create/?topic=redir", b"");
    assert_eq!(r.status, 307);
    assert_eq!(r.header("Location"), Some("/topic/create?topic=redir"));
    assert!(
        s.topic_stats("redir").is_none(),
        "a redirect does not run the handler"
    );
}

#[test]
fn trailing_slash_redirect_only_to_a_route_of_that_method() {
    // nsqd (httprouter) only redirects when the canonical path has a route for the method;
    // otherwise the request is a plain 404.
    let s = Server::start(&[]);
    assert_err(&s.post("/stats/", b""), 404, "NOT_FOUND");
    assert_err(&s.get("/pub/"), 404, "NOT_FOUND");
}

#[test]
fn wrong_case_redirects_to_canonical_path() {
    let s = Server::start(&[]);
    let r = s.get("/STATS");
    assert_eq!(r.status, 301);
    assert_eq!(r.header("Location"), Some("/stats"));
    let r = s.get("/Ping");
    assert_eq!(r.status, 301);
    assert_eq!(r.header("Location"), Some("/ping"));
    let r = s.post("/Pub?topic=case", b"x");
    assert_eq!(r.status, 307);
    assert_eq!(r.header("Location"), Some("/pub?topic=case"));
    assert!(s.topic_stats("case").is_none());
}

#[test]
fn ping_is_plain_ok_without_nsq_header() {
    let s = Server::start(&[]);
    let r = s.get("/ping");
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), "OK");
    assert_eq!(r.header("Content-Type"), Some(TEXT_CT));
    assert_eq!(r.header("X-NSQ-Content-Type"), None);
}

#[test]
fn v1_endpoints_set_nsq_content_type_header() {
    let s = Server::start(&[]);
    let check = |m: &str, p: &str, ct: Option<&str>| {
        let r = s.http(m, p, b"body");
        assert_eq!(r.status, 200, "{m} {p}: {}", r.text());
        assert_eq!(r.header("X-NSQ-Content-Type"), Some(V1_HEADER), "{m} {p}");
        assert_eq!(r.header("Content-Type"), ct, "{m} {p}");
    };
    check("GET", "/info", Some(JSON_CT));
    check("POST", "/pub?topic=hdr", Some(TEXT_CT));
    check("POST", "/mpub?topic=hdr", Some(TEXT_CT));
    check("GET", "/stats", Some(TEXT_CT));
    check("GET", "/stats?format=json", Some(JSON_CT));
    check("POST", "/topic/create?topic=hdr2", None);
    check("POST", "/channel/create?topic=hdr2&channel=c", None);
    check("POST", "/topic/pause?topic=hdr2", None);
    check("GET", "/config/max_rdy_count", Some(JSON_CT));
    check("GET", "/config/broadcast_address", Some(TEXT_CT));
    // Errors carry it too, with the JSON content type.
    assert_err(&s.post("/pub", b"x"), 400, "MISSING_ARG_TOPIC");
}

#[test]
fn unparseable_query_is_invalid_request() {
    let s = Server::start(&[]);
    s.post("/topic/create?topic=q", b"");
    s.post("/channel/create?topic=q&channel=c", b"");
    for (m, p) in [
        ("GET", "/stats?topic=%zz"),
        ("GET", "/stats?format=json&x=%"),
        ("POST", "/pub?topic=%zz"),
        ("POST", "/mpub?topic=%zz"),
        ("POST", "/topic/create?topic=%zz"),
        ("POST", "/topic/delete?topic=q&%zz"),
        ("POST", "/topic/empty?topic=q&%zz"),
        ("POST", "/topic/pause?topic=q&%zz"),
        ("POST", "/topic/unpause?topic=q&%zz"),
        ("POST", "/channel/create?topic=q&channel=c&%zz"),
        ("POST", "/channel/delete?topic=q&channel=c&%zz"),
        ("POST", "/channel/empty?topic=q&channel=c&%zz"),
        ("POST", "/channel/pause?topic=q&channel=c&%zz"),
        ("POST", "/channel/unpause?topic=q&channel=c&%zz"),
    ] {
        let r = s.http(m, p, b"x");
        assert_err(&r, 400, "INVALID_REQUEST");
    }
    // Nothing was changed by the rejected requests.
    let t = s.topic_stats("q").expect("topic q");
    assert_eq!(t["paused"], false);
    assert_eq!(t["message_count"], 0);
    assert_eq!(t["channels"][0]["channel_name"], "c");
}

#[test]
fn repeated_query_key_uses_first_value() {
    let s = Server::start(&[]);
    let r = s.post("/pub?topic=first&topic=bad$", b"x");
    assert_text_ok(&r, "OK");
    assert_eq!(s.topic_stats("first").expect("first")["message_count"], 1);
    let r = s.post("/pub?topic=bad$&topic=second", b"x");
    assert_err(&r, 400, "INVALID_TOPIC");
    assert!(s.topic_stats("second").is_none());
}

#[test]
fn form_body_is_not_a_parameter_source() {
    let s = Server::start(&[]);
    let r = http_request(
        s.http,
        "POST",
        "/topic/create",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        b"topic=form",
    );
    assert_err(&r, 400, "MISSING_ARG_TOPIC");
    assert!(s.topic_stats("form").is_none());
}

#[test]
fn info_keys_and_values() {
    let s = Server::start(&[]);
    let r = s.get("/info");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Content-Type"), Some(JSON_CT));
    let o = OJson::parse(&r.body);
    let keys = o.keys();
    let base = [
        "version",
        "broadcast_address",
        "hostname",
        "http_port",
        "tcp_port",
        "start_time",
        "max_heartbeat_interval",
        "max_output_buffer_size",
        "max_output_buffer_timeout",
        "max_deflate_level",
    ];
    assert_eq!(&keys[..base.len()], &base[..], "info keys: {keys:?}");
    // post-1.3.0 adds topology_zone, topology_region; accept either form.
    let rest = &keys[base.len()..];
    assert!(
        rest.is_empty() || rest == ["topology_zone", "topology_region"],
        "extra info keys: {rest:?}"
    );

    let v = r.json();
    assert!(!v["version"].as_str().expect("version").is_empty());
    assert_eq!(v["broadcast_address"], "127.0.0.1");
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").expect("hostname");
    assert_eq!(v["hostname"], host.trim());
    assert_eq!(v["http_port"], s.http.port());
    assert_eq!(v["tcp_port"], s.tcp.port());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64;
    let st = v["start_time"].as_i64().expect("start_time int");
    assert!(
        (now - 60..=now + 1).contains(&st),
        "start_time {st} vs now {now}"
    );
    assert_eq!(v["max_heartbeat_interval"], 60_000_000_000i64);
    assert_eq!(v["max_output_buffer_size"], 65536);
    assert_eq!(v["max_output_buffer_timeout"], 30_000_000_000i64);
    assert_eq!(v["max_deflate_level"], 6);
    if rest.len() == 2 {
        assert_eq!(v["topology_zone"], "");
        assert_eq!(v["topology_region"], "");
    }
}

#[test]
fn info_reflects_flags() {
    let s = Server::start(&[
        "--max-heartbeat-interval=10s",
        "--max-output-buffer-size=1000",
        "--max-output-buffer-timeout=1500ms",
        "--max-deflate-level=3",
    ]);
    let v = s.get("/info").json();
    assert_eq!(v["max_heartbeat_interval"], 10_000_000_000i64);
    assert_eq!(v["max_output_buffer_size"], 1000);
    assert_eq!(v["max_output_buffer_timeout"], 1_500_000_000i64);
    assert_eq!(v["max_deflate_level"], 3);
    assert_eq!(v["http_port"], s.http.port());
    assert_eq!(v["tcp_port"], s.tcp.port());
}

#[test]
fn info_start_time_matches_stats() {
    let s = Server::start(&[]);
    let info = s.get("/info").json();
    let stats = s.stats();
    assert_eq!(info["start_time"], stats["start_time"]);
    assert_eq!(info["version"], stats["version"]);
}
