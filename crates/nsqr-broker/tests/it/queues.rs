//! Queue features of the engine through its public API: settings, dead letters (delivery
//! limit, given up, expired), time to live, ordered channels (with keys, across requeues,
//! timeouts, the disk and a restart) and answers by delivery number.
use std::time::Duration;

use nsqr_broker::{
    Broker, BrokerConfig, BrokerError, ConsumerInfo, ConsumerKind, DeadLetterReason, Delivery,
    PutOptions, Settle, SubscribeOptions, Subscription,
};
use serde_json::json;

async fn broker() -> Broker {
    Broker::start(BrokerConfig::default()).await.unwrap()
}

async fn disk_broker(dir: &std::path::Path, mem: usize) -> Broker {
    Broker::start(BrokerConfig {
        data_path: Some(dir.to_path_buf()),
        mem_queue_size: mem,
        ..BrokerConfig::default()
    })
    .await
    .unwrap()
}

async fn next(sub: &mut Subscription) -> Delivery {
    tokio::time::timeout(Duration::from_secs(30), sub.next())
        .await
        .expect("a delivery in time")
        .expect("subscription open")
}

fn text(d: &Delivery) -> String {
    String::from_utf8(d.body().to_vec()).unwrap()
}

/// Nothing more arrives for a moment (used only where the test then checks the opposite
/// elsewhere, never as proof on its own).
async fn quiet(sub: &mut Subscription, ms: u64) -> bool {
    tokio::time::timeout(Duration::from_millis(ms), sub.next())
        .await
        .is_err()
}

#[tokio::test]
async fn a_message_past_max_attempts_goes_to_the_dead_letter_topic_once() {
    let b = broker().await;
    b.configure_channel("jobs", "work", &json!({"max_attempts": 3}))
        .unwrap();
    let mut dead = b
        .subscribe("jobs.dead", "inspect", SubscribeOptions::default())
        .await
        .unwrap();
    let mut sub = b
        .subscribe("jobs", "work", SubscribeOptions::default())
        .await
        .unwrap();
    b.publisher("jobs").unwrap().publish("poison").unwrap();
    for attempt in 1..=3 {
        let d = next(&mut sub).await;
        assert_eq!(d.attempts(), attempt);
        d.req(Duration::ZERO).unwrap();
    }
    let d = next(&mut dead).await;
    assert_eq!(text(&d), "poison");
    let info = d
        .attributes()
        .and_then(|a| a.dead_letter.clone())
        .expect("a dead-letter record");
    assert_eq!(info.reason, DeadLetterReason::DeliveryLimit);
    assert_eq!((&*info.topic, &*info.channel), ("jobs", "work"));
    assert_eq!(info.attempts, 3);
    d.fin().unwrap();
    assert!(quiet(&mut sub, 200).await, "no fourth delivery");
    assert!(quiet(&mut dead, 100).await, "dead-lettered once");
    let stats = b.snapshot(Some("jobs"), Some("work"), false);
    let ch = &stats.topics.unwrap()[0].channels[0];
    let dl = ch.dead_letters.clone().expect("counted");
    assert_eq!(
        (dl.delivery_limit, dl.total(), dl.topic.as_str()),
        (1, 1, "jobs.dead")
    );
    assert_eq!(ch.counts.depth, 0);
}

