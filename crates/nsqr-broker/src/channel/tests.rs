//! Channel behaviour without sockets: delivery, FIN, REQ, timeouts, deferred release.

use super::*;
use crate::{Broker, BrokerConfig, ConsumerInfo, ConsumerKind};
use bytes::Bytes;
use nsq_wire::MessageId;

fn msgs(ids: &[u64]) -> Vec<Message> {
    ids.iter()
        .map(|&i| Message::new(MessageId(i), 1, 0, Bytes::from(format!("m{i}"))).expect("small"))
        .collect()
}

fn consumer(b: &Broker, timeout: Duration) -> Arc<Consumer> {
    let c =
        b.new_consumer(ConsumerInfo::new(ConsumerKind::Tcp, "127.0.0.1:1").msg_timeout(timeout));
    c.set_ready_count(100);
    c
}

async fn setup() -> (Broker, Arc<Channel>, Arc<Consumer>) {
    let b = Broker::start(BrokerConfig::default()).await.expect("start");
    let ch = b.open_channel("t", "c").await.expect("channel");
    let cl = consumer(&b, Duration::from_secs(60));
    ch.add_consumer(Arc::clone(&cl)).expect("add");
    (b, ch, cl)
}

fn take(ch: &Channel, cl: &Consumer, n: usize) -> Vec<(u64, u16)> {
    let mut out = Vec::new();
    let mut rng = 1;
    ch.deliver(cl, n, 0, &mut rng, |m| out.push((m.id.0, m.attempts)));
    out
}

