//! Registry semantics, with explicit clocks: registration keys outliving producers, ephemeral
//! cleanup, inactivity and tombstone windows, `/nodes` tombstone slots, wildcards.
#![allow(clippy::unwrap_used)]

use super::*;
use crate::identify::IdentifyBody;

const SEC: i64 = 1_000_000_000;
const W: Windows = Windows {
    inactive_producer_timeout: 300 * SEC,
    tombstone_lifetime: 45 * SEC,
};

fn peer(id: &str, http_port: i64, now: i64) -> Arc<PeerInfo> {
    let body = IdentifyBody {
        broadcast_address: "10.0.0.1".into(),
        hostname: "box".into(),
        tcp_port: 4150,
        http_port,
        version: "1.3.0".into(),
        ..IdentifyBody::default()
    };
    Arc::new(PeerInfo::new(id.into(), body, now))
}

fn ids(l: &Lookup) -> Vec<&str> {
    l.producers.iter().map(|p| p.id.as_str()).collect()
}

fn debug_keys(r: &Registry) -> Vec<String> {
    r.debug().iter().map(|(k, _)| k.to_string()).collect()
}

#[test]
fn register_lookup_and_keys_outliving_producers() {
    let r = Registry::new();
    let a = peer("127.0.0.1:1", 4151, 0);
    assert!(r.identify(&a));
    assert!(!r.identify(&a));
    let added = r.register(&a, "t", Some("c"));
    assert_eq!(added, [channel_reg("t", "c"), topic_reg("t")]);
    assert!(r.register(&a, "t", Some("c")).is_empty()); // idempotent
    r.register(&a, "t2", None);
    assert_eq!(r.topics(), ["t", "t2"]);
    assert_eq!(r.channels("t"), ["c"]);
    assert_eq!(ids(&r.lookup("t", 0, W).unwrap()), ["127.0.0.1:1"]);
    assert_eq!(
        debug_keys(&r),
        ["client::", "topic:t:", "topic:t2:", "channel:t:c"]
    );

    assert_eq!(r.disconnect("127.0.0.1:1").len(), 4);
    assert_eq!(r.topics(), ["t", "t2"]);
    assert_eq!(r.channels("t"), ["c"]);
    let l = r.lookup("t", 0, W).unwrap();
    assert_eq!((l.channels.len(), l.producers.len()), (1, 0));
    assert!(r.debug().is_empty());
    assert!(r.lookup("nosuch", 0, W).is_none());
}

#[test]
fn unregister_rules() {
    let r = Registry::new();
    let a = peer("a:1", 4151, 0);
    r.identify(&a);
    r.register(&a, "t", Some("c"));
    r.register(&a, "t", Some("e#ephemeral"));
    r.register(&a, "x#ephemeral", Some("c"));

    // Channel: the non-ephemeral key stays, the ephemeral one goes when empty.
    let u = r.unregister("a:1", "t", Some("c"));
    assert_eq!(u.removed, [channel_reg("t", "c")]);
    r.unregister("a:1", "t", Some("e#ephemeral"));
    assert_eq!(r.channels("t"), ["c"]);
    assert_eq!(ids(&r.lookup("t", 0, W).unwrap()), ["a:1"]); // topic untouched

    // Topic-wide: leaves the channels too (unexpected), ephemeral topic key removed, its
    // channel keys kept.
    let u = r.unregister("a:1", "x#ephemeral", None);
    assert_eq!(u.unexpected, [channel_reg("x#ephemeral", "c")]);
    assert_eq!(u.removed, [topic_reg("x#ephemeral")]);
    assert!(r.lookup("x#ephemeral", 0, W).is_none());
    assert_eq!(r.channels("x#ephemeral"), ["c"]);

    // Never registered: nothing happens.
    assert_eq!(r.unregister("a:1", "zzz", None), Unregistered::default());
    assert!(r.lookup("zzz", 0, W).is_none());
}

#[test]
fn ephemeral_key_stays_while_another_producer_remains() {
    let r = Registry::new();
    let (a, b) = (peer("a:1", 1, 0), peer("b:1", 2, 0));
    r.register(&a, "t#ephemeral", None);
    r.register(&b, "t#ephemeral", None);
    r.unregister("a:1", "t#ephemeral", None);
    assert_eq!(ids(&r.lookup("t#ephemeral", 0, W).unwrap()), ["b:1"]);
}

