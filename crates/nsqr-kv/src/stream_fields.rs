//! An entry's fields and values, borrowed from wherever they are: a command's arguments, the
//! packed form the log and DUMP payloads carry (`[u32 LE length][bytes]` per field and value),
//! or an entry of a node (`stream_node.rs`), whose field names may be the node's first entry's.
//! One view for the three lets replies, the log and the nodes read an entry the same way
//! without copying it.

/// The fields and values of one entry, in order (see the module doc).
#[derive(Debug, Clone, Copy)]
pub struct Fields<'a> {
    src: Source<'a>,
    len: usize,
}

#[derive(Debug, Clone, Copy)]
enum Source<'a> {
    /// `[u32 LE length][bytes]` per item.
    Packed(&'a [u8]),
    Args(&'a [&'a [u8]]),
    /// Items with LEB128 lengths: every item in `items`, or (with `names`) the field names in
    /// `names` and the values in `items`.
    Node {
        names: Option<&'a [u8]>,
        items: &'a [u8],
    },
}

/// Appends the LEB128 bytes of `n`.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push(n as u8 | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// How many LEB128 bytes `n` takes.
pub(crate) fn varint_len(n: u64) -> usize {
    (64 - (n | 1).leading_zeros() as usize).div_ceil(7)
}

/// Reads a LEB128 number at the front of `b`, advancing it; `None` if it is cut short.
pub(crate) fn take_varint(b: &mut &[u8]) -> Option<u64> {
    let mut n = 0u64;
    for (i, &byte) in b.iter().enumerate().take(10) {
        n |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            *b = &b[i + 1..];
            return Some(n);
        }
    }
    None
}

/// Reads a length-prefixed item at the front of `b`, advancing it.
pub(crate) fn take_item<'a>(b: &mut &'a [u8]) -> Option<&'a [u8]> {
    let len = usize::try_from(take_varint(b)?).ok()?;
    let item = b.get(..len)?;
    *b = &b[len..];
    Some(item)
}

fn take_packed<'a>(b: &mut &'a [u8]) -> Option<&'a [u8]> {
    let len = u32::from_le_bytes(b.get(..4)?.try_into().ok()?) as usize;
    let item = b.get(4..4 + len)?;
    *b = &b[4 + len..];
    Some(item)
}

impl<'a> Fields<'a> {
    /// The packed form, if it is whole items and an even number of them.
    pub fn packed(p: &'a [u8]) -> Option<Fields<'a>> {
        let mut rest = p;
        let mut len = 0;
        while !rest.is_empty() {
            take_packed(&mut rest)?;
            len += 1;
        }
        (len % 2 == 0).then_some(Fields {
            src: Source::Packed(p),
            len,
        })
    }

    /// Fields and values given as arguments (an even number of them).
    pub fn args(a: &'a [&'a [u8]]) -> Fields<'a> {
        Fields {
            src: Source::Args(a),
            len: a.len(),
        }
    }

    /// An entry of a node: `pairs` fields and values, the names in `names` when shared.
    pub(crate) fn node(names: Option<&'a [u8]>, items: &'a [u8], pairs: usize) -> Fields<'a> {
        Fields {
            src: Source::Node { names, items },
            len: 2 * pairs,
        }
    }

    /// How many fields and values (twice the pairs).
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The fields and values in order.
    pub fn iter(&self) -> FieldIter<'a> {
        let (names, items) = match self.src {
            Source::Node { names, items } => (names.unwrap_or_default(), items),
            Source::Packed(p) => (&[][..], p),
            Source::Args(_) => (&[][..], &[][..]),
        };
        FieldIter {
            src: self.src,
            names,
            items,
            at: 0,
            len: self.len,
        }
    }

    /// The field names in order.
    pub fn names(&self) -> impl Iterator<Item = &'a [u8]> {
        self.iter().step_by(2)
    }

    /// The packed form (see the module doc), appended to `out`.
    pub fn pack_into(&self, out: &mut Vec<u8>) {
        for item in self.iter() {
            out.extend_from_slice(&(item.len() as u32).to_le_bytes());
            out.extend_from_slice(item);
        }
    }

    /// Bytes of the packed form.
    pub fn packed_len(&self) -> usize {
        self.iter().map(|i| i.len() + 4).sum()
    }
}

impl From<Fields<'_>> for Box<[u8]> {
    fn from(f: Fields<'_>) -> Box<[u8]> {
        let mut out = Vec::with_capacity(f.packed_len());
        f.pack_into(&mut out);
        out.into_boxed_slice()
    }
}

impl PartialEq for Fields<'_> {
    fn eq(&self, o: &Fields<'_>) -> bool {
        self.len == o.len && self.iter().eq(o.iter())
    }
}

impl Eq for Fields<'_> {}

/// The items of [`Fields`], in order.
pub struct FieldIter<'a> {
    src: Source<'a>,
    names: &'a [u8],
    items: &'a [u8],
    at: usize,
    len: usize,
}

impl<'a> Iterator for FieldIter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.at >= self.len {
            return None;
        }
        let item = match self.src {
            Source::Args(a) => a.get(self.at).copied(),
            Source::Packed(_) => take_packed(&mut self.items),
            Source::Node { names: Some(_), .. } if self.at.is_multiple_of(2) => {
                take_item(&mut self.names)
            }
            Source::Node { .. } => take_item(&mut self.items),
        };
        self.at += 1;
        item
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.len - self.at;
        (left, Some(left))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip() {
        for n in [
            0,
            1,
            127,
            128,
            16_383,
            16_384,
            u64::from(u32::MAX),
            u64::MAX,
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, n);
            assert_eq!(out.len(), varint_len(n), "{n}");
            let mut b = &out[..];
            assert_eq!(take_varint(&mut b), Some(n));
            assert!(b.is_empty());
            let mut cut = &out[..out.len() - 1];
            assert_eq!(take_varint(&mut cut), None);
        }
    }

    #[test]
    fn the_three_forms_read_alike() {
        let args: [&[u8]; 4] = [b"f", b"", b"g", b"value"];
        let a = Fields::args(&args);
        let packed: Box<[u8]> = a.into();
        let p = Fields::packed(&packed).unwrap();
        assert_eq!(p, a);
        assert_eq!(p.iter().collect::<Vec<_>>(), args);
        assert_eq!(p.names().collect::<Vec<_>>(), [&b"f"[..], b"g"]);
        // Shared names: the names in one buffer, the values in another.
        let (mut names, mut values) = (Vec::new(), Vec::new());
        for (i, item) in args.iter().enumerate() {
            let out = if i % 2 == 0 { &mut names } else { &mut values };
            put_varint(out, item.len() as u64);
            out.extend_from_slice(item);
        }
        assert_eq!(Fields::node(Some(&names), &values, 2), a);
        assert_ne!(Fields::node(Some(&names), &values, 1), a);
        // Ragged or odd packed forms are refused.
        assert!(Fields::packed(&packed[..packed.len() - 1]).is_none());
        assert!(Fields::packed(&packed[..5]).is_none());
        assert!(Fields::packed(&[]).is_some_and(|f| f.is_empty()));
    }
}
