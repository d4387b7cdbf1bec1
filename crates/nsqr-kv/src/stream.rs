//! A stream's value: its entries in id order, its counters, and its consumer groups
//! (`stream_group.rs`).
//!
//! The entries are a `BTreeMap` from id to the entry's fields, the fields of one entry packed in
//! one heap block (`[u32 length][bytes]` per field and value): ranges in either direction and
//! trimming from the head are what streams do, and a B-tree gives both in log time, with one
//! allocation per entry. Groups are kept by name in a `BTreeMap` too (XINFO GROUPS lists them
//! in name order, as Redis's radix tree does).
//!
//! Every change goes through a few mutators that, when the keyspace has a log, also append the
//! change to the stream's journal (`stream_changes.rs`): the log records a stream command as
//! the state it leaves (an entry present or gone, a group's counters, a pending entry's
//! owner), never the whole stream, so an XADD costs the log what its entry weighs.
//!
//! A stream with no entries is still a key (as in Redis): `exists` says whether the value is
//! one, so a command that only looks at a missing key does not create it.

use std::collections::BTreeMap;

use crate::collection::{Collection, KeyType, Typed};
use crate::entry::cost_of;
use crate::stream_changes::Change;
pub use crate::stream_group::{Consumer, Group, Nack};
use crate::streams::StreamError;

/// An entry's place in the B-tree (id, boxed fields, and the tree's own share per entry).
const ENTRY_SLOT: usize = 16 + 16 + 16;
/// Entries per node of Redis's radix tree of listpacks (`stream-node-max-entries`):
/// approximate trimming (`~`) removes whole nodes of this size only.
pub const NODE_ENTRIES: usize = 100;

/// A stream entry id: milliseconds and a sequence number.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

impl StreamId {
    pub const ZERO: StreamId = StreamId { ms: 0, seq: 0 };
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    pub fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    /// The next id, `None` after the last possible one.
    pub fn next(self) -> Option<StreamId> {
        match self.seq.checked_add(1) {
            Some(seq) => Some(StreamId::new(self.ms, seq)),
            None => Some(StreamId::new(self.ms.checked_add(1)?, 0)),
        }
    }

    /// The previous id, `None` before 0-0.
    pub fn prev(self) -> Option<StreamId> {
        match self.seq.checked_sub(1) {
            Some(seq) => Some(StreamId::new(self.ms, seq)),
            None => Some(StreamId::new(self.ms.checked_sub(1)?, u64::MAX)),
        }
    }

    /// `ms-seq`, as replies show it.
    pub fn to_bytes(self) -> Vec<u8> {
        let mut b = itoa::Buffer::new();
        let mut out = Vec::with_capacity(24);
        out.extend_from_slice(b.format(self.ms).as_bytes());
        out.push(b'-');
        out.extend_from_slice(b.format(self.seq).as_bytes());
        out
    }

    /// `ms-seq` or `ms` (then `seq` is `missing_seq`), as Redis parses an id argument; `None`
    /// for anything else (`-` and `+` are the caller's to handle).
    pub fn parse(arg: &[u8], missing_seq: u64) -> Option<StreamId> {
        if arg.len() > 127 {
            return None;
        }
        let text = std::str::from_utf8(arg).ok()?;
        match text.split_once('-') {
            None => Some(StreamId::new(parse_u64(text)?, missing_seq)),
            Some((ms, seq)) => Some(StreamId::new(parse_u64(ms)?, parse_u64(seq)?)),
        }
    }

    /// An id argument where `-` and `+` mean the first and last possible ids.
    pub fn loose(arg: &[u8], missing_seq: u64) -> Result<StreamId, StreamError> {
        match arg {
            b"-" => Ok(StreamId::ZERO),
            b"+" => Ok(StreamId::MAX),
            _ => StreamId::parse(arg, missing_seq).ok_or(StreamError::InvalidId),
        }
    }

    /// An id argument where `-` and `+` are not ids.
    pub fn strict(arg: &[u8], missing_seq: u64) -> Result<StreamId, StreamError> {
        StreamId::parse(arg, missing_seq).ok_or(StreamError::InvalidId)
    }

