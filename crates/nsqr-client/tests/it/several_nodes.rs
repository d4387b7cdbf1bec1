//! A consumer over several nsqd: max-in-flight spread and redistributed across connections,
//! discovery through nsqlookupd (nodes found as they get the topic), and reconnecting to an
//! nsqd that restarts. Against nsqrd and nsqrlookupd, or `NSQD_BIN` / `NSQLOOKUPD_BIN`.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::common::{config, eventually, within, Daemon};
use nsqr_client::{Consumer, Producer};

/// Publish `n` messages named after the node to each node.
async fn fill(nodes: &[&Daemon], topic: &str, n: usize) -> BTreeSet<String> {
    let mut all = BTreeSet::new();
    for (i, node) in nodes.iter().enumerate() {
        let p = Producer::connect(&node.url(), config()).await.unwrap();
        let bodies: Vec<String> = (0..n).map(|k| format!("node{i}-{k}")).collect();
        p.multi_publish(topic, bodies.clone()).await.unwrap();
        all.extend(bodies);
        p.stop().await;
    }
    all
}

/// Take (and finish) messages until `want` were seen; RDY never exceeds `mif` in total.
async fn drain(consumer: &mut Consumer, want: &BTreeSet<String>, mif: i64) {
    let mut got = BTreeSet::new();
    while got.len() < want.len() {
        let total: i64 = consumer.rdy_counts().iter().map(|(_, r)| r).sum();
        assert!(total <= mif, "RDY {total} over max-in-flight {mif}");
        let m = within("messages from every node", consumer.next())
            .await
            .unwrap();
        got.insert(String::from_utf8(m.body().to_vec()).unwrap());
        m.finish().unwrap();
    }
    assert_eq!(&got, want);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_in_flight_is_spread_and_redistributed() {
    let nodes = [Daemon::nsqd(&[]), Daemon::nsqd(&[]), Daemon::nsqd(&[])];
    let refs: Vec<&Daemon> = nodes.iter().collect();
    let want = fill(&refs, "spread", 20).await;

    // 30 over 3 connections: 10 each.
    let mut cfg = config();
    cfg.max_in_flight = 30;
    let mut consumer = Consumer::new("spread", "c", cfg).unwrap();
    for n in &nodes {
        consumer.connect(&n.url()).await.unwrap();
    }
    let rdy: Vec<i64> = consumer.rdy_counts().iter().map(|(_, r)| *r).collect();
    assert_eq!(rdy, [10, 10, 10]);
    drain(&mut consumer, &want, 30).await;
    consumer.stop().await;

    // 2 over 3 connections: one connection waits; RDY moves around so that every node's
    // messages arrive, and the total never exceeds 2.
    let want = fill(&refs, "spread2", 10).await;
    let mut cfg = config();
    cfg.max_in_flight = 2;
    cfg.low_rdy_idle_timeout = Duration::from_millis(200);
    cfg.low_rdy_timeout = Duration::from_millis(500);
    let mut consumer = Consumer::new("spread2", "c", cfg).unwrap();
    for n in &nodes {
        consumer.connect(&n.url()).await.unwrap();
    }
    let total: i64 = consumer.rdy_counts().iter().map(|(_, r)| r).sum();
    assert_eq!(total, 2);
    drain(&mut consumer, &want, 2).await;
    consumer.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookupd_discovery_finds_nodes_as_they_get_the_topic() {
    let lookupd = Daemon::lookupd();
    let flag = format!("--lookupd-tcp-address={}", lookupd.tcp);
    let a = Daemon::nsqd(&[&flag]);
    let b = Daemon::nsqd(&[&flag]);
    let mut want = fill(&[&a], "disc", 5).await;
    let mut cfg = config();
    cfg.max_in_flight = 10;
    let mut consumer = Consumer::new("disc", "c", cfg).unwrap();
    consumer
        .connect_to_lookupd(&lookupd.http.to_string())
        .await
        .unwrap();
    drain(&mut consumer, &want, 10).await;
    assert_eq!(consumer.stats().connections, 1);
    // The second node gets the topic later: the next poll finds it.
    let more = fill(&[&b], "disc", 5).await;
    drain(&mut consumer, &more, 10).await;
    want.extend(more);
    eventually("two connections", || consumer.stats().connections == 2).await;
    consumer.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnects_after_the_server_restarts() {
    let nsqd = Daemon::nsqd(&[]);
    let url = nsqd.url();
    let mut consumer = Consumer::new("rs", "c", config()).unwrap();
    consumer.connect(&url).await.unwrap();
    let producer = Producer::connect(&url, config()).await.unwrap();
    producer.publish("rs", "before").await.unwrap();
    let m = within("message", consumer.next()).await.unwrap();
    assert_eq!(m.body().as_ref(), b"before");
    m.finish().unwrap();

    let (dir, addr) = nsqd.kill();
    let nsqd = Daemon::nsqd_at(dir, &addr.to_string(), &[]);
    // The producer reconnects on its next publish (a publish may fail while it finds out
    // the old connection is gone), the consumer as soon as it reads again.
    let mut published = false;
    for _ in 0..50 {
        if producer.publish("rs", "after").await.is_ok() {
            published = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(published, "publishing after the restart");
    let m = within("message after restart", consumer.next())
        .await
        .unwrap();
    assert_eq!(m.body().as_ref(), b"after");
    m.finish().unwrap();
    assert_eq!(consumer.stats().connections, 1);
    consumer.stop().await;
    drop(nsqd);
}
