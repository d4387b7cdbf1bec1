use super::*;
use crate::clock::now_ms;
use crate::notify::NotifyFlags;
use crate::pubsub::Kind;
use crate::test_support::*;
use crate::{KvConfig, Ttl};

fn get(ks: &Keyspace, key: &[u8]) -> Option<Vec<u8>> {
    ks.get(key, |v| v.map(<[u8]>::to_vec)).unwrap()
}

fn set(ks: &Keyspace, key: &[u8], value: &[u8], opts: SetOptions) -> bool {
    ks.set(key, value, opts, None, &mut Pending::default())
        .unwrap()
}

fn plain() -> SetOptions {
    SetOptions::default()
}

#[test]
fn set_get_and_conditions() {
    let ks = mem();
    assert_eq!(get(&ks, b"k"), None);
    assert!(set(&ks, b"k", b"v1", plain()));
    assert_eq!(get(&ks, b"k"), Some(b"v1".to_vec()));
    let nx = SetOptions {
        condition: Condition::IfMissing,
        ..plain()
    };
    let xx = SetOptions {
        condition: Condition::IfExists,
        ..plain()
    };
    assert!(!set(&ks, b"k", b"v2", nx));
    assert!(set(&ks, b"k", b"v3", xx));
    assert!(!set(&ks, b"other", b"v", xx));
    assert_eq!(get(&ks, b"k"), Some(b"v3".to_vec()));
    assert_eq!(get(&ks, b"other"), None);
}

#[test]
fn set_get_option_sees_the_old_value_even_when_nx_refuses() {
    let ks = mem();
    let mut seen = Vec::new();
    let mut old = |v: Option<&[u8]>| seen.push(v.map(<[u8]>::to_vec));
    ks.set(b"k", b"a", plain(), Some(&mut old), &mut Pending::default())
        .unwrap();
    let nx = SetOptions {
        condition: Condition::IfMissing,
        ..plain()
    };
    let mut old = |v: Option<&[u8]>| seen.push(v.map(<[u8]>::to_vec));
    assert_eq!(
        ks.set(b"k", b"b", nx, Some(&mut old), &mut Pending::default()),
        Ok(false)
    );
    assert_eq!(seen, vec![None, Some(b"a".to_vec())]);
}

#[test]
fn deadlines_keep_clear_and_past() {
    let ks = mem();
    let later = now_ms() + 100_000;
    let ex = SetOptions {
        expiry: Expiry::At(later),
        ..plain()
    };
    set(&ks, b"k", b"v", ex);
    assert!(matches!(ks.ttl(b"k"), Ttl::Remaining(ms) if ms > 90_000 && ms <= 100_000));
    let keep = SetOptions {
        expiry: Expiry::Keep,
        ..plain()
    };
    set(&ks, b"k", b"w", keep);
    assert!(matches!(ks.ttl(b"k"), Ttl::Remaining(_)));
    set(&ks, b"k", b"x", plain());
    assert_eq!(ks.ttl(b"k"), Ttl::Persistent);
    // A deadline already past: the key is never served, even before the timer runs.
    let past = SetOptions {
        expiry: Expiry::At(now_ms() - 1),
        ..plain()
    };
    set(&ks, b"gone", b"v", past);
    assert_eq!(get(&ks, b"gone"), None);
    assert_eq!(ks.ttl(b"gone"), Ttl::Missing);
}

#[test]
fn getdel_and_getex() {
    let ks = mem();
    set(&ks, b"k", b"v", plain());
    let mut p = Pending::default();
    assert_eq!(
        ks.getdel(b"k", &mut p, |v| v.map(<[u8]>::to_vec)),
        Ok(Some(b"v".to_vec()))
    );
    assert_eq!(ks.getdel(b"k", &mut p, |v| v.map(<[u8]>::to_vec)), Ok(None));

    set(&ks, b"k", b"v", plain());
    let d = now_ms() + 50_000;
    assert_eq!(
        ks.getex(b"k", Some(Expiry::At(d)), &mut p, |v| v.is_some()),
        Ok(true)
    );
    assert!(matches!(ks.ttl(b"k"), Ttl::Remaining(_)));
    assert_eq!(
        ks.getex(b"k", Some(Expiry::Clear), &mut p, |v| v.is_some()),
        Ok(true)
    );
    assert_eq!(ks.ttl(b"k"), Ttl::Persistent);
    assert_eq!(ks.getex(b"k", None, &mut p, |v| v.is_some()), Ok(true));
    // A past deadline deletes the key after returning its value.
    assert_eq!(
        ks.getex(b"k", Some(Expiry::At(1)), &mut p, |v| v.is_some()),
        Ok(true)
    );
    assert_eq!(get(&ks, b"k"), None);
    assert_eq!(ks.getex(b"nope", None, &mut p, |v| v.is_some()), Ok(false));
}

