//! The engine as a library: a broker handle that owns its tasks, publishing and subscribing in
//! process, and the event bus, through the public API only.
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use nsqr_broker::{
    Broker, BrokerConfig, BrokerError, Event, EventListener, SubscribeOptions, TopicHold,
};
use parking_lot::Mutex;

async fn broker() -> Broker {
    Broker::start(BrokerConfig::default()).await.unwrap()
}

/// `next` with a generous bound, so a broken engine fails the test instead of hanging it.
async fn next(sub: &mut nsqr_broker::Subscription) -> nsqr_broker::Delivery {
    tokio::time::timeout(Duration::from_secs(30), sub.next())
        .await
        .expect("a delivery in time")
        .expect("subscription open")
}

#[tokio::test]
async fn a_body_reaches_the_subscriber_without_a_copy() {
    let b = broker().await;
    let mut sub = b
        .subscribe("t", "c", SubscribeOptions::default())
        .await
        .unwrap();
    let body = Bytes::from(vec![7u8; 64 * 1024]);
    let ptr = body.as_ptr();
    b.publisher("t").unwrap().publish(body).unwrap();
    let d = next(&mut sub).await;
    assert_eq!(
        d.body().as_ptr(),
        ptr,
        "the subscriber sees the published buffer"
    );
    assert_eq!((d.body().len(), d.attempts()), (64 * 1024, 1));
    assert!(d.timestamp() > 0);
    d.fin().unwrap();
}

#[tokio::test]
async fn every_channel_gets_every_message_and_consumers_share_one() {
    let b = broker().await;
    let opts = SubscribeOptions::default().max_in_flight(100);
    let mut a1 = b.subscribe("t", "a", opts.clone()).await.unwrap();
    let mut a2 = b.subscribe("t", "a", opts.clone()).await.unwrap();
    let mut other = b.subscribe("t", "b", opts).await.unwrap();
    let p = b.publisher("t").unwrap();
    p.publish_batch((0..10).map(|i| format!("m{i}"))).unwrap();
    let mut seen_b = Vec::new();
    for _ in 0..10 {
        let d = next(&mut other).await;
        seen_b.push(String::from_utf8(d.body().to_vec()).unwrap());
        d.fin().unwrap();
    }
    assert_eq!(seen_b, (0..10).map(|i| format!("m{i}")).collect::<Vec<_>>());
    // Channel a's ten messages go to its two consumers, each exactly once.
    let mut seen_a = Vec::new();
    while seen_a.len() < 10 {
        let d = tokio::select! {
            d = a1.next() => d.unwrap(),
            d = a2.next() => d.unwrap(),
        };
        seen_a.push(String::from_utf8(d.body().to_vec()).unwrap());
        d.fin().unwrap();
    }
    seen_a.sort();
    let mut want: Vec<String> = (0..10).map(|i| format!("m{i}")).collect();
    want.sort();
    assert_eq!(seen_a, want);
}

#[tokio::test]
async fn max_in_flight_is_honoured() {
    let b = broker().await;
    let mut sub = b
        .subscribe("t", "c", SubscribeOptions::default().max_in_flight(3))
        .await
        .unwrap();
    b.publisher("t")
        .unwrap()
        .publish_batch((0..10).map(|i| format!("m{i}")))
        .unwrap();
    let held: Vec<_> = [
        next(&mut sub).await,
        next(&mut sub).await,
        next(&mut sub).await,
    ]
    .into();
    assert!(
        sub.try_next().is_none(),
        "a fourth while three are unanswered"
    );
    let stats = b.snapshot(Some("t"), Some("c"), true);
    let ch = &stats.topics.unwrap()[0].channels[0];
    assert_eq!((ch.counts.in_flight_count, ch.counts.depth), (3, 7));
    let consumers = ch.consumers.as_ref().unwrap();
    assert_eq!(consumers.len(), 1);
    assert_eq!(consumers[0].kind(), nsqr_broker::ConsumerKind::InProcess);
    assert_eq!(consumers[0].in_flight_count, 3);
    // An answer makes room, and a waiting `next` goes on.
    let waiter = tokio::spawn(async move {
        let d = next(&mut sub).await;
        (sub, d)
    });
    tokio::task::yield_now().await;
    let mut held = held.into_iter();
    held.next().unwrap().fin().unwrap();
    let (_sub, d) = waiter.await.unwrap();
    assert_eq!(d.body().as_ref(), b"m3");
}