#[tokio::test]
async fn a_timeout_counts_as_an_attempt_and_term_gives_up_at_once() {
    let b = broker().await;
    b.configure_channel(
        "t",
        "c",
        &json!({"max_attempts": 2, "dead_letter_topic": "errors"}),
    )
    .unwrap();
    let mut dead = b
        .subscribe("errors", "x", SubscribeOptions::default().max_in_flight(10))
        .await
        .unwrap();
    let mut sub = b
        .subscribe(
            "t",
            "c",
            SubscribeOptions::default()
                .max_in_flight(10)
                .msg_timeout(Duration::from_millis(50)),
        )
        .await
        .unwrap();
    let p = b.publisher("t").unwrap();
    p.publish("slow").unwrap();
    p.publish("rejected").unwrap();
    let mut held = Vec::new();
    for _ in 0..2 {
        let d = next(&mut sub).await;
        if text(&d) == "rejected" {
            d.term().unwrap();
        } else {
            held.push(d); // left to time out
        }
    }
    let again = next(&mut sub).await;
    assert_eq!((text(&again).as_str(), again.attempts()), ("slow", 2));
    drop(again); // times out a second time: the limit
    let mut reasons = Vec::new();
    for _ in 0..2 {
        let d = next(&mut dead).await;
        let info = d.attributes().unwrap().dead_letter.clone().unwrap();
        reasons.push((text(&d), info.reason, info.attempts));
    }
    reasons.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        reasons,
        [
            ("rejected".to_string(), DeadLetterReason::Rejected, 1),
            ("slow".to_string(), DeadLetterReason::DeliveryLimit, 2)
        ]
    );
}

#[tokio::test]
async fn a_requeue_without_counting_leaves_attempts_alone() {
    let b = broker().await;
    b.configure_channel("t", "c", &json!({"max_attempts": 1}))
        .unwrap();
    let mut sub = b
        .subscribe("t", "c", SubscribeOptions::default())
        .await
        .unwrap();
    b.publisher("t").unwrap().publish("m").unwrap();
    for _ in 0..3 {
        let d = next(&mut sub).await;
        assert_eq!(d.attempts(), 1);
        d.req_without_attempt(Duration::ZERO).unwrap();
    }
    let d = next(&mut sub).await;
    d.fin().unwrap();
}

#[tokio::test]
async fn expired_messages_are_never_delivered() {
    let b = broker().await;
    // channel "keep" dead-letters expired messages, "drop" drops them
    b.configure_channel("t", "drop", &json!({"expired": "drop"}))
        .unwrap();
    b.configure_channel("t", "keep", &json!({})).unwrap();
    let p = b.publisher("t").unwrap();
    p.publish_with(
        "short",
        &PutOptions::default().ttl(Duration::from_millis(100)),
    )
    .unwrap();
    p.publish_with("long", &PutOptions::default().ttl(Duration::from_secs(600)))
        .unwrap();
    p.publish("forever").unwrap();
    tokio::time::sleep(Duration::from_millis(150)).await;
    let mut dead = b
        .subscribe("t.dead", "x", SubscribeOptions::default())
        .await
        .unwrap();
    for ch in ["drop", "keep"] {
        let mut sub = b
            .subscribe("t", ch, SubscribeOptions::default())
            .await
            .unwrap();
        for want in ["long", "forever"] {
            let d = next(&mut sub).await;
            assert_eq!(text(&d), want, "channel {ch}");
            d.fin().unwrap();
        }
    }
    let d = next(&mut dead).await;
    assert_eq!(text(&d), "short");
    let info = d.attributes().unwrap().dead_letter.clone().unwrap();
    assert_eq!(
        (info.reason, &*info.channel, info.attempts),
        (DeadLetterReason::Expired, "keep", 0)
    );
    let topics = b.snapshot(Some("t"), None, false).topics.unwrap();
    let by_name = |n: &str| {
        topics[0]
            .channels
            .iter()
            .find(|c| c.channel_name == n)
            .and_then(|c| c.dead_letters.clone())
            .unwrap()
    };
    assert_eq!(
        (by_name("drop").expired_dropped, by_name("drop").expired),
        (1, 0)
    );
    assert_eq!(
        (by_name("keep").expired_dropped, by_name("keep").expired),
        (0, 1)
    );
}

