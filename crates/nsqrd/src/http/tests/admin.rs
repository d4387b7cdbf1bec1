//! `/topic/*`, `/channel/*`, `/stats` and `/config/*` over real HTTP.

use super::*;

#[tokio::test]
async fn topic_routes() {
    let s = TestServer::start().await;
    assert_empty_ok(&s.post("/topic/create?topic=t", b"").await);
    assert!(s.broker.topic("t").is_some());
    assert_err(
        &s.post("/topic/create", b"").await,
        400,
        "MISSING_ARG_TOPIC",
    );
    assert_err(
        &s.post("/topic/create?topic=bad$", b"").await,
        400,
        "INVALID_TOPIC",
    );

    assert_empty_ok(&s.post("/topic/pause?topic=t", b"").await);
    assert!(s.broker.topic("t").unwrap().is_paused());
    assert_empty_ok(&s.post("/topic/unpause?topic=t", b"").await);
    assert!(!s.broker.topic("t").unwrap().is_paused());
    assert_err(
        &s.post("/topic/pause?topic=bad$", b"").await,
        404,
        "TOPIC_NOT_FOUND",
    );
    assert_err(
        &s.post("/topic/unpause", b"").await,
        400,
        "MISSING_ARG_TOPIC",
    );

    assert_text_ok(&s.post("/pub?topic=t", b"x").await, "OK");
    assert_eq!(s.topic_stats("t").await.unwrap()["depth"], 1);
    assert_empty_ok(&s.post("/topic/empty?topic=t", b"").await);
    assert_eq!(s.topic_stats("t").await.unwrap()["depth"], 0);
    assert_err(
        &s.post("/topic/empty?topic=bad$", b"").await,
        400,
        "INVALID_TOPIC",
    );
    assert_err(
        &s.post("/topic/empty?topic=nope", b"").await,
        404,
        "TOPIC_NOT_FOUND",
    );

    assert_empty_ok(&s.post("/topic/delete?topic=t", b"").await);
    assert!(s.broker.topic("t").is_none());
    assert_err(
        &s.post("/topic/delete?topic=t", b"").await,
        404,
        "TOPIC_NOT_FOUND",
    );
    assert_err(
        &s.post("/topic/delete?topic=bad$", b"").await,
        404,
        "TOPIC_NOT_FOUND",
    );
    assert_err(
        &s.post("/topic/delete", b"").await,
        400,
        "MISSING_ARG_TOPIC",
    );
    s.shutdown().await;
}

#[tokio::test]
async fn channel_routes() {
    let s = TestServer::start().await;
    assert_err(
        &s.post("/channel/create?topic=t&channel=c", b"").await,
        404,
        "TOPIC_NOT_FOUND",
    );
    assert!(
        s.broker.topic("t").is_none(),
        "the topic is not auto-created"
    );
    s.post("/topic/create?topic=t", b"").await;
    for (q, status, msg) in [
        ("", 400, "MISSING_ARG_TOPIC"),
        ("topic=bad$&channel=c", 400, "INVALID_ARG_TOPIC"),
        ("topic=t", 400, "MISSING_ARG_CHANNEL"),
        ("topic=t&channel=bad$", 400, "INVALID_ARG_CHANNEL"),
        ("topic=nope&channel=c", 404, "TOPIC_NOT_FOUND"),
    ] {
        for action in ["create", "delete", "empty", "pause", "unpause"] {
            let r = s.post(&format!("/channel/{action}?{q}"), b"").await;
            assert_err(&r, status, msg);
        }
    }
    for action in ["delete", "empty", "pause", "unpause"] {
        let r = s
            .post(&format!("/channel/{action}?topic=t&channel=c"), b"")
            .await;
        assert_err(&r, 404, "CHANNEL_NOT_FOUND");
    }
    assert_empty_ok(&s.post("/channel/create?topic=t&channel=c", b"").await);
    let topic = s.broker.topic("t").unwrap();
    let ch = topic.channel("c").unwrap();
    assert_empty_ok(&s.post("/channel/pause?topic=t&channel=c", b"").await);
    assert!(ch.is_paused());
    assert_empty_ok(&s.post("/channel/unpause?topic=t&channel=c", b"").await);
    assert!(!ch.is_paused());
    s.post("/pub?topic=t", b"x").await;
    assert_eq!(ch.depth(), 1);
    assert_empty_ok(&s.post("/channel/empty?topic=t&channel=c", b"").await);
    assert_eq!(ch.depth(), 0);
    assert_empty_ok(&s.post("/channel/delete?topic=t&channel=c", b"").await);
    assert!(topic.channel("c").is_none());
    s.shutdown().await;
}

