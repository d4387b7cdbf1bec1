//! Large message bodies written from where they lie rather than copied into the output buffer.
//!
//! A delivered message is normally encoded whole into the connection's output buffer, its body
//! copied after the frame header. For a large body that copy is a pass over every byte in user
//! space before the kernel's own copy into the socket: at 64 KB it was about a sixth of the
//! server's CPU on the delivery path. So on a plain socket (no TLS, no compression) a body of
//! at least [`SPLICE_MIN`] bytes only has its frame header encoded; the body's `Bytes` (a
//! reference to the buffer it was published in) is kept here with the output-buffer offset it
//! belongs at, and the flush hands the kernel the buffer's pieces and the bodies in order with
//! vectored writes. The bytes on the wire are the same either way.

use std::collections::VecDeque;

use bytes::Bytes;

/// Bodies at least this large are written from where they lie.
pub(super) const SPLICE_MIN: usize = 16 * 1024;

/// Bodies kept out of the output buffer, each with the offset in it where it goes.
#[derive(Default)]
pub(super) struct Spliced {
    list: VecDeque<(usize, Bytes)>,
    bytes: usize,
}

impl Spliced {
    /// `body` goes right after the output buffer's first `at` bytes (its frame header ends
    /// there).
    pub(super) fn push(&mut self, at: usize, body: Bytes) {
        self.bytes += body.len();
        self.list.push_back((at, body));
    }

    pub(super) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Bytes of the bodies kept.
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    /// The first `n` bytes of `buf` with the bodies that go among (or right after) them, in
    /// wire order.
    pub(super) fn slices<'a>(&'a self, buf: &'a [u8], n: usize) -> Vec<&'a [u8]> {
        let mut out = Vec::with_capacity(2 * self.list.len() + 1);
        let mut from = 0;
        for (at, body) in self.list.iter().take_while(|(at, _)| *at <= n) {
            if *at > from {
                out.push(&buf[from..*at]);
            }
            out.push(body);
            from = *at;
        }
        if n > from {
            out.push(&buf[from..n]);
        }
        out
    }

    /// The first `n` bytes of the output buffer were written (and removed from it), with the
    /// bodies among them.
    pub(super) fn written(&mut self, n: usize) {
        while self.list.front().is_some_and(|(at, _)| *at <= n) {
            if let Some((_, b)) = self.list.pop_front() {
                self.bytes -= b.len();
            }
        }
        for (at, _) in self.list.iter_mut() {
            *at -= n;
        }
    }

    /// The output buffer was cut to `len` bytes: bodies after that go too.
    pub(super) fn truncate(&mut self, len: usize) {
        while self.list.back().is_some_and(|(at, _)| *at > len) {
            if let Some((_, b)) = self.list.pop_back() {
                self.bytes -= b.len();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn joined(s: &[&[u8]]) -> Vec<u8> {
        s.concat()
    }

    #[test]
    fn slices_interleave_in_wire_order() {
        let buf = b"H1H2OK";
        let mut s = Spliced::default();
        s.push(2, Bytes::from_static(b"body1"));
        s.push(4, Bytes::from_static(b"body2"));
        assert_eq!(s.bytes(), 10);
        assert_eq!(joined(&s.slices(buf, 6)), b"H1body1H2body2OK");
        // Up to an OK that follows a body: the body goes, the OK waits.
        assert_eq!(joined(&s.slices(buf, 4)), b"H1body1H2body2");
        assert_eq!(joined(&s.slices(buf, 3)), b"H1body1H");
        s.written(4);
        assert!(s.is_empty());
        assert_eq!(s.bytes(), 0);
        assert_eq!(joined(&s.slices(b"OK", 2)), b"OK");
    }

    #[test]
    fn written_shifts_and_truncate_drops() {
        let mut s = Spliced::default();
        s.push(2, Bytes::from_static(b"a"));
        s.push(6, Bytes::from_static(b"bb"));
        s.push(9, Bytes::from_static(b"ccc"));
        s.written(2);
        assert_eq!(s.bytes(), 5);
        assert_eq!(joined(&s.slices(b"xxxxyyy", 7)), b"xxxxbbyyyccc");
        s.truncate(4);
        assert_eq!(s.bytes(), 2);
        assert_eq!(joined(&s.slices(b"xxxx", 4)), b"xxxxbb");
        s.truncate(3);
        assert!(s.is_empty());
        assert_eq!(s.bytes(), 0);
    }
}
