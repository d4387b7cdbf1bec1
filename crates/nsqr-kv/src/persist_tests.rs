use super::*;
use std::time::Duration;

use crate::keyspace::Pending;
use crate::strings::{Expiry, SetOptions};
use crate::test_support::*;
use crate::{KvConfig, Ttl};

fn config(dir: &Path, strict: bool) -> KvConfig {
    KvConfig {
        data_dir: Some(dir.to_path_buf()),
        strict,
        ..KvConfig::default()
    }
}

fn set(ks: &Keyspace, key: &str, value: &str, deadline: Option<u64>) -> Pending {
    let mut p = Pending::default();
    let opts = SetOptions {
        expiry: deadline.map_or(Expiry::Clear, Expiry::At),
        ..SetOptions::default()
    };
    ks.set(key.as_bytes(), value.as_bytes(), opts, None, &mut p)
        .unwrap();
    p
}

fn get(ks: &Keyspace, key: &str) -> Option<String> {
    ks.get(key.as_bytes(), |v| {
        v.map(|v| String::from_utf8(v.to_vec()).unwrap())
    })
    .unwrap()
}

#[test]
fn graceful_restart_keeps_keys_and_absolute_deadlines() {
    let d = temp_dir("graceful");
    let ks = Keyspace::open(config(&d, false), None).unwrap();
    let deadline = now_ms() + 60_000;
    set(&ks, "plain", "1", None);
    set(&ks, "volatile", "2", Some(deadline));
    ks.close().unwrap();
    assert!(ks.close().is_ok());
    drop(ks);
    let ks = Keyspace::open(config(&d, false), None).unwrap();
    assert_eq!(get(&ks, "plain").as_deref(), Some("1"));
    assert_eq!(get(&ks, "volatile").as_deref(), Some("2"));
    match ks.ttl(b"volatile") {
        Ttl::Remaining(ms) => assert!(ms <= deadline - now_ms() + 1),
        other => panic!("{other:?}"),
    }
    ks.close().unwrap();
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn keys_that_expired_while_down_are_announced_and_never_served() {
    let d = temp_dir("down");
    let ks = Keyspace::open(config(&d, false), None).unwrap();
    set(&ks, "brief", "x", Some(now_ms() + 150));
    ks.close().unwrap();
    drop(ks);
    std::thread::sleep(Duration::from_millis(200));
    let feed = std::sync::Arc::new(Collect::default());
    let ks = Keyspace::open(config(&d, false), Some(feed.clone() as _)).unwrap();
    assert_eq!(get(&ks, "brief"), None);
    assert!(wait_until(Duration::from_secs(10), || feed
        .ops()
        .contains(&("expired".to_string(), "brief".to_string()))));
    ks.close().unwrap();
    std::fs::remove_dir_all(d).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strict_mode_survives_a_crash() {
    let d = temp_dir("crash");
    let ks = Keyspace::open(config(&d, true), None).unwrap();
    for i in 0..500 {
        let mut p = set(&ks, &format!("k{i}"), &format!("v{i}"), None);
        ks.durable(&mut p).await.unwrap();
    }
    let mut p = Pending::default();
    ks.del(&[b"k7"], &mut p);
    ks.incr_by(b"n", 42, &mut p).unwrap();
    ks.expire(
        b"k8",
        (now_ms() + 100_000) as i64,
        Default::default(),
        &mut p,
    );
    ks.durable(&mut p).await.unwrap();
    // A crash: no close, no snapshot. Only what the log holds remains.
    ks.timer.stop();
    drop(ks);
    let ks = Keyspace::open(config(&d, true), None).unwrap();
    assert_eq!(get(&ks, "k0").as_deref(), Some("v0"));
    assert_eq!(get(&ks, "k499").as_deref(), Some("v499"));
    assert_eq!(get(&ks, "k7"), None);
    assert_eq!(get(&ks, "n").as_deref(), Some("42"));
    assert!(matches!(ks.ttl(b"k8"), Ttl::Remaining(_)));
    assert_eq!(ks.dbsize(), 500);
    ks.close().unwrap();
    std::fs::remove_dir_all(d).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_reaches_the_log_whole_or_not_at_all() {
    let d = temp_dir("tx");
    let ks = Keyspace::open(config(&d, true), None).unwrap();
    let mut p = set(&ks, "before", "1", None);
    ks.durable(&mut p).await.unwrap();
    let mut p = Pending::default();
    ks.begin_transaction(&mut p);
    ks.incr_by(b"a", 1, &mut p).unwrap();
    ks.incr_by(b"b", 1, &mut p).unwrap();
    ks.del(&[b"before"], &mut p);
    ks.end_transaction(&mut p);
    ks.durable(&mut p).await.unwrap();
    ks.timer.stop();
    drop(ks);
    let newest = *generations(&d).unwrap().last().unwrap();
    let path = log_path(&d, newest);
    let whole = std::fs::read(&path).unwrap();

    // Replayed whole.
    let ks = Keyspace::open(config(&d, true), None).unwrap();
    assert_eq!(get(&ks, "a").as_deref(), Some("1"));
    assert_eq!(get(&ks, "b").as_deref(), Some("1"));
    assert_eq!(get(&ks, "before"), None);
    ks.timer.stop();
    drop(ks);

    // Torn anywhere inside the transaction's record: none of it is replayed.
    for gen in generations(&d).unwrap() {
        std::fs::remove_file(log_path(&d, gen)).unwrap();
    }
    let _ = std::fs::remove_file(crate::snapshot::snapshot_path(&d));
    let first = crate::record::decode(&whole, 0).unwrap().unwrap().1;
    for cut in [first + 9, whole.len() - 1] {
        std::fs::write(&path, &whole[..cut]).unwrap();
        let ks = Keyspace::open(config(&d, true), None).unwrap();
        assert_eq!(get(&ks, "before").as_deref(), Some("1"), "cut at {cut}");
        assert_eq!((get(&ks, "a"), get(&ks, "b")), (None, None), "cut at {cut}");
        ks.timer.stop();
        drop(ks);
        for gen in generations(&d).unwrap() {
            std::fs::remove_file(log_path(&d, gen)).unwrap();
        }
    }
    std::fs::remove_dir_all(d).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_torn_log_tail_is_cut_off() {
    let d = temp_dir("torn");
    let ks = Keyspace::open(config(&d, true), None).unwrap();
    let mut p = set(&ks, "a", "1", None);
    ks.durable(&mut p).await.unwrap();
    ks.timer.stop();
    drop(ks);
    let newest = *generations(&d).unwrap().last().unwrap();
    let path = log_path(&d, newest);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(&[9, 0, 0, 0, 1, 2]);
    std::fs::write(&path, &bytes).unwrap();
    let ks = Keyspace::open(config(&d, true), None).unwrap();
    assert_eq!(get(&ks, "a").as_deref(), Some("1"));
    assert_eq!(std::fs::read(&path).unwrap().len(), bytes.len() - 6);
    ks.close().unwrap();
    std::fs::remove_dir_all(d).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_replaces_old_generations_with_a_snapshot() {
    let d = temp_dir("compact");
    let ks = Keyspace::open(config(&d, true), None).unwrap();
    for i in 0..100 {
        set(&ks, &format!("k{i}"), "old", None);
    }
    ks.save().unwrap();
    let mut p = set(&ks, "k1", "new", None);
    ks.durable(&mut p).await.unwrap();
    let gens = generations(&d).unwrap();
    assert_eq!(gens.len(), 1, "{gens:?}");
    assert!(snapshot::snapshot_path(&d).exists());
    ks.timer.stop();
    drop(ks);
    let ks = Keyspace::open(config(&d, true), None).unwrap();
    assert_eq!(
        (get(&ks, "k1").as_deref(), get(&ks, "k2").as_deref()),
        (Some("new"), Some("old"))
    );
    assert_eq!(ks.dbsize(), 100);
    ks.close().unwrap();
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn revisions_grow_across_restarts() {
    let d = temp_dir("revisions");
    let (ks, feed) = with_feed(config(&d, false));
    set(&ks, "a", "1", None);
    let first = feed.0.lock()[0]["rev"].as_u64().unwrap();
    ks.close().unwrap();
    drop(ks);
    let feed2 = std::sync::Arc::new(Collect::default());
    let ks = Keyspace::open(config(&d, false), Some(feed2.clone() as _)).unwrap();
    set(&ks, "a", "2", None);
    let second = feed2.0.lock()[0]["rev"].as_u64().unwrap();
    assert!(second > first);
    ks.close().unwrap();
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn strict_without_a_directory_is_refused() {
    let c = KvConfig {
        strict: true,
        ..KvConfig::default()
    };
    assert!(matches!(
        Keyspace::open(c, None),
        Err(PersistError::NoDataDir)
    ));
}

#[test]
fn a_damaged_snapshot_stops_the_start() {
    let d = temp_dir("damaged");
    std::fs::write(snapshot::snapshot_path(&d), b"NSQRKVS1garbage").unwrap();
    assert!(matches!(
        Keyspace::open(config(&d, false), None),
        Err(PersistError::Snapshot(_))
    ));
    std::fs::remove_dir_all(d).unwrap();
}

fn hash_of(ks: &Keyspace, key: &str) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = ks
        .read_hash(key.as_bytes(), |h| {
            h.map(|h| {
                h.iter()
                    .map(|(f, v)| {
                        (
                            String::from_utf8_lossy(f).into_owned(),
                            String::from_utf8_lossy(v).into_owned(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
        })
        .unwrap();
    v.sort();
    v
}

fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// Writes the same hashes in both modes: kept whole, emptied, moved, copied, volatile.
fn write_hashes(ks: &Keyspace, p: &mut Pending) {
    ks.hset(b"h", &[b"a", b"1", b"b", b"2"], p).unwrap();
    ks.hincrby(b"h", b"n", 5, p).unwrap();
    ks.hdel(b"h", &[b"b"], p).unwrap();
    ks.hset(b"gone", &[b"x", b"1"], p).unwrap();
    ks.hdel(b"gone", &[b"x"], p).unwrap();
    ks.hset(b"from", &[b"f", b"v"], p).unwrap();
    ks.rename(b"from", b"to", true, p).unwrap();
    assert!(ks.copy(b"to", b"copy", false, p));
    ks.hset(b"copy", &[b"g", b"w"], p).unwrap();
    ks.hset(b"vol", &[b"f", b"v"], p).unwrap();
    ks.expire(b"vol", (now_ms() + 100_000) as i64, Default::default(), p);
}

fn check_hashes(ks: &Keyspace) {
    assert_eq!(hash_of(ks, "h"), pairs(&[("a", "1"), ("n", "5")]));
    assert!(!ks.contains(b"gone") && !ks.contains(b"from"));
    assert_eq!(hash_of(ks, "to"), pairs(&[("f", "v")]));
    assert_eq!(hash_of(ks, "copy"), pairs(&[("f", "v"), ("g", "w")]));
    assert!(matches!(ks.ttl(b"vol"), Ttl::Remaining(_)));
    assert_eq!(ks.key_info(b"h").unwrap().encoding, "listpack");
}

#[test]
fn hashes_survive_a_graceful_restart() {
    let d = temp_dir("hash-graceful");
    let ks = Keyspace::open(config(&d, false), None).unwrap();
    write_hashes(&ks, &mut Pending::default());
    check_hashes(&ks);
    ks.close().unwrap();
    drop(ks);
    let ks = Keyspace::open(config(&d, false), None).unwrap();
    check_hashes(&ks);
    ks.close().unwrap();
    std::fs::remove_dir_all(d).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hashes_survive_a_crash_in_strict_mode() {
    let d = temp_dir("hash-crash");
    let ks = Keyspace::open(config(&d, true), None).unwrap();
    let mut p = Pending::default();
    write_hashes(&ks, &mut p);
    ks.durable(&mut p).await.unwrap();
    ks.timer.stop();
    drop(ks);
    let ks = Keyspace::open(config(&d, true), None).unwrap();
    check_hashes(&ks);
    // Replayed again over a snapshot that already holds it: the same keyspace.
    ks.save().unwrap();
    ks.timer.stop();
    drop(ks);
    let ks = Keyspace::open(config(&d, true), None).unwrap();
    check_hashes(&ks);
    ks.close().unwrap();
    std::fs::remove_dir_all(d).unwrap();
}

fn list_of(ks: &Keyspace, key: &str) -> Vec<String> {
    ks.read_list(key.as_bytes(), |l| {
        l.map(|l| {
            l.iter()
                .map(|e| String::from_utf8_lossy(e).into_owned())
                .collect()
        })
        .unwrap_or_default()
    })
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_survive_a_crash_in_strict_mode_and_a_replay_over_a_snapshot() {
    let d = temp_dir("list-crash");
    let ks = Keyspace::open(config(&d, true), None).unwrap();
    let mut p = Pending::default();
    ks.push(b"q", &[b"a", b"b", b"c"], false, false, &mut p)
        .unwrap();
    ks.pop(b"q", true, 1, &mut p).unwrap();
    ks.push(b"q", &[b"z"], true, false, &mut p).unwrap();
    ks.push(b"gone", &[b"x"], true, false, &mut p).unwrap();
    ks.pop(b"gone", true, 1, &mut p).unwrap();
    ks.lmove(b"q", b"other", false, true, &mut p).unwrap();
    ks.durable(&mut p).await.unwrap();
    ks.timer.stop();
    drop(ks);
    for _ in 0..2 {
        let ks = Keyspace::open(config(&d, true), None).unwrap();
        assert_eq!(list_of(&ks, "q"), ["z", "b"]);
        assert_eq!(list_of(&ks, "other"), ["c"]);
        assert!(!ks.contains(b"gone"));
        // The second round replays the log over a snapshot that already holds it.
        ks.save().unwrap();
        ks.timer.stop();
        drop(ks);
    }
    std::fs::remove_dir_all(d).unwrap();
}

#[tokio::test]
async fn streams_survive_a_crash_in_strict_mode_and_a_replay_over_a_snapshot() {
    use crate::{AddId, ClaimOptions, StreamId};
    let d = temp_dir("stream-crash");
    let ks = Keyspace::open(config(&d, true), None).unwrap();
    let mut p = Pending::default();
    for ms in 1..=5 {
        ks.write_stream(b"s", &mut p, |s, now| {
            let id = AddId::Explicit(StreamId::new(ms, 0));
            Ok(s.add(id, &[b"f", b"v"], None, now)?)
        })
        .unwrap();
    }
    ks.write_stream(b"s", &mut p, |s, now| {
        let mut ops = s.create_group(b"g", Some(StreamId::ZERO), -1)?;
        ops.extend(s.read_group(b"g", b"alice", None, 3, false, now).1);
        s.ack(b"g", &[StreamId::new(1, 0)]);
        let o = ClaimOptions::default();
        s.claim(b"g", b"bob", &[StreamId::new(2, 0)], o, now);
        ops.extend(s.delete_ids(&[StreamId::new(5, 0)]).1);
        Ok(((), ops))
    })
    .unwrap();
    let expected = ks.read_stream(b"s", |s| s.cloned()).unwrap();
    ks.durable(&mut p).await.unwrap();
    ks.timer.stop();
    drop(ks);
    for _ in 0..2 {
        let ks = Keyspace::open(config(&d, true), None).unwrap();
        let got = ks.read_stream(b"s", |s| s.cloned()).unwrap();
        assert_eq!(got, expected);
        let g = got.as_ref().and_then(|s| s.group(b"g")).unwrap();
        assert_eq!(g.pel().len(), 2);
        assert_eq!(g.pel()[&StreamId::new(2, 0)].consumer.as_ref(), b"bob");
        ks.save().unwrap();
        ks.timer.stop();
        drop(ks);
    }
    std::fs::remove_dir_all(d).unwrap();
}

fn zset_of(ks: &Keyspace, key: &str) -> Vec<(String, f64)> {
    ks.read_zset(key.as_bytes(), |z| {
        z.map(|z| {
            z.iter()
                .map(|(m, s)| (String::from_utf8_lossy(m).into_owned(), s))
                .collect()
        })
        .unwrap_or_default()
    })
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sorted_sets_survive_a_crash_in_strict_mode_and_a_replay_over_a_snapshot() {
    use crate::zsets::{ZRangeSpec, ZaddOptions};
    let d = temp_dir("zset-crash");
    let ks = Keyspace::open(config(&d, true), None).unwrap();
    let mut p = Pending::default();
    let o = ZaddOptions::default();
    let incr = ZaddOptions { incr: true, ..o };
    ks.zadd(b"z", &[(1.0, b"a"), (2.0, b"b"), (3.0, b"c")], o, &mut p)
        .unwrap();
    ks.zadd(b"z", &[(f64::NEG_INFINITY, b"b")], incr, &mut p)
        .unwrap();
    ks.zrem(b"z", &[b"a"], &mut p).unwrap();
    ks.zadd(b"gone", &[(1.0, b"x")], o, &mut p).unwrap();
    ks.zpop(b"gone", 1, false, &mut p).unwrap();
    ks.zrem_range(b"z", ZRangeSpec::Rank(5, 9), &mut p).unwrap();
    ks.zrangestore(b"copy", b"z", ZRangeSpec::Rank(0, 0), true, None, &mut p)
        .unwrap();
    ks.durable(&mut p).await.unwrap();
    ks.timer.stop();
    drop(ks);
    for _ in 0..2 {
        let ks = Keyspace::open(config(&d, true), None).unwrap();
        let want = vec![("b".to_string(), f64::NEG_INFINITY), ("c".to_string(), 3.0)];
        assert_eq!(zset_of(&ks, "z"), want);
        assert_eq!(zset_of(&ks, "copy"), [("c".to_string(), 3.0)]);
        assert!(!ks.contains(b"gone"));
        // The second round replays the log over a snapshot that already holds it.
        ks.save().unwrap();
        ks.timer.stop();
        drop(ks);
    }
    std::fs::remove_dir_all(d).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn function_libraries_survive_a_crash_in_strict_mode_and_a_snapshot() {
    let d = temp_dir("functions-crash");
    let ks = Keyspace::open(config(&d, true), None).unwrap();
    let mut p = Pending::default();
    let lib = |code: &str| std::sync::Arc::from(code.as_bytes());
    let mut libs = crate::functions::Libraries::new();
    libs.insert("a".into(), lib("code a"));
    libs.insert("b".into(), lib("code b"));
    ks.set_libraries(libs.clone(), &mut p);
    libs.remove("a");
    ks.set_libraries(libs.clone(), &mut p);
    ks.durable(&mut p).await.unwrap();
    ks.timer.stop();
    drop(ks);
    for _ in 0..2 {
        let ks = Keyspace::open(config(&d, true), None).unwrap();
        assert_eq!(*ks.libraries(), libs);
        // The second round replays the log over a snapshot that already holds it.
        ks.save().unwrap();
        ks.timer.stop();
        drop(ks);
    }
    // A snapshot alone (default mode) keeps them too, and an empty set is written as none.
    let ks = Keyspace::open(config(&d, false), None).unwrap();
    assert_eq!(*ks.libraries(), libs);
    ks.set_libraries(Default::default(), &mut Pending::default());
    ks.close().unwrap();
    drop(ks);
    let ks = Keyspace::open(config(&d, false), None).unwrap();
    assert!(ks.libraries().is_empty());
    ks.close().unwrap();
    drop(ks);
    std::fs::remove_dir_all(d).unwrap();
}
