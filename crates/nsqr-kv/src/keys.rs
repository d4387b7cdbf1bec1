//! Commands on keys: DEL, EXISTS, EXPIRE and its variants, TTL, PERSIST, TYPE, SCAN, KEYS,
//! DBSIZE, FLUSHDB.
//!
//! SCAN walks each shard's table bucket by bucket. Its cursor is
//! `1 + (layout << 48 | bucket << 8 | shard)`; `layout` changes whenever the shard's table may
//! have moved its entries (growth or rehash), and a cursor that saw another layout scans that
//! shard again from its start. So a key present for the whole scan is returned at least once,
//! as Redis promises; keys may be returned more than once, as Redis allows.

use crate::clock::now_ms;
use crate::collection::KeyType;
use crate::feed::Op;
use crate::glob;
use crate::keyspace::{Emit, Find, Keyspace, Pending};

/// EXPIRE's NX / XX / GT / LT (XX may be combined with GT or LT, as in Redis).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExpireCondition {
    /// Only if the key has no deadline.
    pub nx: bool,
    /// Only if the key has a deadline.
    pub xx: bool,
    /// Only if the new deadline is later (a key without one counts as never expiring).
    pub gt: bool,
    /// Only if the new deadline is earlier (a key without one counts as never expiring).
    pub lt: bool,
}

impl ExpireCondition {
    pub const ALWAYS: ExpireCondition = ExpireCondition {
        nx: false,
        xx: false,
        gt: false,
        lt: false,
    };

    fn allows(self, current: Option<i64>, at: i64) -> bool {
        let refused = (self.nx && current.is_some())
            || (self.xx && current.is_none())
            || (self.gt && current.is_none_or(|c| at <= c))
            || (self.lt && current.is_some_and(|c| at >= c));
        !refused
    }
}

/// What TTL / PTTL report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ttl {
    Missing,
    Persistent,
    /// Milliseconds left (at least 1).
    Remaining(u64),
}

const BUCKET_BITS: u32 = 40;

fn encode_cursor(shard: usize, bucket: usize, layout: u16) -> u64 {
    1 + ((u64::from(layout) << 48) | ((bucket as u64) << 8) | shard as u64)
}

fn decode_cursor(c: u64) -> (usize, usize, Option<u16>) {
    if c == 0 {
        return (0, 0, None);
    }
    let c = c - 1;
    (
        (c & 0xff) as usize,
        ((c >> 8) & ((1 << BUCKET_BITS) - 1)) as usize,
        Some((c >> 48) as u16),
    )
}

impl Keyspace {
    /// DEL / UNLINK: how many of `keys` existed (and are now gone).
    pub fn del(&self, keys: &[&[u8]], pending: &mut Pending) -> usize {
        let now = now_ms();
        let hashes: Vec<u64> = keys.iter().map(|k| self.hash(k)).collect();
        let mut guards = self.lock_many(&hashes);
        let mut n = 0;
        for (key, &hash) in keys.iter().zip(&hashes) {
            let g = self.guard_of(&mut guards, hash);
            if self.find(g, hash, key, now, Find::Peek).is_some() && g.remove(hash, key).is_some() {
                n += 1;
                self.emit(Emit::new(Op::Del, key), now, pending);
            }
        }
        n
    }

    /// EXISTS: how many of `keys` exist (a key named twice counts twice).
    pub fn exists(&self, keys: &[&[u8]]) -> usize {
        let now = now_ms();
        let hashes: Vec<u64> = keys.iter().map(|k| self.hash(k)).collect();
        let mut guards = self.lock_many(&hashes);
        keys.iter()
            .zip(&hashes)
            .filter(|(key, &hash)| {
                let g = self.guard_of(&mut guards, hash);
                self.find(g, hash, key, now, Find::Peek).is_some()
            })
            .count()
    }

