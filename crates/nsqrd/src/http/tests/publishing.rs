//! `/pub` and `/mpub` over real HTTP.

use std::time::Duration;

use nsqr_broker::BrokerConfig;

use super::*;

/// (message_count, message_bytes) of a topic.
async fn counts(s: &TestServer, topic: &str) -> (u64, u64) {
    let t = s.topic_stats(topic).await.unwrap();
    (
        t["message_count"].as_u64().unwrap(),
        t["message_bytes"].as_u64().unwrap(),
    )
}

fn small_limits() -> HttpSettings {
    HttpSettings {
        max_msg_size: 10,
        max_body_size: 30,
        max_req_timeout: Duration::from_secs(10),
        ..test_settings()
    }
}

#[tokio::test]
async fn pub_ok_and_defer() {
    let s = TestServer::start().await;
    assert_text_ok(&s.post("/pub?topic=p", b"hello").await, "OK");
    assert_eq!(counts(&s, "p").await, (1, 5));
    s.post("/channel/create?topic=p&channel=c", b"").await;
    assert_text_ok(&s.post("/pub?topic=p&defer=60000", b"later").await, "OK");
    let c = &s.topic_stats("p").await.unwrap()["channels"][0];
    assert_eq!(c["deferred_count"], 1);
    assert_eq!(c["depth"], 1);
    s.shutdown().await;
}

#[tokio::test]
async fn pub_check_order() {
    let s = TestServer::with(small_limits(), BrokerConfig::default()).await;
    assert_err(&s.post("/pub", b"12345678901").await, 413, "MSG_TOO_BIG");
    assert_err(
        &s.post("/pub?topic=bad$&defer=x", b"12345678901").await,
        413,
        "MSG_TOO_BIG",
    );
    assert_err(
        &s.post("/pub?topic=bad$&defer=-1", b"").await,
        400,
        "MSG_EMPTY",
    );
    assert_err(&s.post("/pub?topic=%zz", b"").await, 400, "MSG_EMPTY");
    assert_err(
        &s.post("/pub?defer=-1", b"x").await,
        400,
        "MISSING_ARG_TOPIC",
    );
    assert_err(&s.post("/pub?topic=", b"x").await, 400, "INVALID_TOPIC");
    assert_err(
        &s.post("/pub?topic=bad$&defer=-1", b"x").await,
        400,
        "INVALID_TOPIC",
    );
    for d in ["-1", "abc", "10001", "", "1.5", "%205"] {
        let r = s.post(&format!("/pub?topic=ok&defer={d}"), b"x").await;
        assert_err(&r, 400, "INVALID_DEFER");
    }
    assert_text_ok(
        &s.post("/pub?topic=ok&defer=10000", b"1234567890").await,
        "OK",
    );
    // The topic exists after INVALID_DEFER (it is created before the defer check).
    assert_eq!(counts(&s, "ok").await, (1, 10));
    assert!(s.broker.topic("bad$").is_none());
    s.shutdown().await;
}

#[tokio::test]
async fn chunked_bodies_are_limited_while_reading() {
    let s = TestServer::with(small_limits(), BrokerConfig::default()).await;
    let chunked = [("Transfer-Encoding", "chunked")];
    let r = s
        .raw_req(
            "POST",
            "/pub?topic=ch",
            &chunked,
            b"5\r\n12345\r\n6\r\n678901\r\n0\r\n\r\n",
        )
        .await;
    assert_err(&r, 413, "MSG_TOO_BIG");
    let r = s
        .raw_req(
            "POST",
            "/pub?topic=ch",
            &chunked,
            b"5\r\n12345\r\n5\r\n67890\r\n0\r\n\r\n",
        )
        .await;
    assert_text_ok(&r, "OK");
    assert_eq!(counts(&s, "ch").await, (1, 10));
    s.shutdown().await;
}

#[tokio::test]
async fn mpub_text() {
    let s = TestServer::with(small_limits(), BrokerConfig::default()).await;
    assert_text_ok(
        &s.post("/mpub?topic=mt", b"one\ntwo\n\n\nthree\r\n").await,
        "OK",
    );
    assert_eq!(counts(&s, "mt").await, (3, 12));
    assert_text_ok(&s.post("/mpub?topic=me", b"").await, "OK");
    assert_eq!(counts(&s, "me").await, (0, 0));
    assert_err(&s.post("/mpub", &[b'a'; 31]).await, 413, "BODY_TOO_BIG");
    assert_err(&s.post("/mpub", b"").await, 400, "MISSING_ARG_TOPIC");
    assert_err(
        &s.post("/mpub?topic=bad$", b"x").await,
        400,
        "INVALID_TOPIC",
    );
    assert_err(
        &s.post("/mpub?topic=mx", b"ok\n12345678901\n").await,
        413,
        "MSG_TOO_BIG",
    );
    assert_eq!(
        counts(&s, "mx").await,
        (0, 0),
        "all or nothing, topic created"
    );
    let body = b"1234567890\n1234567890\n12345678";
    assert_text_ok(&s.post("/mpub?topic=mx", body).await, "OK");
    assert_eq!(counts(&s, "mx").await, (3, 28));
    s.shutdown().await;
}

#[tokio::test]
async fn mpub_binary() {
    let s = TestServer::with(small_limits(), BrokerConfig::default()).await;
    let body = mpub_body(&[b"ab", b"c\nd"]);
    for (i, v) in ["true", "1", "yes", "", "f"].iter().enumerate() {
        let t = format!("b{i}");
        assert_text_ok(
            &s.post(&format!("/mpub?topic={t}&binary={v}"), &body).await,
            "OK",
        );
        assert_eq!(counts(&s, &t).await, (2, 5), "binary={v}");
    }
    for v in ["false", "0"] {
        // Text mode: the first line (up to the newline inside message 2) is 15 bytes.
        let r = s.post(&format!("/mpub?topic=text&binary={v}"), &body).await;
        assert_err(&r, 413, "MSG_TOO_BIG");
    }
    // Bytes after the declared messages are refused, as on TCP (nsqd ignores them).
    let mut trailing = body.clone();
    trailing.extend_from_slice(b"junk");
    assert_err(
        &s.post("/mpub?topic=bt&binary=true", &trailing).await,
        413,
        "BAD_BODY: 4 bytes after the 2 declared message(s)",
    );
    assert_eq!(counts(&s, "bt").await, (0, 0));
    assert_err(
        &s.post("/mpub?topic=bb&binary=true", b"\0\0").await,
        413,
        "BAD_BODY",
    );
    assert_err(
        &s.post("/mpub?topic=bb&binary=true", &6i32.to_be_bytes())
            .await,
        413,
        "BAD_BODY",
    );
    assert_err(
        &s.post("/mpub?topic=bb&binary=true", &mpub_body(&[b"12345678901"]))
            .await,
        413,
        "BAD_MESSAGE",
    );
    assert_eq!(counts(&s, "bb").await, (0, 0));
    s.shutdown().await;
}

#[tokio::test]
async fn exiting_is_503() {
    let s = TestServer::start().await;
    assert_text_ok(&s.post("/pub?topic=e", b"x").await, "OK");
    s.broker.set_exiting();
    assert_err(&s.post("/pub?topic=e", b"x").await, 503, "EXITING");
    assert_err(&s.post("/pub?topic=new", b"x").await, 503, "EXITING");
    assert_err(&s.post("/mpub?topic=e", b"x\ny").await, 503, "EXITING");
    s.shutdown().await;
}
