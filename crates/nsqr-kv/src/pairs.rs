//! A small hash's fields and values packed one after the other in a single buffer, as Redis
//! packs them in a listpack: each pair is `[field length: u8][field][value length: u8][value]`.
//! A table (`collection.rs`) costs a slot, a hash and two heap blocks per field; a small hash
//! (at most 512 fields of at most 64 bytes, Redis's `hash-max-listpack-*` limits) costs here
//! two bytes per pair beside its bytes, in one block sized to fit. Every operation scans the
//! pairs, which at these sizes is what Redis does too.

/// The pairs of a small hash, in insertion order.
#[derive(Debug, Clone, Default)]
pub struct Pairs {
    buf: Vec<u8>,
    len: usize,
}

/// Where one pair lies in the buffer.
struct Found {
    /// The pair's first byte (its field's length).
    start: usize,
    /// The value's first byte.
    value: usize,
    /// One past the pair's last byte.
    end: usize,
}

impl Pairs {
    pub fn len(&self) -> usize {
        self.len
    }

    /// Bytes of the buffer (its capacity: what it holds on the heap).
    pub fn heap_bytes(&self) -> usize {
        self.buf.capacity()
    }

    pub fn iter(&self) -> Iter<'_> {
        Iter {
            rest: &self.buf,
            left: self.len,
        }
    }

    /// The pair at position `i` (0 ≤ i < len).
    pub fn at(&self, i: usize) -> Option<(&[u8], &[u8])> {
        self.iter().nth(i)
    }

    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        let f = self.find(field)?;
        Some(&self.buf[f.value..f.end])
    }

    fn find(&self, field: &[u8]) -> Option<Found> {
        let mut start = 0;
        for (f, v) in self.iter() {
            let value = start + 2 + f.len();
            let end = value + v.len();
            if f == field {
                return Some(Found { start, value, end });
            }
            start = end;
        }
        None
    }

    /// Sets a field: whether it is new, or `None` (nothing changed) when the field or the
    /// value is longer than a length byte holds.
    pub fn insert(&mut self, field: &[u8], value: &[u8]) -> Option<bool> {
        let (flen, vlen) = (
            u8::try_from(field.len()).ok()?,
            u8::try_from(value.len()).ok()?,
        );
        match self.find(field) {
            Some(f) => {
                let grow = value.len().saturating_sub(f.end - f.value);
                self.buf.reserve_exact(grow);
                self.buf.splice(
                    f.value - 1..f.end,
                    std::iter::once(vlen).chain(value.iter().copied()),
                );
                self.buf.shrink_to_fit();
                Some(false)
            }
            None => {
                self.buf.reserve_exact(2 + field.len() + value.len());
                self.buf.push(flen);
                self.buf.extend_from_slice(field);
                self.buf.push(vlen);
                self.buf.extend_from_slice(value);
                self.len += 1;
                Some(true)
            }
        }
    }

    /// Removes a field; whether it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        let Some(f) = self.find(field) else {
            return false;
        };
        self.buf.drain(f.start..f.end);
        self.buf.shrink_to_fit();
        self.len -= 1;
        true
    }
}

/// The pairs in order.
pub struct Iter<'a> {
    rest: &'a [u8],
    left: usize,
}

/// The item of `len` bytes after the length byte at the front of `b`, and what follows it.
fn item(b: &[u8]) -> Option<(&[u8], &[u8])> {
    let (&len, rest) = b.split_first()?;
    (rest.len() >= usize::from(len)).then(|| rest.split_at(usize::from(len)))
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        let (field, rest) = item(self.rest)?;
        let (value, rest) = item(rest)?;
        self.rest = rest;
        self.left -= 1;
        Some((field, value))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for Iter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(p: &Pairs) -> Vec<(Vec<u8>, Vec<u8>)> {
        p.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect()
    }

    #[test]
    fn insert_replace_remove_keep_the_buffer_exact() {
        let mut p = Pairs::default();
        assert_eq!(p.insert(b"a", b"1"), Some(true));
        assert_eq!(p.insert(b"bb", b""), Some(true));
        assert_eq!(p.insert(b"c", b"333"), Some(true));
        assert_eq!((p.len(), p.heap_bytes()), (3, 4 + 4 + 6));
        assert_eq!(p.insert(b"bb", b"a longer value"), Some(false));
        assert_eq!(p.get(b"bb"), Some(&b"a longer value"[..]));
        assert_eq!(p.insert(b"a", b""), Some(false));
        assert_eq!(p.heap_bytes(), 3 + 18 + 6);
        assert_eq!(
            all(&p),
            vec![
                (b"a".to_vec(), b"".to_vec()),
                (b"bb".to_vec(), b"a longer value".to_vec()),
                (b"c".to_vec(), b"333".to_vec())
            ]
        );
        assert_eq!(p.at(2), Some((&b"c"[..], &b"333"[..])));
        assert_eq!((p.at(3), p.get(b"x")), (None, None));
        assert!(p.remove(b"bb") && !p.remove(b"bb"));
        assert_eq!((p.len(), p.heap_bytes(), p.iter().len()), (2, 3 + 6, 2));
        assert!(p.remove(b"a") && p.remove(b"c"));
        assert_eq!((p.len(), p.heap_bytes(), p.iter().next()), (0, 0, None));
    }

    #[test]
    fn refuses_what_a_length_byte_cannot_hold() {
        let mut p = Pairs::default();
        assert_eq!(p.insert(&[b'f'; 256], b"v"), None);
        assert_eq!(p.insert(b"f", &[b'v'; 256]), None);
        assert_eq!(p.insert(&[b'f'; 255], &[b'v'; 255]), Some(true));
        assert_eq!(p.get(&[b'f'; 255]).map(<[u8]>::len), Some(255));
        assert_eq!(p.len(), 1);
    }

    #[test]
    fn a_field_is_matched_whole() {
        let mut p = Pairs::default();
        p.insert(b"ab", b"1");
        p.insert(b"a", b"2");
        p.insert(b"", b"3");
        assert_eq!(p.get(b"a"), Some(&b"2"[..]));
        assert_eq!(p.get(b""), Some(&b"3"[..]));
        assert_eq!(p.get(b"abc"), None);
    }
}
