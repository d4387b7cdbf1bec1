//! WATCH: optimistic locking for transactions. A client watches keys; any change to one of
//! them (a write by anyone, including the client itself, an expiry, an eviction, a flush that
//! removes it) marks the client dirty, and its next `EXEC` is refused.
//!
//! Every change already passes through `Keyspace::emit` under its key's shard lock, so that is
//! where watchers are told: a map from watched key to the clients watching it, looked at only
//! when some key is watched (one relaxed load otherwise). A client registers a key under that
//! key's shard lock, so a change and a registration of the same key never cross unseen.
//! Lock order: shard → watch map.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::clock::now_ms;
use crate::keyspace::{Find, Keyspace};

/// One client's watched keys and whether one of them changed.
#[derive(Debug, Default)]
pub struct Watch {
    dirty: Arc<AtomicBool>,
    keys: Vec<Vec<u8>>,
}

impl Watch {
    /// Keys watched (WATCH adds, UNWATCH and EXEC clear).
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// Who watches what, for the whole keyspace.
#[derive(Debug, Default)]
pub(crate) struct Watchers {
    /// Watched (key, client) pairs: zero means `touch` returns at once.
    pairs: AtomicUsize,
    by_key: Mutex<HashMap<Vec<u8>, Vec<Arc<AtomicBool>>>>,
}

impl Watchers {
    /// A change to `key`: every client watching it is now dirty.
    pub fn touch(&self, key: &[u8]) {
        if self.pairs.load(Ordering::Relaxed) == 0 {
            return;
        }
        if let Some(flags) = self.by_key.lock().get(key) {
            for f in flags {
                f.store(true, Ordering::Relaxed);
            }
        }
    }

    /// A flush: clients watching a key for which `exists` holds are now dirty.
    pub fn touch_existing(&self, exists: impl Fn(&[u8]) -> bool) {
        if self.pairs.load(Ordering::Relaxed) == 0 {
            return;
        }
        for (key, flags) in self.by_key.lock().iter() {
            if exists(key) {
                for f in flags {
                    f.store(true, Ordering::Relaxed);
                }
            }
        }
    }

    fn add(&self, key: &[u8], flag: &Arc<AtomicBool>) {
        self.by_key
            .lock()
            .entry(key.to_vec())
            .or_default()
            .push(Arc::clone(flag));
        self.pairs.fetch_add(1, Ordering::Relaxed);
    }

    fn remove(&self, key: &[u8], flag: &Arc<AtomicBool>) {
        let mut map = self.by_key.lock();
        if let Some(flags) = map.get_mut(key) {
            if let Some(i) = flags.iter().position(|f| Arc::ptr_eq(f, flag)) {
                flags.swap_remove(i);
                self.pairs.fetch_sub(1, Ordering::Relaxed);
            }
            if flags.is_empty() {
                map.remove(key);
            }
        }
    }
}

impl Keyspace {
    /// WATCH `key` for `w`. A key already past its deadline is expired first, so its
    /// expiry does not count as a change made after the WATCH.
    pub fn watch(&self, w: &mut Watch, key: &[u8]) {
        if w.keys.iter().any(|k| k == key) {
            return;
        }
        let now = now_ms();
        let hash = self.hash(key);
        let mut g = self.lock(hash);
        let _ = self.find(&mut g, hash, key, now, Find::Peek);
        self.watchers.add(key, &w.dirty);
        drop(g);
        w.keys.push(key.to_vec());
    }

    /// UNWATCH: forgets every key of `w` and clears its dirty flag.
    pub fn unwatch(&self, w: &mut Watch) {
        for key in w.keys.drain(..) {
            self.watchers.remove(&key, &w.dirty);
        }
        w.dirty.store(false, Ordering::Relaxed);
    }

