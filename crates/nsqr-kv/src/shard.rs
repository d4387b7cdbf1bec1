//! One shard of the keyspace: a hash table of entries, the shard's expiry index, and what the
//! shard costs in memory. Everything here runs under the shard's lock and knows nothing of
//! events: the keyspace decides what a change means, the shard only stores it.
//!
//! The expiry index is an ordered map of (deadline, key hash) → count: 16 bytes per volatile
//! key and no copy of the key. Expiring finds the entries through the hash; a changed or
//! removed deadline is taken out of the index exactly (the old deadline is known), so the
//! index never holds stale entries.

use std::collections::BTreeMap;

use hashbrown::HashTable;

use crate::entry::Entry;

/// Bytes the index costs per volatile key (B-tree nodes are about two thirds full).
const INDEX_COST: usize = 32;

/// Counters of one shard (summed for `INFO`).
#[derive(Debug, Clone, Copy, Default)]
pub struct ShardStats {
    pub hits: u64,
    pub misses: u64,
    pub expired: u64,
    pub evicted: u64,
}

/// What [`Shard::lookup`] found.
#[derive(Debug)]
pub enum Lookup<'a> {
    Live(&'a mut Entry),
    /// Past its deadline: already removed from the shard.
    Expired(Entry),
    Missing,
}

/// The expiry index and its count, borrowed apart from the table.
struct Index<'a> {
    expiry: &'a mut BTreeMap<(u64, u64), u32>,
    volatile: &'a mut usize,
}

impl Index<'_> {
    fn change(self, hash: u64, old: Option<u64>, new: Option<u64>) {
        if old == new {
            return;
        }
        if let Some(d) = old {
            if let std::collections::btree_map::Entry::Occupied(mut o) =
                self.expiry.entry((d, hash))
            {
                *o.get_mut() -= 1;
                if *o.get() == 0 {
                    o.remove();
                }
            }
            *self.volatile -= 1;
        }
        if let Some(d) = new {
            *self.expiry.entry((d, hash)).or_insert(0) += 1;
            *self.volatile += 1;
        }
    }
}

#[derive(Debug, Default)]
pub struct Shard {
    pub stats: ShardStats,
    table: HashTable<Entry>,
    expiry: BTreeMap<(u64, u64), u32>,
    /// Entries' blocks as the allocator rounds them.
    data_bytes: usize,
    volatile: usize,
    /// Bumped whenever the table may move its entries (growth or rehash): SCAN restarts the
    /// shard from its beginning when its cursor saw another layout.
    layout: u16,
}

impl Shard {
    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn volatile(&self) -> usize {
        self.volatile
    }

    /// What the shard costs: blocks, table, index.
    pub fn memory(&self) -> usize {
        self.data_bytes + self.table.allocation_size() + self.volatile * INDEX_COST
    }

    pub fn layout(&self) -> u16 {
        self.layout
    }

    pub fn num_buckets(&self) -> usize {
        self.table.num_buckets()
    }

    pub fn bucket(&self, i: usize) -> Option<&Entry> {
        self.table.get_bucket(i)
    }

    pub fn get(&self, hash: u64, key: &[u8]) -> Option<&Entry> {
        self.table.find(hash, |e| e.key() == key)
    }

    /// The entry of `key` to edit in place; the caller keeps the accounting right
    /// ([`Shard::recost`]).
    pub fn get_mut(&mut self, hash: u64, key: &[u8]) -> Option<&mut Entry> {
        self.table.find_mut(hash, |e| e.key() == key)
    }

    /// Inserts an entry for a key that is not in the table.
    pub fn insert(&mut self, hash: u64, entry: Entry, hasher: impl Fn(&Entry) -> u64) {
        // hashbrown grows or rehashes exactly when an insert finds no room left.
        if self.table.capacity() == self.table.len() {
            self.layout = self.layout.wrapping_add(1);
        }
        self.account_added(hash, &entry);
        self.table.insert_unique(hash, entry, hasher);
    }

    /// Stores an entry, inserting it or replacing the key's old one.
    pub fn put(&mut self, hash: u64, entry: Entry, hasher: impl Fn(&Entry) -> u64) {
        if self.get(hash, entry.key()).is_some() {
            let key = entry.key().to_vec();
            self.replace(hash, &key, entry);
        } else {
            self.insert(hash, entry, hasher);
        }
    }

    /// Counts a change in the cost of an entry edited in place (a collection that grew or
    /// shrank).
    pub fn recost(&mut self, before: usize, after: usize) {
        self.data_bytes = self.data_bytes + after - before;
    }

    /// Replaces the entry of an existing key (value or deadline changed).
    pub fn replace(&mut self, hash: u64, key: &[u8], entry: Entry) {
        if let Some(slot) = self.table.find_mut(hash, |e| e.key() == key) {
            let old = std::mem::replace(slot, entry);
            let new_deadline = slot.deadline();
            let new_cost = slot.cost();
            self.data_bytes = self.data_bytes - old.cost() + new_cost;
            self.track_deadline(hash, old.deadline(), new_deadline);
        }
    }