    /// A bound of an interval (XRANGE, XPENDING, XAUTOCLAIM): `(id` excludes `id` (then
    /// `-` and `+` are not ids); whether it is excluded.
    pub fn bound(arg: &[u8], missing_seq: u64) -> Result<(StreamId, bool), StreamError> {
        match arg.strip_prefix(b"(") {
            Some(rest) if !rest.is_empty() => Ok((StreamId::strict(rest, missing_seq)?, true)),
            _ => Ok((StreamId::loose(arg, missing_seq)?, false)),
        }
    }
}

fn parse_u64(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// An entry's fields and values, packed (see the module doc).
pub fn pack_fields(pairs: &[&[u8]]) -> Box<[u8]> {
    let mut out = Vec::with_capacity(pairs.iter().map(|p| p.len() + 4).sum());
    for p in pairs {
        out.extend_from_slice(&(p.len() as u32).to_le_bytes());
        out.extend_from_slice(p);
    }
    out.into_boxed_slice()
}

/// The fields and values of a packed entry, in order.
pub fn fields(mut packed: &[u8]) -> impl Iterator<Item = &[u8]> {
    std::iter::from_fn(move || {
        let len = u32::from_le_bytes(packed.get(..4)?.try_into().ok()?) as usize;
        let item = packed.get(4..4 + len)?;
        packed = &packed[4 + len..];
        Some(item)
    })
}

/// How many fields and values a packed entry holds.
pub fn field_count(packed: &[u8]) -> usize {
    fields(packed).count()
}

/// How a trim chooses what to remove.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trim {
    /// Keep at most this many entries.
    MaxLen(u64),
    /// Remove the entries below this id.
    MinId(StreamId),
}

/// A trim: its strategy, whether approximate (`~`), and its LIMIT (0: none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrimSpec {
    pub strategy: Trim,
    pub approx: bool,
    pub limit: u64,
}

/// A stream (see the module doc).
#[derive(Debug, Clone, Default)]
pub struct Stream {
    pub(crate) entries: BTreeMap<StreamId, Box<[u8]>>,
    pub(crate) last_id: StreamId,
    pub(crate) max_deleted: StreamId,
    pub(crate) entries_added: u64,
    pub(crate) groups: BTreeMap<Box<[u8]>, Group>,
    pub(crate) bytes: usize,
    pub(crate) exists: bool,
    /// The changes made since the keyspace last took them, when it logs.
    pub(crate) journal: Option<Vec<u8>>,
}

impl PartialEq for Stream {
    fn eq(&self, o: &Stream) -> bool {
        self.entries == o.entries
            && self.last_id == o.last_id
            && self.max_deleted == o.max_deleted
            && self.entries_added == o.entries_added
            && self.groups == o.groups
    }
}

impl Eq for Stream {}

impl From<Stream> for Collection {
    fn from(s: Stream) -> Collection {
        Collection::Stream(Box::new(s))
    }
}

impl Typed for Stream {
    const KIND: KeyType = KeyType::Stream;
    const WHOLE: bool = true;
    fn is_empty(&self) -> bool {
        !self.exists
    }
    fn state(&self, _: &[u8]) -> Option<&[u8]> {
        None
    }
    fn of(c: &Collection) -> Option<&Stream> {
        match c {
            Collection::Stream(s) => Some(s),
            _ => None,
        }
    }
    fn of_mut(c: &mut Collection) -> Option<&mut Stream> {
        match c {
            Collection::Stream(s) => Some(s),
            _ => None,
        }
    }
}

fn entry_cost(packed: &[u8]) -> usize {
    ENTRY_SLOT + cost_of(packed.len())
}

impl Stream {
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the value is a key (see the module doc).
    pub fn exists(&self) -> bool {
        self.exists
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Bytes the stream costs (estimated).
    pub fn cost(&self) -> usize {
        self.bytes
    }

    pub fn last_id(&self) -> StreamId {
        self.last_id
    }

    pub fn max_deleted(&self) -> StreamId {
        self.max_deleted
    }

    pub fn entries_added(&self) -> u64 {
        self.entries_added
    }

    /// The first entry's id, 0-0 when there is none.
    pub fn first_id(&self) -> StreamId {
        self.entries
            .first_key_value()
            .map_or(StreamId::ZERO, |(id, _)| *id)
    }

    pub fn first(&self) -> Option<(StreamId, &[u8])> {
        self.entries.first_key_value().map(|(id, f)| (*id, &**f))
    }

    pub fn last(&self) -> Option<(StreamId, &[u8])> {
        self.entries.last_key_value().map(|(id, f)| (*id, &**f))
    }

    pub fn get(&self, id: StreamId) -> Option<&[u8]> {
        self.entries.get(&id).map(|f| &**f)
    }

    /// Entries with ids in `start..=end`, in order or (`rev`) in reverse.
    pub fn range(
        &self,
        start: StreamId,
        end: StreamId,
        rev: bool,
    ) -> Box<dyn Iterator<Item = (StreamId, &[u8])> + '_> {
        if start > end {
            return Box::new(std::iter::empty());
        }
        let r = self.entries.range(start..=end).map(|(id, f)| (*id, &**f));
        if rev {
            Box::new(r.rev())
        } else {
            Box::new(r)
        }
    }

