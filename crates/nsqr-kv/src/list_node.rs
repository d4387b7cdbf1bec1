//! One node of a list (`quicklist.rs`): its elements packed one after the other in a single
//! buffer, as Redis packs a quicklist node's listpack. An element is
//! `[length: LEB128][bytes][length: LEB128, bytes reversed]`: two bytes beside an element under
//! 128 bytes, and the length at both ends lets the node be walked from either end.
//!
//! The elements lie in `buf[head..]`; the bytes before `head` are room for pushes at the
//! front. A push at either end writes in place, and when the room runs out the buffer doubles
//! (up to [`NODE_BYTES`]) with the room on the side that grows, so pushes at either end cost
//! amortised constant time and a full node holds about [`NODE_BYTES`] in one heap block.

/// The bytes of elements a node holds before a push starts a new one: Redis's
/// `list-max-listpack-size -2` (8 KB). An element longer than that has a node of its own.
pub(crate) const NODE_BYTES: usize = 8 * 1024;
/// The first block of a new node: a list of a few short elements stays one small block.
const FIRST_BLOCK: usize = 32;

/// A node's elements, in order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Node {
    buf: Vec<u8>,
    head: usize,
    count: usize,
}

/// LEB128 bytes of `n`.
fn varint_len(mut n: usize) -> usize {
    let mut bytes = 1;
    while n >= 0x80 {
        n >>= 7;
        bytes += 1;
    }
    bytes
}

/// The bytes an element of `len` bytes takes in a node.
pub(crate) fn encoded_len(len: usize) -> usize {
    len + 2 * varint_len(len)
}

/// Writes the LEB128 bytes of `n` into `out` (exactly `varint_len(n)` of them), reversed if
/// `rev`.
fn put_varint(mut n: usize, out: &mut [u8], rev: bool) {
    let last = out.len() - 1;
    for i in 0..out.len() {
        let more = if i < last { 0x80 } else { 0 };
        let byte = (n & 0x7f) as u8 | more;
        let at = if rev { last - i } else { i };
        out[at] = byte;
        n >>= 7;
    }
}

/// Writes the element `e` into `out`, which is `encoded_len(e.len())` long.
fn put_element(e: &[u8], out: &mut [u8]) {
    let h = varint_len(e.len());
    put_varint(e.len(), &mut out[..h], false);
    out[h..h + e.len()].copy_from_slice(e);
    put_varint(e.len(), &mut out[h + e.len()..], true);
}

fn encode(e: &[u8]) -> Vec<u8> {
    let mut out = vec![0; encoded_len(e.len())];
    put_element(e, &mut out);
    out
}

/// The first element of packed `bytes` (not empty) and the bytes after it.
pub(crate) fn split_first(bytes: &[u8]) -> (&[u8], &[u8]) {
    let (len, h) = match bytes.first() {
        Some(&b) if b < 0x80 => (usize::from(b), 1),
        _ => read_varint(bytes.iter().copied()),
    };
    let (e, rest) = bytes[h..].split_at(len);
    (e, &rest[h..])
}

/// The last element of packed `bytes` (not empty) and the bytes before it.
pub(crate) fn split_last(bytes: &[u8]) -> (&[u8], &[u8]) {
    let (len, h) = match bytes.last() {
        Some(&b) if b < 0x80 => (usize::from(b), 1),
        _ => read_varint(bytes.iter().rev().copied()),
    };
    let (rest, e) = bytes[..bytes.len() - h].split_at(bytes.len() - h - len);
    (e, &rest[..rest.len() - h])
}

/// A LEB128 length read from `bytes` and its byte count.
fn read_varint(bytes: impl Iterator<Item = u8>) -> (usize, usize) {
    let (mut n, mut shift, mut read) = (0usize, 0, 0);
    for b in bytes {
        read += 1;
        n |= usize::from(b & 0x7f) << shift;
        shift += 7;
        if b & 0x80 == 0 || shift >= usize::BITS {
            break;
        }
    }
    (n, read)
}

impl Node {
    pub fn count(&self) -> usize {
        self.count
    }

    /// Bytes of the elements (without the room at the front).
    pub fn used(&self) -> usize {
        self.buf.len() - self.head
    }

    /// Bytes the node holds on the heap.
    pub fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// Whether a push of `e` stays within [`NODE_BYTES`] (an empty node takes anything).
    pub fn fits(&self, e: &[u8]) -> bool {
        self.count == 0 || self.used() + encoded_len(e.len()) <= NODE_BYTES
    }

