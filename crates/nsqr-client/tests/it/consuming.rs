//! A consumer's behaviour with one nsqd (nsqrd, or `NSQD_BIN`) and in process: handlers and
//! their concurrency, client-side max attempts, backoff (RDY 0, then 1, then back to the
//! share), TOUCH, and what happens to messages on drop and stop.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{config, eventually, within, Daemon};
use nsqr_broker::{Broker, BrokerConfig};
use nsqr_client::{
    handler_fn, Config, Consumer, Handler, HandlerError, Message, Producer, Reply, Stopper,
};

/// The ready count nsqd reports for the channel's one client.
fn server_rdy(nsqd: &Daemon, topic: &str) -> Option<i64> {
    let s = nsqd.stats();
    let t = s["topics"]
        .as_array()?
        .iter()
        .find(|t| t["topic_name"] == topic)?
        .clone();
    t["channels"][0]["clients"][0]["ready_count"].as_i64()
}

struct FailTwice {
    seen: Arc<Mutex<Vec<u16>>>,
    failed: Arc<Mutex<Vec<u16>>>,
    stop: Mutex<Option<Stopper>>,
}

impl Handler for FailTwice {
    async fn handle(&self, m: &Message) -> Result<(), HandlerError> {
        self.seen.lock().unwrap().push(m.attempts());
        Err(HandlerError::from("not today")
            .delay(Duration::ZERO)
            .without_backoff())
    }

    fn failed(&self, m: &Message) {
        self.failed.lock().unwrap().push(m.attempts());
        if let Some(s) = self.stop.lock().unwrap().take() {
            s.stop();
        }
    }
}

