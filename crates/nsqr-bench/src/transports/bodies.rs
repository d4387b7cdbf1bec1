//! Where nsqr's senders in the matrix get their bodies: slices of shared buffers, each body
//! stamped with its sequence number (8 bytes) and the rest left as the buffer holds it. That is
//! the work libzmq's sender does too (it stamps one reused buffer and `send` copies it into a
//! message), so the two sides differ only in what each library does with the body: libzmq's
//! `send` copies it, nsqr's publish shares it (`Bytes`). A requester's bodies are laid out
//! with room for its envelope in front of each (`Requester::send_batch_one_way`).
//!
//! A buffer goes back to its pool when the last body sliced from it is gone (the receivers
//! finished them): one allocation per buffer, and pages that stay faulted in. The process's
//! pool lives as long as the process and has a budget, as a program with a memory budget
//! would: a sender that would go over it waits for its receivers to give a buffer back. In
//! process nothing else holds a sender back (every publish is answered at once), and without
//! a budget it ran ahead of its receivers by most of a cell: hundreds of MiB, more each time
//! it ran faster, every new buffer's pages faulted in (thousands of faults per repetition,
//! which cost an 8 KB cell half its rate on this VM). Buffers start zeroed.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::Notify;

use super::cells::stamp;

/// Buffers are whole multiples of this (a page): a cell's batches are all of one size, and
/// each takes a buffer of its own size again.
const UNIT: usize = 4 << 10;
/// Bytes of buffers the process's pool has at most, free and lent out together: eight times
/// a sender's window of MPUBs in flight over a socket (8 x 1 MiB). Budgets of 16 and 64 MiB
/// measured alike in process; 1 GiB (no bound in practice) halved the 8 KB cells.
const BUDGET: usize = 64 << 20;

/// Free buffers, the most recently freed last, and the bytes of every buffer the pool has
/// (free or lent out): the sender's side.
#[derive(Default)]
struct Free {
    bufs: VecDeque<Vec<u8>>,
    allocated: usize,
}

/// The receivers drop buffers into `returned` (a push under its own lock) and wake a waiting
/// sender; the sender moves them to `free` when it finds no buffer there: the two sides rarely
/// wait for each other (with one lock for both, a receiver waited for the sender's search
/// about one buffer in twenty, a futex sleep and wake-up each time).
struct Shared {
    free: Mutex<Free>,
    returned: Mutex<Vec<Vec<u8>>>,
    given_back: Notify,
    budget: usize,
}

#[derive(Clone)]
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
        self.pool.0.given_back.notify_one();
    }
}

impl Free {
    /// Take a buffer of `size` to `2 * size` bytes, the most recently freed first.
    fn fitting(&mut self, size: usize) -> Option<Vec<u8>> {
        let i = self
            .bufs
            .iter()
            .rposition(|b| b.len() >= size && b.len() <= 2 * size)?;
        self.bufs.remove(i)
    }

    /// A new buffer of `size` if the budget has room for it once free buffers of other sizes
    /// (the longest free first) are let go, or if nothing is lent out to wait for.
    fn grow(&mut self, size: usize, budget: usize) -> Option<Vec<u8>> {
        while self.allocated + size > budget {
            match self.bufs.pop_front() {
                Some(old) => self.allocated -= old.len(),
                None => break,
            }
        }
        if self.allocated + size > budget && self.allocated > 0 {
            return None;
        }
        self.allocated += size;
        Some(vec![0; size])
    }
}

impl BodyPool {
    /// The process's pool.
    pub fn shared() -> BodyPool {
        static POOL: std::sync::OnceLock<BodyPool> = std::sync::OnceLock::new();
        POOL.get_or_init(|| BodyPool::with_budget(BUDGET)).clone()
    }

    /// A pool of at most `budget` bytes of buffers (one buffer may be larger on its own).
    fn with_budget(budget: usize) -> BodyPool {
        BodyPool(Arc::new(Shared {
            free: Mutex::default(),
            returned: Mutex::default(),
            given_back: Notify::new(),
            budget,
        }))
    }

    /// `k` bodies of `size` bytes numbered from `from`, back to back in one buffer, each with
    /// `head` bytes of room in front (for a request's envelope; 0 for a message): the buffer
    /// and each body's range in it (room included). Waits while the pool's budget is lent out.
    pub async fn laid_out(
        &self,
        size: usize,
        head: usize,
        tag: u16,
        from: u64,
        k: usize,
    ) -> (Pooled, Vec<Range<usize>>) {
        let step = head + size;
        let mut buf = self.take(step * k).await;
        for (i, seq) in (from..from + k as u64).enumerate() {
            stamp(&mut buf.buf[i * step + head..(i + 1) * step], tag, seq);
        }
        let ranges = (0..k).map(|i| i * step..(i + 1) * step).collect();
        (buf, ranges)
    }

