//! A node of a stream's entries: up to [`NODE_ENTRIES`] entries in one buffer of up to
//! [`NODE_BYTES`], as Redis packs entries in a listpack (`stream-node-max-entries`,
//! `stream-node-max-bytes`; decision `docs/decisions/0033-keyspace-packed-streams.md`).
//!
//! The buffer starts with the node's field names (its first entry's: `[pairs: LEB128]` then
//! each name as `[length: LEB128][bytes]`), then the entries in id order, each
//! `[flags: u8][ms - first.ms: LEB128][seq: LEB128][pairs: LEB128, unless SAME][items]`, where
//! `first` is the node's first id (its key in the stream's map), the seq is a delta from
//! `first.seq` when the ms is the same, and the items are `[length: LEB128][bytes]`: only the
//! values when the entry has the node's field names (flag `SAME`), else names and values in
//! turn. XDEL flags an entry `DELETED` in place; the stream drops a node with no entry left.
//!
//! Node bytes are only ever written here, yet every read is bounds-checked: a short buffer
//! ends an iteration, it never panics.

use crate::entry::cost_of;
use crate::stream::StreamId;
use crate::stream_fields::{put_varint, take_item, take_varint, varint_len, Fields};

/// Entries per node at most (Redis's `stream-node-max-entries` default).
pub const NODE_ENTRIES: usize = 100;
/// Bytes per node at most, unless its one entry is larger (Redis's `stream-node-max-bytes`).
pub const NODE_BYTES: usize = 4096;
/// A node's place in the stream's B-tree: its key, this struct, and the tree's share.
const NODE_SLOT: usize = 16 + std::mem::size_of::<Node>() + 16;

const DELETED: u8 = 1;
const SAME: u8 = 2;

/// One node (see the module doc).
#[derive(Debug, Clone, Default)]
pub(crate) struct Node {
    buf: Vec<u8>,
    /// Where the entries begin (after the field names).
    header: u32,
    /// Entries not deleted.
    live: u32,
    /// Entries, deleted or not.
    total: u32,
    /// The last entry's id, deleted or not.
    last: StreamId,
}

/// An entry of a node, as read from its bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry<'a> {
    pub id: StreamId,
    pub fields: Fields<'a>,
    pub deleted: bool,
    /// Where its flags byte is.
    at: usize,
}

/// The id's two deltas against the node's first id.
fn deltas(first: StreamId, id: StreamId) -> (u64, u64) {
    let ms = id.ms.wrapping_sub(first.ms);
    (
        ms,
        if ms == 0 {
            id.seq.wrapping_sub(first.seq)
        } else {
            id.seq
        },
    )
}

fn item_len(item: &[u8]) -> usize {
    varint_len(item.len() as u64) + item.len()
}

fn put_item(out: &mut Vec<u8>, item: &[u8]) {
    put_varint(out, item.len() as u64);
    out.extend_from_slice(item);
}

impl Node {
    /// A node holding one entry, `id`, whose field names become the node's.
    pub fn new(id: StreamId, f: Fields<'_>) -> Node {
        let mut buf = Vec::new();
        put_varint(&mut buf, (f.len() / 2) as u64);
        for name in f.names() {
            put_item(&mut buf, name);
        }
        let mut node = Node {
            header: buf.len() as u32,
            buf,
            ..Node::default()
        };
        node.put(id, id, f, true);
        node
    }

    pub fn live(&self) -> usize {
        self.live as usize
    }

    /// The last entry's id, deleted or not.
    pub fn last_id(&self) -> StreamId {
        self.last
    }

    /// Bytes the node costs (estimated).
    pub fn cost(&self) -> usize {
        NODE_SLOT + cost_of(self.buf.capacity())
    }

    /// The node's field names (after their count) and how many.
    fn names(&self) -> (&[u8], usize) {
        let mut b = self.buf.get(..self.header as usize).unwrap_or_default();
        let pairs = take_varint(&mut b).unwrap_or(0) as usize;
        (b, pairs)
    }

    fn same_names(&self, f: Fields<'_>) -> bool {
        let (mut names, pairs) = self.names();
        f.len() / 2 == pairs && f.names().all(|n| take_item(&mut names) == Some(n))
    }

