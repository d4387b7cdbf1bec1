//! Router and response conventions, `/ping`, `/info`, connection handling.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::*;

#[tokio::test]
async fn not_found_and_method_not_allowed() {
    let s = TestServer::start().await;
    for (m, p) in [
        ("GET", "/nosuch"),
        ("GET", "/"),
        ("GET", "/config/"),
        ("PUT", "/config"),
    ] {
        assert_err(&s.req(m, p, b"").await, 404, "NOT_FOUND");
    }
    for (m, p, allow) in [
        ("GET", "/pub", "OPTIONS, POST"),
        ("POST", "/stats", "GET, OPTIONS"),
        ("POST", "/config/log_level", "GET, OPTIONS, PUT"),
        ("DELETE", "/info", "GET, OPTIONS"),
    ] {
        let r = s.req(m, p, b"").await;
        assert_err(&r, 405, "METHOD_NOT_ALLOWED");
        assert_eq!(r.header("Allow"), Some(allow), "{m} {p}");
    }
    // A wrong method never runs the handler.
    s.get("/topic/create?topic=never").await;
    assert!(s.broker.topic("never").is_none());
    s.shutdown().await;
}

#[tokio::test]
async fn head_and_options() {
    let s = TestServer::start().await;
    let r = s.req("HEAD", "/ping", b"").await;
    assert_eq!(r.status, 405);
    assert_eq!(r.header("Allow"), Some("GET, OPTIONS"));
    assert!(r.body.is_empty());

    let r = s.req("OPTIONS", "/config/msg_timeout", b"").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Allow"), Some("GET, OPTIONS, PUT"));
    assert!(r.body.is_empty());
    assert_eq!(r.header("X-NSQ-Content-Type"), None);
    assert_err(&s.req("OPTIONS", "/nosuch", b"").await, 404, "NOT_FOUND");
    s.shutdown().await;
}

#[tokio::test]
async fn redirects() {
    let s = TestServer::start().await;
    let r = s.get("/stats/?format=json").await;
    assert_eq!(r.status, 301);
    assert_eq!(r.header("Location"), Some("/stats?format=json"));
    assert_eq!(r.header("Content-Type"), Some("text/html; charset=utf-8"));
    assert_eq!(
        r.text(),
        "<a href=\"/stats?format=json\">Moved Permanently</a>.\n\n"
    );
    let r = s.get("/Ping").await;
    assert_eq!((r.status, r.header("Location")), (301, Some("/ping")));

    let r = s.post("/Pub?topic=redir", b"x").await;
    assert_eq!(
        (r.status, r.header("Location")),
        (307, Some("/pub?topic=redir"))
    );
    assert!(r.body.is_empty());
    assert_eq!(r.header("Content-Type"), None);
    let r = s.post("/Pub?", b"x").await;
    assert_eq!((r.status, r.header("Location")), (307, Some("/pub?")));
    let r = s.post("/topic/create/?topic=redir", b"").await;
    assert_eq!(r.status, 307);
    assert!(
        s.broker.topic("redir").is_none(),
        "a redirect runs no handler"
    );

    assert_err(&s.post("/stats/", b"").await, 404, "NOT_FOUND");
    assert_err(&s.get("/pub/").await, 404, "NOT_FOUND");
    s.shutdown().await;
}

#[tokio::test]
async fn unparseable_query_and_first_value() {
    let s = TestServer::start().await;
    for (m, p) in [
        ("GET", "/stats?topic=%zz"),
        ("GET", "/stats?format=json&x=%"),
        ("POST", "/pub?topic=%zz"),
        ("POST", "/mpub?topic=%zz"),
        ("POST", "/topic/create?topic=%zz"),
        ("POST", "/topic/pause?topic=q&%zz"),
        ("POST", "/channel/create?topic=q&channel=c&%zz"),
        ("POST", "/topic/create?topic=a;b"),
    ] {
        assert_err(&s.req(m, p, b"x").await, 400, "INVALID_REQUEST");
    }
    assert_text_ok(&s.post("/pub?topic=first&topic=bad$", b"x").await, "OK");
    assert_err(
        &s.post("/pub?topic=bad$&topic=second", b"x").await,
        400,
        "INVALID_TOPIC",
    );
    // Form bodies are not parameters.
    let r = s
        .raw_req(
            "POST",
            "/topic/create",
            &[("Content-Type", "application/x-www-form-urlencoded")],
            b"topic=form",
        )
        .await;
    assert_err(&r, 400, "MISSING_ARG_TOPIC");
    s.shutdown().await;
}

