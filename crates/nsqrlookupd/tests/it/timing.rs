//! The two time windows, with short flags: `--tombstone-lifetime` (a tombstoned producer hides
//! from `/lookup` for that long, then comes back if still registered) and
//! `--inactive-producer-timeout` (a producer with no IDENTIFY / PING for that long hides from
//! `/lookup` and `/nodes`). Both are judged at query time. Waits are bounded polls, and the
//! windows are long enough (seconds) that the state just after a command is still there when
//! a slow machine gets to look at it: a slow machine makes these slower, not flaky.

use std::time::{Duration, Instant};

use crate::common::*;

const NODE: &str = "127.0.0.1:4151";

#[test]
fn tombstone_expires_and_the_producer_comes_back() {
    let l = Lookupd::start(&["--tombstone-lifetime=3s"]);
    let mut a = l.nsqd("127.0.0.1", 4150, 4151);
    a.ok("REGISTER t");
    a.ok("REGISTER u");
    let me = vec![a.local_addr()];
    let start = Instant::now();
    assert_eq!(
        l.post(&format!("/topic/tombstone?topic=t&node={NODE}"))
            .status,
        200
    );
    assert_eq!(l.lookup_producers("t").unwrap(), Vec::<String>::new());
    assert_eq!(l.lookup_producers("u").unwrap(), me);
    assert_eq!(
        l.get_json("/nodes")["producers"][0]["tombstones"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| **b == true)
            .count(),
        1
    );

    assert!(wait_until(Duration::from_secs(30), || l
        .lookup_producers("t")
        .unwrap()
        == me));
    assert!(start.elapsed() >= Duration::from_secs(3));
    let nodes = l.get_json("/nodes");
    assert_eq!(
        nodes["producers"][0]["tombstones"],
        serde_json::json!([false, false])
    );
    // The flag itself stays set in /debug; only its effect expired.
    assert_eq!(l.get_json("/debug")["topic:t:"][0]["tombstoned"], true);
}

#[test]
fn unregister_after_tombstone_removes_for_good_and_register_starts_fresh() {
    let l = Lookupd::start(&["--tombstone-lifetime=1h"]);
    let mut a = l.nsqd("127.0.0.1", 4150, 4151);
    a.ok("REGISTER t c");
    l.post(&format!("/topic/tombstone?topic=t&node={NODE}"));
    assert_eq!(l.lookup_producers("t").unwrap(), Vec::<String>::new());
    // Re-REGISTER keeps the tombstone.
    a.ok("REGISTER t c");
    assert_eq!(l.lookup_producers("t").unwrap(), Vec::<String>::new());
    // UNREGISTER removes the producer; a new REGISTER is a fresh, visible producer.
    a.ok("UNREGISTER t");
    assert_eq!(l.get_json("/debug").get("topic:t:"), None);
    a.ok("REGISTER t");
    assert_eq!(l.lookup_producers("t").unwrap(), [a.local_addr()]);
}

#[test]
fn inactive_producers_are_hidden_until_they_ping() {
    let l = Lookupd::start(&["--inactive-producer-timeout=2s"]);
    let mut a = l.nsqd("127.0.0.1", 4150, 4151);
    a.ok("REGISTER t");
    let me = vec![a.local_addr()];
    assert_eq!(l.lookup_producers("t").unwrap(), me);
    assert_eq!(
        l.get_json("/nodes")["producers"].as_array().unwrap().len(),
        1
    );

    assert!(wait_until(Duration::from_secs(30), || l
        .lookup_producers("t")
        .unwrap()
        .is_empty()));
    assert_eq!(l.get_json("/nodes"), serde_json::json!({"producers": []}));
    // Still registered: /debug shows it, the topic is listed.
    assert_eq!(
        l.get_json("/debug")["topic:t:"].as_array().unwrap().len(),
        1
    );
    assert_eq!(l.list("/topics", "topics"), ["t"]);

    // A PING makes it active again at once.
    a.ok("PING");
    assert_eq!(l.lookup_producers("t").unwrap(), me);
    assert_eq!(
        l.get_json("/nodes")["producers"].as_array().unwrap().len(),
        1
    );
    let last = l.get_json("/debug")["client::"][0]["last_update"]
        .as_i64()
        .unwrap();
    assert!(last > 0);
}

#[test]
fn regular_pings_keep_a_producer_active() {
    let l = Lookupd::start(&["--inactive-producer-timeout=2s"]);
    let mut a = l.nsqd("127.0.0.1", 4150, 4151);
    a.ok("REGISTER t");
    let end = Instant::now() + Duration::from_secs(3);
    while Instant::now() < end {
        a.ok("PING");
        assert_eq!(l.lookup_producers("t").unwrap().len(), 1);
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn negative_windows_behave_as_upstream() {
    // Go durations may be negative: every producer is inactive / nothing is tombstoned.
    let l = Lookupd::start(&["--inactive-producer-timeout=-1s"]);
    let mut a = l.nsqd("127.0.0.1", 4150, 4151);
    a.ok("REGISTER t");
    assert_eq!(l.lookup_producers("t").unwrap(), Vec::<String>::new());
    drop(l);
    let l = Lookupd::start(&["--tombstone-lifetime=-1s"]);
    let mut a = l.nsqd("127.0.0.1", 4150, 4151);
    a.ok("REGISTER t");
    l.post(&format!("/topic/tombstone?topic=t&node={NODE}"));
    assert_eq!(l.lookup_producers("t").unwrap().len(), 1);
}
