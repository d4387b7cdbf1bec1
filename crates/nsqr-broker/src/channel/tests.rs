//! Channel behaviour without sockets: delivery, FIN, REQ, timeouts, deferred release.

use super::*;
use bytes::Bytes;
use nsq_wire::MessageId;

fn msgs(ids: &[u64]) -> Vec<Message> {
    ids.iter()
        .map(|&i| Message::new(MessageId(i), 1, 0, Bytes::from(format!("m{i}"))).expect("small"))
        .collect()
}

fn setup() -> (Arc<Channel>, Arc<Client>) {
    let ch = Channel::new("t", "c", Arc::new(BrokerConfig::default()));
    let cl = Arc::new(Client::new(
        1,
        "127.0.0.1:1".into(),
        0,
        Duration::from_secs(60),
    ));
    ch.add_client(Arc::clone(&cl)).expect("add");
    (ch, cl)
}

fn take(ch: &Channel, cl: &Client, n: usize) -> Vec<(u64, u16)> {
    let mut out = Vec::new();
    let mut rng = 1;
    ch.deliver(cl, n, 0, &mut rng, |m| out.push((m.id.0, m.attempts)));
    out
}

#[tokio::test]
async fn deliver_fin_requeue() {
    let (ch, cl) = setup();
    let _ = ch.put(msgs(&[1, 2, 3])).expect("put");
    assert_eq!(take(&ch, &cl, 2), vec![(1, 1), (2, 1)]);
    assert_eq!(cl.in_flight.load(Relaxed), 2);
    let mut errs = Vec::new();
    ch.finish(&cl, &[1, 1], |i, e| errs.push((i, e)));
    assert_eq!(errs, vec![(1, BrokerError::NotInFlight)]);
    ch.requeue(&cl, 2, Duration::ZERO).expect("req");
    assert_eq!(take(&ch, &cl, 5), vec![(3, 1), (2, 2)]);
    let other = Client::new(2, "x:1".into(), 0, Duration::from_secs(1));
    assert_eq!(
        ch.requeue(&other, 3, Duration::ZERO),
        Err(BrokerError::NotOwner)
    );
    assert_eq!(ch.stats(false).requeue_count, 1);
}

#[tokio::test(start_paused = true)]
async fn timeout_requeues_with_attempts_kept() {
    let (ch, cl) = setup();
    cl.msg_timeout_ms.store(1000, Relaxed);
    let _ = ch.put(msgs(&[7])).expect("put");
    assert_eq!(take(&ch, &cl, 1), vec![(7, 1)]);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    tokio::task::yield_now().await;
    assert_eq!(ch.stats(false).timeout_count, 1);
    assert_eq!(cl.in_flight.load(Relaxed), 0);
    assert_eq!(take(&ch, &cl, 1), vec![(7, 2)]);
}

#[tokio::test(start_paused = true)]
async fn deferred_released_when_due() {
    let (ch, cl) = setup();
    let _ = ch
        .put_deferred(msgs(&[9]), Instant::now() + Duration::from_millis(500))
        .expect("put");
    assert_eq!(ch.stats(false).deferred_count, 1);
    assert!(take(&ch, &cl, 1).is_empty());
    tokio::time::sleep(Duration::from_millis(600)).await;
    tokio::task::yield_now().await;
    assert_eq!(take(&ch, &cl, 1), vec![(9, 1)]);
}

#[tokio::test]
async fn disconnect_requeues_in_flight_first() {
    let (ch, cl) = setup();
    let _ = ch.put(msgs(&[1, 2, 3])).expect("put");
    assert_eq!(take(&ch, &cl, 2).len(), 2);
    assert_eq!(ch.remove_client(cl.id), 0);
    let cl2 = Arc::new(Client::new(2, "x:1".into(), 0, Duration::from_secs(60)));
    ch.add_client(Arc::clone(&cl2)).expect("add");
    assert_eq!(take(&ch, &cl2, 5), vec![(1, 2), (2, 2), (3, 1)]);
}

#[tokio::test]
async fn paused_channel_delivers_nothing() {
    let (ch, cl) = setup();
    let _ = ch.put(msgs(&[1])).expect("put");
    ch.set_paused(true);
    assert!(take(&ch, &cl, 1).is_empty());
    ch.set_paused(false);
    assert_eq!(take(&ch, &cl, 1).len(), 1);
}
