//! Coalescing in process: consecutive `publish_async`s to one topic gather in a batch that
//! reaches the broker as one call (one topic lock, one wake-up of each channel's consumer)
//! instead of one call each, which is most of what a small publish costs in process.
//!
//! A batch goes to the broker when one of its publishes is awaited (or its future dropped),
//! when it holds [`MAX_BATCH`] messages or [`MAX_BATCH_BYTES`], before a publish to another topic or of another kind,
//! when the producer is dropped, and at the latest about [`MAX_DELAY`] after it began (a
//! flusher task, idle while nothing waits), so a publish whose answer is never looked at
//! still goes out. Batches go out in the order they were made, under the producer's lock,
//! so messages keep their order; every publish of a batch gets the batch's result.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::Notify;

use crate::error::Error;

/// Messages in a batch at most.
pub(crate) const MAX_BATCH: usize = 256;
/// Bytes of bodies in a batch at most: large bodies go out while still in the cache (a
/// batch of them would only make the consumer wait longer for the first).
pub(crate) const MAX_BATCH_BYTES: usize = 64 << 10;
/// How long a batch waits for more at most.
pub(crate) const MAX_DELAY: Duration = Duration::from_millis(1);

/// Publishes gathered for one topic, not yet handed to the broker.
pub(crate) struct Batch {
    pub(crate) topic: Arc<str>,
    pub(crate) bodies: Vec<Bytes>,
    pub(crate) bytes: usize,
    pub(crate) outcome: Arc<Outcome>,
    pub(crate) started: Instant,
}

impl Batch {
    pub(crate) fn new(topic: Arc<str>) -> Batch {
        Batch {
            topic,
            bodies: Vec::new(),
            bytes: 0,
            outcome: Arc::new(Outcome::default()),
            started: Instant::now(),
        }
    }

    /// Add a body; true when the batch is full.
    pub(crate) fn push(&mut self, body: Bytes) -> bool {
        self.bytes += body.len();
        self.bodies.push(body);
        self.bodies.len() >= MAX_BATCH || self.bytes >= MAX_BATCH_BYTES
    }
}

/// The result every publish of one batch is answered with.
#[derive(Default)]
pub(crate) struct Outcome {
    result: OnceLock<Result<(), Error>>,
    done: Notify,
}

impl Outcome {
    /// The result, once known (a copy for each publish of the batch).
    pub(crate) fn get(&self) -> Option<Result<(), Error>> {
        self.result
            .get()
            .map(|r| r.as_ref().map(|_| ()).map_err(Error::duplicate))
    }

    pub(crate) fn is_known(&self) -> bool {
        self.result.get().is_some()
    }

    pub(crate) fn set(&self, r: Result<(), Error>) {
        let _ = self.result.set(r);
        self.done.notify_waiters();
    }

    /// Wait for the result (a batch that must reach the disk first).
    pub(crate) async fn wait(&self) -> Result<(), Error> {
        loop {
            let notified = self.done.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(r) = self.get() {
                return r;
            }
            notified.await;
        }
    }
}

/// What the flusher needs of the producer.
pub(crate) trait Flush: Send + Sync + 'static {
    /// When the pending batch began, if there is one.
    fn pending_since(&self) -> Option<Instant>;
    /// Hand the pending batch to the broker if it began at `started` or before.
    fn flush_older(&self, started: Instant);
}

/// Wakes the flusher when a batch begins and the flusher is idle.
#[derive(Default)]
pub(crate) struct Timer {
    idle: AtomicBool,
    wake: Notify,
    running: AtomicBool,
}

impl Timer {
    /// A batch began: make sure it is flushed within [`MAX_DELAY`].
    pub(crate) fn arm<F: Flush>(self: &Arc<Self>, rt: &tokio::runtime::Handle, owner: Weak<F>) {
        if !self.running.swap(true, Ordering::AcqRel) {
            rt.spawn(flusher(Arc::clone(self), owner));
        } else if self.idle.swap(false, Ordering::AcqRel) {
            self.wake.notify_one();
        }
    }
}

impl Timer {
    /// The producer is gone: let an idle flusher end.
    pub(crate) fn stop(&self) {
        self.wake.notify_one();
    }
}

/// Flush batches older than [`MAX_DELAY`]; idle while there is none; ends with the producer.
async fn flusher<F: Flush>(timer: Arc<Timer>, owner: Weak<F>) {
    loop {
        let since = match owner.upgrade() {
            Some(o) => o.pending_since(),
            None => return,
        };
        match since {
            Some(at) => {
                tokio::time::sleep_until((at + MAX_DELAY).into()).await;
                match owner.upgrade() {
                    Some(o) => o.flush_older(at),
                    None => return,
                }
            }
            None => {
                let woken = timer.wake.notified();
                tokio::pin!(woken);
                woken.as_mut().enable();
                timer.idle.store(true, Ordering::Release);
                // A batch that began before `idle` was set did not wake us: look again.
                let began = owner.upgrade().map(|o| o.pending_since());
                match began {
                    None => return,
                    Some(Some(_)) => timer.idle.store(false, Ordering::Release),
                    Some(None) => woken.await,
                }
            }
        }
    }
}
