//! Where a requester builds its requests: slices of shared buffers rather than an allocation
//! each. In process a request's body is freed by the responder's thread, so an allocation per
//! request made the two threads contend for the allocator's lock (and its freed pages went
//! back to the kernel, to be faulted in again); with buffers of [`BUFFER`] bytes that is one
//! allocation per buffer, and a buffer whose requests are all gone is taken again as it is.
//!
//! A buffer lives until its last request is gone, so a request can keep up to [`BUFFER`]
//! bytes alive; a requester keeps at most [`MAX_SPARE`] buffers for reuse beyond the one it
//! fills. Larger requests get buffers of their own.

use bytes::BytesMut;

/// Requests of at most this many bytes (envelope included) are carved out of buffers.
pub(crate) const MAX_CARVED: usize = 16 << 10;
/// Bytes of one buffer.
const BUFFER: usize = 64 << 10;
/// Buffers kept for reuse, besides the one being filled.
const MAX_SPARE: usize = 8;

#[derive(Default)]
pub(crate) struct Carver {
    /// The buffer being filled (its free tail).
    cur: Option<BytesMut>,
    /// Buffers filled before, taken again once every request carved from them is gone.
    spare: Vec<BytesMut>,
}

impl Carver {
    /// A buffer with room for `size` bytes (at most [`MAX_CARVED`]) at its end: append the
    /// request, then split it off.
    pub(crate) fn room(&mut self, size: usize) -> &mut BytesMut {
        let full = self.cur.as_ref().is_none_or(|b| b.capacity() < size);
        if full {
            let next = match self.spare.iter_mut().position(|b| b.try_reclaim(BUFFER)) {
                Some(i) => self.spare.swap_remove(i),
                None => BytesMut::with_capacity(BUFFER.max(size)),
            };
            if let Some(old) = self.cur.replace(next) {
                if self.spare.len() < MAX_SPARE {
                    self.spare.push(old);
                }
            }
        }
        self.cur
            .get_or_insert_with(|| BytesMut::with_capacity(BUFFER))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn carve(c: &mut Carver, n: usize) -> bytes::Bytes {
        let b = c.room(n);
        b.resize(n, 7);
        b.split().freeze()
    }

    #[test]
    fn reuses_a_buffer_once_its_requests_are_gone() {
        let mut c = Carver::default();
        let first = carve(&mut c, 10_000);
        let at = first.as_ptr();
        let mut held = vec![first];
        // Fill the first buffer and move to a second one.
        while held.len() < 6 {
            held.push(carve(&mut c, 10_000));
        }
        assert!(held
            .iter()
            .all(|b| b.len() == 10_000 && b.iter().all(|&x| x == 7)));
        let second = carve(&mut c, 10_000);
        assert_ne!(second.as_ptr(), at, "the first buffer is still in use");
        drop(held);
        // The second fills up; then the first, free again, is taken.
        let mut more = vec![second];
        while more.len() < 6 {
            more.push(carve(&mut c, 10_000));
        }
        let again = carve(&mut c, 10_000);
        assert_eq!(again.as_ptr(), at);
    }
}
