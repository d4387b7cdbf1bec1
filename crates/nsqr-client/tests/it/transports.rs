//! One API over the three transports: publishing (PUB, MPUB, DPUB, pipelined, coalesced) and
//! consuming over TCP and a unix socket against nsqd (nsqrd, or `NSQD_BIN`), and in process
//! against the embedded broker, where a body arrives as the very buffer published.
use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use crate::common::{config, within, Daemon};
use bytes::Bytes;
use nsqr_broker::{Broker, BrokerConfig};
use nsqr_client::{Config, Consumer, Error, ErrorCode, Producer};

/// Publish every way there is, then consume it all back and check each body once.
async fn round_trip(addr: &str, cfg: Config) {
    let producer = Producer::connect(addr, cfg.clone()).await.unwrap();
    let mut consumer = Consumer::new("rt", "c", cfg.clone()).unwrap();
    consumer.connect(addr).await.unwrap();
    consumer.change_max_in_flight(50);

    producer.publish("rt", "one").await.unwrap();
    producer
        .multi_publish("rt", ["two", "three"])
        .await
        .unwrap();
    producer
        .deferred_publish("rt", Duration::from_millis(50), "four")
        .await
        .unwrap();
    // Bodies that lie in one buffer (in process: one reference for the batch).
    let shared = Bytes::from_static(b"xfivesixy");
    producer
        .multi_publish_slices_async("rt", shared, [1..5, 5..8])
        .await
        .unwrap();
    // 200 publishes in flight at once: answered in order, coalesced into MPUBs.
    let pending: Vec<_> = (0..200)
        .map(|i| producer.publish_async("rt", format!("p{i}")))
        .collect();
    for p in pending {
        p.await.unwrap();
    }

    let mut want: BTreeSet<String> = ["one", "two", "three", "four", "five", "six"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    want.extend((0..200).map(|i| format!("p{i}")));
    let mut got = BTreeSet::new();
    while got.len() < want.len() {
        let m = within("messages", consumer.next())
            .await
            .expect("a message");
        assert_eq!(m.attempts(), 1);
        assert!(got.insert(String::from_utf8(m.body().to_vec()).unwrap()));
        m.finish().unwrap();
    }
    assert_eq!(got, want);
    let stats = consumer.stats();
    assert_eq!(stats.finished, want.len() as u64);
    consumer.stop().await;
    producer.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_round_trip() {
    let nsqd = Daemon::nsqd(&[]);
    round_trip(&nsqd.url(), config()).await;
    // A bare host:port is TCP too (go-nsq's and NSQ's tools' form).
    round_trip(&nsqd.tcp.to_string(), config()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unix_socket_round_trip() {
    let dir = common::temp_dir();
    let sock = dir.join("nsqd.sock");
    let nsqd_dir = common::temp_dir();
    let nsqd = Daemon::nsqd_at(nsqd_dir, sock.to_str().unwrap(), &[]);
    let _ = nsqd.tcp; // nsqd reports the socket's listener too
    round_trip(&format!("unix://{}", sock.display()), config()).await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inproc_round_trip_shares_the_published_buffer() {
    let broker = Broker::start(BrokerConfig::default()).await.unwrap();
    round_trip("inproc://", Config::inproc(broker.clone())).await;

    let producer = Producer::connect("inproc://", Config::inproc(broker.clone()))
        .await
        .unwrap();
    let mut consumer = Consumer::new("zc", "c", Config::inproc(broker.clone())).unwrap();
    consumer.connect("inproc://").await.unwrap();
    let body = Bytes::from(vec![7u8; 64 << 10]);
    producer.publish("zc", body.clone()).await.unwrap();
    let m = within("message", consumer.next()).await.unwrap();
    assert_eq!(
        m.body().as_ptr(),
        body.as_ptr(),
        "the same buffer, not a copy"
    );
    assert_eq!(m.source(), "inproc://");
    m.finish().unwrap();
    // Slices of one buffer arrive as those very slices.
    producer
        .multi_publish_slices_async("zc", body.clone(), [0..100, 100..(64 << 10)])
        .await
        .unwrap();
    for (at, len) in [(0, 100), (100, (64 << 10) - 100)] {
        let m = within("message", consumer.next()).await.unwrap();
        assert_eq!(
            (m.body().as_ptr(), m.body().len()),
            (body[at..].as_ptr(), len)
        );
        m.finish().unwrap();
    }
    consumer.stop().await;
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_carry_the_protocol_code() {
    let nsqd = Daemon::nsqd(&["--max-msg-size=100"]);
    let producer = Producer::connect(&nsqd.url(), config()).await.unwrap();
    // A bad name never reaches the wire.
    let e = producer.publish("bad topic", "x").await.unwrap_err();
    assert!(matches!(e, Error::Encode(_)), "{e}");
    assert!(matches!(
        producer.publish("t", "").await,
        Err(Error::EmptyBody)
    ));
    let three = Bytes::from_static(b"abc");
    let e = producer
        .multi_publish_slices_async("t", three.clone(), [0..2, 2..4])
        .await
        .unwrap_err();
    assert!(matches!(e, Error::BodyOutOfRange { len: 3, .. }), "{e}");
    assert_eq!(
        e.to_string(),
        "message body 2..4 lies outside its buffer of 3 bytes"
    );
    assert!(matches!(
        producer
            .multi_publish_slices_async("t", three, [0..1, 1..1])
            .await,
        Err(Error::EmptyBody)
    ));
    // Too big for this server: E_BAD_MESSAGE, with nsqd's text.
    let e = producer.publish("t", vec![b'x'; 200]).await.unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::BadMessage), "{e}");
    assert!(
        e.to_string()
            .starts_with("E_BAD_MESSAGE PUB message too big"),
        "{e}"
    );
    // The server closed that connection; the next publish reconnects.
    producer.publish("t", "fine").await.unwrap();
    producer.stop().await;
    assert!(matches!(
        producer.publish("t", "x").await,
        Err(Error::Stopped)
    ));

    // Nothing listening: a connect error.
    let dead = format!("tcp://{}", nsqd.tcp);
    drop(nsqd);
    let e = Producer::connect(&dead, config()).await.unwrap_err();
    assert!(matches!(e, Error::Connect { .. }), "{e}");

    let e = Producer::connect("inproc://", config()).await.unwrap_err();
    assert!(matches!(e, Error::NoBroker), "{e}");
    assert!(Consumer::new("t", "bad channel", config()).is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_far_too_big_gets_the_servers_error_not_a_broken_pipe() {
    // nsqd answers after reading the size and closes the connection while the producer is
    // still writing the body: the answer must win over the broken pipe, every time.
    let nsqd = Daemon::nsqd(&[]);
    let producer = Producer::connect(&nsqd.url(), config()).await.unwrap();
    let body = Bytes::from(vec![b'x'; 10_000_000]);
    for _ in 0..5 {
        let e = producer.publish("big", body.clone()).await.unwrap_err();
        assert_eq!(e.code(), Some(ErrorCode::BadMessage), "{e}");
        assert_eq!(
            e.to_string(),
            "E_BAD_MESSAGE PUB message too big 10000000 > 1048576"
        );
    }
    producer.publish("big", "fine").await.unwrap();
    producer.stop().await;
}
