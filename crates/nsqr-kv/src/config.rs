//! The keyspace's settings: fixed ones ([`KvConfig`], given at start) and the ones `CONFIG SET`
//! changes while serving ([`Settings`], atomics read on every command that needs them).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};

use crate::feed::FeedConfig;
use crate::notify::NotifyFlags;
use crate::subscriber::OutputLimit;

/// Redis's `maxmemory-policy`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Policy {
    #[default]
    NoEviction,
    AllKeysLru,
    AllKeysLfu,
    AllKeysRandom,
    VolatileLru,
    VolatileLfu,
    VolatileRandom,
    VolatileTtl,
}

const POLICIES: [(Policy, &str); 8] = [
    (Policy::NoEviction, "noeviction"),
    (Policy::AllKeysLru, "allkeys-lru"),
    (Policy::AllKeysLfu, "allkeys-lfu"),
    (Policy::AllKeysRandom, "allkeys-random"),
    (Policy::VolatileLru, "volatile-lru"),
    (Policy::VolatileLfu, "volatile-lfu"),
    (Policy::VolatileRandom, "volatile-random"),
    (Policy::VolatileTtl, "volatile-ttl"),
];

impl Policy {
    /// Case-insensitive, as Redis reads it.
    pub fn parse(s: &str) -> Option<Policy> {
        POLICIES
            .iter()
            .find(|(_, n)| n.eq_ignore_ascii_case(s))
            .map(|&(p, _)| p)
    }

    pub fn name(self) -> &'static str {
        POLICIES
            .iter()
            .find(|(p, _)| *p == self)
            .map_or("noeviction", |&(_, n)| n)
    }

    /// Only keys with a deadline may be evicted.
    pub fn volatile_only(self) -> bool {
        matches!(
            self,
            Policy::VolatileLru
                | Policy::VolatileLfu
                | Policy::VolatileRandom
                | Policy::VolatileTtl
        )
    }

    /// Entries keep an LFU counter rather than an LRU clock.
    pub fn is_lfu(self) -> bool {
        matches!(self, Policy::AllKeysLfu | Policy::VolatileLfu)
    }

    fn index(self) -> u8 {
        POLICIES.iter().position(|(p, _)| *p == self).unwrap_or(0) as u8
    }

    fn from_index(i: u8) -> Policy {
        POLICIES
            .get(usize::from(i))
            .map_or(Policy::NoEviction, |&(p, _)| p)
    }
}

/// A memory size as Redis reads one: bytes, or a number with `k` / `m` / `g` (powers of
/// 1000) or `kb` / `mb` / `gb` (powers of 1024), any case.
pub fn parse_memory(s: &str) -> Option<u64> {
    let lower = s.trim().to_ascii_lowercase();
    let split = lower
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(lower.len());
    let (digits, unit) = lower.split_at(split);
    let n: u64 = digits.parse().ok()?;
    let mul: u64 = match unit {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    n.checked_mul(mul)
}

/// What the keyspace is started with.
#[derive(Debug, Clone)]
pub struct KvConfig {
    /// Number of shards (rounded up to a power of two).
    pub shards: usize,
    /// Bytes the keyspace may use before evicting (0 = no limit).
    pub maxmemory: u64,
    pub policy: Policy,
    /// Keys sampled per eviction (`maxmemory-samples`).
    pub samples: usize,
    /// `notify-keyspace-events`.
    pub notify: NotifyFlags,
    /// `client-output-buffer-limit pubsub`.
    pub pubsub_limit: OutputLimit,
    /// Longest string (`proto-max-bulk-len`): APPEND refuses to grow a value beyond it.
    pub max_bulk: u64,
    /// Where `kv.snapshot`, `kv.log.*` and `kv.revision` live; `None`: memory only.
    pub data_dir: Option<PathBuf>,
    /// Acknowledge writes only once they are in the append-only log and fsynced.
    pub strict: bool,
    /// What goes to the change feed, if one is installed.
    pub feed: FeedConfig,
}

impl Default for KvConfig {
    fn default() -> Self {
        KvConfig {
            shards: 64,
            maxmemory: 0,
            policy: Policy::NoEviction,
            samples: 5,
            notify: NotifyFlags::default(),
            pubsub_limit: OutputLimit::default(),
            max_bulk: resp_wire::request::DEFAULT_MAX_BULK,
            data_dir: None,
            strict: false,
            feed: FeedConfig::default(),
        }
    }
}

/// Settings `CONFIG SET` may change at any time.
#[derive(Debug)]
pub struct Settings {
    maxmemory: AtomicU64,
    policy: AtomicU8,
    samples: AtomicUsize,
    notify: AtomicU32,
}

impl Settings {
    pub fn new(c: &KvConfig) -> Settings {
        Settings {
            maxmemory: AtomicU64::new(c.maxmemory),
            policy: AtomicU8::new(c.policy.index()),
            samples: AtomicUsize::new(c.samples.max(1)),
            notify: AtomicU32::new(c.notify.0),
        }
    }

    pub fn maxmemory(&self) -> u64 {
        self.maxmemory.load(Ordering::Relaxed)
    }

    pub fn set_maxmemory(&self, v: u64) {
        self.maxmemory.store(v, Ordering::Relaxed);
    }

    pub fn policy(&self) -> Policy {
        Policy::from_index(self.policy.load(Ordering::Relaxed))
    }

    pub fn set_policy(&self, p: Policy) {
        self.policy.store(p.index(), Ordering::Relaxed);
    }

    pub fn samples(&self) -> usize {
        self.samples.load(Ordering::Relaxed)
    }

    pub fn set_samples(&self, n: usize) {
        self.samples.store(n.max(1), Ordering::Relaxed);
    }

    pub fn notify(&self) -> NotifyFlags {
        NotifyFlags(self.notify.load(Ordering::Relaxed))
    }

    pub fn set_notify(&self, f: NotifyFlags) {
        self.notify.store(f.0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_by_name() {
        for (p, n) in POLICIES {
            assert_eq!(Policy::parse(n), Some(p));
            assert_eq!(p.name(), n);
            assert_eq!(Policy::from_index(p.index()), p);
        }
        assert_eq!(Policy::parse("ALLKEYS-LRU"), Some(Policy::AllKeysLru));
        assert_eq!(Policy::parse("lru"), None);
    }

    #[test]
    fn memory_units_as_redis() {
        assert_eq!(parse_memory("0"), Some(0));
        assert_eq!(parse_memory("1024"), Some(1024));
        assert_eq!(parse_memory("1k"), Some(1000));
        assert_eq!(parse_memory("1KB"), Some(1024));
        assert_eq!(parse_memory("100mb"), Some(100 << 20));
        assert_eq!(parse_memory("2gb"), Some(2 << 30));
        for bad in ["", "mb", "1tb", "-1", "1.5gb", "99999999999999999999"] {
            assert_eq!(parse_memory(bad), None, "{bad}");
        }
    }

    #[test]
    fn settings_change_at_runtime() {
        let s = Settings::new(&KvConfig::default());
        assert_eq!(
            (s.maxmemory(), s.policy(), s.samples()),
            (0, Policy::NoEviction, 5)
        );
        s.set_policy(Policy::VolatileTtl);
        s.set_samples(0);
        assert_eq!((s.policy(), s.samples()), (Policy::VolatileTtl, 1));
    }
}