    /// Changes the deadline of an existing key in place.
    pub fn set_deadline(&mut self, hash: u64, key: &[u8], deadline: Option<u64>) {
        if let Some(slot) = self.table.find_mut(hash, |e| e.key() == key) {
            let old = slot.deadline();
            let old_cost = slot.cost();
            slot.set_deadline(deadline);
            let new_cost = slot.cost();
            self.data_bytes = self.data_bytes - old_cost + new_cost;
            self.track_deadline(hash, old, deadline);
        }
    }

    pub fn remove(&mut self, hash: u64, key: &[u8]) -> Option<Entry> {
        let found = self.table.find_entry(hash, |e| e.key() == key).ok()?;
        let (entry, _) = found.remove();
        self.data_bytes -= entry.cost();
        self.track_deadline(hash, entry.deadline(), None);
        Some(entry)
    }

    /// Removes every entry, returning how many there were.
    pub fn clear(&mut self) -> usize {
        let n = self.table.len();
        *self = Shard {
            layout: self.layout.wrapping_add(1),
            stats: self.stats,
            ..Shard::default()
        };
        n
    }

    /// Gives back the table's room beyond what its entries need (after FLUSHDB of one
    /// database), so SCAN does not walk empty buckets; SCAN cursors restart the shard.
    pub fn shrink(&mut self, hasher: impl Fn(&Entry) -> u64) {
        let before = self.table.capacity();
        self.table.shrink_to_fit(hasher);
        if self.table.capacity() != before {
            self.layout = self.layout.wrapping_add(1);
        }
    }

    fn account_added(&mut self, hash: u64, entry: &Entry) {
        self.data_bytes += entry.cost();
        self.track_deadline(hash, None, entry.deadline());
    }

    fn track_deadline(&mut self, hash: u64, old: Option<u64>, new: Option<u64>) {
        Index {
            expiry: &mut self.expiry,
            volatile: &mut self.volatile,
        }
        .change(hash, old, new);
    }

