//! Client-side caching (CLIENT TRACKING): a client that tracks is told when a key it read
//! may have changed, so it can drop its cached copy. As in Redis 7.0:
//!
//! - by default, the keys a tracking client reads are remembered; the next change of one
//!   (a write by anyone, an expiry, an eviction) sends the client an `invalidate` message
//!   for it and forgets it until it is read again;
//! - in broadcast mode (`BCAST`), a client is told of every change to a key starting with one
//!   of its prefixes (any key without prefixes), read or not;
//! - `NOLOOP`: not of the changes the client makes itself;
//! - a flush tells every tracking client that everything changed (a null key list).
//!
//! Every change already passes through `Keyspace::emit`; with no tracking client it costs one
//! relaxed load there. The message goes to the client's outbox (or, redirected, to the
//! outbox of the client it names): a RESP3 `invalidate` push, or a RESP2 message on
//! `__redis__:invalidate`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use resp_wire::{Protocol, Reply};

use crate::keyspace::Keyspace;
use crate::subscriber::Subscriber;

/// Keys remembered at most (Redis's `tracking-table-max-keys`): past it, a remembered key
/// is forgotten, its readers told it changed, as Redis does.
const MAX_TRACKED_KEYS: usize = 1_000_000;

/// The channel redirected RESP2 invalidations are published on.
pub const INVALIDATE_CHANNEL: &[u8] = b"__redis__:invalidate";

/// Where a tracking client's invalidations go.
#[derive(Debug, Clone)]
pub enum Target {
    /// Its own outbox (RESP3 pushes; a RESP2 client gets nothing, as in Redis).
    Own(Arc<Subscriber>),
    /// The client with this id, if it is subscribed to [`INVALIDATE_CHANNEL`] or listens
    /// in RESP3 through its outbox.
    Redirect(u64),
}

/// One tracking client.
#[derive(Debug)]
pub struct Tracker {
    pub client: u64,
    pub target: Target,
    pub noloop: bool,
    /// Broadcast mode's prefixes (`Some(empty)`: every key); `None`: default mode.
    pub prefixes: Option<Vec<Vec<u8>>>,
    on: AtomicBool,
}

impl Tracker {
    pub fn new(
        client: u64,
        target: Target,
        noloop: bool,
        prefixes: Option<Vec<Vec<u8>>>,
    ) -> Tracker {
        Tracker {
            client,
            target,
            noloop,
            prefixes,
            on: AtomicBool::new(true),
        }
    }

    fn wants(&self, writer: u64) -> bool {
        self.on.load(Ordering::Relaxed) && !(self.noloop && writer == self.client)
    }
}

/// Who tracks what, for the whole keyspace.
#[derive(Debug, Default)]
pub(crate) struct Tracking {
    /// Trackers on: zero means `invalidate` returns at once.
    active: AtomicUsize,
    by_key: Mutex<HashMap<Vec<u8>, Vec<Arc<Tracker>>>>,
    broadcast: Mutex<Vec<Arc<Tracker>>>,
}

impl Tracking {
    /// A change to `key` by client `writer` (0: the server itself).
    pub fn invalidate(&self, ks: &Keyspace, key: &[u8], writer: u64) {
        if self.active.load(Ordering::Relaxed) == 0 {
            return;
        }
        let readers = self.by_key.lock().remove(key).unwrap_or_default();
        for t in readers.iter().filter(|t| t.wants(writer)) {
            send(ks, t, Some(key));
        }
        for t in self.broadcast.lock().iter() {
            let covered = t
                .prefixes
                .as_ref()
                .is_some_and(|p| p.is_empty() || p.iter().any(|p| key.starts_with(p)));
            if covered && t.wants(writer) {
                send(ks, t, Some(key));
            }
        }
    }

    /// A flush: every tracking client is told that every key changed.
    pub fn invalidate_all(&self, ks: &Keyspace) {
        if self.active.load(Ordering::Relaxed) == 0 {
            return;
        }
        let readers: Vec<Arc<Tracker>> = self.by_key.lock().drain().flat_map(|(_, v)| v).collect();
        let mut told: Vec<u64> = Vec::new();
        let broadcast = self.broadcast.lock().clone();
        for t in readers.iter().chain(broadcast.iter()) {
            if t.on.load(Ordering::Relaxed) && !told.contains(&t.client) {
                told.push(t.client);
                send(ks, t, None);
            }
        }
    }
}