    /// The block size to grow to for `need` more bytes of elements: double, within
    /// [`NODE_BYTES`] unless the elements need more.
    fn grown(&self, need: usize) -> usize {
        let want = self.used() + need;
        (2 * self.buf.capacity())
            .clamp(FIRST_BLOCK, NODE_BYTES)
            .max(want)
    }

    pub fn push_back(&mut self, e: &[u8]) {
        let n = encoded_len(e.len());
        if self.buf.capacity() - self.buf.len() < n {
            let size = self.grown(n);
            if self.head > 0 {
                let mut buf = Vec::with_capacity(size);
                buf.extend_from_slice(&self.buf[self.head..]);
                self.buf = buf;
                self.head = 0;
            } else {
                self.buf.reserve_exact(size - self.buf.len());
            }
        }
        let at = self.buf.len();
        self.buf.resize(at + n, 0);
        put_element(e, &mut self.buf[at..]);
        self.count += 1;
    }

    pub fn push_front(&mut self, e: &[u8]) {
        let n = encoded_len(e.len());
        if self.head < n {
            let size = self.grown(n);
            let room = size - self.used();
            let mut buf = Vec::with_capacity(size);
            buf.resize(room, 0);
            buf.extend_from_slice(&self.buf[self.head..]);
            self.buf = buf;
            self.head = room;
        }
        self.head -= n;
        put_element(e, &mut self.buf[self.head..self.head + n]);
        self.count += 1;
    }

    /// The element starting at byte `at` and the byte after it.
    fn element_at(&self, at: usize) -> (&[u8], usize) {
        let (e, rest) = split_first(&self.buf[at..]);
        (e, self.buf.len() - rest.len())
    }

    /// The element ending at byte `end` (exclusive) and its first byte.
    fn element_before(&self, end: usize) -> (&[u8], usize) {
        let (e, rest) = split_last(&self.buf[..end]);
        (e, rest.len())
    }

    /// The bytes of the elements from element `i` (0 ≤ i ≤ count) on.
    pub fn from(&self, i: usize) -> &[u8] {
        &self.buf[self.offset_of(i)..]
    }

    /// The bytes of the elements before element `i` (0 ≤ i ≤ count).
    pub fn until(&self, i: usize) -> &[u8] {
        &self.buf[self.head..self.offset_of(i)]
    }

    pub fn pop_front(&mut self) -> Option<Box<[u8]>> {
        if self.count == 0 {
            return None;
        }
        let (e, next) = self.element_at(self.head);
        let e = Box::from(e);
        self.head = next;
        self.count -= 1;
        Some(e)
    }

    pub fn pop_back(&mut self) -> Option<Box<[u8]>> {
        if self.count == 0 {
            return None;
        }
        let (e, start) = self.element_before(self.buf.len());
        let e = Box::from(e);
        self.buf.truncate(start);
        self.count -= 1;
        Some(e)
    }

    /// The byte where element `i` (0 ≤ i ≤ count) starts, walking from the nearer end.
    pub fn offset_of(&self, i: usize) -> usize {
        if i <= self.count / 2 {
            (0..i).fold(self.head, |at, _| self.element_at(at).1)
        } else {
            (i..self.count).fold(self.buf.len(), |end, _| self.element_before(end).1)
        }
    }

    pub fn get(&self, i: usize) -> Option<&[u8]> {
        (i < self.count).then(|| self.element_at(self.offset_of(i)).0)
    }

    /// Replaces element `i` (i < count) by `value`, or removes it (`None`).
    pub fn replace(&mut self, i: usize, value: Option<&[u8]>) {
        let at = self.offset_of(i);
        let end = self.element_at(at).1;
        match value {
            Some(v) if encoded_len(v.len()) == end - at => put_element(v, &mut self.buf[at..end]),
            Some(v) => {
                self.buf.splice(at..end, encode(v));
            }
            None => {
                self.buf.drain(at..end);
                self.count -= 1;
            }
        }
    }

    /// Inserts `value` before element `i` (`i == count` appends).
    pub fn insert(&mut self, i: usize, value: &[u8]) {
        let at = self.offset_of(i);
        self.buf.splice(at..at, encode(value));
        self.count += 1;
    }

    /// Moves the elements from `i` on into a new node.
    pub fn split_off(&mut self, i: usize) -> Node {
        let at = self.offset_of(i);
        let rest = Node {
            buf: self.buf[at..].to_vec(),
            head: 0,
            count: self.count - i,
        };
        self.buf.truncate(at);
        self.buf.shrink_to_fit();
        self.count = i;
        rest
    }

    /// Appends the elements of `other`.
    pub fn append(&mut self, other: &Node) {
        self.buf.extend_from_slice(&other.buf[other.head..]);
        self.count += other.count;
    }

