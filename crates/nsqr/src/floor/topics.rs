//! What the floor remembers of each publish so it can hand the messages out again: per topic, a
//! queue of runs (one per PUB or MPUB: how many messages, their size, the first body's 16-byte
//! header). That is one small record per command, not per message; the bytes themselves stay
//! in the publish slabs, which the floor never reads again. Subscribers take from the front of
//! a topic's queue, so each message is handed out once, whatever the channel.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::body::HEADER_LEN;

/// `count` messages of `size` bytes; the n-th one's header is `header` with n added to its
/// first 8 bytes (the benchmark's sequence word, see `body`), the rest as published.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    pub header: [u8; HEADER_LEN],
    pub count: u32,
    pub size: u32,
}

impl Run {
    /// A run of `count` messages of `size` bytes whose first body starts with `first`.
    pub fn new(first: &[u8], count: u32, size: u32) -> Run {
        let mut header = [0u8; HEADER_LEN];
        let n = first.len().min(HEADER_LEN);
        header[..n].copy_from_slice(&first[..n]);
        Run {
            header,
            count,
            size,
        }
    }

    /// The header of message `i` of this run.
    pub fn header_at(&self, i: u32) -> [u8; HEADER_LEN] {
        let mut h = self.header;
        let w = u64::from_be_bytes([h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]]);
        h[..8].copy_from_slice(&w.wrapping_add(u64::from(i)).to_be_bytes());
        h
    }
}

/// One topic's messages not yet handed out.
#[derive(Debug, Default)]
pub struct Topic {
    runs: Mutex<VecDeque<Run>>,
    /// Woken (all waiters) when runs are added.
    pub added: Notify,
}

impl Topic {
    pub fn push(&self, run: Run) {
        if run.count == 0 {
            return;
        }
        if let Ok(mut q) = self.runs.lock() {
            q.push_back(run);
        }
        self.added.notify_waiters();
    }

    /// Messages from the front, all of one run: at most `limit(size)` (at least one) for
    /// the front run's message size, a part of the run if it is longer.
    pub fn take(&self, limit: impl FnOnce(u32) -> u32) -> Option<Run> {
        let mut q = self.runs.lock().ok()?;
        let front = q.front_mut()?;
        let max = limit(front.size).max(1);
        if front.count <= max {
            return q.pop_front();
        }
        let part = Run {
            count: max,
            ..*front
        };
        front.header = front.header_at(max);
        front.count -= max;
        Some(part)
    }
}

/// Every topic published to or subscribed to, by name.
#[derive(Debug, Default)]
pub struct Topics {
    by_name: Mutex<HashMap<Vec<u8>, Arc<Topic>>>,
}

impl Topics {
    pub fn get(&self, name: &[u8]) -> Arc<Topic> {
        match self.by_name.lock() {
            Ok(mut m) => Arc::clone(m.entry(name.to_vec()).or_default()),
            // A poisoned map (a panic elsewhere): a topic of its own keeps this connection going.
            Err(_) => Arc::new(Topic::default()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::{decode, seq_word};

    #[test]
    fn runs_split_and_number_their_messages() {
        let mut first = seq_word(7, 2, 100).to_be_bytes().to_vec();
        first.extend_from_slice(&55u64.to_be_bytes());
        let t = Topic::default();
        t.push(Run::new(&first, 5, 200));
        t.push(Run::new(b"short", 1, 5));
        t.push(Run::new(&first, 0, 200));
        let a = t.take(|_| 2).unwrap();
        assert_eq!((a.count, a.size), (2, 200));
        let h = decode(&a.header_at(1)).unwrap();
        assert_eq!((h.tag, h.publisher, h.seq, h.sent_ns), (7, 2, 101, 55));
        let b = t.take(|_| 10).unwrap();
        assert_eq!(b.count, 3);
        assert_eq!(decode(&b.header_at(0)).unwrap().seq, 102);
        assert_eq!(decode(&b.header_at(2)).unwrap().seq, 104);
        let c = t.take(|_| 10).unwrap();
        assert_eq!((c.count, c.size, &c.header[..6]), (1, 5, &b"short\0"[..]));
        assert_eq!(t.take(|_| 10), None);
    }

    #[test]
    fn one_topic_per_name() {
        let ts = Topics::default();
        ts.get(b"a").push(Run::new(&[], 1, 16));
        assert!(ts.get(b"a").take(|_| 1).is_some());
        assert!(ts.get(b"b").take(|_| 1).is_none());
    }
}