#[test]
fn inactivity_window() {
    let r = Registry::new();
    let a = peer("a:1", 4151, 0);
    r.identify(&a);
    r.register(&a, "t", None);
    let w = Windows {
        inactive_producer_timeout: 10,
        tombstone_lifetime: 0,
    };
    assert_eq!(r.lookup("t", 10, w).unwrap().producers.len(), 1); // <= timeout: active
    assert_eq!(r.lookup("t", 11, w).unwrap().producers.len(), 0);
    assert!(r.nodes(11, w).is_empty());
    a.touch(11);
    assert_eq!(r.nodes(15, w).len(), 1);
    assert_eq!(r.lookup("t", 15, w).unwrap().producers.len(), 1);
}

#[test]
fn tombstones() {
    let r = Registry::new();
    let a = peer("a:1", 4151, 0);
    let b = peer("b:1", 4152, 0);
    for p in [&a, &b] {
        r.identify(p);
        r.register(p, "t", None);
        r.register(p, "u", None);
    }
    assert_eq!(r.tombstone("t", "10.0.0.1:4151", 100), 1);
    assert_eq!(r.tombstone("t", "nosuch:1", 100), 0);
    assert_eq!(r.tombstone("nosuch", "10.0.0.1:4151", 100), 0);
    assert_eq!(ids(&r.lookup("t", 100, W).unwrap()), ["b:1"]);
    assert_eq!(ids(&r.lookup("u", 100, W).unwrap()), ["a:1", "b:1"]); // other topics unaffected

    let nodes = r.nodes(100, W);
    assert_eq!(nodes.len(), 2); // tombstones do not hide nodes
    assert_eq!(
        (nodes[0].topics.clone(), nodes[0].tombstones.clone()),
        (vec!["t".to_string(), "u".to_string()], vec![true, false])
    );
    assert_eq!(nodes[1].tombstones, [false, false]);

    // Re-REGISTER keeps the tombstone; it expires after the lifetime (flag stays set).
    r.register(&a, "t", None);
    assert_eq!(
        r.lookup("t", 100 + 45 * SEC - 1, W)
            .unwrap()
            .producers
            .len(),
        1
    );
    assert_eq!(r.lookup("t", 100 + 45 * SEC, W).unwrap().producers.len(), 2);
    let dbg = r.debug();
    let (_, t) = dbg.iter().find(|(k, _)| *k == topic_reg("t")).unwrap();
    assert!(t[0].tombstoned && t[0].tombstoned_at == 100);
    assert_eq!(t[1].tombstoned_at, GO_ZERO_TIME_NS);

    // UNREGISTER + REGISTER makes a fresh, untombstoned producer.
    r.tombstone("t", "10.0.0.1:4151", 200);
    r.unregister("a:1", "t", None);
    r.register(&a, "t", None);
    assert_eq!(r.lookup("t", 201, W).unwrap().producers.len(), 2);
}

#[test]
fn http_mutations() {
    let r = Registry::new();
    r.create_topic("t");
    assert_eq!(r.lookup("t", 0, W).unwrap().producers.len(), 0);
    r.create_channel("t2", "c");
    assert_eq!(r.topics(), ["t", "t2"]);
    assert!(r.delete_channel("t2", "c"));
    assert!(!r.delete_channel("t2", "c"));
    r.create_channel("t2", "c");
    let a = peer("a:1", 1, 0);
    r.register(&a, "t2", Some("d"));
    let (channels, existed) = r.delete_topic("t2");
    assert_eq!((channels.len(), existed), (2, true));
    assert_eq!(r.topics(), ["t"]);
    assert!(r.channels("t2").is_empty());
    assert_eq!(r.delete_topic("never"), (Vec::new(), false));
    // The peer's index follows removed keys: a disconnect finds nothing left to remove.
    assert!(r.disconnect("a:1").is_empty());
}

#[test]
fn wildcards_like_upstream() {
    let r = Registry::new();
    let a = peer("a:1", 4151, 0);
    r.register(&a, "t", Some("c1"));
    r.register(&a, "u", Some("c2"));
    assert_eq!(r.channels("*"), ["c1", "c2"]);
    let l = r.lookup("*", 0, W).unwrap();
    assert_eq!((l.channels.len(), ids(&l)), (2, vec!["a:1"]));
    assert_eq!(r.tombstone("*", "10.0.0.1:4151", 5), 1);
    assert_eq!(r.delete_topic("*").0.len(), 2);
    assert!(r.topics().is_empty());
    assert!(r.lookup("*", 0, W).is_none());
    assert!(r.lookup("", 0, W).is_none());
}
