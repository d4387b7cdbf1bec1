//! Which records of a strict channel's disk queue are finished.
//!
//! In `--durability=strict` a message stays in its channel's disk queue until it is FIN'd: the
//! disk queue's persisted read position may only move past a record once that record and every
//! record before it are done. FINs arrive in any order, so the channel keeps, for the records
//! read from disk (or kept in memory straight from the write) and not yet acknowledged to the
//! disk queue, one "done" flag each in log order, plus the message id -> log sequence map that
//! FIN needs. The finished prefix is what the disk writer acknowledges.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

#[derive(Debug, Default)]
pub(crate) struct AckWindow {
    /// Log sequence of `done[0]`.
    base: u64,
    done: VecDeque<bool>,
    seq_of: FxHashMap<u64, u64>,
    /// Finished prefix not yet handed to the disk writer.
    ready: usize,
}

impl AckWindow {
    /// The sequence the next tracked record must have.
    pub fn next_seq(&self) -> u64 {
        self.base + self.done.len() as u64
    }

    /// Records tracked (read and not acknowledged).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.done.len()
    }

    /// Start tracking record `seq` holding message `id`. Returns false if that message is
    /// already tracked (the same message twice in the log): the new copy is then done at once
    /// and must not be delivered again.
    pub fn track(&mut self, seq: u64, id: u64) -> bool {
        self.align(seq);
        if self.seq_of.contains_key(&id) {
            self.done.push_back(true);
            self.advance();
            return false;
        }
        self.seq_of.insert(id, seq);
        self.done.push_back(false);
        true
    }

    /// A record that could not be decoded: nothing to deliver, done at once.
    pub fn skip(&mut self, seq: u64) {
        self.align(seq);
        self.done.push_back(true);
        self.advance();
    }

    /// Message `id` is finished (FIN, or discarded by sampling). Unknown ids are ignored.
    pub fn finish(&mut self, id: u64) {
        let Some(seq) = self.seq_of.remove(&id) else {
            return;
        };
        let Some(i) = seq.checked_sub(self.base) else {
            return;
        };
        if let Some(d) = self.done.get_mut(i as usize) {
            *d = true;
        }
        self.advance();
    }

    /// Take the count of finished records at the head, for the disk writer to acknowledge.
    pub fn take_ready(&mut self) -> usize {
        std::mem::take(&mut self.ready)
    }

    /// How many finished records wait to be acknowledged.
    pub fn ready(&self) -> usize {
        self.ready
    }

    /// Forget everything (the disk queue was emptied); the next record has sequence `base`.
    pub fn reset(&mut self, base: u64) {
        self.base = base;
        self.done.clear();
        self.seq_of.clear();
        self.ready = 0;
    }

    fn advance(&mut self) {
        while self.done.front() == Some(&true) {
            self.done.pop_front();
            self.base += 1;
            self.ready += 1;
        }
    }

    /// Records must arrive in sequence; if they do not (a bug), start over from `seq` rather
    /// than acknowledge the wrong records: unacknowledged ones are only redelivered.
    fn align(&mut self, seq: u64) {
        if seq != self.next_seq() {
            tracing::error!(
                "ack window out of step: expected record {}, got {seq}; resetting",
                self.next_seq()
            );
            self.reset(seq);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finished_prefix_is_ready() {
        let mut w = AckWindow::default();
        for (seq, id) in [(0, 10), (1, 11), (2, 12), (3, 13)] {
            assert!(w.track(seq, id));
        }
        w.finish(11);
        w.finish(13);
        assert_eq!(w.take_ready(), 0);
        w.finish(10);
        assert_eq!(w.take_ready(), 2);
        w.finish(99);
        w.finish(12);
        assert_eq!(w.take_ready(), 2);
        assert_eq!((w.len(), w.next_seq()), (0, 4));
    }

    #[test]
    fn duplicate_and_undecodable_records_are_done_at_once() {
        let mut w = AckWindow::default();
        assert!(w.track(0, 1));
        assert!(!w.track(1, 1));
        w.skip(2);
        assert_eq!(w.ready(), 0);
        w.finish(1);
        assert_eq!(w.take_ready(), 3);
    }

    #[test]
    fn out_of_step_resets() {
        let mut w = AckWindow::default();
        assert!(w.track(0, 1));
        assert!(w.track(5, 2));
        assert_eq!((w.len(), w.next_seq()), (1, 6));
    }
}