#[test]
fn mget_mset() {
    let ks = mem();
    ks.mset(
        &[(b"a", b"1"), (b"b", b"2"), (b"a", b"3")],
        &mut Pending::default(),
    );
    let mut got = Vec::new();
    ks.mget(&[b"a", b"b", b"c", b"a"], |v| {
        got.push(v.map(<[u8]>::to_vec))
    });
    assert_eq!(
        got,
        vec![
            Some(b"3".to_vec()),
            Some(b"2".to_vec()),
            None,
            Some(b"3".to_vec())
        ]
    );
}

#[test]
fn incr_by_keeps_the_deadline_and_refuses_bad_values() {
    let ks = mem();
    let mut p = Pending::default();
    assert_eq!(ks.incr_by(b"n", 1, &mut p), Ok(1));
    assert_eq!(ks.incr_by(b"n", -11, &mut p), Ok(-10));
    assert_eq!(get(&ks, b"n"), Some(b"-10".to_vec()));
    ks.expire(b"n", (now_ms() + 60_000) as i64, Default::default(), &mut p);
    assert_eq!(ks.incr_by(b"n", 5, &mut p), Ok(-5));
    assert!(matches!(ks.ttl(b"n"), Ttl::Remaining(_)));
    set(&ks, b"s", b"abc", plain());
    assert_eq!(ks.incr_by(b"s", 1, &mut p), Err(KvError::NotInteger));
    set(&ks, b"s", b" 1", plain());
    assert_eq!(ks.incr_by(b"s", 1, &mut p), Err(KvError::NotInteger));
    set(&ks, b"m", i64::MAX.to_string().as_bytes(), plain());
    assert_eq!(ks.incr_by(b"m", 1, &mut p), Err(KvError::Overflow));
    assert_eq!(get(&ks, b"m"), Some(i64::MAX.to_string().into_bytes()));
}

#[test]
fn append_and_strlen() {
    let ks = Keyspace::open(
        KvConfig {
            max_bulk: 10,
            ..KvConfig::default()
        },
        None,
    )
    .unwrap();
    let mut p = Pending::default();
    assert_eq!(ks.append(b"k", b"hello", &mut p), Ok(5));
    assert_eq!(ks.append(b"k", b" you", &mut p), Ok(9));
    assert_eq!(get(&ks, b"k"), Some(b"hello you".to_vec()));
    assert_eq!(ks.append(b"k", b"!!", &mut p), Err(KvError::TooLarge));
    assert_eq!((ks.strlen(b"k"), ks.strlen(b"none")), (Ok(9), Ok(0)));
}