    /// Looks a key up for a command: a live entry, or one past its deadline (removed here, so
    /// it is never served), or nothing. `count` adds the outcome to the hit / miss counters.
    pub fn lookup(&mut self, hash: u64, key: &[u8], now_ms: u64, count: bool) -> Lookup<'_> {
        match self.table.find_entry(hash, |e| e.key() == key) {
            Err(_) => {
                self.stats.misses += u64::from(count);
                Lookup::Missing
            }
            Ok(found) if found.get().is_expired(now_ms) => {
                let (e, _) = found.remove();
                self.data_bytes -= e.cost();
                Index {
                    expiry: &mut self.expiry,
                    volatile: &mut self.volatile,
                }
                .change(hash, e.deadline(), None);
                self.stats.expired += 1;
                self.stats.misses += u64::from(count);
                Lookup::Expired(e)
            }
            Ok(found) => {
                self.stats.hits += u64::from(count);
                Lookup::Live(found.into_mut())
            }
        }
    }

    /// The entry of `key`, live or not, changing nothing (for [`crate::Keyspace::warm`]).
    pub fn peek(&self, hash: u64, key: &[u8]) -> Option<&Entry> {
        self.table.find(hash, |e| e.key() == key)
    }

    /// The earliest deadline in the shard.
    pub fn next_deadline(&self) -> Option<u64> {
        self.expiry.keys().next().map(|&(d, _)| d)
    }

    /// Up to `max` index entries due at `now_ms`, earliest first: (deadline, hash).
    pub fn due(&self, now_ms: u64, max: usize, out: &mut Vec<(u64, u64)>) {
        out.clear();
        out.extend(
            self.expiry
                .keys()
                .take_while(|&&(d, _)| d <= now_ms)
                .take(max)
                .copied(),
        );
    }

    /// Removes and returns up to about `max` entries whose deadline is at or before `now_ms`,
    /// earliest first.
    pub fn take_due(&mut self, now_ms: u64, max: usize, out: &mut Vec<Entry>) {
        let mut due = Vec::new();
        self.due(now_ms, max, &mut due);
        for (d, h) in due {
            let before = out.len();
            while let Ok(found) = self.table.find_entry(h, |e| e.deadline() == Some(d)) {
                let (e, _) = found.remove();
                self.data_bytes -= e.cost();
                self.track_deadline(h, Some(d), None);
                out.push(e);
            }
            if out.len() == before {
                // No entry behind this index entry: drop it rather than wake for it forever.
                self.expiry.remove(&(d, h));
            }
        }
    }

    /// Stores `value` under `key` (inserting or replacing), overwriting the block in place
    /// when the new value has the old one's length.
    pub fn store(
        &mut self,
        hash: u64,
        key: &[u8],
        value: &[u8],
        deadline: Option<u64>,
        clock: u32,
        hasher: impl Fn(&Entry) -> u64,
    ) {
        let Some(slot) = self.table.find_mut(hash, |e| e.key() == key) else {
            self.insert(hash, Entry::new(key, value, deadline, clock), hasher);
            return;
        };
        let old_deadline = slot.deadline();
        if slot.overwrite(value, deadline) {
            slot.set_clock(clock);
        } else {
            let old = std::mem::replace(slot, Entry::new(key, value, deadline, clock));
            self.data_bytes = self.data_bytes - old.cost() + slot.cost();
        }
        self.track_deadline(hash, old_deadline, deadline);
    }

    /// An index entry at or after `from` (wrapping to the start): a volatile key to sample.
    pub fn volatile_near(&self, from: (u64, u64)) -> Option<(u64, u64)> {
        self.expiry
            .range(from..)
            .next()
            .or_else(|| self.expiry.iter().next())
            .map(|(&k, _)| k)
    }

    /// The first and last deadline in the index.
    pub fn deadline_span(&self) -> Option<(u64, u64)> {
        let first = self.expiry.keys().next()?.0;
        let last = self.expiry.keys().next_back()?.0;
        Some((first, last))
    }

    /// Entries with `hash` whose deadline is `deadline` (for sampling through the index).
    pub fn find_volatile(&self, hash: u64, deadline: u64) -> Option<&Entry> {
        self.table
            .iter_hash(hash)
            .find(|e| e.deadline() == Some(deadline))
    }

    pub fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.table.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(key: &[u8]) -> u64 {
        // Few distinct hashes, so collisions are exercised.
        u64::from(key.iter().map(|&b| u32::from(b)).sum::<u32>() % 4)
    }

    fn put(s: &mut Shard, key: &[u8], deadline: Option<u64>) {
        s.insert(h(key), Entry::new(key, b"v", deadline, 0), |e| h(e.key()));
    }

    #[test]
    fn index_follows_every_change() {
        let mut s = Shard::default();
        put(&mut s, b"a", Some(10));
        put(&mut s, b"b", Some(10));
        put(&mut s, b"c", None);
        assert_eq!((s.len(), s.volatile(), s.next_deadline()), (3, 2, Some(10)));
        s.set_deadline(h(b"a"), b"a", Some(5));
        assert_eq!(s.next_deadline(), Some(5));
        s.set_deadline(h(b"a"), b"a", None);
        assert_eq!((s.volatile(), s.next_deadline()), (1, Some(10)));
        s.replace(h(b"c"), b"c", Entry::new(b"c", b"w", Some(3), 0));
        assert_eq!(s.next_deadline(), Some(3));
        s.remove(h(b"c"), b"c");
        s.remove(h(b"b"), b"b");
        assert_eq!(
            (s.volatile(), s.next_deadline(), s.expiry.len()),
            (0, None, 0)
        );
    }

    #[test]
    fn due_and_colliding_hashes() {
        let mut s = Shard::default();
        // "ab" and "ba" share a hash and a deadline.
        put(&mut s, b"ab", Some(7));
        put(&mut s, b"ba", Some(7));
        put(&mut s, b"zz", Some(9));
        let mut due = Vec::new();
        s.due(8, 10, &mut due);
        assert_eq!(due, vec![(7, h(b"ab"))]);
        // Removing one of the pair keeps the other indexed.
        s.remove(h(b"ab"), b"ab");
        s.due(8, 10, &mut due);
        assert_eq!(due, vec![(7, h(b"ba"))]);
        put(&mut s, b"ab", Some(7));
        let mut taken = Vec::new();
        s.take_due(8, 10, &mut taken);
        let mut keys: Vec<&[u8]> = taken.iter().map(Entry::key).collect();
        keys.sort();
        assert_eq!(keys, vec![&b"ab"[..], b"ba"]);
        assert_eq!((s.len(), s.volatile(), s.next_deadline()), (1, 1, Some(9)));
    }

    #[test]
    fn store_overwrites_in_place_or_replaces() {
        let mut s = Shard::default();
        s.store(1, b"k", b"aaa", None, 0, |_| 1);
        s.store(1, b"k", b"bbb", Some(5), 0, |_| 1);
        assert_eq!(
            (s.get(1, b"k").unwrap().string().unwrap(), s.next_deadline()),
            (&b"bbb"[..], Some(5))
        );
        s.store(1, b"k", b"cc", Some(6), 0, |_| 1);
        assert_eq!(
            (s.get(1, b"k").unwrap().string().unwrap(), s.next_deadline()),
            (&b"cc"[..], Some(6))
        );
        s.store(1, b"k", b"dd", None, 0, |_| 1);
        assert_eq!((s.len(), s.volatile(), s.next_deadline()), (1, 0, None));
        let cost = s.get(1, b"k").unwrap().cost();
        assert_eq!(s.data_bytes, cost);
    }

    #[test]
    fn memory_follows_entries() {
        let mut s = Shard::default();
        let empty = s.memory();
        put(&mut s, b"k", Some(1));
        assert!(s.memory() > empty);
        s.remove(h(b"k"), b"k");
        assert_eq!(s.data_bytes, 0);
        assert_eq!(s.volatile, 0);
    }

    #[test]
    fn growth_changes_the_layout() {
        let mut s = Shard::default();
        let before = s.layout();
        for i in 0..100u32 {
            put(&mut s, &i.to_le_bytes(), None);
        }
        assert_ne!(s.layout(), before);
        let grown = s.layout();
        s.clear();
        assert_ne!(s.layout(), grown);
    }
}
