//! `maxmemory` and eviction, as Redis's policies: before a command that may grow the keyspace,
//! keys are evicted until it fits; with `noeviction`, or nothing left to evict, the command is
//! refused with Redis's OOM error.
//!
//! LRU and LFU are approximate, as in Redis: each eviction samples `maxmemory-samples` keys
//! (random buckets of random shards; for `volatile-*`, random points of the shards' expiry
//! indexes) into a pool of the 16 best candidates kept across evictions, and evicts the best
//! one that still exists. Entries carry Redis's 24-bit clock: seconds of last access (LRU), or
//! a logarithmic access counter with a minute-resolution decay time (LFU, log factor 10,
//! decay time 1 minute).

use crate::clock::{idle_seconds, lru_clock, now_ms};
use crate::config::Policy;
use crate::entry::Entry;
use crate::error::KvError;
use crate::feed::Op;
use crate::keyspace::{Emit, Keyspace, Pending};

/// Redis's `EVPOOL_SIZE`.
const POOL: usize = 16;
/// Redis's `LFU_INIT_VAL`.
const LFU_INIT: u32 = 5;
const LFU_LOG_FACTOR: f64 = 10.0;
/// Buckets walked from a random start to find an entry.
const WALK: usize = 64;

/// An eviction candidate: higher `score` is evicted first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    score: u64,
    shard: usize,
    key: Vec<u8>,
}

fn minutes(now_ms: u64) -> u32 {
    ((now_ms / 60_000) & 0xffff) as u32
}

/// The LFU clock of a new key.
pub fn lfu_new(now_ms: u64) -> u32 {
    (minutes(now_ms) << 8) | LFU_INIT
}

/// The counter after decay (one step per minute since the last access).
pub(crate) fn lfu_decayed(clock: u32, now_ms: u64) -> u32 {
    let counter = clock & 0xff;
    let last = clock >> 8;
    let now = minutes(now_ms);
    let elapsed = if now >= last {
        now - last
    } else {
        0xffff - last + now
    };
    counter.saturating_sub(elapsed)
}

/// An access: decay, then a logarithmic increment (Redis's `LFULogIncr`).
pub fn lfu_touch(clock: u32, now_ms: u64) -> u32 {
    let mut counter = lfu_decayed(clock, now_ms);
    if counter < 255 {
        let base = f64::from(counter.saturating_sub(LFU_INIT));
        if fastrand::f64() < 1.0 / (base * LFU_LOG_FACTOR + 1.0) {
            counter += 1;
        }
    }
    (minutes(now_ms) << 8) | counter
}

impl Keyspace {
    /// Before a command that may use more memory: evicts until the keyspace fits `maxmemory`.
    pub fn make_room(&self) -> Result<(), KvError> {
        let max = self.settings.maxmemory();
        if max == 0 {
            return Ok(());
        }
        while self.used_memory() > max {
            let policy = self.settings.policy();
            if policy == Policy::NoEviction || !self.evict_one(policy) {
                return Err(KvError::OutOfMemory);
            }
        }
        Ok(())
    }

    /// Evicts one key chosen by `policy`; false if there is nothing to evict.
    fn evict_one(&self, policy: Policy) -> bool {
        let now = now_ms();
        let mut pool = self.evict_pool.lock();
        for _ in 0..self.settings.samples() {
            if let Some(c) = self.sample(policy, now) {
                if !pool.iter().any(|p| p.key == c.key) {
                    pool.push(c);
                }
            }
        }
        pool.sort_by_key(|c| std::cmp::Reverse(c.score));
        pool.truncate(POOL);
        while !pool.is_empty() {
            let c = pool.remove(0);
            if self.evict_key(&c, policy, now) {
                return true;
            }
        }
        drop(pool);
        // Sampling found nothing: walk every shard once for any candidate.
        (0..self.shard_count()).any(|i| {
            self.sample_shard(i, policy, now)
                .is_some_and(|c| self.evict_key(&c, policy, now))
        })
    }

    fn score(&self, e: &Entry, policy: Policy, now: u64) -> u64 {
        match policy {
            Policy::AllKeysLru | Policy::VolatileLru => {
                u64::from(idle_seconds(lru_clock(now), e.clock()))
            }
            Policy::AllKeysLfu | Policy::VolatileLfu => {
                255 - u64::from(lfu_decayed(e.clock(), now))
            }
            Policy::VolatileTtl => u64::MAX - e.deadline().unwrap_or(u64::MAX),
            Policy::AllKeysRandom | Policy::VolatileRandom | Policy::NoEviction => 0,
        }
    }

    fn sample(&self, policy: Policy, now: u64) -> Option<Candidate> {
        let start = fastrand::usize(..self.shard_count());
        (0..self.shard_count())
            .map(|i| (start + i) % self.shard_count())
            .find_map(|i| self.sample_shard(i, policy, now))
    }

    /// One candidate from shard `i`, if it has any.
    fn sample_shard(&self, i: usize, policy: Policy, now: u64) -> Option<Candidate> {
        let g = self.lock_index(i);
        let e = if policy == Policy::VolatileTtl {
            let (d, h) = g.volatile_near((0, 0))?;
            g.find_volatile(h, d)?
        } else if policy.volatile_only() {
            let (first, last) = g.deadline_span()?;
            let point = (fastrand::u64(first..=last), fastrand::u64(..));
            let (d, h) = g.volatile_near(point)?;
            g.find_volatile(h, d)?
        } else {
            let buckets = g.num_buckets();
            if g.len() == 0 || buckets == 0 {
                return None;
            }
            let start = fastrand::usize(..buckets);
            (0..buckets.min(WALK))
                .find_map(|j| g.bucket((start + j) % buckets))
                .or_else(|| g.iter().next())?
        };
        Some(Candidate {
            score: self.score(e, policy, now),
            shard: i,
            key: e.key().to_vec(),
        })
    }

    fn evict_key(&self, c: &Candidate, policy: Policy, now: u64) -> bool {
        let hash = self.hash(&c.key);
        let mut g = self.lock_index(c.shard);
        let volatile = match g.get(hash, &c.key) {
            None => return false,
            Some(e) => e.deadline().is_some(),
        };
        if policy.volatile_only() && !volatile {
            return false;
        }
        if g.remove(hash, &c.key).is_none() {
            return false;
        }
        g.stats.evicted += 1;
        self.emit(Emit::new(Op::Evicted, &c.key), now, &mut Pending::default());
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lfu_counter_grows_slowly_and_decays() {
        let now = 1_000 * 60_000;
        let mut c = lfu_new(now);
        assert_eq!(c & 0xff, LFU_INIT);
        for _ in 0..10_000 {
            c = lfu_touch(c, now);
        }
        let hot = c & 0xff;
        assert!(hot > 20 && hot < 255, "{hot}");
        // Ten minutes later, ten steps lower.
        assert_eq!(lfu_decayed(c, now + 10 * 60_000), hot - 10);
        assert_eq!(lfu_decayed(c, now + 1_000 * 60_000), 0);
    }
}
