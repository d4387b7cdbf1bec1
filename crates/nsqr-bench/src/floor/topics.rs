//! What the floor keeps of each publish: the command's bytes as they were read (a shared slice
//! of the slab, so nothing is copied), queued per topic as a run. A subscriber takes messages
//! from the front of its topic's queue and writes their bodies straight from those bytes, so
//! each message is handed out once, whatever the channel, and its memory is released once its
//! run has been written. Nothing is parsed at publish time beyond the command line: an MPUB's
//! bodies are found by walking their length prefixes as they are handed out.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::Notify;

/// Messages of one PUB, DPUB or MPUB command not yet handed out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// The whole command as read.
    bytes: Bytes,
    /// Where the next message starts: an MPUB's `[u32 size][body]`, or a PUB's body.
    at: usize,
    /// Messages left.
    pub count: u32,
    mpub: bool,
}

impl Run {
    /// The run of a whole PUB / DPUB / MPUB command (`cmd` starts with its command line); None
    /// for a command without messages.
    pub fn of_command(cmd: Bytes) -> Option<Run> {
        let nl = cmd.iter().position(|&c| c == b'\n')?;
        let mpub = cmd.starts_with(b"MPUB ");
        let (at, count) = if mpub {
            let n = cmd.get(nl + 5..nl + 9)?;
            (nl + 9, u32::from_be_bytes([n[0], n[1], n[2], n[3]]))
        } else {
            (nl + 5, 1)
        };
        (count > 0 && at <= cmd.len()).then_some(Run {
            bytes: cmd,
            at,
            count,
            mpub,
        })
    }

    /// The body of the next message, and where the one after it starts; None if the command's
    /// length prefixes run past its end (a malformed MPUB: the rest of it is dropped).
    fn next_body(&self) -> Option<(&[u8], usize)> {
        if !self.mpub {
            return Some((self.bytes.get(self.at..)?, self.bytes.len()));
        }
        let s = self.bytes.get(self.at..self.at + 4)?;
        let len = u32::from_be_bytes([s[0], s[1], s[2], s[3]]) as usize;
        let end = self.at + 4 + len;
        Some((self.bytes.get(self.at + 4..end)?, end))
    }

    /// Call `f` with each of this run's bodies, in order; returns how many there were.
    pub fn for_each_body(&self, mut f: impl FnMut(&[u8])) -> u32 {
        let mut r = self.clone();
        let mut n = 0;
        while r.count > 0 {
            let Some((body, next)) = r.next_body() else {
                break;
            };
            f(body);
            (r.at, r.count, n) = (next, r.count - 1, n + 1);
        }
        n
    }

    /// Size of the next message's body (0 when malformed).
    fn next_size(&self) -> usize {
        self.next_body().map_or(0, |(b, _)| b.len())
    }

    /// Split off the first `n` messages (n < count) as a run of their own.
    fn split_to(&mut self, n: u32) -> Run {
        let first = Run {
            count: n,
            ..self.clone()
        };
        for _ in 0..n {
            match self.next_body() {
                Some((_, next)) => self.at = next,
                None => {
                    self.count = 0;
                    return first;
                }
            }
        }
        self.count -= n;
        first
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
        if let Ok(mut q) = self.runs.lock() {
            q.push_back(run);
        }
        self.added.notify_waiters();
    }

    /// Messages from the front, all of one run: at most `limit(size)` (at least one), given
    /// the size of the front run's next body; a part of the run if it is longer.
    pub fn take(&self, limit: impl FnOnce(usize) -> u32) -> Option<Run> {
        let mut q = self.runs.lock().ok()?;
        let front = q.front_mut()?;
        let max = limit(front.next_size()).max(1);
        if front.count <= max {
            return q.pop_front();
        }
        Some(front.split_to(max))
    }

    /// Messages queued (for tests).
    #[cfg(test)]
    pub fn queued(&self) -> u64 {
        self.runs
            .lock()
            .map(|q| q.iter().map(|r| u64::from(r.count)).sum())
            .unwrap_or(0)
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
    use crate::body::MpubBatch;

    fn bodies(r: &Run) -> Vec<Vec<u8>> {
        let mut v = Vec::new();
        r.for_each_body(|b| v.push(b.to_vec()));
        v
    }

    #[test]
    fn runs_of_commands() {
        let mut b = MpubBatch::new("t", 20, 5);
        let mpub = Bytes::copy_from_slice(b.stamp(5, 1, 0, 10, 0));
        let r = Run::of_command(mpub.clone()).unwrap();
        assert_eq!(r.count, 5);
        let all = bodies(&r);
        assert_eq!(all.len(), 5);
        assert!(all.iter().all(|b| b.len() == 20));
        assert_eq!(crate::body::decode(&all[4]).unwrap().seq, 14);
        let mut pubcmd = b"PUB t\n".to_vec();
        pubcmd.extend_from_slice(&3u32.to_be_bytes());
        pubcmd.extend_from_slice(b"abc");
        let p = Run::of_command(Bytes::from(pubcmd)).unwrap();
        assert_eq!(bodies(&p), [b"abc".to_vec()]);
        // No messages, or a count past the end: nothing, or only what is there.
        let empty = Bytes::from_static(b"MPUB t\n\0\0\0\x04\0\0\0\0");
        assert_eq!(Run::of_command(empty), None);
        let lying = Bytes::from_static(b"MPUB t\n\0\0\0\x0b\0\0\0\x03\0\0\0\x01x");
        assert_eq!(
            Run::of_command(lying).map(|r| bodies(&r)),
            Some(vec![b"x".to_vec()])
        );
    }

    #[test]
    fn topics_hand_out_runs_in_parts() {
        let mut b = MpubBatch::new("t", 16, 7);
        let r = Run::of_command(Bytes::copy_from_slice(b.stamp(7, 2, 3, 100, 0))).unwrap();
        let t = Topic::default();
        t.push(r);
        assert_eq!(t.queued(), 7);
        let a = t.take(|size| {
            assert_eq!(size, 16);
            3
        });
        let seqs = |r: &Run| -> Vec<u64> {
            bodies(r)
                .iter()
                .map(|b| crate::body::decode(b).unwrap().seq)
                .collect()
        };
        assert_eq!(seqs(&a.unwrap()), [100, 101, 102]);
        assert_eq!(t.queued(), 4);
        assert_eq!(seqs(&t.take(|_| 0).unwrap()), [103], "at least one");
        assert_eq!(seqs(&t.take(|_| 10).unwrap()), [104, 105, 106]);
        assert_eq!(t.take(|_| 10), None);
    }

    #[test]
    fn one_topic_per_name() {
        let ts = Topics::default();
        let cmd = Bytes::from_static(b"PUB a\n\0\0\0\x01x");
        ts.get(b"a").push(Run::of_command(cmd).unwrap());
        assert!(ts.get(b"a").take(|_| 1).is_some());
        assert!(ts.get(b"b").take(|_| 1).is_none());
    }
}
