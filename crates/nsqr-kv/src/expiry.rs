//! Expiry on time: one thread that sleeps until the earliest deadline of the keyspace and
//! expires every key that is due, however many keys are volatile.
//!
//! Redis finds expired keys by sampling 20 volatile keys ten times a second, so with many
//! volatile keys an `expired` event comes seconds to minutes late. Here each shard keeps its
//! deadlines ordered (`shard.rs`), the thread wakes at the earliest one (a condition variable
//! with a timeout in microseconds), takes every due key out in batches of a few hundred per
//! shard lock, and announces each as `expired`. A write with an earlier deadline than the one
//! the thread sleeps for wakes it at once. Reads never wait for the thread: a key past its
//! deadline is treated as gone by every command (`Keyspace::live`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use crate::clock::{now_ms, now_us};
use crate::feed::Op;
use crate::keyspace::{Emit, Keyspace, Pending};

/// Keys taken out per shard lock.
const BATCH: usize = 256;
/// The longest sleep, so a wall-clock step forward is noticed within a second.
const MAX_SLEEP: Duration = Duration::from_secs(1);

#[derive(Debug)]
struct State {
    /// The deadline (Unix ms) the thread sleeps for; `u64::MAX`: none.
    wake_at: u64,
    stop: bool,
}

/// The expiry thread's alarm clock.
#[derive(Debug)]
pub struct Timer {
    state: Mutex<State>,
    cv: Condvar,
    /// `state.wake_at`, readable without the lock: most writes need not touch the timer.
    hint: AtomicU64,
}

impl Default for Timer {
    fn default() -> Self {
        Timer {
            state: Mutex::new(State {
                wake_at: u64::MAX,
                stop: false,
            }),
            cv: Condvar::new(),
            hint: AtomicU64::new(u64::MAX),
        }
    }
}

impl Timer {
    /// A key now has deadline `d`: wake the thread earlier if needed.
    pub fn schedule(&self, d: u64) {
        if d >= self.hint.load(Ordering::Relaxed) {
            return;
        }
        let mut s = self.state.lock();
        if d < s.wake_at {
            s.wake_at = d;
            self.hint.store(d, Ordering::Relaxed);
            self.cv.notify_one();
        }
    }

    pub fn stop(&self) {
        self.state.lock().stop = true;
        self.cv.notify_one();
    }

    /// Sleeps until `wake_at` (or an earlier scheduled deadline, or stop). False if stopping.
    fn sleep(&self, next: Option<u64>) -> bool {
        let mut s = self.state.lock();
        s.wake_at = s.wake_at.min(next.unwrap_or(u64::MAX));
        self.hint.store(s.wake_at, Ordering::Relaxed);
        if s.stop {
            return false;
        }
        let now = now_us();
        let target = s.wake_at.saturating_mul(1000);
        if target > now {
            let wait = Duration::from_micros(target - now).min(MAX_SLEEP);
            self.cv.wait_for(&mut s, wait);
        }
        !s.stop
    }

    /// Opens a pass: deadlines scheduled from now on are remembered for the next sleep.
    fn begin_pass(&self) -> bool {
        let mut s = self.state.lock();
        s.wake_at = u64::MAX;
        self.hint.store(u64::MAX, Ordering::Relaxed);
        !s.stop
    }
}

/// The expiry thread: runs until the timer is stopped or the keyspace dropped.
pub(crate) fn run(ks: Weak<Keyspace>, timer: Arc<Timer>, rt: Option<tokio::runtime::Handle>) {
    // The change feed may need the async runtime (the broker's disk writers live there).
    let _rt = rt.as_ref().map(|h| h.enter());
    loop {
        if !timer.begin_pass() {
            return;
        }
        let next = match ks.upgrade() {
            Some(ks) => ks.expire_due(),
            None => return,
        };
        if !timer.sleep(next) {
            return;
        }
    }
}

impl Keyspace {
    /// Expires every key due now; returns the earliest deadline left.
    pub(crate) fn expire_due(&self) -> Option<u64> {
        let mut next: Option<u64> = None;
        let mut taken = Vec::new();
        for i in 0..self.shard_count() {
            loop {
                // Keys never expire in the middle of a transaction.
                let _turn = self.enter();
                let now = now_ms();
                let mut g = self.lock_index(i);
                taken.clear();
                g.take_due(now, BATCH, &mut taken);
                g.stats.expired += taken.len() as u64;
                for e in &taken {
                    self.emit(
                        Emit::new(Op::Expired, e.key()),
                        now,
                        &mut Pending::default(),
                    );
                }
                if taken.len() < BATCH {
                    if let Some(d) = g.next_deadline() {
                        next = Some(next.map_or(d, |n| n.min(d)));
                    }
                    break;
                }
            }
        }
        next
    }
}
