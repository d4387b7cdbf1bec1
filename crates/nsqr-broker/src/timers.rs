//! One timer for the whole broker: in-flight timeouts and deferred messages of every channel.
//!
//! A channel knows its own earliest deadline (`ChannelState::timer_at`) and asks to be woken
//! then with [`Timers::wake_at`] only when that deadline moves earlier, which is rare: a busy
//! consumer's deliveries only ever add later deadlines. One task, owned by the broker handle,
//! sleeps until the earliest wake-up of all channels and lets each due channel process its
//! timers. So timers need no runtime at channel creation (the task was spawned when the
//! broker started), 10,000 idle channels cost one sleeping task, and a timeout fires on time
//! instead of at the next scan (nsqd samples channels every 100 ms).
//!
//! Entries are never removed early: a channel whose deadline moved earlier leaves its old
//! entry behind, and [`Channel::on_timer`] ignores an entry that is not its current deadline.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::channel::Channel;

struct Entry {
    at: Instant,
    seq: u64,
    channel: Weak<Channel>,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

#[derive(Default)]
struct Heap {
    entries: BinaryHeap<Reverse<Entry>>,
    seq: u64,
}

/// The wake-ups every channel asked for, and the task that serves them.
#[derive(Default)]
pub(crate) struct Timers {
    heap: Mutex<Heap>,
    /// Woken when an entry earlier than every other one arrives.
    changed: Notify,
}

impl Timers {
    /// Wake `channel` at `at` (call when its earliest deadline moved earlier).
    pub(crate) fn wake_at(&self, at: Instant, channel: Weak<Channel>) {
        let mut h = self.heap.lock();
        let earliest = h.entries.peek().is_none_or(|Reverse(e)| at < e.at);
        h.seq += 1;
        let seq = h.seq;
        h.entries.push(Reverse(Entry { at, seq, channel }));
        drop(h);
        if earliest {
            self.changed.notify_one();
        }
    }

    /// The next entry due by `now`, or the time the earliest one is due.
    fn pop_due(&self, now: Instant) -> Result<Entry, Option<Instant>> {
        let mut h = self.heap.lock();
        match h.entries.peek() {
            Some(Reverse(e)) if e.at <= now => match h.entries.pop() {
                Some(Reverse(e)) => Ok(e),
                None => Err(None),
            },
            Some(Reverse(e)) => Err(Some(e.at)),
            None => Err(None),
        }
    }

    /// Entries waiting (stale ones included), for tests.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.heap.lock().entries.len()
    }

    /// Serve wake-ups until the task is aborted (the broker handle owns it).
    pub(crate) async fn run(self: Arc<Self>) {
        let mut served: u32 = 0;
        loop {
            let now = Instant::now();
            match self.pop_due(now) {
                Ok(entry) => {
                    if let Some(ch) = entry.channel.upgrade() {
                        ch.on_timer(entry.at, now, &self);
                    }
                    served = served.wrapping_add(1);
                    if served.is_multiple_of(64) {
                        // Many channels due at once: let other tasks on this thread run.
                        tokio::task::yield_now().await;
                    }
                }
                Err(Some(at)) => {
                    tokio::select! {
                        _ = tokio::time::sleep_until(at) => {}
                        _ = self.changed.notified() => {}
                    }
                }
                Err(None) => self.changed.notified().await,
            }
        }
    }
}

impl std::fmt::Debug for Timers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Timers")
            .field("entries", &self.heap.lock().entries.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test(start_paused = true)]
    async fn entries_come_due_in_deadline_order() {
        let t = Timers::default();
        let now = Instant::now();
        for ms in [30, 10, 20, 10] {
            t.wake_at(now + Duration::from_millis(ms), Weak::new());
        }
        assert_eq!(t.len(), 4);
        assert_eq!(
            t.pop_due(now).err(),
            Some(Some(now + Duration::from_millis(10)))
        );
        let later = now + Duration::from_millis(25);
        let due: Vec<Instant> =
            std::iter::from_fn(|| t.pop_due(later).ok().map(|e| e.at)).collect();
        assert_eq!(due, [10, 10, 20].map(|ms| now + Duration::from_millis(ms)));
        assert_eq!(t.len(), 1);
        assert!(t.pop_due(now + Duration::from_millis(30)).is_ok());
        assert_eq!(t.pop_due(later).err(), Some(None));
    }

    #[tokio::test(start_paused = true)]
    async fn an_earlier_entry_wakes_the_task() {
        let t = Arc::new(Timers::default());
        let task = tokio::spawn(Arc::clone(&t).run());
        tokio::task::yield_now().await;
        // The task sleeps with nothing to do; an entry for a dropped channel is served and
        // dropped when due.
        t.wake_at(Instant::now() + Duration::from_millis(50), Weak::new());
        tokio::time::sleep(Duration::from_millis(60)).await;
        tokio::task::yield_now().await;
        assert_eq!(t.len(), 0);
        task.abort();
    }
}
