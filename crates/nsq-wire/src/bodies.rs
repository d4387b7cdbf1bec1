//! The message bodies of one publish (PUB, MPUB, DPUB, HTTP /pub and /mpub) as one shared
//! buffer plus 32-bit ranges into it, rather than a `Bytes` per message: a queued message then
//! needs 8 bytes to find its body instead of a 32-byte `Bytes`, and an MPUB's bodies share one
//! buffer: the slice of the read buffer they arrived in (length prefixes between them), or one
//! allocation they are copied into back to back. Memory per queued message is what the broker
//! is measured on, so this is where the bytes are saved.

use std::ops::Range;

use bytes::Bytes;

/// Bodies of one publish, in order. Invariant: `data.len() <= u32::MAX` and every range lies
/// within `data`, so [`Bodies::get`] never panics. Equal when the bodies are, wherever they
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
}

/// The buffer is larger than 4 GiB, which 32-bit ranges cannot address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("publish of {0} bytes exceeds 4 GiB")]
pub struct TooLarge(pub usize);

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

    /// Messages at `spans` (start, end) of `data`, as the parser found them.
    pub(crate) fn from_spans(data: Bytes, spans: Vec<(u32, u32)>) -> Result<Bodies, TooLarge> {
        check_len(&data)?;
        if let Some(&(_, end)) = spans
            .iter()
            .find(|&&(a, b)| a > b || b as usize > data.len())
        {
            return Err(TooLarge(end as usize));
        }
        Ok(Bodies {
            data,
            layout: Layout::Ranges(spans),
        })
    }

    /// Copy the messages at `spans` of `src` back to back into one exact-size buffer (the
    /// span list is reused for their new ranges).
    pub(crate) fn copy_spans(src: &[u8], mut spans: Vec<(u32, u32)>) -> Result<Bodies, TooLarge> {
        let mut total = 0usize;
        for &(a, b) in &spans {
            if a > b || b as usize > src.len() {
                return Err(TooLarge(b as usize));
            }
            total += (b - a) as usize;
        }
        if total > u32::MAX as usize {
            return Err(TooLarge(total));
        }
        let mut data = Vec::with_capacity(total);
        for span in &mut spans {
            let start = data.len() as u32;
            data.extend_from_slice(&src[span.0 as usize..span.1 as usize]);
            *span = (start, data.len() as u32);
        }
        Ok(Bodies {
            data: Bytes::from(data),
            layout: Layout::Ranges(spans),
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
        }
    }

    /// The shared buffer every range points into.
    pub fn data(&self) -> &Bytes {
        &self.data
    }

    /// `(start, end)` of each message within [`Bodies::data`].
    pub fn ranges(&self) -> impl ExactSizeIterator<Item = (u32, u32)> + '_ {
        let (whole, ranges): (Option<u32>, &[(u32, u32)]) = match &self.layout {
            Layout::Whole => (Some(self.data.len() as u32), &[]),
            Layout::Ranges(r) => (None, r),
        };
        RangeIter {
            whole,
            ranges: ranges.iter(),
        }
    }

    /// The bodies, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        self.ranges()
            .map(move |(a, b)| &self.data[a as usize..b as usize])
    }
}

struct RangeIter<'a> {
    whole: Option<u32>,
    ranges: std::slice::Iter<'a, (u32, u32)>,
}

impl Iterator for RangeIter<'_> {
    type Item = (u32, u32);

    fn next(&mut self) -> Option<(u32, u32)> {
        match self.whole.take() {
            Some(len) => Some((0, len)),
            None => self.ranges.next().copied(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.ranges.len() + usize::from(self.whole.is_some());
        (n, Some(n))
    }
}

impl ExactSizeIterator for RangeIter<'_> {}

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