/// Let the broker's timer task run until `cond` holds (paused clock: time only moves when
/// every task waits).
async fn settle(cond: impl Fn() -> bool) {
    for _ in 0..1000 {
        if cond() {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("condition not reached");
}

#[tokio::test]
async fn deliver_fin_requeue() {
    let (b, ch, cl) = setup().await;
    let _ = ch.put(msgs(&[1, 2, 3])).expect("put");
    assert_eq!(take(&ch, &cl, 2), vec![(1, 1), (2, 1)]);
    assert_eq!(cl.in_flight(), 2);
    let mut errs = Vec::new();
    ch.finish(&cl, &[1, 1], |i, e| errs.push((i, e)));
    assert_eq!(errs, vec![(1, BrokerError::NotInFlight)]);
    ch.requeue(&cl, 2, Duration::ZERO).expect("req");
    assert_eq!(take(&ch, &cl, 5), vec![(3, 1), (2, 2)]);
    let other = consumer(&b, Duration::from_secs(1));
    assert_eq!(
        ch.requeue(&other, 3, Duration::ZERO),
        Err(BrokerError::NotOwner)
    );
    assert_eq!(ch.stats(false).counts.requeue_count, 1);
    assert_eq!((cl.finish_count(), cl.requeue_count()), (1, 1));
}

#[tokio::test(start_paused = true)]
async fn timeout_requeues_with_attempts_kept() {
    let (_b, ch, cl) = setup().await;
    cl.set_msg_timeout(Duration::from_millis(1000));
    let _ = ch.put(msgs(&[7])).expect("put");
    assert_eq!(take(&ch, &cl, 1), vec![(7, 1)]);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    settle(|| ch.stats(false).counts.timeout_count == 1).await;
    assert_eq!(cl.in_flight(), 0);
    assert_eq!(take(&ch, &cl, 1), vec![(7, 2)]);
}

#[tokio::test(start_paused = true)]
async fn deferred_released_when_due() {
    let (_b, ch, cl) = setup().await;
    let _ = ch
        .put_deferred(msgs(&[9]), Instant::now() + Duration::from_millis(500))
        .expect("put");
    assert_eq!(ch.stats(false).counts.deferred_count, 1);
    assert!(take(&ch, &cl, 1).is_empty());
    tokio::time::sleep(Duration::from_millis(600)).await;
    settle(|| ch.depth() == 1).await;
    assert_eq!(take(&ch, &cl, 1), vec![(9, 1)]);
}

#[tokio::test(start_paused = true)]
async fn an_earlier_deadline_is_served_before_a_later_one() {
    let (b, ch, cl) = setup().await;
    cl.set_msg_timeout(Duration::from_secs(10));
    let _ = ch.put(msgs(&[1, 2])).expect("put");
    assert_eq!(take(&ch, &cl, 1), vec![(1, 1)]);
    // A second consumer with a shorter timeout: the channel's deadline moves earlier.
    let quick = consumer(&b, Duration::from_millis(100));
    ch.add_consumer(Arc::clone(&quick)).expect("add");
    assert_eq!(take(&ch, &quick, 1), vec![(2, 1)]);
    tokio::time::sleep(Duration::from_millis(150)).await;
    settle(|| ch.stats(false).counts.timeout_count == 1).await;
    assert_eq!((cl.in_flight(), quick.in_flight()), (1, 0));
    tokio::time::sleep(Duration::from_secs(10)).await;
    settle(|| ch.stats(false).counts.timeout_count == 2).await;
    assert_eq!(cl.in_flight(), 0);
}

#[tokio::test]
async fn disconnect_requeues_in_flight_first() {
    let (b, ch, cl) = setup().await;
    let _ = ch.put(msgs(&[1, 2, 3])).expect("put");
    assert_eq!(take(&ch, &cl, 2).len(), 2);
    assert_eq!(ch.remove_consumer(cl.id()), 0);
    let cl2 = consumer(&b, Duration::from_secs(60));
    ch.add_consumer(Arc::clone(&cl2)).expect("add");
    assert_eq!(take(&ch, &cl2, 5), vec![(1, 2), (2, 2), (3, 1)]);
}

#[tokio::test]
async fn paused_channel_delivers_nothing() {
    let (_b, ch, cl) = setup().await;
    let _ = ch.put(msgs(&[1])).expect("put");
    ch.set_paused(true);
    assert!(take(&ch, &cl, 1).is_empty());
    ch.set_paused(false);
    assert_eq!(take(&ch, &cl, 1).len(), 1);
}

#[tokio::test]
async fn max_channel_consumers_is_enforced() {
    let b = Broker::start(BrokerConfig {
        max_channel_consumers: 1,
        ..BrokerConfig::default()
    })
    .await
    .expect("start");
    let ch = b.open_channel("t", "c").await.expect("channel");
    ch.add_consumer(consumer(&b, Duration::from_secs(1)))
        .expect("first");
    assert!(matches!(
        ch.add_consumer(consumer(&b, Duration::from_secs(1))),
        Err(BrokerError::TooManyConsumers { limit: 1, .. })
    ));
}

fn keyed(id: u64, key: &str) -> Message {
    let attrs = crate::attrs::Attributes {
        ordering_key: Some(Arc::from(key)),
        ..Default::default()
    };
    msgs(&[id])[0].with_attributes(attrs.into_shared())
}

/// A large memory queue still looks ahead at most 16,384 messages: a hot key with more than
/// that in front holds the others back (documented), and order and counts stay right.
#[tokio::test]
async fn ordered_lookahead_is_capped() {
    let (_b, ch, cl) = setup().await;
    let own = QueueSettings {
        ordered: Some(true),
        mem_queue_size: Some(1_000_000),
        ..QueueSettings::default()
    };
    ch.set_settings(own, &QueueSettings::default());
    let hot = 20_000u64;
    let mut all: Vec<Message> = (1..=hot).map(|i| keyed(i, "hot")).collect();
    all.push(keyed(hot + 1, "cold"));
    let _ = ch.put(all).expect("put");
    assert_eq!(
        take(&ch, &cl, 10),
        vec![(1, 1)],
        "one per key; cold is out of reach"
    );
    assert_eq!(
        ch.state.lock().ordered.as_ref().map(|o| o.held()),
        Some(super::rules::MAX_LOOKAHEAD)
    );
    assert_eq!(ch.depth(), hot as usize, "held messages count in the depth");
    let (mut flying, mut last_hot, mut cold_at) = (vec![1u64], 1u64, None);
    while !flying.is_empty() {
        ch.finish(&cl, &flying, |i, e| panic!("fin #{i}: {e}"));
        flying.clear();
        for (id, _) in take(&ch, &cl, 10) {
            if id == hot + 1 {
                assert!(cold_at.is_none(), "cold once");
                cold_at = Some(last_hot);
            } else {
                assert_eq!(id, last_hot + 1, "hot key in order");
                last_hot = id;
            }
            flying.push(id);
        }
    }
    assert_eq!(last_hot, hot);
    let cold_at = cold_at.expect("the cold key came");
    assert!(
        cold_at < hot,
        "cold came once within reach, not after the hot key drained"
    );
    assert_eq!(ch.depth(), 0);
}