#[tokio::test]
async fn stats_json() {
    let s = TestServer::start().await;
    let r = s.get("/stats?format=json&include_mem=false").await;
    assert_eq!(r.header("Content-Type"), Some(JSON_CT));
    assert_eq!(r.header("X-NSQ-Content-Type"), Some(V1));
    assert_eq!(
        r.text(),
        format!(
            "{{\"version\":\"1.3.0\",\"health\":\"OK\",\"start_time\":{},\"topics\":[],\"producers\":null}}",
            s.broker.start_time()
        )
    );
    let text = s.get("/stats?format=json").await.text();
    let (t, m, p) = (
        text.find("\"topics\"").unwrap(),
        text.find("\"memory\":{\"heap_objects\":").unwrap(),
        text.find("\"producers\"").unwrap(),
    );
    assert!(t < m && m < p, "{text}");

    s.post("/topic/create?topic=b", b"").await;
    s.post("/topic/create?topic=a", b"").await;
    s.post("/channel/create?topic=a&channel=z", b"").await;
    s.post("/channel/create?topic=a&channel=y", b"").await;
    let v = s.stats("").await;
    let names: Vec<&str> = v["topics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["topic_name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(v["topics"][0]["channels"][0]["channel_name"], "y");
    assert_eq!(
        v["topics"][0]["channels"][0]["clients"],
        serde_json::json!([])
    );
    assert_eq!(
        s.stats("&topic=nope").await["topics"],
        serde_json::Value::Null
    );
    assert_eq!(
        s.stats("&topic=a&channel=nope").await["topics"],
        serde_json::json!([])
    );
    let v = s.stats("&topic=a&channel=z&include_clients=false").await;
    assert_eq!(v["topics"][0]["channels"].as_array().unwrap().len(), 1);
    assert_eq!(
        v["topics"][0]["channels"][0]["clients"],
        serde_json::Value::Null
    );
    let v = s.stats("&topic=&channel=").await;
    assert_eq!(
        v["topics"].as_array().unwrap().len(),
        2,
        "empty filters mean all"
    );
    s.shutdown().await;
}

#[tokio::test]
async fn stats_text() {
    let s = TestServer::start().await;
    let r = s.get("/stats?include_mem=false").await;
    assert_eq!(r.header("Content-Type"), Some(TEXT_CT));
    assert_eq!(r.header("X-NSQ-Content-Type"), Some(V1));
    let text = r.text();
    let lines: Vec<&str> = text.split('\n').collect();
    assert!(lines[0].starts_with("nsqd v1.3.0 (built w/"), "{text}");
    assert!(
        lines[1].starts_with("start_time ") && lines[1].ends_with('Z'),
        "{text}"
    );
    assert!(
        lines[2].starts_with("uptime ") && lines[2].ends_with('s'),
        "{text}"
    );
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

    s.post("/channel/create?topic=t&channel=c", b"").await;
    s.post("/topic/create?topic=t", b"").await;
    s.post("/channel/create?topic=t&channel=c", b"").await;
    s.post("/channel/pause?topic=t&channel=c", b"").await;
    s.post("/mpub?topic=t", b"1\n2").await;
    let text = s.get("/stats?format=text&include_mem=0").await.text();
    assert!(
        text.ends_with("\nTopics:\n   [t              ] depth: 0     be-depth: 0     msgs: 2        e2e%: \n   *P [c                        ] depth: 2     be-depth: 0     inflt: 0    def: 0    re-q: 0     timeout: 0     msgs: 2        e2e%: \n\nProducers: None\n"),
        "{text}"
    );
    let text = s.get("/stats").await.text();
    assert!(
        text.contains("\nMemory:\n   heap_objects             \t"),
        "{text}"
    );
    s.shutdown().await;
}

#[tokio::test]
async fn config_routes() {
    let s = TestServer::start().await;
    let r = s.get("/config/msg_timeout").await;
    assert_eq!((r.status, r.text()), (200, "60000000000".to_string()));
    assert_eq!(r.header("Content-Type"), Some(JSON_CT));
    assert_eq!(r.header("X-NSQ-Content-Type"), Some(V1));
    assert_text_ok(&s.get("/config/broadcast_address").await, "127.0.0.1");
    assert_empty_ok(&s.get("/config/statsd_address").await);
    assert_eq!(
        s.get("/config/e2e_processing_latency_percentiles")
            .await
            .text(),
        "[1,0.99]"
    );
    assert_err(&s.get("/config/nosuch").await, 400, "INVALID_OPTION");

    let r = s.req("PUT", "/config/log_level", b"WARN").await;
    assert_eq!((r.status, r.text()), (200, "3".to_string()));
    assert_eq!(s.get("/config/log_level").await.text(), "3");
    let r = s
        .req(
            "PUT",
            "/config/nsqlookupd_tcp_addresses",
            br#"["127.0.0.1:4160"]"#,
        )
        .await;
    assert_eq!(r.text(), r#"["127.0.0.1:4160"]"#);
    assert_err(
        &s.req("PUT", "/config/log_level", b"loud").await,
        400,
        "INVALID_VALUE",
    );
    assert_err(
        &s.req("PUT", "/config/log_level", b"").await,
        413,
        "INVALID_VALUE",
    );
    assert_err(
        &s.req("PUT", "/config/nosuch", b"").await,
        413,
        "INVALID_VALUE",
    );
    assert_err(
        &s.req("PUT", "/config/msg_timeout", b"1").await,
        400,
        "INVALID_OPTION",
    );
    assert_err(
        &s.req("PUT", "/config/nosuch", b"1").await,
        400,
        "INVALID_OPTION",
    );
    let big = vec![b'a'; 1_048_577];
    assert_err(
        &s.req("PUT", "/config/log_level", &big).await,
        413,
        "INVALID_VALUE",
    );
    let r = s.post("/config/log_level", b"debug").await;
    assert_err(&r, 405, "METHOD_NOT_ALLOWED");
    s.shutdown().await;
}
