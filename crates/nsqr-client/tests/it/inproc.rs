//! The in-process transport's batching: `publish_async`s gathered into one broker call
//! (flushed when awaited or dropped, at the limit, on another topic or kind of publish, by
//! the timer; in order), and `next_batch` settling its FINs together while honouring
//! max-in-flight and requeues.
use std::time::Duration;

use nsqr_broker::{Broker, BrokerConfig, SubscribeOptions, Subscription};
use nsqr_client::{Config, Consumer, Producer, Reply};

async fn setup() -> (Broker, Producer) {
    let broker = Broker::start(BrokerConfig::default()).await.unwrap();
    let p = Producer::connect("inproc://", Config::inproc(broker.clone()))
        .await
        .unwrap();
    (broker, p)
}

async fn sub(broker: &Broker, topic: &str) -> Subscription {
    broker
        .subscribe(
            topic,
            "c",
            SubscribeOptions::default().max_in_flight(10_000),
        )
        .await
        .unwrap()
}

/// Every body deliverable now, in order, each finished.
fn drain(s: &mut Subscription) -> Vec<String> {
    let mut out = Vec::new();
    while let Some(d) = s.try_next() {
        out.push(String::from_utf8(d.body().to_vec()).unwrap());
        d.fin().unwrap();
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gathered_publishes_go_out_in_order_when_one_is_awaited() {
    let (broker, p) = setup().await;
    let mut s = sub(&broker, "g").await;
    let futs: Vec<_> = (0..10)
        .map(|i| p.publish_async("g", i.to_string()))
        .collect();
    let mut futs = futs.into_iter();
    futs.next_back().unwrap().await.unwrap();
    let want: Vec<String> = (0..10).map(|i| i.to_string()).collect();
    assert_eq!(drain(&mut s), want);
    for f in futs {
        f.await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_batch_goes_out_at_once() {
    let (broker, p) = setup().await;
    let mut s = sub(&broker, "full").await;
    let futs: Vec<_> = (0..256)
        .map(|i| p.publish_async("full", i.to_string()))
        .collect();
    assert_eq!(drain(&mut s).len(), 256);
    // Bodies of the batch's byte limit (256 KiB) go out one by one.
    let big = vec![7u8; 256 << 10];
    let f = p.publish_async("full", big.clone());
    assert_eq!(s.try_next().map(|d| d.body().len()), Some(big.len()));
    f.await.unwrap();
    for f in futs {
        f.await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_topic_or_kind_of_publish_sends_the_batch_first() {
    let (broker, p) = setup().await;
    let mut a = sub(&broker, "ta").await;
    let mut b = sub(&broker, "tb").await;
    let fa = p.publish_async("ta", "x");
    let fb = p.publish_async("tb", "y");
    assert_eq!(drain(&mut a), ["x"]);
    let fm = p.multi_publish_async("tb", ["z1", "z2"]);
    assert_eq!(drain(&mut b), ["y", "z1", "z2"]);
    let fc = p.publish_async("ta", "before");
    p.publish("ta", "after").await.unwrap();
    assert_eq!(drain(&mut a), ["before", "after"]);
    for f in [fa, fb, fm, fc] {
        f.await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publish_never_awaited_goes_out_by_timer_or_when_dropped() {
    let (broker, p) = setup().await;
    let mut s = sub(&broker, "late").await;
    let held = p.publish_async("late", "held");
    let mut got = Vec::new();
    for _ in 0..500 {
        got = drain(&mut s);
        if !got.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    assert_eq!(got, ["held"]);
    held.await.unwrap();
    drop(p.publish_async("late", "dropped"));
    assert_eq!(drain(&mut s), ["dropped"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_coalescing_each_publish_goes_out_at_once() {
    let broker = Broker::start(BrokerConfig::default()).await.unwrap();
    let mut cfg = Config::inproc(broker.clone());
    cfg.coalesce_publishes = false;
    let p = Producer::connect("inproc://", cfg).await.unwrap();
    let mut s = sub(&broker, "now").await;
    let f = p.publish_async("now", "a");
    assert_eq!(drain(&mut s), ["a"]);
    f.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn next_batch_settles_together_within_max_in_flight() {
    let (broker, p) = setup().await;
    let mut cfg = Config::inproc(broker.clone());
    cfg.max_in_flight = 100;
    let mut c = Consumer::new("nb", "c", cfg).unwrap();
    c.connect("inproc://").await.unwrap();
    let bodies: Vec<String> = (0..3000).map(|i| format!("m{i}")).collect();
    p.multi_publish("nb", bodies.clone()).await.unwrap();
    let ch = broker.topic("nb").unwrap().channel("c").unwrap();
    let mut seen = Vec::new();
    let mut requeued_once = false;
    let mut most_in_flight = 0;
    while seen.len() < 3000 {
        let n = c
            .next_batch(|m| {
                most_in_flight = most_in_flight.max(ch.stats(false).counts.in_flight_count);
                let body = String::from_utf8(m.body().to_vec()).unwrap();
                if body == "m5" && !requeued_once {
                    requeued_once = true;
                    return Reply::RequeueWithoutBackoff(Some(Duration::ZERO));
                }
                seen.push(body);
                Reply::Finish
            })
            .await
            .unwrap();
        assert!(n >= 1);
    }
    assert!(most_in_flight <= 100, "{most_in_flight} in flight at once");
    seen.sort();
    let mut want = bodies;
    want.sort();
    assert_eq!(seen, want);
    let st = c.stats();
    assert_eq!((st.finished, st.requeued), (3000, 1));
    assert_eq!(ch.depth(), 0);
    assert_eq!(ch.stats(false).counts.in_flight_count, 0);
    c.stop().await;
}

#[test]
fn publishing_from_a_thread_outside_the_runtime_and_stopping_sends_everything() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (broker, p) = rt.block_on(setup());
    let mut s = rt.block_on(sub(&broker, "out"));
    let futs = std::thread::spawn(move || {
        let f = p.publish_async("out", "from a thread");
        (p, f)
    })
    .join()
    .unwrap();
    let (p, f) = futs;
    rt.block_on(p.stop());
    assert_eq!(drain(&mut s), ["from a thread"]);
    rt.block_on(f).unwrap();
}
