use super::*;
use std::collections::HashSet;
use std::time::Duration;

use crate::clock::now_ms;
use crate::notify::NotifyFlags;
use crate::pubsub::Kind;
use crate::strings::{Expiry, SetOptions};
use crate::test_support::*;
use crate::{KvConfig, KvError, Policy};

fn set(ks: &Keyspace, key: &[u8], deadline: Option<u64>) {
    let opts = SetOptions {
        expiry: deadline.map_or(Expiry::Clear, Expiry::At),
        ..SetOptions::default()
    };
    ks.set(key, b"v", opts, None, &mut Pending::default())
        .unwrap();
}

#[test]
fn del_and_exists() {
    let ks = mem();
    set(&ks, b"a", None);
    set(&ks, b"b", None);
    assert_eq!(ks.exists(&[b"a", b"a", b"c"]), 2);
    assert_eq!(ks.del(&[b"a", b"c", b"a"], &mut Pending::default()), 1);
    assert!(!ks.contains(b"a") && ks.contains(b"b"));
}

#[test]
fn expire_conditions_as_redis() {
    let ks = mem();
    let mut p = Pending::default();
    let t = |s: i64| now_ms() as i64 + s * 1000;
    let c = |nx, xx, gt, lt| ExpireCondition { nx, xx, gt, lt };
    let (nx, xx, gt, lt) = (
        c(true, false, false, false),
        c(false, true, false, false),
        c(false, false, true, false),
        c(false, false, false, true),
    );
    set(&ks, b"k", None);
    assert!(!ks.expire(b"k", t(100), xx, &mut p));
    assert!(!ks.expire(b"k", t(100), gt, &mut p));
    assert!(ks.expire(b"k", t(100), nx, &mut p));
    assert!(!ks.expire(b"k", t(50), nx, &mut p));
    assert!(!ks.expire(b"k", t(50), gt, &mut p));
    assert!(ks.expire(b"k", t(500), gt, &mut p));
    assert!(ks.expire(b"k", t(5), lt, &mut p));
    assert!(matches!(ks.ttl(b"k"), Ttl::Remaining(ms) if ms <= 5_000));
    assert!(ks.persist(b"k", &mut p));
    assert!(!ks.persist(b"k", &mut p));
    // XX LT needs a deadline; LT alone counts a key without one as never expiring.
    assert!(!ks.expire(b"k", t(10), c(false, true, false, true), &mut p));
    assert!(ks.expire(b"k", t(10), lt, &mut p));
    assert!(!ks.expire(b"missing", t(10), ExpireCondition::ALWAYS, &mut p));
}

#[test]
fn expire_in_the_past_deletes_with_a_del_event() {
    let (ks, feed) = with_feed(KvConfig::default());
    set(&ks, b"k", None);
    assert!(ks.expire(b"k", -5, ExpireCondition::ALWAYS, &mut Pending::default()));
    assert!(!ks.contains(b"k"));
    assert_eq!(
        feed.ops().last().unwrap(),
        &("del".to_string(), "k".to_string())
    );
    assert_eq!(ks.ttl(b"k"), Ttl::Missing);
}

#[test]
fn scan_returns_every_key_present_throughout_even_while_tables_grow() {
    let ks = mem();
    let first: HashSet<Vec<u8>> = (0..2000).map(|i| format!("k{i}").into_bytes()).collect();
    for k in &first {
        set(&ks, k, None);
    }
    let mut seen = HashSet::new();
    let mut cursor = 0;
    let mut calls = 0;
    loop {
        let mut out = Vec::new();
        cursor = ks.scan(0, cursor, 10, None, None, &mut out);
        seen.extend(out);
        // Keep adding keys so shards grow and rehash mid-scan.
        for j in 0..20 {
            set(&ks, format!("new{calls}-{j}").as_bytes(), None);
        }
        calls += 1;
        if cursor == 0 {
            break;
        }
        assert!(calls < 100_000);
    }
    assert!(
        first.is_subset(&seen),
        "missing {}",
        first.difference(&seen).count()
    );
}