#[tokio::test]
async fn req_touch_and_attempts() {
    let b = broker().await;
    let mut sub = b
        .subscribe("t", "c", SubscribeOptions::default())
        .await
        .unwrap();
    b.publisher("t").unwrap().publish("x").unwrap();
    let d = next(&mut sub).await;
    d.touch().unwrap();
    d.req(Duration::ZERO).unwrap();
    let d = next(&mut sub).await;
    assert_eq!(d.attempts(), 2);
    let id = d.id();
    d.fin().unwrap();
    // A finished message cannot be finished again.
    let p = b.publisher("t").unwrap();
    p.publish("y").unwrap();
    let d = next(&mut sub).await;
    assert_ne!(d.id(), id);
    d.fin().unwrap();
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_delivery_times_out_and_comes_back() {
    let b = broker().await;
    let mut sub = b
        .subscribe(
            "t",
            "c",
            SubscribeOptions::default().msg_timeout(Duration::from_millis(200)),
        )
        .await
        .unwrap();
    b.publisher("t").unwrap().publish("x").unwrap();
    let first = next(&mut sub).await;
    drop(first);
    // The timer of the broker (not of the channel) requeues it after 200 ms.
    let again = next(&mut sub).await;
    assert_eq!(again.attempts(), 2);
}

#[tokio::test]
async fn dropping_a_subscription_requeues_its_messages_at_once() {
    let b = broker().await;
    let opts = SubscribeOptions::default()
        .max_in_flight(10)
        .msg_timeout(Duration::from_secs(3600));
    let mut first = b.subscribe("t", "c", opts.clone()).await.unwrap();
    b.publisher("t")
        .unwrap()
        .publish_batch(["a", "b", "c"])
        .unwrap();
    let d = next(&mut first).await;
    assert_eq!(d.body().as_ref(), b"a");
    drop(first);
    assert!(
        d.fin().is_err(),
        "the message went back with the subscription"
    );
    let mut second = b.subscribe("t", "c", opts).await.unwrap();
    let got: Vec<(Bytes, u16)> = [
        next(&mut second).await,
        next(&mut second).await,
        next(&mut second).await,
    ]
    .into_iter()
    .map(|d| (d.body().clone(), d.attempts()))
    .collect();
    assert_eq!(
        got,
        [
            (Bytes::from("a"), 2),
            (Bytes::from("b"), 2),
            (Bytes::from("c"), 2)
        ]
    );
}

#[tokio::test]
async fn an_ephemeral_channel_goes_with_its_last_subscription() {
    let b = broker().await;
    let sub = b
        .subscribe("t", "c#ephemeral", SubscribeOptions::default())
        .await
        .unwrap();
    assert!(b.topic("t").unwrap().channel("c#ephemeral").is_some());
    drop(sub);
    assert!(b.topic("t").unwrap().channel("c#ephemeral").is_none());
}

#[tokio::test]
async fn deleting_the_channel_or_shutting_down_ends_subscriptions() {
    let b = broker().await;
    let mut sub = b
        .subscribe("t", "c", SubscribeOptions::default())
        .await
        .unwrap();
    b.delete_channel("t", "c").unwrap();
    assert!(sub.next().await.is_none());
    let mut sub = b
        .subscribe("t", "c", SubscribeOptions::default())
        .await
        .unwrap();
    let waiting = tokio::spawn(async move { sub.next().await.is_none() });
    b.shutdown().await.unwrap();
    assert!(waiting.await.unwrap(), "next ends with the broker");
    assert_eq!(
        b.publisher("t").unwrap().publish("late").err(),
        Some(BrokerError::Exiting)
    );
}

#[tokio::test]
async fn bad_names_and_bodies_are_refused() {
    let b = broker().await;
    assert!(matches!(
        b.publisher("no spaces"),
        Err(BrokerError::InvalidName(_))
    ));
    assert!(matches!(
        b.subscribe("t", "", SubscribeOptions::default()).await,
        Err(BrokerError::InvalidName(_))
    ));
    let p = b.publisher("t").unwrap();
    assert_eq!(
        p.publish(Bytes::new()).err(),
        Some(BrokerError::InvalidBodySize { size: 0 })
    );
    let big = vec![0u8; b.config().max_msg_size as usize + 1];
    assert!(matches!(
        p.publish(big),
        Err(BrokerError::InvalidBodySize { .. })
    ));
}

#[tokio::test]
async fn a_deleted_topic_is_created_again_by_its_publisher() {
    let b = broker().await;
    let p = b.publisher("t").unwrap();
    b.delete_topic("t").unwrap();
    let mut sub = b
        .subscribe("t", "c", SubscribeOptions::default())
        .await
        .unwrap();
    p.publish("after").unwrap();
    assert_eq!(next(&mut sub).await.body().as_ref(), b"after");
}

#[tokio::test(start_paused = true)]
async fn deferred_publish_waits_its_delay() {
    let b = broker().await;
    let mut sub = b
        .subscribe("t", "c", SubscribeOptions::default())
        .await
        .unwrap();
    let start = tokio::time::Instant::now();
    b.publisher("t")
        .unwrap()
        .publish_deferred("later", Duration::from_secs(5))
        .unwrap();
    assert!(sub.try_next().is_none());
    let d = next(&mut sub).await;
    assert!(start.elapsed() >= Duration::from_secs(5));
    assert_eq!(d.body().as_ref(), b"later");
}

/// Records events as text; holds new topics when asked to, keeping the holds.
#[derive(Default)]
struct Recorder {
    holds: bool,
    log: Mutex<Vec<String>>,
    kept: Mutex<Vec<TopicHold>>,
}

impl EventListener for Recorder {
    fn on_event(&self, event: Event) {
        self.log.lock().push(format!("{event:?}"));
        if let Event::TopicCreated {
            hold: Some(hold), ..
        } = event
        {
            self.kept.lock().push(hold);
        }
    }

    fn holds_new_topics(&self) -> bool {
        self.holds
    }
}

#[tokio::test]
async fn every_listener_hears_every_event() {
    let b = broker().await;
    let one = Arc::new(Recorder::default());
    let two = Arc::new(Recorder::default());
    let _l1 = b.listen(one.clone());
    let l2 = b.listen(two.clone());
    let t = b.get_or_create_topic("t").unwrap();
    t.get_or_create_channel("a").unwrap();
    b.delete_channel("t", "a").unwrap();
    drop(l2);
    b.delete_topic("t").unwrap();
    let want = [
        "TopicCreated(t)",
        "ChannelCreated(t, a)",
        "ChannelDeleted(t, a)",
        "TopicDeleted(t, [])",
    ];
    assert_eq!(*one.log.lock(), want);
    assert_eq!(
        *two.log.lock(),
        want[..3],
        "nothing after the guard was dropped"
    );
}

#[tokio::test]
async fn only_a_holding_listener_holds_new_topics() {
    let b = broker().await;
    let plain = Arc::new(Recorder::default());
    let _l = b.listen(plain.clone());
    let t = b.get_or_create_topic("free").unwrap();
    let mut sub = b
        .subscribe("free", "c", SubscribeOptions::default())
        .await
        .unwrap();
    b.publisher("free").unwrap().publish("m").unwrap();
    assert_eq!(next(&mut sub).await.body().as_ref(), b"m");
    drop(t);

    // Two holding listeners: the topic starts when both have let go.
    let h1 = Arc::new(Recorder {
        holds: true,
        ..Recorder::default()
    });
    let h2 = Arc::new(Recorder {
        holds: true,
        ..Recorder::default()
    });
    let _g1 = b.listen(h1.clone());
    let _g2 = b.listen(h2.clone());
    let t = b.get_or_create_topic("held").unwrap();
    let a = t.get_or_create_channel("a").unwrap();
    b.publisher("held").unwrap().publish("m1").unwrap();
    assert_eq!(a.depth(), 0, "held: the channel gets nothing yet");
    let c = t.get_or_create_channel("c").unwrap();
    h1.kept.lock().clear();
    assert_eq!(a.depth(), 0, "one hold is left");
    h2.kept.lock().clear();
    assert_eq!((a.depth(), c.depth()), (1, 1), "every channel got it");
}

/// Creating 1,000 channels, each with a backlog on disk, while another topic is published to:
/// the disk queues are opened on the blocking pool with no lock publishers need, so the
/// publisher keeps going. On a single-threaded runtime, a creation that did its disk IO on the
/// runtime's thread (or under a lock the publisher takes) would let it publish nothing until
/// every channel was open.
#[tokio::test(flavor = "current_thread")]
async fn opening_channels_with_disk_backlogs_does_not_stall_publishers() {
    const CHANNELS: usize = 1000;
    let dir = nsqr_testkit::temp_dir("nsqr-embed-open");
    let cfg = BrokerConfig {
        data_path: Some(dir.clone()),
        ..BrokerConfig::default()
    };
    let names: Vec<String> = (0..CHANNELS).map(|i| format!("c{i}")).collect();
    {
        let b = Broker::start(cfg.clone()).await.unwrap();
        let t = b.get_or_create_topic("big").unwrap();
        for n in &names {
            t.get_or_create_channel(n).unwrap();
        }
        b.publisher("big")
            .unwrap()
            .publish_batch((0..20).map(|i| format!("backlog {i}")))
            .unwrap();
        b.shutdown().await.unwrap();
    }
    // Forget the channels (not the topic) so that they are created at runtime, from their
    // queues on disk.
    std::fs::write(
        dir.join("nsqd.dat"),
        r#"{"topics":[{"name":"big","paused":false,"channels":null}],"version":"1.3.0"}"#,
    )
    .unwrap();
    let b = Broker::start(cfg).await.unwrap();
    let p = b.publisher("other").unwrap();
    let mut sub = b
        .subscribe("other", "c", SubscribeOptions::default().max_in_flight(100))
        .await
        .unwrap();
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let opener = {
        let (b, names, done) = (b.clone(), names.clone(), Arc::clone(&done));
        tokio::spawn(async move {
            for n in &names {
                b.open_channel("big", n).await.unwrap();
            }
            done.store(true, std::sync::atomic::Ordering::SeqCst);
        })
    };
    let mut published_meanwhile = 0u64;
    while !done.load(std::sync::atomic::Ordering::SeqCst) {
        p.publish("tick").unwrap();
        published_meanwhile += 1;
        if let Some(d) = sub.try_next() {
            d.fin().unwrap();
        }
        tokio::task::yield_now().await;
    }
    opener.await.unwrap();
    assert!(
        published_meanwhile >= CHANNELS as u64 / 2,
        "only {published_meanwhile} publishes while {CHANNELS} channels were opened"
    );
    // And every channel got its backlog back from disk.
    let t = b.topic("big").unwrap();
    for n in &names {
        assert_eq!(t.channel(n).unwrap().depth(), 20, "channel {n}");
    }
    b.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn fin_all_settles_its_own_deliveries_and_refuses_foreign_ones() {
    let b = broker().await;
    let opts = SubscribeOptions::default().max_in_flight(10);
    let mut mine = b.subscribe("fa", "c", opts.clone()).await.unwrap();
    let mut other = b.subscribe("fa", "c", opts).await.unwrap();
    let p = b.publisher("fa").unwrap();
    p.publish_batch(["a", "b", "c", "d"]).unwrap();
    let mut own = Vec::new();
    let mut foreign = Vec::new();
    while own.len() + foreign.len() < 4 {
        if let Some(d) = mine.try_next() {
            own.push(d);
        } else if let Some(d) = other.try_next() {
            foreign.push(d);
        } else {
            tokio::task::yield_now().await;
        }
    }
    let (n_own, n_foreign) = (own.len(), foreign.len());
    let mut batch = own;
    batch.extend(foreign);
    let errors = mine.fin_all(batch);
    let refused: Vec<usize> = errors.iter().map(|(i, _)| *i).collect();
    assert_eq!(refused, (n_own..n_own + n_foreign).collect::<Vec<_>>());
    let ch = b.topic("fa").unwrap().channel("c").unwrap();
    // The foreign ones are still in flight with the other subscription.
    assert_eq!(ch.depth(), 0);
    drop(other);
    assert_eq!(ch.depth(), n_foreign);
    drop(mine);
}

#[tokio::test]
async fn slices_of_one_buffer_arrive_as_those_slices_and_bad_ranges_fail_whole() {
    let b = broker().await;
    let mut sub = b
        .subscribe("sl", "c", SubscribeOptions::default())
        .await
        .unwrap();
    let p = b.publisher("sl").unwrap();
    let data = Bytes::from_static(b"onetwothree");
    p.publish_slices(data.clone(), [0..3, 3..6, 6..11]).unwrap();
    for (range, text) in [(0..3, "one"), (3..6, "two"), (6..11, "three")] {
        let d = next(&mut sub).await;
        assert_eq!(d.body(), text.as_bytes());
        assert_eq!(d.body().as_ptr(), data[range].as_ptr(), "not a copy");
        d.fin().unwrap();
    }
    // An empty range, one past the end: nothing of the publish is taken.
    for bad in [vec![0..3, 3..3], vec![0..3, 3..12]] {
        let e = p.publish_slices(data.clone(), bad).unwrap_err();
        assert!(matches!(e, BrokerError::InvalidBodySize { .. }), "{e}");
    }
    p.publish_slices(data.clone(), std::iter::once(3..6))
        .unwrap();
    let d = next(&mut sub).await;
    assert_eq!(d.body(), &b"two"[..]);
    d.fin().unwrap();
    b.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_slice_over_max_msg_size_fails_the_publish_whole() {
    let b = Broker::start(BrokerConfig {
        max_msg_size: 4,
        ..BrokerConfig::default()
    })
    .await
    .unwrap();
    let mut sub = b
        .subscribe("big", "c", SubscribeOptions::default())
        .await
        .unwrap();
    let p = b.publisher("big").unwrap();
    let data = Bytes::from_static(b"okfarTooLong");
    let e = p.publish_slices(data.clone(), [0..2, 2..12]).unwrap_err();
    assert!(
        matches!(e, BrokerError::InvalidBodySize { size: 10 }),
        "{e}"
    );
    p.publish_slices(data, std::iter::once(0..2)).unwrap();
    let d = next(&mut sub).await;
    assert_eq!(
        d.body(),
        &b"ok"[..],
        "nothing of the failed publish was taken"
    );
    d.fin().unwrap();
    b.shutdown().await.unwrap();
}
