//! Warming the cache for a pipelined batch of requests.
//!
//! A GET or SET of a random key among a million misses the CPU cache three times in a row (the
//! table's control bytes, its slot, then the entry the slot points to, to compare the key), and
//! with requests handled one after another those misses come one after another
//! (docs/decisions/0005-keyspace-pipeline-warming.md).
//! [`Keyspace::warm`] looks a batch's keys up in one short loop first, holding all their
//! shards' locks at once (taking a lock is a full barrier on x86, which would keep one key's
//! misses from overlapping the next), so the processor overlaps the batch's misses; the
//! commands then find their entries in cache. It changes nothing: no access clock, no hit or
//! miss count, no expiry.

use std::hint::black_box;

use crate::keyspace::Keyspace;

/// Most keys warmed at once.
const WARM_MAX: usize = 32;

impl Keyspace {
    /// Brings the table slots and entries of `keys` (the first 32) into the cache.
    pub fn warm(&self, keys: &[&[u8]]) {
        let keys = &keys[..keys.len().min(WARM_MAX)];
        // (shard, hash, which key), in shard order: the locks are taken in index order, as
        // every multi-key command takes them, so warming cannot deadlock with one.
        let mut order = [(0usize, 0u64, 0usize); WARM_MAX];
        for (i, key) in keys.iter().enumerate() {
            let hash = self.hash(key);
            order[i] = (self.shard_index(hash), hash, i);
        }
        let order = &mut order[..keys.len()];
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
            black_box(guards[g].1.peek(hash, keys[i]));
        }
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
        let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
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
    }
}