#[test]
fn scan_match_and_keys() {
    let ks = mem();
    for k in ["user:1", "user:2", "cache:1"] {
        set(&ks, k.as_bytes(), None);
    }
    set(&ks, b"user:old", Some(now_ms() - 1));
    let mut out = Vec::new();
    let mut c = 0;
    loop {
        c = ks.scan(0, c, 1000, Some(b"user:*"), None, &mut out);
        if c == 0 {
            break;
        }
    }
    out.sort();
    assert_eq!(out, vec![b"user:1".to_vec(), b"user:2".to_vec()]);
    let mut keys = ks.keys(0, b"*:1");
    keys.sort();
    assert_eq!(keys, vec![b"cache:1".to_vec(), b"user:1".to_vec()]);
    // Cursors past the last shard simply end the scan.
    assert_eq!(ks.scan(0, u64::MAX, 10, None, None, &mut Vec::new()), 0);
}

#[test]
fn flush_and_dbsize() {
    let ks = mem();
    for i in 0..100 {
        set(&ks, format!("{i}").as_bytes(), Some(now_ms() + 60_000));
    }
    assert_eq!(ks.dbsize(), 100);
    assert_eq!(ks.flush(&mut Pending::default()), 100);
    assert_eq!((ks.dbsize(), ks.stats().volatile), (0, 0));
}

#[test]
fn a_thousand_keys_sharing_a_deadline_expire_on_time_among_many_volatile_ones() {
    let (ks, feed) = with_feed(KvConfig::default());
    let mut p = Pending::default();
    for i in 0..20_000 {
        set(
            &ks,
            format!("long{i}").as_bytes(),
            Some(now_ms() + 3_600_000),
        );
    }
    let due = now_ms() + 200;
    for i in 0..1000 {
        set(&ks, format!("short{i}").as_bytes(), Some(due));
    }
    ks.get(b"short1", |v| assert!(v.is_some())).unwrap();
    assert!(wait_until(Duration::from_secs(20), || {
        feed.ops().iter().filter(|(op, _)| op == "expired").count() == 1000
    }));
    let bodies = feed.0.lock().clone();
    let times: Vec<u64> = bodies
        .iter()
        .filter(|b| b["op"] == "expired")
        .map(|b| b["time"].as_u64().unwrap())
        .collect();
    // Never early; lateness is measured by the benchmark, not asserted here.
    assert!(times.iter().all(|&t| t >= due));
    assert_eq!(ks.dbsize(), 20_000);
    assert_eq!(ks.stats().expired, 1000);
    ks.del(&[b"long1"], &mut p);
}

#[test]
fn an_earlier_deadline_wakes_the_sleeping_timer() {
    let (ks, feed) = with_feed(KvConfig::default());
    set(&ks, b"late", Some(now_ms() + 3_600_000));
    std::thread::sleep(Duration::from_millis(50));
    set(&ks, b"soon", Some(now_ms() + 50));
    assert!(wait_until(Duration::from_secs(10), || feed
        .ops()
        .contains(&("expired".to_string(), "soon".to_string()))));
}

#[test]
fn expired_events_reach_keyspace_subscribers() {
    let ks = mem();
    ks.settings().set_notify(NotifyFlags::parse("Ex").unwrap());
    let sub = subscriber(7);
    ks.hub()
        .subscribe(&sub, Kind::Channel, [&b"__keyevent@0__:expired"[..]]);
    set(&ks, b"k", Some(now_ms() + 30));
    let mut got = Vec::new();
    assert!(wait_until(Duration::from_secs(10), || {
        got.extend(messages(&frames(&sub)));
        !got.is_empty()
    }));
    assert_eq!(
        got,
        vec![("__keyevent@0__:expired".to_string(), "k".to_string())]
    );
}

fn bounded(policy: Policy, maxmemory: u64) -> (std::sync::Arc<Keyspace>, std::sync::Arc<Collect>) {
    with_feed(KvConfig {
        maxmemory,
        policy,
        ..KvConfig::default()
    })
}

#[test]
fn noeviction_refuses_writes_over_maxmemory() {
    let (ks, _) = bounded(Policy::NoEviction, 1);
    assert_eq!(ks.make_room(), Ok(()));
    set(&ks, b"k", None);
    assert_eq!(ks.make_room(), Err(KvError::OutOfMemory));
    ks.settings().set_maxmemory(0);
    assert_eq!(ks.make_room(), Ok(()));
}

