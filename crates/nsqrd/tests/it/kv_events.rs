//! Notifications and change feeds: keyspace events on pub/sub channels, a subscriber that
//! stops reading, and the change feed as NSQ messages.

use std::io::Write;
use std::time::Duration;

use crate::kv_common::*;

fn message(channel: &str, payload: &str) -> Frame {
    Frame::Array(vec![bulk("message"), bulk(channel), bulk(payload)])
}

#[test]
fn keyspace_and_keyevent_channels() {
    let srv = KvServer::start(&["--kv-notify-keyspace-events=KEA"]);
    let mut sub = srv.client();
    assert_eq!(
        sub.cmd(&["SUBSCRIBE", "__keyspace@0__:k", "__keyevent@0__:expired"]),
        Frame::Array(vec![bulk("subscribe"), bulk("__keyspace@0__:k"), int(1)])
    );
    assert_eq!(
        sub.read(),
        Frame::Array(vec![
            bulk("subscribe"),
            bulk("__keyevent@0__:expired"),
            int(2)
        ])
    );
    let mut c = srv.client();
    c.cmd(&["SET", "k", "v", "PX", "50"]);
    assert_eq!(sub.read(), message("__keyspace@0__:k", "set"));
    assert_eq!(sub.read(), message("__keyspace@0__:k", "expire"));
    assert_eq!(sub.read(), message("__keyspace@0__:k", "expired"));
    assert_eq!(sub.read(), message("__keyevent@0__:expired", "k"));
}

#[test]
fn resp3_pushes_and_commands_while_subscribed() {
    let srv = KvServer::start(&[]);
    let mut sub = srv.client();
    sub.cmd(&["HELLO", "3"]);
    assert_eq!(
        sub.cmd(&["PSUBSCRIBE", "news.*"]),
        Frame::Push(vec![bulk("psubscribe"), bulk("news.*"), int(1)])
    );
    assert_eq!(srv.client().cmd(&["PUBLISH", "news.eu", "hi"]), int(1));
    assert_eq!(
        sub.read(),
        Frame::Push(vec![
            bulk("pmessage"),
            bulk("news.*"),
            bulk("news.eu"),
            bulk("hi")
        ])
    );
    // RESP3 clients may run any command while subscribed.
    assert_eq!(sub.cmd(&["SET", "a", "1"]), simple("OK"));
    let mut resp2 = srv.client();
    resp2.cmd(&["SUBSCRIBE", "x"]);
    assert_eq!(
        resp2.cmd(&["GET", "a"]),
        err("ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
    );
    assert_eq!(
        resp2.cmd(&["PING"]),
        Frame::Array(vec![bulk("pong"), bulk("")])
    );
}

#[test]
fn a_subscriber_that_stops_reading_is_cut_off_and_never_slows_writers() {
    let srv = KvServer::start(&[]);
    let mut stalled = srv.client();
    stalled.cmd(&["SUBSCRIBE", "firehose"]);
    let mut reader = srv.client();
    reader.cmd(&["SUBSCRIBE", "firehose"]);
    let mut publisher = srv.client();
    let payload = "x".repeat(64 * 1024);
    // 96 MiB: past the 32 MiB pub/sub limit plus what the sockets' buffers hold, for the
    // client that never reads.
    let mut batch = Vec::new();
    for _ in 0..16 {
        resp_wire::encode_request(
            &[&b"PUBLISH"[..], b"firehose", payload.as_bytes()],
            &mut batch,
        );
    }
    let reader_thread = std::thread::spawn(move || {
        let mut n = 0;
        while n < 1536 {
            match reader.read() {
                Frame::Array(v) if v[0] == bulk("message") => n += 1,
                other => panic!("{other:?}"),
            }
        }
        // Hand the connection back: the reader stays subscribed.
        (n, reader)
    });
    for _ in 0..96 {
        publisher.send_raw(&batch);
        for _ in 0..16 {
            assert!(matches!(publisher.read(), Frame::Integer(1..=2)));
        }
    }
    let (received, _reader) = reader_thread.join().unwrap();
    assert_eq!(received, 1536);
    // Only the reading subscriber is left: the server closed the other one although it never
    // read a byte (its socket full, its outbox cut off).
    assert!(nsqr_testkit::wait_until(Duration::from_secs(20), || {
        publisher.cmd(&["PUBSUB", "NUMSUB", "firehose"])
            == Frame::Array(vec![bulk("firehose"), int(1)])
    }));
    // The stalled client finds its connection closed after what its socket held.
    stalled
        .s
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let _ = stalled.read_to_close();
    assert_eq!(publisher.cmd(&["PING"]), simple("PONG"));
}

#[test]
fn the_change_feed_is_an_nsq_topic() {
    let srv = KvServer::start(&["--kv-events-topic=kv-changes", "--kv-events-value"]);
    let mut consumer = NsqConsumer::subscribe(srv.tcp, "kv-changes", "audit");
    let mut c = srv.client();
    c.cmd(&["SET", "user:1", "alice"]);
    c.cmd(&["INCR", "visits"]);
    c.cmd(&["SET", "tmp", "x", "PX", "20"]);
    c.cmd(&["DEL", "user:1"]);
    let got: Vec<serde_json::Value> = (0..5).map(|_| consumer.next()).collect();
    let mut ops: Vec<(&str, &str)> = got
        .iter()
        .map(|b| (b["op"].as_str().unwrap(), b["key"].as_str().unwrap()))
        .collect();
    // The expiry (20 ms after its SET) may come before or after the DEL.
    ops[3..].sort();
    assert_eq!(
        ops,
        vec![
            ("set", "user:1"),
            ("incrby", "visits"),
            ("set", "tmp"),
            ("del", "user:1"),
            ("expired", "tmp"),
        ]
    );
    assert_eq!(got[0]["value"], "alice");
    assert!(got[2]["expires_at"].as_u64().unwrap() > got[2]["time"].as_u64().unwrap());
    let revs: Vec<u64> = got.iter().map(|b| b["rev"].as_u64().unwrap()).collect();
    assert!(revs.windows(2).all(|w| w[0] < w[1]), "{revs:?}");
    let mut raw = srv.client();
    raw.s.write_all(b"PING\r\n").unwrap();
    assert_eq!(raw.read(), simple("PONG"));
}
