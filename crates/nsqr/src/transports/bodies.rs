//! Where nsqr's senders in the matrix get their bodies: slices of shared buffers, each body
//! stamped with its sequence number (8 bytes) and the rest left as the buffer holds it. That is
//! the work libzmq's sender does too (it stamps one reused buffer and `send` copies it into a
//! message), so the two sides differ only in what each library does with the body: libzmq's
//! `send` copies it, nsqr's publish shares it (`Bytes`). A requester's bodies are laid out
//! with room for its envelope in front of each (`Requester::send_batch_one_way`).
//!
//! A buffer goes back to its pool when the last body sliced from it is gone (the receivers
//! finished them): one allocation per buffer, and pages that stay faulted in. The process's
//! pool lives as long as the process (a sender in process runs far ahead of its receivers, so
//! one repetition can hold hundreds of buffers; freed and allocated again each time, their
//! pages were zeroed and faulted in again: the work glibc spares libzmq's side by keeping
//! freed memory). Buffers start zeroed.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

use super::cells::stamp;

/// Buffers are whole multiples of this (a page): a cell's batches are all of one size, and
/// each takes a buffer of its own size again.
const UNIT: usize = 4 << 10;
/// Bytes a pool keeps at most (more are allocated and dropped as needed): a cell's worth.
const MAX_BYTES: usize = 1 << 30;

/// Free buffers, the most recently freed last, and their bytes: the sender's side.
#[derive(Default)]
struct Free {
    bufs: VecDeque<Vec<u8>>,
    bytes: usize,
}

/// The receivers drop buffers into `returned` (a push under its own lock), the sender moves
/// them to `free` when it finds no buffer there: the two sides rarely wait for each other
/// (with one lock for both, a receiver waited for the sender's search about one buffer in
/// twenty, a futex sleep and wake-up each time).
#[derive(Default)]
struct Shared {
    free: Mutex<Free>,
    returned: Mutex<Vec<Vec<u8>>>,
}

#[derive(Clone, Default)]
pub struct BodyPool(Arc<Shared>);

/// A buffer of a pool's, back to it when dropped (as the owner of the `Bytes` its bodies are
/// sliced from, once the last of them is gone).
pub struct Pooled {
    buf: Vec<u8>,
    pool: BodyPool,
}

impl AsRef<[u8]> for Pooled {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

impl AsMut<[u8]> for Pooled {
    fn as_mut(&mut self) -> &mut [u8] {
        &mut self.buf
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        let buf = std::mem::take(&mut self.buf);
        self.pool.0.returned.lock().push(buf);
    }
}

impl Free {
    /// Take a buffer of `size` to `2 * size` bytes, the most recently freed first.
    fn fitting(&mut self, size: usize) -> Option<Vec<u8>> {
        let i = self
            .bufs
            .iter()
            .rposition(|b| b.len() >= size && b.len() <= 2 * size)?;
        let b = self.bufs.remove(i)?;
        self.bytes -= b.len();
        Some(b)
    }

    /// Add `returned` buffers; over the bound, the buffers freed longest ago go (an earlier
    /// cell's, of other sizes).
    fn add(&mut self, returned: Vec<Vec<u8>>) {
        for b in returned {
            self.bytes += b.len();
            self.bufs.push_back(b);
        }
        while self.bytes > MAX_BYTES {
            match self.bufs.pop_front() {
                Some(old) => self.bytes -= old.len(),
                None => break,
            }
        }
    }
}

impl BodyPool {
    /// The process's pool.
    pub fn shared() -> BodyPool {
        static POOL: std::sync::OnceLock<BodyPool> = std::sync::OnceLock::new();
        POOL.get_or_init(BodyPool::default).clone()
    }

    /// `k` bodies of `size` bytes numbered from `from`, back to back in one buffer: the
    /// buffer and each body's range in it.
    pub fn stamped(
        &self,
        size: usize,
        tag: u16,
        from: u64,
        k: usize,
    ) -> (Bytes, Vec<Range<usize>>) {
        let (buf, ranges) = self.laid_out(size, 0, tag, from, k);
        (Bytes::from_owner(buf), ranges)
    }

    /// [`BodyPool::stamped`] with `head` bytes of room in front of each body (its range
    /// covers the room): for requests, whose envelopes go there.
    pub fn laid_out(
        &self,
        size: usize,
        head: usize,
        tag: u16,
        from: u64,
        k: usize,
    ) -> (Pooled, Vec<Range<usize>>) {
        let step = head + size;
        let mut buf = self.take(step * k);
        for (i, seq) in (from..from + k as u64).enumerate() {
            stamp(&mut buf.buf[i * step + head..(i + 1) * step], tag, seq);
        }
        let ranges = (0..k).map(|i| i * step..(i + 1) * step).collect();
        (buf, ranges)
    }

    /// A buffer of at least `bytes` (and at most twice that): a free one of the pool's, else
    /// a new one.
    fn take(&self, bytes: usize) -> Pooled {
        let size = bytes.div_ceil(UNIT).max(1) * UNIT;
        let buf = {
            let mut free = self.0.free.lock();
            match free.fitting(size) {
                Some(b) => b,
                None => {
                    let returned = std::mem::take(&mut *self.0.returned.lock());
                    free.add(returned);
                    free.fitting(size).unwrap_or_else(|| vec![0; size])
                }
            }
        };
        Pooled {
            buf,
            pool: self.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transports::cells::Tally;

    /// The bodies of one call, as the receivers get them.
    fn sliced((data, ranges): (Bytes, Vec<Range<usize>>)) -> Vec<Bytes> {
        ranges.into_iter().map(|r| data.slice(r)).collect()
    }

    #[test]
    fn bodies_carry_their_numbers_and_buffers_are_reused_once_free() {
        let pool = BodyPool::default();
        let first = sliced(pool.stamped(1000, 9, 0, 100));
        let at = first[0].as_ptr();
        let mut tally = Tally::new(300, 9);
        for b in &first {
            tally.record(b);
        }
        // Held bodies keep their buffer: the next batch gets another.
        let second = sliced(pool.stamped(1000, 9, 100, 100));
        assert_ne!(second[0].as_ptr(), at);
        for b in &second {
            tally.record(b);
        }
        drop(first);
        let third = sliced(pool.stamped(1000, 9, 200, 100));
        assert_eq!(third[0].as_ptr(), at, "a free buffer is taken again");
        for b in &third {
            tally.record(b);
        }
        assert!(tally.complete());
        assert_eq!((tally.unique, tally.duplicates, tally.foreign), (300, 0, 0));
        assert!(second.iter().chain(&third).all(|b| b.len() == 1000));
    }

    #[test]
    fn laid_out_bodies_leave_room_in_front_and_come_back_when_dropped() {
        let pool = BodyPool::default();
        let (buf, ranges) = pool.laid_out(100, 20, 4, 0, 10);
        let at = buf.as_ref().as_ptr();
        assert_eq!(ranges.len(), 10);
        let mut tally = Tally::new(10, 4);
        for r in &ranges {
            assert_eq!(r.len(), 120);
            tally.record(&buf.as_ref()[r.start + 20..r.end]);
        }
        assert!(tally.complete());
        drop(buf);
        let (again, _) = pool.laid_out(100, 20, 4, 10, 10);
        assert_eq!(
            again.as_ref().as_ptr(),
            at,
            "a dropped buffer is taken again"
        );
    }
}
