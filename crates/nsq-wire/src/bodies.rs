//! The message bodies of one publish (PUB, MPUB, DPUB, HTTP /pub and /mpub) as one shared
//! buffer rather than a `Bytes` per message. A TCP MPUB keeps its wire layout (a 4-byte length
//! before each body), so its bodies are found by walking the prefixes and need no index at all;
//! other multi-message publishes (HTTP /mpub) have a 32-bit range per message. Memory per
//! queued message is what the broker is measured on, and building an index cost the publish
//! path an allocation and a write per message, so this is where bytes and time are saved.

use std::ops::Range;

use bytes::Bytes;

/// Bodies of one publish, in order. Invariant: `data.len() <= u32::MAX` and every range lies
/// within `data`, so [`Bodies::iter`] never panics. Equal when the bodies are, wherever they
/// live.
#[derive(Clone)]
pub struct Bodies {
    data: Bytes,
    layout: Layout,
}

#[derive(Clone, PartialEq, Eq)]
enum Layout {
    /// One message: all of `data` (a PUB or DPUB needs no range list).
    Whole,
    /// `[start, end)` per message.
    Ranges(Vec<(u32, u32)>),
    /// This many messages, each a big-endian u32 length and then the body, back to back and
    /// filling `data` (an MPUB body after its count).
    Prefixed(u32),
}

/// The buffer is larger than 4 GiB, which 32-bit ranges cannot address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("publish of {0} bytes exceeds 4 GiB")]
pub struct TooLarge(pub usize);

/// Bytes that are not whole MPUB bodies ([`Bodies::prefixed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    #[error(transparent)]
    TooLarge(#[from] TooLarge),
    /// The body whose length prefix is at this offset runs past the end (or the prefix itself
    /// does).
    #[error("MPUB bodies broken at byte {0}: a length runs past the end")]
    Broken(usize),
}

impl Bodies {
    /// One message whose body is all of `data`.
    pub fn one(data: Bytes) -> Result<Bodies, TooLarge> {
        check_len(&data)?;
        Ok(Bodies {
            data,
            layout: Layout::Whole,
        })
    }

