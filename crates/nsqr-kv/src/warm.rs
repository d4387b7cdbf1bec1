//! Warming the cache for a pipelined batch of requests.
//!
//! A GET or SET of a random key among a million misses the CPU cache three times in a row (the
//! table's control bytes, its slot, then the entry the slot points to, to compare the key), and
//! with requests handled one after another those misses come one after another
//! (docs/decisions/0005-keyspace-pipeline-warming.md).
//! [`Keyspace::warm`] looks a batch's keys up in one short loop first, holding all their
//! shards' locks at once (taking a lock is a full barrier on x86, which would keep one key's
//! misses from overlapping the next), so the processor overlaps the batch's misses; the
//! commands then find their entries in cache. A command on a hash, a set or a sorted set then
//! misses again inside the collection (its table, the member's slot, the member's bytes), so
//! the member or field the request names is looked up in the same loop
//! (docs/decisions/0023-keyspace-collection-writes.md). It changes nothing: no access clock, no
//! hit or miss count, no expiry.

use std::hint::black_box;

use crate::collection::Collection;
use crate::entry::Entry;
use crate::keyspace::Keyspace;

/// Most keys warmed at once.
const WARM_MAX: usize = 32;

impl Keyspace {
    /// Brings the table slots and entries of the requests' keys (the first 32) into the cache.
    /// Each request is its key and the two arguments after it (empty if it has fewer): for a key
    /// holding a hash, a set or a sorted set, the field or member they may name is looked up
    /// too ([`warm_members`]).
    pub fn warm(&self, requests: &[[&[u8]; 3]]) {
        let requests = &requests[..requests.len().min(WARM_MAX)];
        // (shard, hash, which key), in shard order: the locks are taken in index order, as
        // every multi-key command takes them, so warming cannot deadlock with one.
        let mut order = [(0usize, 0u64, 0usize); WARM_MAX];
        for (i, [key, ..]) in requests.iter().enumerate() {
            let hash = self.hash(key);
            order[i] = (self.shard_index(hash), hash, i);
        }
        let order = &mut order[..requests.len()];
        order.sort_unstable_by_key(|o| o.0);
        let mut guards = Vec::with_capacity(order.len());
        for &(shard, _, _) in order.iter() {
            if guards.last().map(|(s, _)| *s) != Some(shard) {
                guards.push((shard, self.lock_index(shard)));
            }
        }
        let mut g = 0;
        for &(shard, hash, i) in order.iter() {
            while guards[g].0 != shard {
                g += 1;
            }
            let [key, a, b] = requests[i];
            let entry = black_box(guards[g].1.peek(hash, key));
            if let Some(c) = entry.and_then(Entry::collection) {
                warm_members(c, a, b);
            }
        }
    }
}

/// Looks up what a request's arguments `a` and `b` (after its key) may name in `c`: a hash's
/// field and a set's member are `a` (HSET's `b` is its value), a sorted set's member `a` or `b`
/// (ZSCORE's, or ZADD's after its score). Nothing for a list or a stream, whose commands work
/// at its ends or by position.
fn warm_members(c: &Collection, a: &[u8], b: &[u8]) {
    match c {
        Collection::Hash(h) => {
            black_box(h.get(a));
        }
        Collection::Set(s) => {
            black_box(s.contains(a));
        }
        Collection::Zset(z) => {
            for m in [a, b].into_iter().filter(|m| !m.is_empty()) {
                black_box(z.score(m));
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use crate::test_support::mem;
    use crate::{Pending, SetOptions};

    #[test]
    fn warming_changes_nothing() {
        let ks = mem();
        for i in 0..100u32 {
            let key = format!("k{i}");
            ks.set(
                key.as_bytes(),
                b"v",
                SetOptions::default(),
                None,
                &mut Pending::default(),
            )
            .unwrap();
        }
        let before = ks.stats();
        // More keys than WARM_MAX, present and missing, several to a shard.
        let keys: Vec<Vec<u8>> = (0..40u32)
            .map(|i| format!("k{}", i * 3).into_bytes())
            .collect();
        let refs: Vec<[&[u8]; 3]> = keys.iter().map(|k| [&k[..], b"m", b"1"]).collect();
        ks.warm(&refs);
        ks.warm(&[]);
        let after = ks.stats();
        assert_eq!((before.hits, before.misses), (after.hits, after.misses));
        assert_eq!(
            (before.keys, before.used_memory),
            (after.keys, after.used_memory)
        );
        assert_eq!(
            ks.get(b"k3", |v| v.map(<[u8]>::to_vec)),
            Ok(Some(b"v".to_vec()))
        );
        // Collections: the members named are looked up, nothing changes.
        let p = &mut Pending::default();
        ks.hset(b"h", &[b"f", b"v"], p).unwrap();
        ks.sadd(b"s", &[b"m"], p).unwrap();
        ks.zadd(b"z", &[(1.0, &b"m"[..])], crate::ZaddOptions::default(), p)
            .unwrap();
        ks.push(b"l", &[b"e"], true, false, p).unwrap();
        let before = ks.stats();
        ks.warm(&[
            [b"h", b"f", b"v"],
            [b"s", b"m", b""],
            [b"s", b"absent", b""],
            [b"z", b"2", b"m"],
            [b"l", b"e", b""],
        ]);
        let after = ks.stats();
        assert_eq!(before, after);
        assert_eq!(
            ks.read_hash(b"h", |h| h.and_then(|h| h.get(b"f")).map(<[u8]>::to_vec)),
            Ok(Some(b"v".to_vec()))
        );
    }
}