#[test]
fn allkeys_lru_keeps_memory_bounded_and_announces_evictions() {
    let (ks, feed) = bounded(Policy::AllKeysLru, 256 * 1024);
    for i in 0..20_000 {
        ks.make_room().unwrap();
        set(&ks, format!("key:{i:06}").as_bytes(), None);
    }
    assert!(ks.used_memory() < 300 * 1024, "{}", ks.used_memory());
    let evicted = feed.ops().iter().filter(|(op, _)| op == "evicted").count() as u64;
    assert!(evicted > 10_000);
    assert_eq!(ks.stats().evicted, evicted);
    assert_eq!(ks.dbsize() as u64 + evicted, 20_000);
}

#[test]
fn lru_prefers_keys_not_touched() {
    let (ks, _) = bounded(Policy::AllKeysLru, 0);
    for i in 0..2000 {
        set(&ks, format!("cold{i}").as_bytes(), None);
    }
    // Age the cold keys' clocks by two minutes, then use the hot ones.
    for i in 0..2000 {
        let key = format!("cold{i}");
        let hash = ks.hash(key.as_bytes());
        let mut g = ks.lock(hash);
        let clock = g.get(hash, key.as_bytes()).unwrap().clock();
        let aged = crate::clock::lru_clock(now_ms()).wrapping_sub(120) & 0x00ff_ffff;
        assert_ne!(clock, aged);
        let e = Entry::new(key.as_bytes(), b"v", None, aged);
        g.replace(hash, key.as_bytes(), e);
    }
    for i in 0..200 {
        set(&ks, format!("hot{i}").as_bytes(), None);
    }
    ks.settings().set_maxmemory(ks.used_memory() - 20_000);
    ks.make_room().unwrap();
    let hot_left = (0..200)
        .filter(|i| ks.contains(format!("hot{i}").as_bytes()))
        .count();
    assert_eq!(hot_left, 200);
}

#[test]
fn volatile_policies_only_evict_keys_with_deadlines() {
    for policy in [
        Policy::VolatileLru,
        Policy::VolatileTtl,
        Policy::VolatileRandom,
        Policy::VolatileLfu,
    ] {
        let (ks, _) = bounded(policy, 0);
        for i in 0..500 {
            set(&ks, format!("keep{i}").as_bytes(), None);
        }
        for i in 0..500 {
            set(
                &ks,
                format!("temp{i}").as_bytes(),
                Some(now_ms() + 3_600_000 + i),
            );
        }
        ks.settings().set_maxmemory(ks.used_memory() - 5_000);
        ks.make_room().unwrap();
        assert_eq!(
            ks.exists(
                &(0..500)
                    .map(|i| format!("keep{i}"))
                    .collect::<Vec<_>>()
                    .iter()
                    .map(|s| s.as_bytes())
                    .collect::<Vec<_>>()
            ),
            500
        );
        // Nothing volatile left to evict: OOM.
        ks.settings().set_maxmemory(1);
        assert_eq!(ks.make_room(), Err(KvError::OutOfMemory), "{policy:?}");
        assert_eq!(ks.stats().volatile, 0, "{policy:?}");
    }
}

use crate::entry::Entry;

#[test]
fn touch_counts_live_keys_and_random_key_finds_one() {
    let ks = mem();
    assert_eq!(ks.random_key(0), None);
    set(&ks, b"a", None);
    set(&ks, b"gone", Some(now_ms().saturating_sub(1)));
    assert_eq!(ks.touch_keys(&[b"a", b"a", b"gone", b"none"]), 2);
    for _ in 0..20 {
        assert_eq!(ks.random_key(0), Some(b"a".to_vec()));
    }
    for i in 0..100 {
        set(&ks, format!("k{i}").as_bytes(), None);
    }
    let seen: HashSet<Vec<u8>> = (0..200).filter_map(|_| ks.random_key(0)).collect();
    assert!(seen.len() > 10, "{}", seen.len());
}