    /// Messages at `ranges` of `data`. Ranges outside `data` are an error too (as `TooLarge`
    /// of the range's end), never a later panic.
    pub fn from_ranges(
        data: Bytes,
        ranges: impl IntoIterator<Item = Range<usize>>,
    ) -> Result<Bodies, TooLarge> {
        check_len(&data)?;
        let ranges = ranges
            .into_iter()
            .map(|r| {
                if r.start <= r.end && r.end <= data.len() {
                    // Both fit in u32: data.len() <= u32::MAX was checked above.
                    Ok((r.start as u32, r.end as u32))
                } else {
                    Err(TooLarge(r.end))
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Bodies {
            data,
            layout: Layout::Ranges(ranges),
        })
    }

    /// Messages in MPUB layout: each a big-endian u32 length and the body, filling `data`.
    /// Errors with the offset of the first length prefix that runs past the end (so bodies
    /// that do not fill `data` exactly are refused too).
    pub fn prefixed(data: Bytes) -> Result<Bodies, LayoutError> {
        check_len(&data)?;
        let mut walk = PrefixWalk::new(&data, 0, u32::MAX);
        let mut count = 0u32;
        while walk.at < data.len() {
            let at = walk.at;
            if walk.next().is_none() {
                return Err(LayoutError::Broken(at));
            }
            count += 1;
        }
        Ok(Bodies {
            data,
            layout: Layout::Prefixed(count),
        })
    }

    /// [`Bodies::prefixed`] for a layout the parser has already walked ([`split_mpub`]
    /// checked every length and that the `count` bodies fill `data`): no second walk. Were
    /// that ever wrong, the bodies would end early, never read out of bounds.
    ///
    /// [`split_mpub`]: crate::command::split_mpub
    pub(crate) fn prefixed_checked(data: Bytes, count: u32) -> Result<Bodies, TooLarge> {
        check_len(&data)?;
        Ok(Bodies {
            data,
            layout: Layout::Prefixed(count),
        })
    }

    /// Copy `bodies` back to back into one exact-size buffer.
    pub fn concat<'a>(
        bodies: impl IntoIterator<Item = &'a [u8]> + Clone,
    ) -> Result<Bodies, TooLarge> {
        let total: usize = bodies.clone().into_iter().map(<[u8]>::len).sum();
        if total > u32::MAX as usize {
            return Err(TooLarge(total));
        }
        let mut data = Vec::with_capacity(total);
        let mut ranges = Vec::new();
        for b in bodies {
            let start = data.len() as u32;
            data.extend_from_slice(b);
            ranges.push((start, data.len() as u32));
        }
        Ok(Bodies {
            data: Bytes::from(data),
            layout: Layout::Ranges(ranges),
        })
    }

    /// Number of messages.
    pub fn len(&self) -> usize {
        match &self.layout {
            Layout::Whole => 1,
            Layout::Ranges(r) => r.len(),
            Layout::Prefixed(n) => *n as usize,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sum of the body lengths.
    pub fn total_bytes(&self) -> usize {
        match &self.layout {
            Layout::Whole => self.data.len(),
            Layout::Ranges(r) => r.iter().map(|&(a, b)| (b - a) as usize).sum(),
            Layout::Prefixed(n) => self.data.len().saturating_sub(4 * *n as usize),
        }
    }

    /// The number of messages if the bodies are in MPUB layout ([`Bodies::prefixed`]).
    pub fn prefixed_count(&self) -> Option<u32> {
        match self.layout {
            Layout::Prefixed(n) => Some(n),
            _ => None,
        }
    }

    /// The shared buffer every range points into.
    pub fn data(&self) -> &Bytes {
        &self.data
    }

    /// `(start, end)` of each message within [`Bodies::data`].
    pub fn ranges(&self) -> impl ExactSizeIterator<Item = (u32, u32)> + '_ {
        let inner = match &self.layout {
            Layout::Whole => RangeIter::Whole(Some(self.data.len() as u32)),
            Layout::Ranges(r) => RangeIter::Listed(r.iter()),
            Layout::Prefixed(n) => RangeIter::Prefixed(PrefixWalk::new(&self.data, 0, *n)),
        };
        Exact {
            inner,
            left: self.len(),
        }
    }

    /// The bodies, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        self.ranges()
            .map(move |(a, b)| self.data.get(a as usize..b as usize).unwrap_or_default())
    }
}

/// Walks MPUB-layout bodies: at `at` a big-endian u32 length, then the body. Stops at the
/// first length that runs past the end (which the parser has ruled out).
#[derive(Debug, Clone)]
pub struct PrefixWalk<'a> {
    data: &'a [u8],
    at: usize,
    left: u32,
}

impl<'a> PrefixWalk<'a> {
    /// Walk `count` bodies of `data` starting at byte `at` (where a length prefix is).
    pub fn new(data: &'a [u8], at: usize, count: u32) -> PrefixWalk<'a> {
        PrefixWalk {
            data,
            at,
            left: count,
        }
    }

    /// Where the next length prefix is.
    pub fn offset(&self) -> usize {
        self.at
    }
}

impl Iterator for PrefixWalk<'_> {
    type Item = (u32, u32);

    fn next(&mut self) -> Option<(u32, u32)> {
        if self.left == 0 {
            return None;
        }
        let len = self.data.get(self.at..self.at + 4)?;
        let len = u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize;
        let start = self.at + 4;
        let end = start.checked_add(len).filter(|&e| e <= self.data.len())?;
        self.at = end;
        self.left -= 1;
        // Within `data`, which is at most u32::MAX bytes.
        Some((start as u32, end as u32))
    }
}

enum RangeIter<'a> {
    Whole(Option<u32>),
    Listed(std::slice::Iter<'a, (u32, u32)>),
    Prefixed(PrefixWalk<'a>),
}

/// A [`RangeIter`] that knows its length (the walk alone cannot tell where a broken layout
/// would end it, so the count can only be an upper bound there; it is exact for every layout
/// the parser and constructors accept).
struct Exact<'a> {
    inner: RangeIter<'a>,
    left: usize,
}