    /// Appends `id` (above every id here) if the node has room: whether it did.
    pub fn try_push(&mut self, first: StreamId, id: StreamId, f: Fields<'_>) -> bool {
        let same = self.same_names(f);
        let (ms, seq) = deltas(first, id);
        let mut size = 1 + varint_len(ms) + varint_len(seq);
        if !same {
            size += varint_len((f.len() / 2) as u64);
        }
        let items = f.iter().enumerate();
        size += items
            .filter(|(i, _)| !same || i % 2 == 1)
            .map(|(_, item)| item_len(item))
            .sum::<usize>();
        if self.total as usize >= NODE_ENTRIES || self.buf.len() + size >= NODE_BYTES {
            return false;
        }
        let need = self.buf.len() + size;
        if self.buf.capacity() < need {
            let grown = (self.buf.capacity() * 2).min(NODE_BYTES).max(need);
            self.buf.reserve_exact(grown - self.buf.len());
        }
        self.put(first, id, f, same);
        true
    }

    fn put(&mut self, first: StreamId, id: StreamId, f: Fields<'_>, same: bool) {
        let (ms, seq) = deltas(first, id);
        self.buf.push(if same { SAME } else { 0 });
        put_varint(&mut self.buf, ms);
        put_varint(&mut self.buf, seq);
        if !same {
            put_varint(&mut self.buf, (f.len() / 2) as u64);
        }
        for (i, item) in f.iter().enumerate() {
            if !same || i % 2 == 1 {
                put_item(&mut self.buf, item);
            }
        }
        self.live += 1;
        self.total += 1;
        self.last = id;
    }

    /// Gives back the room kept for more entries (the node is full).
    pub fn seal(&mut self) {
        self.buf.shrink_to_fit();
    }

    /// Every entry, deleted or not, in order.
    pub fn entries(&self, first: StreamId) -> impl Iterator<Item = Entry<'_>> + '_ {
        let (names, pairs) = self.names();
        let mut at = self.header as usize;
        let mut left = self.total;
        std::iter::from_fn(move || {
            left = left.checked_sub(1)?;
            let e = self.entry_at(first, at, names, pairs)?;
            at = e.1;
            Some(e.0)
        })
    }