/// Writes one invalidation (`None`: every key) where `t` wants it.
fn send(ks: &Keyspace, t: &Tracker, key: Option<&[u8]>) {
    let write = |r: &mut Reply| {
        if r.protocol() == Protocol::Resp3 {
            r.push(2);
            r.bulk(b"invalidate");
        } else {
            r.push(3);
            r.bulk(b"message");
            r.bulk(INVALIDATE_CHANNEL);
        }
        match key {
            Some(k) => {
                r.array(1);
                r.bulk(k);
            }
            None => r.null_array(),
        }
    };
    match &t.target {
        Target::Own(sub) => {
            if sub.protocol() == Protocol::Resp3 {
                sub.write(write);
            }
        }
        Target::Redirect(id) => {
            if let Some(sub) = ks.hub().subscriber_of(INVALIDATE_CHANNEL, *id) {
                sub.write(write);
            }
        }
    }
}

impl Keyspace {
    /// Starts tracking for `t` (broadcast mode if it has prefixes).
    pub fn track_start(&self, t: &Arc<Tracker>) {
        if t.prefixes.is_some() {
            self.tracking.broadcast.lock().push(Arc::clone(t));
        }
        self.tracking.active.fetch_add(1, Ordering::Relaxed);
    }

    /// Stops tracking for `t`: it is told nothing more.
    pub fn track_stop(&self, t: &Arc<Tracker>) {
        if t.on.swap(false, Ordering::Relaxed) {
            self.tracking.active.fetch_sub(1, Ordering::Relaxed);
            self.tracking
                .broadcast
                .lock()
                .retain(|b| !Arc::ptr_eq(b, t));
            self.tracking.by_key.lock().retain(|_, v| {
                v.retain(|b| !Arc::ptr_eq(b, t));
                !v.is_empty()
            });
        }
    }

    /// Remembers that `t` (default mode) read `keys`.
    pub fn track_reads<'a>(&self, t: &Arc<Tracker>, keys: impl IntoIterator<Item = &'a [u8]>) {
        if t.prefixes.is_some() || !t.on.load(Ordering::Relaxed) {
            return;
        }
        let mut evicted = Vec::new();
        {
            let mut by_key = self.tracking.by_key.lock();
            for key in keys {
                if by_key.len() >= MAX_TRACKED_KEYS && !by_key.contains_key(key) {
                    let old = by_key.keys().next().cloned().unwrap_or_default();
                    if let Some(readers) = by_key.remove(&old) {
                        evicted.push((old, readers));
                    }
                }
                let v = by_key.entry(key.to_vec()).or_default();
                if !v.iter().any(|b| Arc::ptr_eq(b, t)) {
                    v.push(Arc::clone(t));
                }
            }
        }
        for (key, readers) in evicted {
            for r in readers.iter().filter(|r| r.on.load(Ordering::Relaxed)) {
                send(self, r, Some(&key));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyspace::Pending;
    use crate::test_support::{frames, mem};
    use crate::{OutputLimit, SetOptions};

    fn resp3_outbox(id: u64) -> Arc<Subscriber> {
        Arc::new(Subscriber::new(id, Protocol::Resp3, OutputLimit::default()))
    }

    #[test]
    fn a_read_key_is_invalidated_once_and_noloop_skips_own_writes() {
        let ks = mem();
        let sub = resp3_outbox(7);
        let t = Arc::new(Tracker::new(7, Target::Own(Arc::clone(&sub)), true, None));
        ks.track_start(&t);
        ks.track_reads(&t, [&b"k"[..]]);
        let mut other = Pending::of_client(8);
        let _ = ks.set(b"k", b"1", SetOptions::default(), None, &mut other);
        let _ = ks.set(b"k", b"2", SetOptions::default(), None, &mut other);
        assert_eq!(frames(&sub).len(), 1);
        ks.track_reads(&t, [&b"k"[..]]);
        let mut own = Pending::of_client(7);
        let _ = ks.set(b"k", b"3", SetOptions::default(), None, &mut own);
        assert!(frames(&sub).is_empty());
        ks.track_stop(&t);
        let _ = ks.set(b"k", b"4", SetOptions::default(), None, &mut other);
        assert!(frames(&sub).is_empty());
    }

    #[test]
    fn broadcast_follows_prefixes_and_flush_tells_everyone() {
        let ks = mem();
        let sub = resp3_outbox(1);
        let prefixes = Some(vec![b"user:".to_vec()]);
        let t = Arc::new(Tracker::new(
            1,
            Target::Own(Arc::clone(&sub)),
            false,
            prefixes,
        ));
        ks.track_start(&t);
        let mut p = Pending::default();
        let _ = ks.set(b"user:1", b"x", SetOptions::default(), None, &mut p);
        let _ = ks.set(b"other", b"x", SetOptions::default(), None, &mut p);
        assert_eq!(frames(&sub).len(), 1);
        ks.flush(&mut p);
        assert_eq!(frames(&sub).len(), 1);
    }
}