    /// EXPIRE family with an absolute deadline in Unix ms (may be in the past or negative: the
    /// key is then deleted, as in Redis). Whether the deadline was applied.
    pub fn expire(
        &self,
        key: &[u8],
        at_ms: i64,
        cond: ExpireCondition,
        pending: &mut Pending,
    ) -> bool {
        let now = now_ms();
        let hash = self.hash(key);
        let mut g = self.lock(hash);
        let Some(e) = self.find(&mut g, hash, key, now, Find::Peek) else {
            return false;
        };
        let current = e.deadline().map(|d| d as i64);
        if !cond.allows(current, at_ms) {
            return false;
        }
        if at_ms <= now as i64 {
            g.remove(hash, key);
            self.emit(Emit::new(Op::Del, key), now, pending);
            return true;
        }
        self.set_expiry(&mut g, hash, key, at_ms as u64, now, pending);
        true
    }

    /// TTL / PTTL.
    pub fn ttl(&self, key: &[u8]) -> Ttl {
        let now = now_ms();
        let hash = self.hash(key);
        let mut g = self.lock(hash);
        match self.find(&mut g, hash, key, now, Find::Peek) {
            None => Ttl::Missing,
            Some(e) => match e.deadline() {
                None => Ttl::Persistent,
                Some(d) => Ttl::Remaining(d.saturating_sub(now).max(1)),
            },
        }
    }

    /// EXPIRETIME / PEXPIRETIME: `None` if the key is missing, else its deadline (Unix ms).
    pub fn deadline(&self, key: &[u8]) -> Option<Option<u64>> {
        let now = now_ms();
        let hash = self.hash(key);
        let mut g = self.lock(hash);
        self.find(&mut g, hash, key, now, Find::Peek)
            .map(|e| e.deadline())
    }

    /// PERSIST: whether a deadline was removed.
    pub fn persist(&self, key: &[u8], pending: &mut Pending) -> bool {
        let now = now_ms();
        let hash = self.hash(key);
        let mut g = self.lock(hash);
        match self.find(&mut g, hash, key, now, Find::Peek) {
            Some(e) if e.deadline().is_some() => {
                g.set_deadline(hash, key, None);
                self.emit(Emit::new(Op::Persist, key), now, pending);
                true
            }
            _ => false,
        }
    }

    /// Whether `key` exists (TYPE answers `string` or `none`).
    pub fn contains(&self, key: &[u8]) -> bool {
        self.exists(&[key]) == 1
    }

    /// TYPE: the type of `key`'s value, `None` if it does not exist.
    pub fn key_type(&self, key: &[u8]) -> Option<KeyType> {
        let now = now_ms();
        let hash = self.hash(key);
        let mut g = self.lock(hash);
        self.find(&mut g, hash, key, now, Find::Peek)
            .map(|e| e.kind())
    }

    /// SCAN: adds keys of database `db` matching `pattern` (and of type `of_type`, if given)
    /// from about `count` keys' worth of buckets to `out`; returns the cursor to continue from
    /// (0 when the scan is complete).
    pub fn scan(
        &self,
        db: u8,
        cursor: u64,
        count: usize,
        pattern: Option<&[u8]>,
        of_type: Option<KeyType>,
        out: &mut Vec<Vec<u8>>,
    ) -> u64 {
        let now = now_ms();
        let count = count.max(1);
        let max_buckets = count.saturating_mul(10);
        let (mut shard, mut bucket, mut layout) = decode_cursor(cursor);
        let (mut seen, mut visited) = (0, 0);
        while shard < self.shard_count() {
            let g = self.lock_index(shard);
            if layout.is_some_and(|l| l != g.layout()) {
                bucket = 0;
            }
            layout = Some(g.layout());
            let buckets = g.num_buckets();
            while bucket < buckets && seen < count && visited < max_buckets {
                if let Some(e) = g.bucket(bucket) {
                    seen += 1;
                    let (in_db, key) = crate::db::split(e.key());
                    if in_db == db
                        && !e.is_expired(now)
                        && of_type.is_none_or(|t| t == e.kind())
                        && pattern.is_none_or(|p| glob::matches(p, key))
                    {
                        out.push(key.to_vec());
                    }
                }
                bucket += 1;
                visited += 1;
            }
            if bucket >= buckets {
                shard += 1;
                bucket = 0;
                layout = None;
            }
            if seen >= count || visited >= max_buckets {
                break;
            }
        }
        if shard >= self.shard_count() {
            0
        } else {
            encode_cursor(shard, bucket, layout.unwrap_or(0))
        }
    }