    pub fn groups(&self) -> impl Iterator<Item = (&[u8], &Group)> {
        self.groups.iter().map(|(n, g)| (&**n, g))
    }

    pub fn group(&self, name: &[u8]) -> Option<&Group> {
        self.groups.get(name)
    }

    /// Marks the value as a key (a write that creates the stream).
    pub(crate) fn materialize(&mut self) {
        self.exists = true;
    }

    pub(crate) fn note(&mut self, change: Change<'_>) {
        if let Some(j) = &mut self.journal {
            change.encode(j);
        }
    }

    /// Adds or replaces an entry.
    pub(crate) fn put_entry(&mut self, id: StreamId, packed: Box<[u8]>) {
        self.note(Change::Entry(id, &packed));
        self.bytes += entry_cost(&packed);
        if let Some(old) = self.entries.insert(id, packed) {
            self.bytes -= entry_cost(&old);
        }
    }

    /// Removes an entry; whether it was there.
    pub(crate) fn remove_entry(&mut self, id: StreamId) -> bool {
        let Some(old) = self.entries.remove(&id) else {
            return false;
        };
        self.bytes -= entry_cost(&old);
        self.note(Change::EntryGone(id));
        true
    }

    /// Sets the counters (XSETID, and replay).
    pub(crate) fn set_meta(&mut self, last: StreamId, max_deleted: StreamId, added: u64) {
        self.last_id = last;
        self.max_deleted = max_deleted;
        self.entries_added = added;
    }

    /// Appends an entry with an id above the last one (the caller checked it).
    pub(crate) fn append(&mut self, id: StreamId, packed: Box<[u8]>) {
        self.put_entry(id, packed);
        self.last_id = id;
        self.entries_added = self.entries_added.saturating_add(1);
    }

    /// XDEL of one id: whether it was there.
    pub(crate) fn delete(&mut self, id: StreamId) -> bool {
        let found = self.remove_entry(id);
        if found && id > self.max_deleted {
            self.max_deleted = id;
        }
        found
    }

    /// Trims from the head as `spec` says; how many entries went.
    pub(crate) fn trim(&mut self, spec: TrimSpec) -> u64 {
        let n = if spec.approx {
            self.approx_trim_count(spec)
        } else {
            let len = self.entries.len() as u64;
            let n = match spec.strategy {
                Trim::MaxLen(max) => len.saturating_sub(max),
                Trim::MinId(min) => self.entries.range(..min).count() as u64,
            };
            if spec.limit > 0 {
                n.min(spec.limit)
            } else {
                n
            }
        };
        for _ in 0..n {
            if let Some(id) = self.entries.first_key_value().map(|(id, _)| *id) {
                self.remove_entry(id);
            }
        }
        n
    }

    /// How many entries an approximate trim removes: whole nodes only, as Redis removes
    /// whole listpacks. Nodes are [`NODE_ENTRIES`] entries in the order they were added (an
    /// entry's place counted from `entries_added`), so the first node may be partly gone.
    fn approx_trim_count(&self, spec: TrimSpec) -> u64 {
        let node = NODE_ENTRIES as u64;
        let len = self.entries.len() as u64;
        let first_ordinal = self.entries_added.saturating_sub(len);
        let mut removed = 0u64;
        let mut ordinal = first_ordinal;
        let mut keys = self.entries.keys();
        while removed < len {
            let in_node = (node - ordinal % node).min(len - removed);
            let whole = match spec.strategy {
                Trim::MaxLen(max) => len - removed - in_node >= max,
                // The node's last entry, the iterator walking node by node.
                Trim::MinId(min) => keys
                    .nth((in_node - 1) as usize)
                    .is_some_and(|last| *last < min),
            };
            if !whole || (spec.limit > 0 && removed + in_node > spec.limit) {
                break;
            }
            removed += in_node;
            ordinal += in_node;
        }
        removed
    }