    /// The entry at `at` and where the next one begins.
    fn entry_at<'a>(
        &'a self,
        first: StreamId,
        at: usize,
        names: &'a [u8],
        shared: usize,
    ) -> Option<(Entry<'a>, usize)> {
        let mut b = self.buf.get(at..)?;
        let (&flags, rest) = b.split_first()?;
        b = rest;
        let ms = take_varint(&mut b)?;
        let seq = take_varint(&mut b)?;
        let id = if ms == 0 {
            StreamId::new(first.ms, first.seq.wrapping_add(seq))
        } else {
            StreamId::new(first.ms.wrapping_add(ms), seq)
        };
        let same = flags & SAME != 0;
        let pairs = if same {
            shared
        } else {
            take_varint(&mut b)? as usize
        };
        let items = b;
        for _ in 0..if same { pairs } else { 2 * pairs } {
            take_item(&mut b)?;
        }
        let fields = Fields::node(same.then_some(names), items, pairs);
        let end = self.buf.len() - b.len();
        let deleted = flags & DELETED != 0;
        Some((
            Entry {
                id,
                fields,
                deleted,
                at,
            },
            end,
        ))
    }

    /// The entries not deleted, in order.
    pub fn live_entries(&self, first: StreamId) -> impl Iterator<Item = Entry<'_>> + '_ {
        self.entries(first).filter(|e| !e.deleted)
    }

    /// The entries not deleted, last first.
    pub fn live_rev(&self, first: StreamId) -> impl Iterator<Item = Entry<'_>> + '_ {
        let all: Vec<Entry<'_>> = self.live_entries(first).collect();
        all.into_iter().rev()
    }

    /// Flags entry `id` deleted: whether it was there.
    pub fn delete(&mut self, first: StreamId, id: StreamId) -> bool {
        let at = self
            .live_entries(first)
            .take_while(|e| e.id <= id)
            .find(|e| e.id == id)
            .map(|e| e.at);
        match at.and_then(|at| self.buf.get_mut(at)) {
            Some(flags) => {
                *flags |= DELETED;
                self.live -= 1;
                true
            }
            None => false,
        }
    }

    /// Flags deleted the entries from the front while `more` says so; their ids, in order.
    pub fn delete_front(
        &mut self,
        first: StreamId,
        mut more: impl FnMut(StreamId) -> bool,
    ) -> Vec<StreamId> {
        let gone: Vec<(StreamId, usize)> = self
            .live_entries(first)
            .take_while(|e| more(e.id))
            .map(|e| (e.id, e.at))
            .collect();
        for &(_, at) in &gone {
            if let Some(flags) = self.buf.get_mut(at) {
                *flags |= DELETED;
                self.live -= 1;
            }
        }
        gone.into_iter().map(|(id, _)| id).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: &Node, first: StreamId) -> Vec<(StreamId, bool)> {
        n.entries(first).map(|e| (e.id, e.deleted)).collect()
    }

    #[test]
    fn entries_share_the_first_entrys_names() {
        let first = StreamId::new(1000, 7);
        let mut n = Node::new(first, Fields::args(&[b"f", b"v1", b"g", b"w"]));
        let header = n.header as usize;
        assert!(n.try_push(
            first,
            StreamId::new(1000, 9),
            Fields::args(&[b"f", b"v2", b"g", b"x"])
        ));
        // Each entry: flags, two one-byte deltas, and the two values alone.
        assert_eq!(n.buf.len(), header + 8 + 8);
        assert!(n.try_push(first, StreamId::new(1005, 0), Fields::args(&[b"h", b"v3"])));
        assert!(n.try_push(first, StreamId::new(u64::MAX, u64::MAX), Fields::args(&[])));
        let got: Vec<_> = n
            .entries(first)
            .map(|e| (e.id, e.fields.iter().collect::<Vec<_>>()))
            .collect();
        assert_eq!(
            got,
            vec![
                (first, vec![&b"f"[..], b"v1", b"g", b"w"]),
                (StreamId::new(1000, 9), vec![&b"f"[..], b"v2", b"g", b"x"]),
                (StreamId::new(1005, 0), vec![&b"h"[..], b"v3"]),
                (StreamId::MAX, vec![]),
            ]
        );
        assert_eq!(n.last_id(), StreamId::MAX);
    }

    #[test]
    fn deletes_flag_in_place() {
        let first = StreamId::new(1, 0);
        let mut n = Node::new(first, Fields::args(&[b"f", b"v"]));
        for ms in 2..=5 {
            assert!(n.try_push(first, StreamId::new(ms, 0), Fields::args(&[b"f", b"v"])));
        }
        assert!(n.delete(first, StreamId::new(3, 0)));
        assert!(!n.delete(first, StreamId::new(3, 0)));
        assert!(!n.delete(first, StreamId::new(9, 0)));
        let gone = n.delete_front(first, |id| id.ms < 5);
        assert_eq!(
            gone,
            vec![
                StreamId::new(1, 0),
                StreamId::new(2, 0),
                StreamId::new(4, 0)
            ]
        );
        assert_eq!(n.live(), 1);
        assert_eq!(ids(&n, first)[4], (StreamId::new(5, 0), false));
        assert!(ids(&n, first)[..4].iter().all(|(_, deleted)| *deleted));
        let rev: Vec<_> = n.live_rev(first).map(|e| e.id).collect();
        assert_eq!(rev, vec![StreamId::new(5, 0)]);
    }

    #[test]
    fn a_node_holds_so_many_entries_or_bytes() {
        let first = StreamId::new(1, 0);
        let v = [7u8; 16];
        let mut n = Node::new(first, Fields::args(&[b"f", &v]));
        let mut id = first;
        while n.try_push(first, id.next().unwrap_or(id), Fields::args(&[b"f", &v])) {
            id = n.last_id();
        }
        assert_eq!(n.total as usize, NODE_ENTRIES);
        assert!(n.buf.capacity() <= NODE_BYTES);
        n.seal();
        // About 20 bytes an entry: flags, deltas, a length and the value.
        assert!(n.buf.capacity() < NODE_ENTRIES * 21, "{}", n.buf.capacity());
        let big = vec![1u8; 3000];
        let mut b = Node::new(first, Fields::args(&[b"f", &big]));
        assert!(!b.try_push(first, StreamId::new(2, 0), Fields::args(&[b"f", &big])));
        assert!(b.try_push(first, StreamId::new(2, 0), Fields::args(&[b"f", b"v"])));
    }
}