#[tokio::test]
async fn a_channel_ttl_sweeps_a_queue_nobody_reads() {
    let b = broker().await;
    b.configure_topic("t", &json!({"message_ttl": "200ms"}))
        .unwrap();
    b.configure_channel("t", "idle", &json!({})).unwrap();
    let mut dead = b
        .subscribe(
            "t.dead",
            "x",
            SubscribeOptions::default().max_in_flight(100),
        )
        .await
        .unwrap();
    let p = b.publisher("t").unwrap();
    p.publish_batch((0..50).map(|i| format!("m{i}"))).unwrap();
    let mut got = Vec::new();
    while got.len() < 50 {
        let d = next(&mut dead).await;
        got.push(text(&d));
        d.fin().unwrap();
    }
    assert_eq!(got, (0..50).map(|i| format!("m{i}")).collect::<Vec<_>>());
    let t = &b.snapshot(Some("t"), Some("idle"), false).topics.unwrap()[0];
    assert_eq!(t.channels[0].counts.depth, 0);
}

#[tokio::test]
async fn bad_settings_change_nothing() {
    let b = broker().await;
    let e = b
        .configure_channel("t", "c", &json!({"max_attempts": 3, "ordered": "yes"}))
        .unwrap_err();
    assert!(matches!(e, BrokerError::QueueSettings(_)), "{e}");
    assert!(b.topic("t").is_none(), "nothing created");
    b.configure_channel("t", "c", &json!({"max_attempts": 3}))
        .unwrap();
    assert!(b
        .configure_channel("t", "c", &json!({"max_attempts": 5, "bogus": 1}))
        .is_err());
    let ch = b.topic("t").unwrap().channel("c").unwrap();
    assert_eq!(ch.settings().max_attempts, Some(3));
    assert!(b
        .configure_channel("t", "c", &json!({"dead_letter_topic": "t"}))
        .is_err());
}

#[tokio::test]
async fn an_ordered_channel_hands_out_one_message_at_a_time_in_order() {
    let b = broker().await;
    b.configure_channel("t", "c", &json!({"ordered": true}))
        .unwrap();
    let mut sub = b
        .subscribe("t", "c", SubscribeOptions::default().max_in_flight(10))
        .await
        .unwrap();
    let p = b.publisher("t").unwrap();
    p.publish_batch((0..5).map(|i| format!("m{i}"))).unwrap();
    let first = next(&mut sub).await;
    assert_eq!(text(&first), "m0");
    assert!(
        quiet(&mut sub, 100).await,
        "nothing else while m0 is in flight"
    );
    first.req(Duration::ZERO).unwrap();
    let again = next(&mut sub).await;
    assert_eq!((text(&again).as_str(), again.attempts()), ("m0", 2));
    again.fin().unwrap();
    for i in 1..5 {
        let d = next(&mut sub).await;
        assert_eq!(text(&d), format!("m{i}"));
        d.fin().unwrap();
    }
}

#[tokio::test]
async fn ordering_keys_proceed_independently() {
    let b = broker().await;
    b.configure_channel("t", "c", &json!({"ordered": true}))
        .unwrap();
    let mut sub = b
        .subscribe(
            "t",
            "c",
            SubscribeOptions::default()
                .max_in_flight(10)
                .msg_timeout(Duration::from_millis(100)),
        )
        .await
        .unwrap();
    let p = b.publisher("t").unwrap();
    for i in 0..3 {
        for k in ["a", "b"] {
            p.publish_with(format!("{k}{i}"), &PutOptions::default().ordering_key(k))
                .unwrap();
        }
    }
    let a0 = next(&mut sub).await;
    let b0 = next(&mut sub).await;
    assert_eq!((text(&a0).as_str(), text(&b0).as_str()), ("a0", "b0"));
    // a0 is left to time out; key b goes on meanwhile, key a waits for a0
    b0.fin().unwrap();
    let b1 = next(&mut sub).await;
    assert_eq!(text(&b1), "b1");
    b1.fin().unwrap();
    let mut order = Vec::new();
    while order.len() < 4 {
        let d = next(&mut sub).await;
        order.push(text(&d));
        d.fin().unwrap();
    }
    let a: Vec<&String> = order.iter().filter(|s| s.starts_with('a')).collect();
    assert_eq!(
        a,
        ["a0", "a1", "a2"],
        "a0 again first, then in order: {order:?}"
    );
    assert!(order.contains(&"b2".to_string()));
    drop(a0);
}