async fn max_attempts(addr: &str, cfg: Config) {
    let mut cfg = cfg;
    cfg.max_attempts = 2;
    let producer = Producer::connect(addr, cfg.clone()).await.unwrap();
    producer.publish("ma", "doomed").await.unwrap();
    let mut consumer = Consumer::new("ma", "c", cfg).unwrap();
    consumer.connect(addr).await.unwrap();
    let (seen, failed) = (Arc::default(), Arc::default());
    let handler = FailTwice {
        seen: Arc::clone(&seen),
        failed: Arc::clone(&failed),
        stop: Mutex::new(Some(consumer.stopper())),
    };
    within("handler run", consumer.run(handler)).await.unwrap();
    assert_eq!(*seen.lock().unwrap(), [1, 2]);
    assert_eq!(*failed.lock().unwrap(), [3]);
    let stats = consumer.stats();
    assert_eq!((stats.requeued, stats.given_up, stats.finished), (2, 1, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_attempts_gives_up_and_tells_the_handler() {
    let nsqd = Daemon::nsqd(&[]);
    max_attempts(&nsqd.url(), config()).await;
    assert_eq!(nsqd.channel_stat("ma", "c", "depth"), Some(0));
    assert_eq!(nsqd.channel_stat("ma", "c", "in_flight_count"), Some(0));
    let broker = Broker::start(BrokerConfig::default()).await.unwrap();
    max_attempts("inproc://", Config::inproc(broker.clone())).await;
    let snap = broker.snapshot(Some("ma"), Some("c"), false);
    let c = &snap.topics.unwrap()[0].channels[0];
    assert_eq!((c.counts.depth, c.counts.in_flight_count), (0, 0));
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backoff_pauses_then_lets_one_through_then_resumes() {
    let nsqd = Daemon::nsqd(&[]);
    let mut cfg = config();
    cfg.max_in_flight = 10;
    cfg.backoff_multiplier = Duration::from_secs(1); // level 1: 2 s of RDY 0
    cfg.rdy_redistribute_interval = Duration::from_secs(5);
    let producer = Producer::connect(&nsqd.url(), cfg.clone()).await.unwrap();
    for i in 0..3 {
        producer.publish("bo", format!("m{i}")).await.unwrap();
    }
    let mut consumer = Consumer::new("bo", "c", cfg).unwrap();
    consumer.connect(&nsqd.url()).await.unwrap();
    eventually("RDY 10", || server_rdy(&nsqd, "bo") == Some(10)).await;
    let first = within("message", consumer.next()).await.unwrap();
    first.requeue(Some(Duration::from_secs(60))).unwrap();
    assert_eq!(consumer.backoff_level(), 1);
    assert_eq!(consumer.rdy_counts()[0].1, 0, "RDY 0 at once");
    eventually("RDY 0 at the server", || server_rdy(&nsqd, "bo") == Some(0)).await;
    // After the backoff, one message at a time.
    eventually("RDY 1", || server_rdy(&nsqd, "bo") == Some(1)).await;
    let mut m = within("message", consumer.next()).await.unwrap();
    // A success ends the backoff: every connection gets its share again.
    while m.body().as_ref() == b"m0" {
        m = within("message", consumer.next()).await.unwrap();
    }
    m.finish().unwrap();
    assert_eq!(consumer.backoff_level(), 0);
    eventually("RDY 10 again", || server_rdy(&nsqd, "bo") == Some(10)).await;
    let m = within("message", consumer.next()).await.unwrap();
    m.finish().unwrap();
    consumer.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_handlers() {
    let nsqd = Daemon::nsqd(&[]);
    let mut cfg = config();
    cfg.max_in_flight = 8;
    cfg.handler_concurrency = 4;
    let producer = Producer::connect(&nsqd.url(), cfg.clone()).await.unwrap();
    producer
        .multi_publish("cc", (0..8).map(|i| format!("m{i}")))
        .await
        .unwrap();
    let mut consumer = Consumer::new("cc", "c", cfg).unwrap();
    consumer.connect(&nsqd.url()).await.unwrap();

    struct Slow {
        now: AtomicUsize,
        most: AtomicUsize,
        done: AtomicUsize,
        stop: Stopper,
    }
    impl Handler for Slow {
        async fn handle(&self, _m: &Message) -> Result<(), HandlerError> {
            let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(n, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(300)).await;
            self.now.fetch_sub(1, Ordering::SeqCst);
            if self.done.fetch_add(1, Ordering::SeqCst) + 1 == 8 {
                self.stop.stop();
            }
            Ok(())
        }
    }
    let slow = Arc::new(Slow {
        now: AtomicUsize::new(0),
        most: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
        stop: consumer.stopper(),
    });
    struct Shared(Arc<Slow>);
    impl Handler for Shared {
        async fn handle(&self, m: &Message) -> Result<(), HandlerError> {
            self.0.handle(m).await
        }
    }
    within("run", consumer.run(Shared(Arc::clone(&slow))))
        .await
        .unwrap();
    assert_eq!(slow.done.load(Ordering::SeqCst), 8);
    let most = slow.most.load(Ordering::SeqCst);
    assert!((2..=4).contains(&most), "{most} handlers at once");
    assert_eq!(consumer.stats().finished, 8);
    eventually("all finished", || {
        nsqd.channel_stat("cc", "c", "depth") == Some(0)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drop_and_stop_requeue_at_once_and_touch_extends() {
    let nsqd = Daemon::nsqd(&[]);
    let mut cfg = config();
    cfg.max_in_flight = 1; // nothing else waits (and times out) while one is touched
    cfg.msg_timeout = Some(Duration::from_secs(1));
    let producer = Producer::connect(&nsqd.url(), cfg.clone()).await.unwrap();
    producer
        .multi_publish("dr", (0..20).map(|i| format!("m{i}")))
        .await
        .unwrap();
    let mut consumer = Consumer::new("dr", "c", cfg.clone()).unwrap();
    consumer.connect(&nsqd.url()).await.unwrap();
    // Touched past its 1 s timeout, the message is still ours to finish.
    let held = within("message", consumer.next()).await.unwrap();
    for _ in 0..6 {
        tokio::time::sleep(Duration::from_millis(300)).await;
        held.touch().unwrap();
    }
    held.finish().unwrap();
    consumer.change_max_in_flight(20);
    // Dropped unanswered: back in the queue at once, attempts counted.
    let dropped = within("message", consumer.next()).await.unwrap();
    let body = dropped.body().clone();
    drop(dropped);
    let mut again = None;
    for _ in 0..19 {
        let m = within("message", consumer.next()).await.unwrap();
        if m.body() == &body {
            again = Some(m.attempts());
        }
        m.finish().unwrap();
    }
    if again.is_none() {
        let m = within("message", consumer.next()).await.unwrap();
        assert_eq!(m.body(), &body);
        again = Some(m.attempts());
        m.finish().unwrap();
    }
    assert_eq!(again, Some(2));
    assert_eq!(nsqd.channel_stat("dr", "c", "timeout_count"), Some(0));

    // Stopped with messages received but not handed out: they go back at once.
    producer
        .multi_publish("dr", (0..20).map(|i| format!("n{i}")))
        .await
        .unwrap();
    let m = within("message", consumer.next()).await.unwrap();
    m.finish().unwrap();
    within("stop", consumer.stop()).await;
    assert!(consumer.next().await.is_none());
    assert_eq!(nsqd.channel_stat("dr", "c", "depth"), Some(19));
    assert_eq!(nsqd.channel_stat("dr", "c", "in_flight_count"), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_function_handles_in_process() {
    let broker = Broker::start(BrokerConfig::default()).await.unwrap();
    let cfg = Config::inproc(broker.clone());
    let producer = Producer::connect("inproc://", cfg.clone()).await.unwrap();
    let mut consumer = Consumer::new("fn", "c", cfg).unwrap();
    consumer.connect("inproc://").await.unwrap();
    let got = Arc::new(Mutex::new(Vec::new()));
    let (g, stop) = (Arc::clone(&got), consumer.stopper());
    producer.multi_publish("fn", ["a", "b", "c"]).await.unwrap();
    within(
        "run",
        consumer.run(handler_fn(move |m: &Message| {
            let mut g = g.lock().unwrap();
            g.push(m.body().clone());
            if g.len() == 3 {
                stop.stop();
            }
            Ok(())
        })),
    )
    .await
    .unwrap();
    assert_eq!(*got.lock().unwrap(), ["a", "b", "c"]);
    broker.shutdown().await.unwrap();
}

async fn lent_in_place(addr: &str, cfg: Config) {
    let mut cfg = cfg;
    cfg.max_in_flight = 50;
    cfg.max_attempts = 2;
    let producer = Producer::connect(addr, cfg.clone()).await.unwrap();
    producer
        .multi_publish("lend", (0..40).map(|i| format!("m{i}")))
        .await
        .unwrap();
    let mut consumer = Consumer::new("lend", "c", cfg).unwrap();
    consumer.connect(addr).await.unwrap();
    // "m0" is requeued (without backoff) every time: after two attempts it is given up on.
    let mut seen = std::collections::BTreeMap::<String, u16>::new();
    while consumer.stats().finished < 40 {
        within(
            "a batch",
            consumer.next_batch(|m| {
                let body = String::from_utf8(m.body().to_vec()).unwrap();
                let n = seen.entry(body.clone()).or_default();
                *n = (*n).max(m.attempts());
                if body == "m0" {
                    Reply::RequeueWithoutBackoff(Some(Duration::ZERO))
                } else {
                    Reply::Finish
                }
            }),
        )
        .await
        .unwrap();
    }
    assert_eq!(seen.len(), 40);
    assert_eq!(seen["m0"], 2, "lent twice, then given up");
    assert!(seen.iter().all(|(b, a)| b == "m0" || *a == 1));
    let s = consumer.stats();
    assert_eq!((s.requeued, s.given_up), (2, 1));
    consumer.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn next_batch_lends_messages_in_place() {
    let nsqd = Daemon::nsqd(&[]);
    lent_in_place(&nsqd.url(), config()).await;
    eventually("all answered", || {
        nsqd.channel_stat("lend", "c", "depth") == Some(0)
            && nsqd.channel_stat("lend", "c", "in_flight_count") == Some(0)
    })
    .await;
    let broker = Broker::start(BrokerConfig::default()).await.unwrap();
    lent_in_place("inproc://", Config::inproc(broker.clone())).await;
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_held_long_without_reading_can_still_be_finished() {
    let nsqd = Daemon::nsqd(&[]);
    let mut cfg = config();
    cfg.heartbeat_interval = Some(Duration::from_secs(1));
    cfg.read_timeout = Duration::from_secs(3);
    let producer = Producer::connect(&nsqd.url(), cfg.clone()).await.unwrap();
    producer.publish("held", "slow work").await.unwrap();
    let mut consumer = Consumer::new("held", "c", cfg).unwrap();
    consumer.connect(&nsqd.url()).await.unwrap();
    let m = within("message", consumer.next()).await.unwrap();
    // Not reading for three heartbeat intervals: the writer's NOPs keep the connection.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    m.finish().unwrap();
    eventually("finished at the server", || {
        nsqd.channel_stat("held", "c", "in_flight_count") == Some(0)
            && nsqd.channel_stat("held", "c", "requeue_count") == Some(0)
            && nsqd.channel_stat("held", "c", "depth") == Some(0)
    })
    .await;
    // And the connection is the same one.
    producer.publish("held", "next").await.unwrap();
    let m = within("message", consumer.next()).await.unwrap();
    assert_eq!(m.attempts(), 1);
    assert_eq!(m.body().as_ref(), b"next");
    m.finish().unwrap();
    consumer.stop().await;
}