    /// How many entries a group's `id` has read since the stream began, if it can be known
    /// (Redis's `streamEstimateDistanceFromFirstEverEntry`).
    pub fn estimate_read(&self, id: StreamId) -> Option<u64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if self.entries.is_empty() && id <= self.last_id {
            return Some(self.entries_added);
        }
        if id == self.last_id {
            return Some(self.entries_added);
        }
        if id > self.last_id {
            return None;
        }
        let first = self.first_id();
        if self.max_deleted == StreamId::ZERO || self.max_deleted < first {
            // Never below 0, even for counters a RESTORE payload made up.
            let base = self.entries_added.saturating_sub(self.entries.len() as u64);
            if id < first {
                return Some(base);
            }
            if id == first {
                return Some(base.saturating_add(1));
            }
        }
        None
    }

    /// Whether a deleted entry may lie in `start..` (Redis's `streamRangeHasTombstones`).
    pub fn has_tombstones_from(&self, start: StreamId) -> bool {
        !self.entries.is_empty() && self.max_deleted != StreamId::ZERO && start <= self.max_deleted
    }

    /// A group's lag, if it can be known (XINFO GROUPS); negative when ENTRIESREAD said more
    /// than the stream holds, as in Redis.
    pub fn lag(&self, g: &Group) -> Option<i64> {
        let added = self.entries_added as i64;
        if self.entries_added == 0 {
            return Some(0);
        }
        if g.entries_read >= 0 && !self.has_tombstones_from(g.last_id) {
            return Some(added.wrapping_sub(g.entries_read));
        }
        self.estimate_read(g.last_id)
            .map(|read| added.wrapping_sub(read as i64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_and_step() {
        assert_eq!(StreamId::parse(b"5-3", 0), Some(StreamId::new(5, 3)));
        assert_eq!(StreamId::parse(b"5", 9), Some(StreamId::new(5, 9)));
        for bad in [
            &b""[..],
            b"-",
            b"+",
            b"a-1",
            b"1-",
            b"-1",
            b"1-2-3",
            b" 1",
            b"18446744073709551616",
        ] {
            assert_eq!(StreamId::parse(bad, 0), None, "{bad:?}");
        }
        assert_eq!(StreamId::MAX.next(), None);
        assert_eq!(StreamId::ZERO.prev(), None);
        assert_eq!(StreamId::new(1, u64::MAX).next(), Some(StreamId::new(2, 0)));
        assert_eq!(StreamId::new(2, 0).to_bytes(), b"2-0");
    }

    #[test]
    fn packs_fields() {
        let p = pack_fields(&[b"f", b"", b"g", b"value"]);
        assert_eq!(
            fields(&p).collect::<Vec<_>>(),
            vec![&b"f"[..], b"", b"g", b"value"]
        );
        assert_eq!(field_count(&p), 4);
    }

    #[test]
    fn trims_exactly_and_by_nodes() {
        let mut s = Stream::default();
        for i in 1..=250 {
            s.append(StreamId::new(i, 0), pack_fields(&[b"f", b"v"]));
        }
        let approx = |max| TrimSpec {
            strategy: Trim::MaxLen(max),
            approx: true,
            limit: 10_000,
        };
        assert_eq!(s.trim(approx(200)), 0);
        assert_eq!(s.trim(approx(100)), 100);
        assert_eq!(s.len(), 150);
        // Nodes follow the order entries were added in: the first one is now full
        // (101..=200), the last one partial (201..=250).
        let minid = |id, approx| TrimSpec {
            strategy: Trim::MinId(StreamId::new(id, 0)),
            approx,
            limit: 0,
        };
        assert_eq!(s.trim(minid(240, true)), 100);
        assert_eq!(s.trim(minid(240, false)), 39);
        assert_eq!(s.first_id(), StreamId::new(240, 0));
        assert!(s.delete(StreamId::new(245, 0)) && !s.delete(StreamId::new(245, 0)));
        assert_eq!(s.max_deleted(), StreamId::new(245, 0));
        assert_eq!(s.entries_added(), 250);
        assert_eq!(s.trim(approx(0)), 10);
        while let Some((id, _)) = s.first() {
            s.remove_entry(id);
        }
        assert_eq!(s.bytes, 0);
    }
}