    /// Drops the first `k` elements (k ≤ count).
    pub fn drop_front(&mut self, k: usize) {
        self.head = self.offset_of(k);
        self.count -= k;
    }

    /// Drops the last `k` elements (k ≤ count).
    pub fn drop_back(&mut self, k: usize) {
        let end = self.offset_of(self.count - k);
        self.buf.truncate(end);
        self.count -= k;
    }

    /// Removes up to `max` elements equal to `value`, the first ones (or with `from_back` the
    /// last ones); how many.
    pub fn remove_equal(&mut self, value: &[u8], max: usize, from_back: bool) -> usize {
        let mut starts = Vec::with_capacity(self.count);
        let mut at = self.head;
        while at < self.buf.len() {
            let (e, next) = self.element_at(at);
            starts.push((at, next, e == value));
            at = next;
        }
        let matching = starts.iter().filter(|s| s.2).count();
        let removed = matching.min(max);
        if removed == 0 {
            return 0;
        }
        // With `from_back`, the first `matching - removed` matches stay.
        let mut keep_matches = if from_back { matching - removed } else { 0 };
        let mut left_to_remove = removed;
        let mut buf = Vec::with_capacity(self.used());
        for (start, end, is_match) in starts {
            let drop = is_match && keep_matches == 0 && left_to_remove > 0;
            if is_match && keep_matches > 0 {
                keep_matches -= 1;
            }
            if drop {
                left_to_remove -= 1;
            } else {
                buf.extend_from_slice(&self.buf[start..end]);
            }
        }
        self.buf = buf;
        self.head = 0;
        self.count -= removed;
        removed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(n: &Node) -> Vec<Vec<u8>> {
        let mut rest = n.from(0);
        let mut out = Vec::new();
        while !rest.is_empty() {
            let (e, next) = split_first(rest);
            out.push(e.to_vec());
            rest = next;
        }
        let mut back = n.until(n.count());
        let mut rev = Vec::new();
        while !back.is_empty() {
            let (e, before) = split_last(back);
            rev.push(e.to_vec());
            back = before;
        }
        rev.reverse();
        assert_eq!(rev, out);
        out
    }

    #[test]
    fn lengths_at_both_ends() {
        for len in [0usize, 1, 127, 128, 16_383, 16_384, 300_000] {
            let e = vec![7u8; len];
            let mut n = Node::default();
            n.push_back(b"x");
            n.push_back(&e);
            n.push_front(&e);
            assert_eq!(n.used(), 2 * encoded_len(len) + 3);
            assert_eq!(n.get(1), Some(&b"x"[..]));
            assert_eq!(n.pop_back().as_deref(), Some(&e[..]));
            assert_eq!(n.pop_front().as_deref(), Some(&e[..]));
            assert_eq!(items(&n), vec![b"x".to_vec()]);
        }
        assert_eq!(varint_len(127), 1);
        assert_eq!(varint_len(128), 2);
    }

    #[test]
    fn a_full_node_is_one_block_of_about_node_bytes() {
        let mut n = Node::default();
        while n.fits(&[0; 16]) {
            n.push_back(&[0; 16]);
        }
        assert_eq!(n.count(), NODE_BYTES / 18);
        assert_eq!(n.capacity(), NODE_BYTES);
        let mut f = Node::default();
        while f.fits(&[0; 16]) {
            f.push_front(&[0; 16]);
        }
        assert_eq!(f.capacity(), NODE_BYTES);
    }

    #[test]
    fn edits_in_the_middle() {
        let mut n = Node::default();
        for e in [&b"a"[..], b"b", b"a", b"c", b"a"] {
            n.push_back(e);
        }
        n.replace(1, Some(b"bb"));
        n.replace(3, Some(b"d"));
        n.insert(5, b"z");
        n.insert(0, b"y");
        assert_eq!(items(&n), [&b"y"[..], b"a", b"bb", b"a", b"d", b"a", b"z"]);
        assert_eq!(n.remove_equal(b"a", 2, true), 2);
        assert_eq!(items(&n), [&b"y"[..], b"a", b"bb", b"d", b"z"]);
        let rest = n.split_off(2);
        assert_eq!(items(&rest), [&b"bb"[..], b"d", b"z"]);
        n.append(&rest);
        n.drop_front(1);
        n.drop_back(2);
        assert_eq!(items(&n), [&b"a"[..], b"bb"]);
        n.replace(0, None);
        assert_eq!((n.count(), items(&n)), (1, vec![b"bb".to_vec()]));
    }
}
