//! The newest entries of a log, kept in memory as they were appended. openraft reads each
//! entry back soon after appending it: once per follower to replicate it (on the leader) and
//! once to apply it (on every node). Serving those reads from here spares a read and a decode
//! of every message per read; entries older than the cache are read from the files.
//!
//! The cache holds a contiguous run of indexes ending at the last one appended, bounded by a
//! count and by the entries' encoded size, so its memory stays bounded whatever is proposed.

use std::collections::VecDeque;

use crate::types::Entry;

/// Entries kept at most.
const MAX_ENTRIES: usize = 4096;
/// Encoded bytes kept at most.
const MAX_BYTES: usize = 64 << 20;

/// A contiguous run of the newest entries, each with its encoded size.
#[derive(Default)]
pub(super) struct Cache {
    entries: VecDeque<(Entry, usize)>,
    bytes: usize,
}

impl Cache {
    /// Adds `entry` (encoded in `size` bytes) after the last one; an entry that does not follow
    /// the last one starts the run again.
    pub(super) fn push(&mut self, entry: Entry, size: usize) {
        if self.next_index() != Some(entry.log_id.index) {
            self.clear();
        }
        self.bytes += size;
        self.entries.push_back((entry, size));
        while self.entries.len() > MAX_ENTRIES || self.bytes > MAX_BYTES {
            self.pop_front();
        }
    }

    /// The entry at `index`, if the cache holds it.
    pub(super) fn get(&self, index: u64) -> Option<&Entry> {
        let first = self.entries.front()?.0.log_id.index;
        let at = usize::try_from(index.checked_sub(first)?).ok()?;
        self.entries.get(at).map(|(e, _)| e)
    }

    /// Forgets every entry from `index` on (a truncated log).
    pub(super) fn truncate(&mut self, index: u64) {
        while self
            .entries
            .back()
            .is_some_and(|(e, _)| e.log_id.index >= index)
        {
            if let Some((_, size)) = self.entries.pop_back() {
                self.bytes -= size;
            }
        }
    }

    /// Forgets every entry up to `index` (a purged log).
    pub(super) fn purge(&mut self, index: u64) {
        while self
            .entries
            .front()
            .is_some_and(|(e, _)| e.log_id.index <= index)
        {
            self.pop_front();
        }
    }

    fn next_index(&self) -> Option<u64> {
        self.entries.back().map(|(e, _)| e.log_id.index + 1)
    }

    fn pop_front(&mut self) {
        if let Some((_, size)) = self.entries.pop_front() {
            self.bytes -= size;
        }
    }

    fn clear(&mut self) {
        self.entries.clear();
        self.bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use openraft::{CommittedLeaderId, EntryPayload, LogId};

    use super::*;

    fn entry(index: u64) -> Entry {
        Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
            payload: EntryPayload::Blank,
        }
    }

    #[test]
    fn keeps_a_contiguous_bounded_run() {
        let mut cache = Cache::default();
        for i in 1..=MAX_ENTRIES as u64 + 10 {
            cache.push(entry(i), 1);
        }
        assert!(cache.get(10).is_none(), "the oldest are evicted");
        assert_eq!(cache.get(11).map(|e| e.log_id.index), Some(11));
        assert_eq!(cache.entries.len(), MAX_ENTRIES);
        cache.truncate(100);
        assert!(cache.get(100).is_none());
        assert_eq!(cache.get(99).map(|e| e.log_id.index), Some(99));
        cache.purge(50);
        assert!(cache.get(50).is_none());
        assert_eq!(cache.get(51).map(|e| e.log_id.index), Some(51));
        assert_eq!(cache.bytes, 49);
        cache.push(entry(500), 1);
        assert!(cache.get(51).is_none(), "a gap starts the run again");
        assert_eq!(cache.get(500).map(|e| e.log_id.index), Some(500));
    }

    #[test]
    fn bounded_by_bytes() {
        let mut cache = Cache::default();
        cache.push(entry(1), MAX_BYTES);
        cache.push(entry(2), 1);
        assert!(cache.get(1).is_none());
        assert_eq!(cache.bytes, 1);
    }
}