impl Iterator for Exact<'_> {
    type Item = (u32, u32);

    fn next(&mut self) -> Option<(u32, u32)> {
        let r = match &mut self.inner {
            RangeIter::Whole(w) => w.take().map(|len| (0, len)),
            RangeIter::Listed(it) => it.next().copied(),
            RangeIter::Prefixed(walk) => walk.next(),
        };
        self.left = if r.is_some() {
            self.left.saturating_sub(1)
        } else {
            0
        };
        r
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for Exact<'_> {}

fn check_len(data: &Bytes) -> Result<(), TooLarge> {
    if data.len() > u32::MAX as usize {
        Err(TooLarge(data.len()))
    } else {
        Ok(())
    }
}

impl PartialEq for Bodies {
    fn eq(&self, other: &Bodies) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for Bodies {}

impl std::fmt::Debug for Bodies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.iter().map(|b| String::from_utf8_lossy(b)))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(b: &Bodies) -> Vec<Vec<u8>> {
        b.iter().map(<[u8]>::to_vec).collect()
    }

    #[test]
    fn one_is_the_whole_buffer() {
        let b = Bodies::one(Bytes::from_static(b"hello")).expect("fits");
        assert_eq!((b.len(), b.total_bytes()), (1, 5));
        assert_eq!(b.ranges().collect::<Vec<_>>(), vec![(0, 5)]);
        assert_eq!(collect(&b), vec![b"hello".to_vec()]);
    }

    #[test]
    fn ranges_and_concat_agree() {
        let data = Bytes::from_static(b"xxabcyyde");
        let r = Bodies::from_ranges(data, [2..5, 7..9]).expect("in range");
        let c = Bodies::concat([&b"abc"[..], b"de"]).expect("fits");
        assert_eq!(collect(&r), collect(&c));
        assert_eq!(c.data().len(), 5, "no length prefixes, no gaps");
        assert_eq!((r.len(), r.total_bytes()), (2, 5));
        assert_eq!(r.ranges().len(), 2);
    }

    #[test]
    fn prefixed_bodies_are_walked_in_place() {
        let wire = Bytes::from_static(b"\0\0\0\x03abc\0\0\0\x02de");
        let p = Bodies::prefixed(wire.clone()).expect("well formed");
        assert_eq!(collect(&p), vec![b"abc".to_vec(), b"de".to_vec()]);
        assert_eq!(
            (p.len(), p.total_bytes(), p.prefixed_count()),
            (2, 5, Some(2))
        );
        assert_eq!(p.ranges().collect::<Vec<_>>(), vec![(4, 7), (11, 13)]);
        assert_eq!(p.ranges().len(), 2);
        assert_eq!(p, Bodies::concat([&b"abc"[..], b"de"]).expect("fits"));
        assert!(std::ptr::eq(p.data().as_ptr(), wire.as_ptr()), "not copied");
        // A length past the end, or a stray byte after the last body, is refused.
        for (bad, at) in [
            (&b"\0\0\0\x04abc"[..], 0),
            (b"\0\0\0\x01ab", 5),
            (b"\0\0", 0),
        ] {
            assert_eq!(
                Bodies::prefixed(Bytes::from_static(bad)),
                Err(LayoutError::Broken(at)),
                "{bad:?}"
            );
        }
        // A count larger than the layout holds ends the walk early instead of reading past it.
        let short = Bodies::prefixed_checked(wire, 3).expect("fits");
        assert_eq!(short.iter().count(), 2);
    }

    #[test]
    fn ranges_outside_the_buffer_are_refused() {
        let data = Bytes::from_static(b"abc");
        let past_the_end = vec![0..1, 1..4];
        assert_eq!(
            Bodies::from_ranges(data.clone(), past_the_end),
            Err(TooLarge(4))
        );
        #[allow(clippy::reversed_empty_ranges)]
        let backwards = vec![0..1, 2..1];
        assert!(Bodies::from_ranges(data, backwards).is_err());
    }
}