#[tokio::test]
async fn receipts_refuse_an_earlier_delivery() {
    let b = broker().await;
    let consumer = b.new_consumer(
        ConsumerInfo::new(ConsumerKind::Http, "test").msg_timeout(Duration::from_millis(50)),
    );
    consumer.set_ready_count(1);
    let ch = b.join("t", "c", &consumer).await.unwrap();
    b.publisher("t").unwrap().publish("m").unwrap();
    let take = || {
        let mut got = None;
        let mut rng = 1;
        ch.deliver_numbered(&consumer, 1, 0, &mut rng, |m, n| got = Some((m.id.0, n)));
        got
    };
    let mut first = None;
    for _ in 0..200 {
        first = take();
        if first.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let first = first.expect("delivered");
    // let it time out and be delivered again
    let mut second = None;
    for _ in 0..400 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        second = take();
        if second.is_some() {
            break;
        }
    }
    let second = second.expect("redelivered");
    assert_eq!(first.0, second.0);
    let mut results = Vec::new();
    ch.settle(&[first, (first.0 ^ 1, 1), second], Settle::Fin, |i, r| {
        results.push((i, r))
    });
    assert_eq!(
        results,
        [
            (0, Err(BrokerError::Redelivered)),
            (1, Err(BrokerError::NotInFlight)),
            (2, Ok(()))
        ]
    );
    b.consumer_left(&ch, &consumer);
}

