//! Explicit acknowledgements: reading a record no longer removes it from the persisted queue;
//! only [`DiskQueue::ack`] does. This is what an at-least-once consumer of the queue needs: a
//! record handed out but not yet processed must survive a crash, so the read position the
//! metadata records (and the files kept on disk) stay at the oldest unacknowledged record while
//! the reader runs ahead. Acknowledgements are in read order; the owner keeps track of which
//! records are done and acknowledges the finished prefix.
//!
//! Also here: [`DiskQueue::put_batch_read`] (append records and count them as already read, for
//! an owner that keeps a copy in memory) and [`DiskQueue::flush_durable`] (fsync what was
//! appended, including new directory entries, for acknowledging publishers).
//!
//! On disk nothing changes: the files and metadata are nsqd's, and an nsqd (or this crate in
//! the default mode) opening them simply reads again from the oldest unacknowledged record.

use std::fs::File;

use crate::error::{DiskQueueError, Result};
use crate::files::Position;
use crate::queue::DiskQueue;
use crate::record::record_len;
use crate::write::Payload;

impl DiskQueue {
    /// Turns explicit-ack mode on or off. Turning it off acknowledges everything read.
    pub fn set_explicit_ack(&mut self, on: bool) {
        if !on {
            self.ack_all_read();
        }
        self.explicit_ack = on;
    }

    /// Whether explicit-ack mode is on.
    pub fn explicit_ack(&self) -> bool {
        self.explicit_ack
    }

    /// Records read but not acknowledged (always 0 outside explicit-ack mode).
    pub fn unacked(&self) -> usize {
        self.unacked.len()
    }

    /// Acknowledges the `n` oldest read records (fewer if fewer are unacknowledged); returns how
    /// many were acknowledged. Counts towards `sync_every` like a read does in the default mode;
    /// files the acknowledged position leaves are deleted.
    pub fn ack(&mut self, n: usize) -> usize {
        let n = n.min(self.unacked.len());
        if n == 0 {
            return 0;
        }
        let mut last = self.acked;
        for _ in 0..n {
            if let Some(p) = self.unacked.pop_front() {
                last = p;
            }
        }
        // With nothing unacknowledged left, follow the reader past files it skipped.
        let to = if self.unacked.is_empty() {
            self.read
        } else {
            last
        };
        self.ops_since_sync += n as u64;
        self.advance_ack(to);
        self.maybe_sync();
        n
    }

    /// Acknowledges every record read so far.
    pub fn ack_all_read(&mut self) {
        let n = self.unacked.len();
        self.unacked.clear();
        self.ops_since_sync += n as u64;
        self.advance_ack(self.read);
    }

    /// Forgets the reads that were not acknowledged: they will be read again, in order.
    pub fn rewind(&mut self) {
        if self.unacked.is_empty() {
            return;
        }
        self.depth += self.unacked.len() as i64;
        self.unacked.clear();
        self.read = self.acked;
        self.reader = None;
        self.peeked = None;
    }

    /// Like [`DiskQueue::put_batch`], and in explicit-ack mode with nothing left to read, the
    /// records count as read at once (unacknowledged), for an owner that keeps them in memory
    /// and so need not read them back. Returns whether they were counted as read; when not
    /// (not in that mode, unread records ahead, or the files changed under the writer) they are
    /// simply queued for reading.
    pub fn put_batch_read<P: Payload>(&mut self, payloads: &[P]) -> Result<bool> {
        if !self.explicit_ack || self.has_data() || self.peeked.is_some() {
            self.put_batch(payloads)?;
            return Ok(false);
        }
        // Where each record will end, by the same roll rule the writer applies.
        let mut ends = Vec::with_capacity(payloads.len());
        let mut at = self.write;
        for p in payloads {
            let len = record_len(p.payload_len());
            if self.would_overflow(at.pos, len) {
                at = Position::start_of(at.file + 1);
            }
            at.pos += len;
            ends.push(at);
        }
        self.put_batch(payloads)?;
        if at != self.write {
            return Ok(false);
        }
        self.depth -= ends.len() as i64;
        self.read = self.write;
        self.unacked.extend(ends);
        Ok(true)
    }

    /// Makes everything appended so far durable: fsync of the write file, and of the directory
    /// when a data file was created since the last time. Fails if any fsync since the last call
    /// failed (including the one of a file finished by a roll), so an `Ok` means every record
    /// put before it is on disk.
    pub fn flush_durable(&mut self) -> Result<()> {
        if self.fsync_lost {
            self.fsync_lost = false;
            return Err(DiskQueueError::io(
                "fsync",
                self.layout.data_file(self.write.file.saturating_sub(1)),
                std::io::Error::other("an fsync of a finished data file failed"),
            ));
        }
        self.fsync_write_file()?;
        if self.dir_unsynced {
            let dir = self.layout.dir();
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| DiskQueueError::io("fsync directory", dir, e))?;
            self.dir_unsynced = false;
        }
        Ok(())
    }
}