#[test]
fn notifications_follow_redis_order_and_flags() {
    let ks = mem();
    ks.settings().set_notify(NotifyFlags::parse("KEA").unwrap());
    let sub = subscriber(1);
    ks.hub()
        .subscribe(&sub, Kind::Pattern, [&b"__key*__:*"[..]]);
    frames(&sub);
    let ex = SetOptions {
        expiry: Expiry::At(now_ms() + 60_000),
        ..plain()
    };
    set(&ks, b"k", b"v", ex);
    ks.incr_by(b"n", 2, &mut Pending::default()).unwrap();
    ks.del(&[b"k", b"missing"], &mut Pending::default());
    let got = messages(&frames(&sub));
    let want: Vec<(String, String)> = [
        ("__keyspace@0__:k", "set"),
        ("__keyevent@0__:set", "k"),
        ("__keyspace@0__:k", "expire"),
        ("__keyevent@0__:expire", "k"),
        ("__keyspace@0__:n", "incrby"),
        ("__keyevent@0__:incrby", "n"),
        ("__keyspace@0__:k", "del"),
        ("__keyevent@0__:del", "k"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(got, want);

    // Only the expired class on keyevent channels; new keys and misses when asked for.
    ks.settings()
        .set_notify(NotifyFlags::parse("Exnm").unwrap());
    set(&ks, b"fresh", b"v", plain());
    get(&ks, b"absent");
    let got = messages(&frames(&sub));
    assert_eq!(
        got,
        vec![
            ("__keyevent@0__:new".to_string(), "fresh".to_string()),
            ("__keyevent@0__:keymiss".to_string(), "absent".to_string())
        ]
    );
}

#[test]
fn change_feed_sees_every_change_with_growing_revisions() {
    let (ks, feed) = with_feed(KvConfig {
        feed: crate::FeedConfig {
            prefixes: vec![b"user:".to_vec()],
            include_value: true,
        },
        ..KvConfig::default()
    });
    let mut p = Pending::default();
    set(&ks, b"user:1", b"alice", plain());
    set(&ks, b"cache:1", b"skipped", plain());
    ks.append(b"user:1", b"!", &mut p).unwrap();
    ks.incr_by(b"user:n", 3, &mut p).unwrap();
    ks.getdel(b"user:1", &mut p, |_| ()).unwrap();
    ks.flush(&mut p);
    let bodies = feed.0.lock().clone();
    let ops: Vec<(&str, &str, Option<&str>)> = bodies
        .iter()
        .map(|b| {
            (
                b["op"].as_str().unwrap(),
                b["key"].as_str().unwrap_or(""),
                b["value"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        ops,
        vec![
            ("set", "user:1", Some("alice")),
            ("append", "user:1", Some("alice!")),
            ("incrby", "user:n", Some("3")),
            ("del", "user:1", None),
            ("flush", "", None),
        ]
    );
    let revs: Vec<u64> = bodies.iter().map(|b| b["rev"].as_u64().unwrap()).collect();
    assert!(revs.windows(2).all(|w| w[0] < w[1]), "{revs:?}");
    assert_eq!(ks.revision(), *revs.last().unwrap());
}

#[test]
fn incr_by_float_reads_and_writes_floats_as_redis() {
    let ks = mem();
    let mut p = Pending::default();
    assert_eq!(ks.incr_by_float(b"f", 1.5, &mut p), Ok(b"1.5".to_vec()));
    assert_eq!(ks.incr_by_float(b"f", 1e3, &mut p), Ok(b"1001.5".to_vec()));
    set(&ks, b"g", b"5.0e3", plain());
    assert_eq!(ks.incr_by_float(b"g", 1.0, &mut p), Ok(b"5001".to_vec()));
    set(&ks, b"h", b"10.50", plain());
    assert_eq!(ks.incr_by_float(b"h", 0.1, &mut p), Ok(b"10.6".to_vec()));
    assert_eq!(ks.incr_by_float(b"h", -10.6, &mut p), Ok(b"0".to_vec()));
    assert_eq!(
        ks.incr_by_float(b"f", f64::INFINITY, &mut p),
        Err(KvError::NotFinite)
    );
    assert_eq!(get(&ks, b"f"), Some(b"1001.5".to_vec()));
    set(&ks, b"s", b"abc", plain());
    assert_eq!(ks.incr_by_float(b"s", 1.0, &mut p), Err(KvError::NotFloat));
    assert_eq!(
        ks.incr_by_float(b"big", 1e20, &mut p),
        Ok(b"100000000000000000000".to_vec())
    );
    for bad in [&b""[..], b" 1", b"1 ", b"nan", b"1x"] {
        assert_eq!(parse_float(bad), None, "{bad:?}");
    }
    assert_eq!(parse_float(b"inf"), Some(f64::INFINITY));
    assert_eq!(parse_float(b"-.5"), Some(-0.5));
}

#[test]
fn msetnx_writes_all_or_nothing() {
    let ks = mem();
    let mut p = Pending::default();
    assert!(ks.msetnx(&[(b"a", b"1"), (b"b", b"2")], &mut p));
    assert!(!ks.msetnx(&[(b"c", b"3"), (b"a", b"9")], &mut p));
    assert_eq!(get(&ks, b"a"), Some(b"1".to_vec()));
    assert_eq!(get(&ks, b"c"), None);
}
