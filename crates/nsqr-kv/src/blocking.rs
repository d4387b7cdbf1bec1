//! Clients blocked on lists (BLPOP, BRPOP, BLMOVE, BLMPOP, BRPOPLPUSH) and on sorted sets
//! (BZPOPMIN, BZPOPMAX, BZMPOP): who waits on which key, in the order they blocked.
//!
//! A client that found every key empty takes a place at the back of each key's queue
//! ([`Keyspace::block`]) and waits. A change that gives a key elements (a push or a ZADD, or a
//! list or sorted set written whole by RENAME, COPY, RESTORE or a STORE command) wakes the first client of that key's queue, from
//! inside the change (`Keyspace::emit`); that client runs its command again and, having
//! popped, wakes the next one, so elements go to blocked clients in the order they blocked.
//! A client that finds nothing again (another took the element first) keeps its place; one
//! that leaves its queues (timed out, gone) wakes the next in its stead. A push
//! inside a transaction wakes the client when it can run, that is once the transaction ends
//! (it runs alone). The place is given up when the [`Blocked`] handle is dropped (the command
//! answered, timed out, or the client left).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::keyspace::Keyspace;

/// The clients blocked on one key, first blocked first.
type Queue = VecDeque<Arc<Notify>>;

/// The queues of blocked clients, per key.
#[derive(Debug, Default)]
pub struct Blockers {
    /// Clients blocked on anything (nothing to look up while it is 0).
    waiting: AtomicUsize,
    by_key: Mutex<HashMap<Box<[u8]>, Queue>>,
}

impl Blockers {
    /// Wakes the first client blocked on `key`, if any.
    pub(crate) fn wake(&self, key: &[u8]) {
        if self.waiting.load(Ordering::Acquire) == 0 {
            return;
        }
        if let Some(first) = self.by_key.lock().get(key).and_then(Queue::front) {
            first.notify_one();
        }
    }
}

/// A blocked client's place in the queues of its keys.
#[derive(Debug)]
pub struct Blocked {
    blockers: Arc<Blockers>,
    keys: Vec<Box<[u8]>>,
    notify: Arc<Notify>,
}

impl Blocked {
    /// Resolves when a key of this client may have elements for it.
    pub async fn woken(&self) {
        self.notify.notified().await
    }
}

impl Drop for Blocked {
    /// Leaves the queues, and wakes each one's new first client: this one may have been woken
    /// for an element it will not take now (it timed out, or left), which must not be lost.
    fn drop(&mut self) {
        let mut by_key = self.blockers.by_key.lock();
        for k in &self.keys {
            if let Some(q) = by_key.get_mut(k) {
                q.retain(|n| !Arc::ptr_eq(n, &self.notify));
                match q.front() {
                    Some(next) => next.notify_one(),
                    None => {
                        by_key.remove(k);
                    }
                }
            }
        }
        self.blockers.waiting.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Keyspace {
    /// Takes a place at the back of the queue of each of `keys`.
    pub fn block(&self, keys: &[&[u8]]) -> Blocked {
        let notify = Arc::new(Notify::new());
        let keys: Vec<Box<[u8]>> = keys.iter().map(|&k| k.into()).collect();
        {
            let mut by_key = self.blockers.by_key.lock();
            for k in &keys {
                by_key
                    .entry(k.clone())
                    .or_default()
                    .push_back(Arc::clone(&notify));
            }
        }
        self.blockers.waiting.fetch_add(1, Ordering::AcqRel);
        Blocked {
            blockers: Arc::clone(&self.blockers),
            keys,
            notify,
        }
    }

    /// Wakes the next client blocked on `key` (a blocked client that popped passes the turn
    /// on: the list may hold more).
    pub fn wake_blocked(&self, key: &[u8]) {
        self.blockers.wake(key);
    }
}

#[cfg(test)]
mod tests {
    use crate::test_support::mem;
    use crate::Pending;

    #[tokio::test]
    async fn the_first_blocked_is_woken_and_a_dropped_place_is_given_up() {
        let ks = mem();
        let first = ks.block(&[b"q", b"other"]);
        let second = ks.block(&[b"q"]);
        ks.push(b"q", &[b"x"], true, false, &mut Pending::default())
            .unwrap();
        // The first one's permit is stored; the second was not woken.
        tokio::time::timeout(std::time::Duration::from_secs(10), first.woken())
            .await
            .unwrap();
        assert!(
            tokio::time::timeout(std::time::Duration::from_millis(20), second.woken())
                .await
                .is_err()
        );
        // Leaving passes the wake-up on.
        drop(first);
        tokio::time::timeout(std::time::Duration::from_secs(10), second.woken())
            .await
            .unwrap();
        drop(second);
        assert!(ks.blockers.by_key.lock().is_empty());
    }
}