    /// Whether a watched key changed since it was watched. A watched key past its deadline
    /// is expired now (a change). Call with the exclusive turn held, right before the
    /// transaction runs, so nothing can change in between.
    pub fn watch_broken(&self, w: &Watch) -> bool {
        let now = now_ms();
        for key in &w.keys {
            let hash = self.hash(key);
            let mut g = self.lock(hash);
            let _ = self.find(&mut g, hash, key, now, Find::Peek);
        }
        w.dirty.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use crate::test_support::mem;
    use crate::{Pending, SetOptions, Watch};

    fn set(ks: &crate::Keyspace, k: &[u8]) {
        ks.set(
            k,
            b"v",
            SetOptions::default(),
            None,
            &mut Pending::default(),
        )
        .unwrap();
    }

    #[test]
    fn a_change_by_anyone_breaks_the_watch_and_unwatch_resets_it() {
        let ks = mem();
        let (mut a, mut b) = (Watch::default(), Watch::default());
        ks.watch(&mut a, b"k");
        ks.watch(&mut a, b"k");
        ks.watch(&mut b, b"other");
        assert_eq!(a.len(), 1);
        assert!(!ks.watch_broken(&a));
        set(&ks, b"unrelated");
        assert!(!ks.watch_broken(&a));
        set(&ks, b"k");
        assert!(ks.watch_broken(&a));
        assert!(!ks.watch_broken(&b));
        ks.unwatch(&mut a);
        assert!(a.is_empty() && !ks.watch_broken(&a));
        set(&ks, b"k");
        assert!(!ks.watch_broken(&a));
        ks.unwatch(&mut b);
        assert_eq!(
            ks.watchers.pairs.load(std::sync::atomic::Ordering::Relaxed),
            0
        );
        assert!(ks.watchers.by_key.lock().is_empty());
    }

    #[test]
    fn deletes_expiry_and_flush_break_it_but_a_flush_of_a_missing_key_does_not() {
        let ks = mem();
        set(&ks, b"gone");
        let mut w = Watch::default();
        ks.watch(&mut w, b"gone");
        ks.del(&[b"gone"], &mut Pending::default());
        assert!(ks.watch_broken(&w));

        let mut w = Watch::default();
        ks.watch(&mut w, b"missing");
        ks.flush(&mut Pending::default());
        assert!(!ks.watch_broken(&w), "flush of a key that did not exist");
        set(&ks, b"present");
        ks.watch(&mut w, b"present");
        ks.flush(&mut Pending::default());
        assert!(ks.watch_broken(&w));

        // A deadline that passes after the WATCH breaks it, even before the timer runs.
        let mut w = Watch::default();
        let at = ks.now_ms() + 500;
        ks.set(
            b"ttl",
            b"v",
            SetOptions {
                expiry: crate::Expiry::At(at),
                ..SetOptions::default()
            },
            None,
            &mut Pending::default(),
        )
        .unwrap();
        ks.watch(&mut w, b"ttl");
        let broken = ks.watch_broken(&w);
        if ks.now_ms() < at {
            assert!(!broken, "broken before the deadline");
        }
        while ks.now_ms() <= at {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(ks.watch_broken(&w));
    }

    #[test]
    fn an_eviction_breaks_it() {
        let ks = crate::Keyspace::open(
            crate::KvConfig {
                policy: crate::Policy::AllKeysRandom,
                ..crate::KvConfig::default()
            },
            None,
        )
        .unwrap();
        set(&ks, b"only");
        let mut w = Watch::default();
        ks.watch(&mut w, b"only");
        ks.settings().set_maxmemory(1);
        let _ = ks.make_room();
        assert!(!ks.contains(b"only"), "not evicted");
        assert!(ks.watch_broken(&w));
    }

    #[test]
    fn a_key_expired_before_the_watch_does_not_break_it() {
        let ks = mem();
        let at = ks.now_ms() + 1;
        ks.set(
            b"old",
            b"v",
            SetOptions {
                expiry: crate::Expiry::At(at),
                ..SetOptions::default()
            },
            None,
            &mut Pending::default(),
        )
        .unwrap();
        while ks.now_ms() <= at {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        let mut w = Watch::default();
        ks.watch(&mut w, b"old");
        assert!(!ks.watch_broken(&w));
    }
}
