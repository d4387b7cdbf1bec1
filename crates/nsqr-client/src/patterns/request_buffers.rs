//! Where a requester builds its requests: slices of shared buffers rather than an allocation
//! each. In process a request's body is freed by the responder's thread, so an allocation per
//! request made the two threads contend for the allocator's lock (and its freed pages went
//! back to the kernel, to be faulted in again); with shared buffers that is one allocation per
//! buffer, and a buffer whose requests are all gone is taken again as it is. Consecutive
//! requests of one buffer lie back to back, so the producer can hand a run of them to the
//! broker as one batch (`producer/coalesce.rs`).
//!
//! A buffer lives until its last request is gone, so a request can keep alive a buffer of
//! [`BUFFER`] bytes, or of [`PER_BUFFER`] times its size if that is more; a requester keeps at
//! most [`MAX_SPARE`] buffers for reuse beyond the one it fills. Requests larger than
//! [`MAX_CARVED`] get buffers of their own.

use bytes::BytesMut;

/// Requests of at most this many bytes (envelope included) are carved out of buffers.
pub(crate) const MAX_CARVED: usize = 128 << 10;
/// Bytes of one buffer at least.
const BUFFER: usize = 256 << 10;
/// Requests one buffer holds at least (larger requests get larger buffers).
const PER_BUFFER: usize = 8;
/// Buffers kept for reuse, besides the one being filled.
const MAX_SPARE: usize = 8;

#[derive(Default)]
pub(crate) struct Carver {
    /// The buffer being filled (its free tail).
    cur: Option<BytesMut>,
    /// Buffers filled before, taken again once every request carved from them is gone.
    spare: Vec<BytesMut>,
    /// Names the buffer being filled (new each time `cur` changes): consecutive requests of
    /// one buffer lie back to back, and the producer joins them (`producer/coalesce.rs`).
    cur_id: u64,
}

impl Carver {
    /// A buffer with room for `size` bytes (at most [`MAX_CARVED`]) at its end (append the
    /// request, then split it off), and the buffer's id.
    pub(crate) fn room(&mut self, size: usize) -> (&mut BytesMut, u64) {
        let full = self.cur.as_ref().is_none_or(|b| b.capacity() < size);
        if full {
            let want = BUFFER.max(PER_BUFFER * size);
            let next = match self.spare.iter_mut().position(|b| b.try_reclaim(want)) {
                Some(i) => self.spare.swap_remove(i),
                None => BytesMut::with_capacity(want),
            };
            self.cur_id += 1;
            if let Some(old) = self.cur.replace(next) {
                if self.spare.len() < MAX_SPARE {
                    self.spare.push(old);
                }
            }
        }
        let buf = self
            .cur
            .get_or_insert_with(|| BytesMut::with_capacity(BUFFER.max(PER_BUFFER * size)));
        (buf, self.cur_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request of `n` bytes, and the id of the buffer it was carved from.
    fn carve(c: &mut Carver, n: usize) -> (bytes::Bytes, u64) {
        let (b, id) = c.room(n);
        b.resize(n, 7);
        (b.split().freeze(), id)
    }

    /// Requests of `n` bytes until one lands in another buffer than the first did.
    fn fill_one_buffer(c: &mut Carver, n: usize) -> (Vec<bytes::Bytes>, (bytes::Bytes, u64)) {
        let (first, id) = carve(c, n);
        let mut held = vec![first];
        for _ in 0..10_000 {
            let (b, next) = carve(c, n);
            if next != id {
                return (held, (b, next));
            }
            // Requests of one buffer lie back to back.
            let end = held.last().map(|h| h.as_ptr_range().end);
            assert_eq!(end, Some(b.as_ptr()));
            held.push(b);
        }
        panic!("one buffer took 10,000 requests of {n} bytes");
    }

    #[test]
    fn reuses_a_buffer_once_its_requests_are_gone() {
        let mut c = Carver::default();
        let (held, (second, second_id)) = fill_one_buffer(&mut c, 10_000);
        let at = held[0].as_ptr();
        assert!(held.len() >= PER_BUFFER);
        assert!(held
            .iter()
            .all(|b| b.len() == 10_000 && b.iter().all(|&x| x == 7)));
        assert_ne!(second.as_ptr(), at, "the first buffer is still in use");
        drop(held);
        // The second fills up; then the first, free again, is taken (under a new id).
        let (_more, (again, again_id)) = fill_one_buffer(&mut c, 10_000);
        assert_eq!(again.as_ptr(), at);
        assert_ne!(again_id, second_id);
        drop(second);
    }

    #[test]
    fn large_requests_get_large_buffers() {
        let mut c = Carver::default();
        let (held, _) = fill_one_buffer(&mut c, MAX_CARVED);
        assert_eq!(held.len(), PER_BUFFER);
    }
}
