//! A stream's value: its entries in id order, its counters, and its consumer groups
//! (`stream_group.rs`).
//!
//! The entries are packed in nodes of about 100 (`stream_entries.rs`, `stream_node.rs`), as
//! Redis packs them in listpacks. Groups are kept by name in a `BTreeMap` (XINFO GROUPS lists
//! them in name order, as Redis's radix tree does).
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
use crate::stream_changes::Change;
use crate::stream_entries::Entries;
pub use crate::stream_fields::Fields;
pub use crate::stream_group::{Consumer, Group, Nack};
use crate::streams::StreamError;

pub use crate::stream_node::NODE_ENTRIES;

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
    pub(crate) entries: Entries,
    pub(crate) last_id: StreamId,
    pub(crate) max_deleted: StreamId,
    pub(crate) entries_added: u64,
    pub(crate) groups: BTreeMap<Box<[u8]>, Group>,
    /// Bytes the groups cost (estimated; the entries count their own).
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
        self.bytes + self.entries.cost()
    }

    /// How many nodes hold the entries (XINFO STREAM's `radix-tree-keys`).
    pub fn nodes(&self) -> usize {
        self.entries.nodes()
    }

    /// XINFO STREAM's `radix-tree-nodes`: the size of the radix tree Redis would build over
    /// the nodes' keys.
    pub fn radix_tree_nodes(&self) -> usize {
        self.entries.radix_tree_nodes()
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
        self.entries.first().map_or(StreamId::ZERO, |(id, _)| id)
    }

    pub fn first(&self) -> Option<(StreamId, Fields<'_>)> {
        self.entries.first()
    }

    pub fn last(&self) -> Option<(StreamId, Fields<'_>)> {
        self.entries.last()
    }

    pub fn get(&self, id: StreamId) -> Option<Fields<'_>> {
        self.entries.get(id)
    }

    /// Entries with ids in `start..=end`, in order or (`rev`) in reverse.
    pub fn range(
        &self,
        start: StreamId,
        end: StreamId,
        rev: bool,
    ) -> Box<dyn Iterator<Item = (StreamId, Fields<'_>)> + '_> {
        self.entries.range(start, end, rev)
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
    pub(crate) fn put_entry(&mut self, id: StreamId, f: Fields<'_>) {
        self.note(Change::Entry(id, f));
        self.entries.insert(id, f);
    }

    /// Removes an entry; whether it was there.
    pub(crate) fn remove_entry(&mut self, id: StreamId) -> bool {
        if !self.entries.remove(id) {
            return false;
        }
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
    pub(crate) fn append(&mut self, id: StreamId, f: Fields<'_>) {
        self.put_entry(id, f);
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
        match self.journal.as_mut() {
            Some(j) => self
                .entries
                .trim(spec, Some(&mut |id| Change::EntryGone(id).encode(j))),
            None => self.entries.trim(spec, None),
        }
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
    fn trims_exactly_and_by_nodes() {
        let mut s = Stream {
            journal: Some(Vec::new()),
            ..Stream::default()
        };
        for i in 1..=250 {
            s.append(StreamId::new(i, 0), Fields::args(&[b"f", b"v"]));
        }
        let approx = |max| TrimSpec {
            strategy: Trim::MaxLen(max),
            approx: true,
            limit: 10_000,
        };
        assert_eq!(s.trim(approx(200)), 0);
        assert_eq!(s.trim(approx(100)), 100);
        assert_eq!(s.len(), 150);
        // The nodes left: 101..=200 and 201..=250.
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
        assert_eq!(s.nodes(), 1);
        // The journal says which entries the trims took.
        let mut replayed = Stream::default();
        replayed
            .apply_changes(s.journal.as_deref().unwrap_or_default())
            .unwrap();
        replayed.set_meta(s.last_id, s.max_deleted, s.entries_added);
        assert_eq!(replayed, s);
        assert_eq!(s.trim(approx(0)), 10);
        assert_eq!((s.len(), s.nodes(), s.cost()), (0, 0, 0));
    }
}