    /// A buffer of at least `bytes` (and at most twice that): a free one of the pool's, else
    /// a new one within the budget, else the next one given back.
    async fn take(&self, bytes: usize) -> Pooled {
        let size = bytes.div_ceil(UNIT).max(1) * UNIT;
        loop {
            if let Some(buf) = self.try_take(size) {
                return Pooled {
                    buf,
                    pool: self.clone(),
                };
            }
            // A buffer given back since `try_take` looked left a permit: this returns at once.
            self.0.given_back.notified().await;
        }
    }

    /// A buffer of `size`, unless every one that fits is lent out and the budget is spent.
    fn try_take(&self, size: usize) -> Option<Vec<u8>> {
        let mut free = self.0.free.lock();
        if let Some(b) = free.fitting(size) {
            return Some(b);
        }
        let returned = std::mem::take(&mut *self.0.returned.lock());
        free.bufs.extend(returned);
        free.fitting(size)
            .or_else(|| free.grow(size, self.0.budget))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::transports::cells::Tally;

    fn bodies(buf: &Pooled, ranges: &[Range<usize>], head: usize) -> Vec<Vec<u8>> {
        ranges
            .iter()
            .map(|r| buf.as_ref()[r.start + head..r.end].to_vec())
            .collect()
    }

    #[tokio::test]
    async fn bodies_carry_their_numbers_and_buffers_are_reused_once_free() {
        let pool = BodyPool::with_budget(BUDGET);
        let mut tally = Tally::new(300, 9);
        let (first, ranges) = pool.laid_out(1000, 0, 9, 0, 100).await;
        let at = first.as_ref().as_ptr();
        for b in bodies(&first, &ranges, 0) {
            tally.record(&b);
        }
        // A held buffer is not lent again: the next batch gets another.
        let (second, ranges) = pool.laid_out(1000, 0, 9, 100, 100).await;
        assert_ne!(second.as_ref().as_ptr(), at);
        for b in bodies(&second, &ranges, 0) {
            tally.record(&b);
        }
        drop(first);
        let (third, ranges) = pool.laid_out(1000, 0, 9, 200, 100).await;
        assert_eq!(third.as_ref().as_ptr(), at, "a free buffer is taken again");
        let third_bodies = bodies(&third, &ranges, 0);
        for b in &third_bodies {
            tally.record(b);
        }
        assert!(tally.complete());
        assert_eq!((tally.unique, tally.duplicates, tally.foreign), (300, 0, 0));
        assert!(third_bodies.iter().all(|b| b.len() == 1000));
    }

    #[tokio::test]
    async fn laid_out_bodies_leave_room_in_front_and_come_back_when_dropped() {
        let pool = BodyPool::with_budget(BUDGET);
        let (buf, ranges) = pool.laid_out(100, 20, 4, 0, 10).await;
        let at = buf.as_ref().as_ptr();
        assert_eq!(ranges.len(), 10);
        assert!(ranges.iter().all(|r| r.len() == 120));
        let mut tally = Tally::new(10, 4);
        for b in bodies(&buf, &ranges, 20) {
            tally.record(&b);
        }
        assert!(tally.complete());
        drop(buf);
        let (again, _) = pool.laid_out(100, 20, 4, 10, 10).await;
        assert_eq!(
            again.as_ref().as_ptr(),
            at,
            "a dropped buffer is taken again"
        );
    }

    #[tokio::test]
    async fn a_sender_over_the_budget_waits_for_a_buffer_given_back() {
        // Room for two buffers of one page each.
        let pool = BodyPool::with_budget(2 * UNIT);
        let (a, _) = pool.laid_out(UNIT, 0, 1, 0, 1).await;
        let (b, _) = pool.laid_out(UNIT, 0, 1, 1, 1).await;
        let third = pool.laid_out(UNIT, 0, 1, 2, 1);
        tokio::pin!(third);
        assert!(
            tokio::time::timeout(Duration::from_millis(50), &mut third)
                .await
                .is_err(),
            "a third buffer would go over the budget"
        );
        let at = b.as_ref().as_ptr();
        let giver = std::thread::spawn(move || drop(b));
        let (c, _) = tokio::time::timeout(Duration::from_secs(30), third)
            .await
            .expect("the buffer given back is lent again");
        assert_eq!(c.as_ref().as_ptr(), at);
        giver.join().expect("dropping a buffer does not panic");
        drop((a, c));
        // Free buffers of another size make room for this one within the budget.
        let (big, _) = pool.laid_out(2 * UNIT, 0, 1, 3, 1).await;
        assert_eq!(big.as_ref().len(), 2 * UNIT);
    }
}