#[tokio::test]
async fn order_holds_across_the_disk_and_a_restart() {
    let dir = nsqr_testkit::temp_dir("ordered-restart");
    let n: usize = 300;
    {
        let b = disk_broker(&dir, 20).await;
        b.configure_channel("t", "c", &json!({"ordered": true}))
            .unwrap();
        let p = b.publisher("t").unwrap();
        for i in 0..n {
            let key = if i.is_multiple_of(2) { "even" } else { "odd" };
            p.publish_with(format!("{i}"), &PutOptions::default().ordering_key(key))
                .unwrap()
                .wait()
                .await
                .unwrap();
        }
        // take a few, finish some, requeue one, leave one in flight: then restart
        let mut sub = b
            .subscribe("t", "c", SubscribeOptions::default().max_in_flight(4))
            .await
            .unwrap();
        let d0 = next(&mut sub).await;
        let d1 = next(&mut sub).await;
        assert_eq!((text(&d0).as_str(), text(&d1).as_str()), ("0", "1"));
        d0.fin().unwrap();
        d1.req(Duration::ZERO).unwrap();
        let d2 = next(&mut sub).await;
        assert!(["1", "2"].contains(&text(&d2).as_str()));
        std::mem::forget(d2); // in flight at shutdown
        drop(sub);
        b.shutdown().await.unwrap();
    }
    let b = disk_broker(&dir, 20).await;
    let ch = b.topic("t").unwrap().channel("c").unwrap();
    let md = std::fs::read_to_string(dir.join("nsqd.dat")).unwrap();
    assert!(ch.effective_settings().ordered, "settings came back: {md}");
    let mut sub = b
        .subscribe("t", "c", SubscribeOptions::default().max_in_flight(8))
        .await
        .unwrap();
    let (mut even, mut odd) = (Vec::new(), Vec::new());
    while even.len() + odd.len() < n - 1 {
        let d = next(&mut sub).await;
        let i: usize = text(&d).parse().unwrap();
        assert!(d
            .attributes()
            .and_then(|a| a.ordering_key.clone())
            .is_some());
        if i.is_multiple_of(2) {
            even.push(i);
        } else {
            odd.push(i);
        }
        d.fin().unwrap();
    }
    assert_eq!(even, (2..n).step_by(2).collect::<Vec<_>>());
    assert_eq!(odd, (1..n).step_by(2).collect::<Vec<_>>());
    assert!(quiet(&mut sub, 200).await, "no copies delivered");
    b.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn dead_letters_and_ttls_survive_the_disk_and_a_restart() {
    let dir = nsqr_testkit::temp_dir("attrs-restart");
    {
        let b = disk_broker(&dir, 2).await;
        b.configure_channel("t", "c", &json!({"max_attempts": 1}))
            .unwrap();
        b.configure_channel("t.dead", "keep", &json!({})).unwrap();
        b.configure_channel("t", "other", &json!({})).unwrap();
        let mut sub = b
            .subscribe("t", "c", SubscribeOptions::default().max_in_flight(10))
            .await
            .unwrap();
        let p = b.publisher("t").unwrap();
        for i in 0..5 {
            p.publish(format!("m{i}")).unwrap().wait().await.unwrap();
        }
        p.publish_with("ttl", &PutOptions::default().ttl(Duration::from_secs(3600)))
            .unwrap();
        for _ in 0..6 {
            let d = next(&mut sub).await;
            if text(&d) == "ttl" {
                d.fin().unwrap();
            } else {
                d.req(Duration::ZERO).unwrap();
            }
        }
        // all five reach the dead-letter topic (past its memory bound of 2: on disk)
        let t = b.topic("t.dead").unwrap();
        for _ in 0..500 {
            if t.channel("keep").unwrap().depth() == 5 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(t.channel("keep").unwrap().depth(), 5);
        drop(sub);
        b.shutdown().await.unwrap();
    }
    let b = disk_broker(&dir, 2).await;
    // Unordered channels come back in nsqd's order (memory after the disk), so compare sets.
    let mut dead = b
        .subscribe(
            "t.dead",
            "keep",
            SubscribeOptions::default().max_in_flight(10),
        )
        .await
        .unwrap();
    let mut got = Vec::new();
    for _ in 0..5 {
        let d = next(&mut dead).await;
        let info = d.attributes().unwrap().dead_letter.clone().unwrap();
        assert_eq!((&*info.topic, info.attempts), ("t", 1));
        got.push(text(&d));
        d.fin().unwrap();
    }
    got.sort();
    assert_eq!(got, (0..5).map(|i| format!("m{i}")).collect::<Vec<_>>());
    let mut sub = b
        .subscribe("t", "other", SubscribeOptions::default().max_in_flight(10))
        .await
        .unwrap();
    let mut with_ttl = Vec::new();
    for _ in 0..6 {
        let d = next(&mut sub).await;
        if d.attributes().is_some_and(|a| a.expires_at > 0) {
            with_ttl.push(text(&d));
        }
        d.fin().unwrap();
    }
    assert_eq!(with_ttl, ["ttl"], "expiry kept, on that message only");
    b.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_requeued_message_wakes_another_waiting_consumer() {
    let b = broker().await;
    let mut a = b
        .subscribe("t", "c", SubscribeOptions::default())
        .await
        .unwrap();
    let mut other = b
        .subscribe("t", "c", SubscribeOptions::default())
        .await
        .unwrap();
    b.publisher("t").unwrap().publish("m").unwrap();
    let d = tokio::select! {
        d = a.next() => d.unwrap(),
        d = other.next() => {
            // the other one got it first: swap roles
            std::mem::swap(&mut a, &mut other);
            d.unwrap()
        }
    };
    let waiting = tokio::spawn(async move {
        let d = next(&mut other).await;
        (text(&d), d.attempts())
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    d.req(Duration::ZERO).unwrap();
    let got = tokio::time::timeout(Duration::from_secs(30), waiting)
        .await
        .expect("the waiting consumer is woken")
        .unwrap();
    assert_eq!(got, ("m".to_string(), 2));
    drop(a);
}
