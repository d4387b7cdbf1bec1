//! Where nsqr's publisher in the matrix gets its bodies: slices of shared buffers, each body
//! stamped with its sequence number (8 bytes) and the rest left as the buffer holds it. That is
//! the work libzmq's sender does too (it stamps one reused buffer and `send` copies it into a
//! message), so the two sides differ only in what each library does with the body: libzmq's
//! `send` copies it, nsqr's publish shares it (`Bytes`).
//!
//! A buffer is taken again once every body sliced from it is gone (the receivers finished
//! them): one allocation per buffer, and pages that stay faulted in. The pool lives as long as
//! the process (a sender in process runs far ahead of its receivers, so one repetition can
//! hold hundreds of buffers; freed and allocated again each time, their pages were zeroed and
//! faulted in again: the work glibc spares libzmq's side by keeping freed memory). Buffers
//! start zeroed.

use std::ops::Range;
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use super::cells::stamp;

/// Bytes of one buffer (more when one batch needs more).
const BUFFER: usize = 1 << 20;
/// Bytes the pool keeps at most (more are allocated and dropped as needed): a cell's worth.
const MAX_BYTES: usize = 1 << 30;

/// One buffer, shared by the bodies sliced from it.
#[derive(Clone)]
struct Shared(Arc<Vec<u8>>);

impl AsRef<[u8]> for Shared {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

#[derive(Default)]
pub struct BodyPool {
    bufs: Vec<Arc<Vec<u8>>>,
    /// The bytes of `bufs`.
    bytes: usize,
}

/// The process's pool: taken by a sender for a repetition, given back after.
static POOL: Mutex<BodyPool> = Mutex::new(BodyPool {
    bufs: Vec::new(),
    bytes: 0,
});

impl BodyPool {
    /// The process's pool (empty while another sender has it).
    pub fn take_shared() -> BodyPool {
        std::mem::take(&mut *POOL.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Give the process's pool back.
    pub fn give_back(self) {
        let mut shared = POOL.lock().unwrap_or_else(|e| e.into_inner());
        if self.bytes > shared.bytes {
            *shared = self;
        }
    }

    /// `k` bodies of `size` bytes numbered from `from`, back to back in one buffer: the
    /// buffer and each body's range in it.
    pub fn stamped(
        &mut self,
        size: usize,
        tag: u16,
        from: u64,
        k: usize,
    ) -> (Bytes, Vec<Range<usize>>) {
        let mut b = self.take(size * k);
        for (i, seq) in (from..from + k as u64).enumerate() {
            stamp(&mut b[i * size..(i + 1) * size], tag, seq);
        }
        let buf = Arc::new(b);
        let whole = Bytes::from_owner(Shared(Arc::clone(&buf)));
        let ranges = (0..k).map(|i| i * size..(i + 1) * size).collect();
        if self.bytes + buf.len() <= MAX_BYTES {
            self.bytes += buf.len();
            self.bufs.push(buf);
        }
        (whole, ranges)
    }

    /// A buffer of at least `bytes`: a free one of the pool's (no body of it left), else a
    /// new one.
    fn take(&mut self, bytes: usize) -> Vec<u8> {
        let free = self
            .bufs
            .iter()
            .position(|b| b.len() >= bytes && Arc::strong_count(b) == 1);
        if let Some(i) = free {
            let b = self.bufs.swap_remove(i);
            self.bytes -= b.len();
            if let Ok(b) = Arc::try_unwrap(b) {
                return b;
            }
        }
        vec![0; bytes.max(BUFFER)]
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
        let mut pool = BodyPool::default();
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
}