    /// TOUCH: how many of `keys` exist; each one's access clock is updated.
    pub fn touch_keys(&self, keys: &[&[u8]]) -> usize {
        let now = now_ms();
        let hashes: Vec<u64> = keys.iter().map(|k| self.hash(k)).collect();
        let mut guards = self.lock_many(&hashes);
        let mut n = 0;
        for (key, &hash) in keys.iter().zip(&hashes) {
            let g = self.guard_of(&mut guards, hash);
            if self.find(g, hash, key, now, Find::Touch).is_some() {
                n += 1;
            }
        }
        n
    }

    /// RANDOMKEY: a live key of database `db` chosen at random (from a random shard that has
    /// keys, then a random bucket on), or `None` if there is none. Keys found past their
    /// deadline are expired on the way; the search gives up after a bounded number of them.
    pub fn random_key(&self, db: u8) -> Option<Vec<u8>> {
        let n = self.shard_count();
        let first = fastrand::usize(..n);
        let mut expired_left = 100;
        for i in (0..n).map(|i| (first + i) % n) {
            let mut g = self.lock_index(i);
            loop {
                let buckets = g.num_buckets();
                if g.len() == 0 || buckets == 0 {
                    break;
                }
                let start = fastrand::usize(..buckets);
                let found = (0..buckets)
                    .map(|b| (start + b) % buckets)
                    .filter_map(|b| g.bucket(b))
                    .find(|e| crate::db::split(e.key()).0 == db)
                    .map(|e| e.key().to_vec());
                let Some(found) = found else {
                    break;
                };
                let now = now_ms();
                let hash = self.hash(&found);
                if self.find(&mut g, hash, &found, now, Find::Peek).is_some() {
                    return Some(crate::db::user_key(&found).to_vec());
                }
                expired_left -= 1;
                if expired_left == 0 {
                    return None;
                }
            }
        }
        None
    }

    /// KEYS: every live key of database `db` matching `pattern`.
    pub fn keys(&self, db: u8, pattern: &[u8]) -> Vec<Vec<u8>> {
        let now = now_ms();
        let mut out = Vec::new();
        for i in 0..self.shard_count() {
            let g = self.lock_index(i);
            out.extend(
                g.iter()
                    .filter(|e| !e.is_expired(now))
                    .map(|e| crate::db::split(e.key()))
                    .filter(|&(d, key)| d == db && glob::matches(pattern, key))
                    .map(|(_, key)| key.to_vec()),
            );
        }
        out
    }

    /// Keys in every database (DBSIZE while only database 0 is used).
    pub fn dbsize(&self) -> usize {
        (0..self.shard_count())
            .map(|i| self.lock_index(i).len())
            .sum()
    }

    /// FLUSHALL (and FLUSHDB while only database 0 is used): removes every key (one `flush` change, no per-key events, as in
    /// Redis). Every shard is locked at once, so no write lands half before, half after.
    pub fn flush(&self, pending: &mut Pending) -> usize {
        let now = now_ms();
        let mut guards = self.lock_all();
        self.watchers.touch_existing(|key| {
            let hash = self.hash(key);
            guards[self.shard_index(hash)].get(hash, key).is_some()
        });
        let n = guards.iter_mut().map(|g| g.clear()).sum();
        self.emit(Emit::new(Op::Flush, b""), now, pending);
        drop(guards);
        n
    }
}

#[cfg(test)]
#[path = "keys_tests.rs"]
mod tests;
