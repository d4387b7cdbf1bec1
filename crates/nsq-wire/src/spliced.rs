//! Large bodies written from where they lie rather than copied into an output buffer.
//!
//! A message (nsqd's frame, a client's PUB or MPUB) is normally encoded whole into the
//! connection's output buffer, its body copied after the header. For a large body that copy is
//! a pass over every byte in user space before the kernel's own copy into the socket: at
//! 64 KB it was about a sixth of nsqrd's CPU on the delivery path. So a body of at least
//! [`SPLICE_MIN`] bytes can be left out: only what precedes it is encoded, and the body's
//! `Bytes` (a reference to the buffer it lies in) is kept in a [`Spliced`] with the
//! output-buffer offset it belongs at; the writer hands the kernel the buffer's pieces and the
//! bodies in order ([`Spliced::slices`], written with vectored writes: [`Cursor`]). The bytes
//! on the wire are the same either way.

use std::collections::VecDeque;
use std::io::IoSlice;

use bytes::Bytes;

/// Bodies at least this large are written from where they lie.
pub const SPLICE_MIN: usize = 16 * 1024;

/// Bodies kept out of the output buffer, each with the offset in it where it goes.
#[derive(Debug, Default)]
pub struct Spliced {
    list: VecDeque<(usize, Bytes)>,
    bytes: usize,
}

impl Spliced {
    /// `body` goes right after the output buffer's first `at` bytes (its frame header ends
    /// there).
    pub fn push(&mut self, at: usize, body: Bytes) {
        self.bytes += body.len();
        self.list.push_back((at, body));
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Bytes of the bodies kept.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The first `n` bytes of `buf` with the bodies that go among (or right after) them, in
    /// wire order.
    pub fn slices<'a>(&'a self, buf: &'a [u8], n: usize) -> Vec<&'a [u8]> {
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
    pub fn written(&mut self, n: usize) {
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
    pub fn truncate(&mut self, len: usize) {
        while self.list.back().is_some_and(|(at, _)| *at > len) {
            if let Some((_, b)) = self.list.pop_back() {
                self.bytes -= b.len();
            }
        }
    }
}

impl Spliced {
    /// Append `body` to `buf`, or keep it here after `buf`'s current end if it is large.
    pub fn put_body(&mut self, buf: &mut bytes::BytesMut, body: &Bytes) {
        if body.len() >= SPLICE_MIN {
            self.push(buf.len(), body.clone());
        } else {
            buf.extend_from_slice(body);
        }
    }
}

/// How far a vectored write of some parts got: the next byte to write is `parts[i][off]`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    i: usize,
    off: usize,
}

impl Cursor {
    /// Every part was written.
    pub fn done(&self, parts: &[&[u8]]) -> bool {
        self.i >= parts.len()
    }

    /// The slices for the next vectored write: what is left, at most `max` of them.
    pub fn iov<'a>(&self, parts: &[&'a [u8]], max: usize) -> Vec<IoSlice<'a>> {
        let Some(first) = parts.get(self.i) else {
            return Vec::new();
        };
        std::iter::once(&first[self.off.min(first.len())..])
            .chain(parts[self.i + 1..].iter().copied())
            .take(max)
            .map(IoSlice::new)
            .collect()
    }

    /// `n` more bytes were written.
    pub fn advance(&mut self, parts: &[&[u8]], mut n: usize) {
        while let Some(p) = parts.get(self.i) {
            let left = p.len().saturating_sub(self.off);
            if n < left {
                self.off += n;
                return;
            }
            n -= left;
            (self.i, self.off) = (self.i + 1, 0);
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
    fn cursor_resumes_partial_writes() {
        let parts: [&[u8]; 4] = [b"abc", b"", b"defg", b"h"];
        let mut c = Cursor::default();
        assert_eq!(c.iov(&parts, 2).len(), 2);
        c.advance(&parts, 2);
        assert_eq!(
            joined(&c.iov(&parts, 9).iter().map(|s| &**s).collect::<Vec<_>>()),
            b"cdefgh"
        );
        c.advance(&parts, 3);
        assert_eq!(
            joined(&c.iov(&parts, 9).iter().map(|s| &**s).collect::<Vec<_>>()),
            b"fgh"
        );
        assert!(!c.done(&parts));
        c.advance(&parts, 3);
        assert!(c.done(&parts));
        assert!(c.iov(&parts, 9).is_empty());
    }

    #[test]
    fn put_body_keeps_large_ones() {
        let mut s = Spliced::default();
        let mut buf = bytes::BytesMut::new();
        s.put_body(&mut buf, &Bytes::from_static(b"small"));
        let big = Bytes::from(vec![1u8; SPLICE_MIN]);
        s.put_body(&mut buf, &big);
        buf.extend_from_slice(b"tail");
        assert_eq!(s.bytes(), SPLICE_MIN);
        let mut want = b"small".to_vec();
        want.extend_from_slice(&big);
        want.extend_from_slice(b"tail");
        assert_eq!(joined(&s.slices(&buf, buf.len())), want);
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