#[tokio::test]
async fn ping_health() {
    let s = TestServer::start().await;
    let r = s.get("/ping").await;
    assert_eq!((r.status, r.text()), (200, "OK".to_string()));
    assert_eq!(r.header("Content-Type"), Some(TEXT_CT));
    assert_eq!(r.header("X-NSQ-Content-Type"), None);

    s.broker.config().health.set_error("disk full");
    let r = s.get("/ping").await;
    assert_eq!((r.status, r.text()), (500, "NOK - disk full".to_string()));
    assert_eq!(s.stats("").await["health"], "NOK - disk full");
    s.broker.config().health.set_ok();
    assert_eq!(s.get("/ping").await.text(), "OK");
    s.shutdown().await;
}

#[tokio::test]
async fn info_document() {
    let s = TestServer::start().await;
    let r = s.get("/info").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Content-Type"), Some(JSON_CT));
    assert_eq!(r.header("X-NSQ-Content-Type"), Some(V1));
    let expect = format!(
        "{{\"version\":\"1.3.0\",\"broadcast_address\":\"127.0.0.1\",\"hostname\":\"testhost\",\"http_port\":14151,\"tcp_port\":14150,\"start_time\":{},\"max_heartbeat_interval\":60000000000,\"max_output_buffer_size\":65536,\"max_output_buffer_timeout\":30000000000,\"max_deflate_level\":6,\"topology_zone\":\"\",\"topology_region\":\"\"}}",
        s.broker.start_time()
    );
    assert_eq!(r.text(), expect);
    s.shutdown().await;
}

#[tokio::test]
async fn keep_alive_serves_several_requests() {
    let s = TestServer::start().await;
    let mut c = TcpStream::connect(s.addr).await.unwrap();
    c.write_all(
        b"GET /ping HTTP/1.1\r\nHost: t\r\n\r\nPOST /pub?topic=ka HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nhiGET /info HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    )
    .await
    .unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), c.read_to_end(&mut out))
        .await
        .unwrap()
        .unwrap();
    let rs = parse_responses(&out);
    assert_eq!(rs.len(), 3);
    assert_eq!(rs[0].text(), "OK");
    assert_eq!(rs[1].text(), "OK");
    assert_eq!(rs[2].status, 200);
    assert_eq!(s.topic_stats("ka").await.unwrap()["message_count"], 1);
    s.shutdown().await;
}

#[tokio::test]
async fn graceful_shutdown_closes_idle_connections_and_listener() {
    let s = TestServer::start().await;
    let addr = s.addr;
    // An idle keep-alive connection after one request.
    let mut idle = TcpStream::connect(addr).await.unwrap();
    idle.write_all(b"GET /ping HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    let mut buf = [0u8; 512];
    let n = idle.read(&mut buf).await.unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
    s.shutdown().await;
    // The idle connection was closed and nothing listens any more.
    let n = tokio::time::timeout(Duration::from_secs(5), idle.read(&mut buf))
        .await
        .unwrap()
        .unwrap_or(0);
    assert_eq!(n, 0);
    assert!(TcpStream::connect(addr).await.is_err());
}

#[tokio::test]
async fn tls_required_refuses_everything() {
    let settings = HttpSettings {
        tls_required_https_port: Some(4152),
        ..test_settings()
    };
    let s = TestServer::with(settings, Default::default()).await;
    for p in ["/ping", "/nosuch", "/pub?topic=x"] {
        let r = s.get(p).await;
        assert_eq!(r.status, 403);
        assert_eq!(
            r.text(),
            r#"{"message": "TLS_REQUIRED", "https_port": 4152}"#
        );
        assert_eq!(r.header("Content-Type"), Some(JSON_CT));
        assert_eq!(r.header("X-NSQ-Content-Type"), Some(V1));
    }
    s.shutdown().await;
}

#[tokio::test]
async fn bad_path_escape_is_400() {
    let s = TestServer::start().await;
    let r = s.get("/pi%zzng").await;
    assert_eq!(r.status, 400);
    let r = s.get("/%70ing").await;
    assert_eq!(r.text(), "OK");
    s.shutdown().await;
}

#[tokio::test]
async fn unread_bodies_do_not_break_keep_alive() {
    let s = TestServer::start().await;
    let mut c = TcpStream::connect(s.addr).await.unwrap();
    c.write_all(
        b"POST /topic/create?topic=u HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhelloPOST /topic/pause?topic=u HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabcGET /Ping?x HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    )
    .await
    .unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), c.read_to_end(&mut out))
        .await
        .unwrap()
        .unwrap();
    let rs = parse_responses(&out);
    assert_eq!(
        rs.iter().map(|r| r.status).collect::<Vec<_>>(),
        [200, 200, 301]
    );
    assert_eq!(rs[2].header("Location"), Some("/ping?x"));
    assert!(s.broker.topic("u").unwrap().is_paused());
    s.shutdown().await;
}
