//! A map keyed by a message's sequence number, for the replicated state: sequence numbers are
//! handed out in order and almost every insert is at the end, so the map is a ring of
//! fixed-size chunks of slots, indexed by arithmetic instead of a tree search. A chunk with no
//! value left is freed (and dropped from the front), so a message left unfinished among
//! millions finished after it costs one chunk plus a pointer per chunk since, not a slot per
//! message.
//!
//! It serializes as a map from sequence number to value, as a `BTreeMap<u64, V>` does.

use std::collections::VecDeque;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Slots per chunk.
const CHUNK: u64 = 64;

struct Chunk<V> {
    slots: Vec<Option<V>>,
    live: usize,
}

impl<V> Chunk<V> {
    fn new() -> Box<Chunk<V>> {
        let mut slots = Vec::with_capacity(CHUNK as usize);
        slots.resize_with(CHUNK as usize, || None);
        Box::new(Chunk { slots, live: 0 })
    }
}

/// Values keyed by sequence number, iterated in order.
pub struct SeqMap<V> {
    /// Chunk `i` holds the sequence numbers from `(base + i) * CHUNK`; None is an empty chunk.
    chunks: VecDeque<Option<Box<Chunk<V>>>>,
    base: u64,
    len: usize,
}

impl<V> Default for SeqMap<V> {
    fn default() -> Self {
        SeqMap {
            chunks: VecDeque::new(),
            base: 0,
            len: 0,
        }
    }
}

impl<V> SeqMap<V> {
    /// How many values the map holds.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the map holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Sets the value of `seq`; returns the value it replaced.
    pub fn insert(&mut self, seq: u64, value: V) -> Option<V> {
        let chunk = self.chunk_for(seq / CHUNK).get_or_insert_with(Chunk::new);
        let old = chunk.slots[(seq % CHUNK) as usize].replace(value);
        if old.is_none() {
            chunk.live += 1;
            self.len += 1;
        }
        old
    }

    /// The value of `seq`.
    pub fn get(&self, seq: u64) -> Option<&V> {
        let chunk = self.chunks.get(self.position(seq)?)?.as_ref()?;
        chunk.slots[(seq % CHUNK) as usize].as_ref()
    }

    /// The value of `seq`, to change.
    pub fn get_mut(&mut self, seq: u64) -> Option<&mut V> {
        let at = self.position(seq)?;
        let chunk = self.chunks.get_mut(at)?.as_mut()?;
        chunk.slots[(seq % CHUNK) as usize].as_mut()
    }

    /// True if `seq` has a value.
    pub fn contains_key(&self, seq: u64) -> bool {
        self.get(seq).is_some()
    }

    /// Removes the value of `seq`, freeing its chunk if it was the chunk's last.
    pub fn remove(&mut self, seq: u64) -> Option<V> {
        let at = self.position(seq)?;
        let slot = self.chunks.get_mut(at)?;
        let chunk = slot.as_mut()?;
        let old = chunk.slots[(seq % CHUNK) as usize].take()?;
        chunk.live -= 1;
        self.len -= 1;
        if chunk.live == 0 {
            *slot = None;
            self.trim();
        }
        Some(old)
    }

    /// Every sequence number and its value, in order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &V)> + '_ {
        self.chunks
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.as_ref().map(|c| (self.base + i as u64, c)))
            .flat_map(|(n, chunk)| {
                chunk
                    .slots
                    .iter()
                    .enumerate()
                    .filter_map(move |(i, v)| v.as_ref().map(|v| (n * CHUNK + i as u64, v)))
            })
    }

    /// Every sequence number held, in order.
    pub fn keys(&self) -> impl Iterator<Item = u64> + '_ {
        self.iter().map(|(seq, _)| seq)
    }

    /// The index in `chunks` of the chunk holding `seq`, if the ring reaches it.
    fn position(&self, seq: u64) -> Option<usize> {
        usize::try_from((seq / CHUNK).checked_sub(self.base)?).ok()
    }

    /// The slot of chunk number `n`, growing the ring at either end to reach it.
    fn chunk_for(&mut self, n: u64) -> &mut Option<Box<Chunk<V>>> {
        if self.chunks.is_empty() {
            self.base = n;
        }
        while n < self.base {
            self.chunks.push_front(None);
            self.base -= 1;
        }
        let at = (n - self.base) as usize;
        while self.chunks.len() <= at {
            self.chunks.push_back(None);
        }
        &mut self.chunks[at]
    }

    /// Drops empty chunks from both ends.
    fn trim(&mut self) {
        while matches!(self.chunks.front(), Some(None)) {
            self.chunks.pop_front();
            self.base += 1;
        }
        while matches!(self.chunks.back(), Some(None)) {
            self.chunks.pop_back();
        }
    }
}

impl<V: Clone> Clone for SeqMap<V> {
    fn clone(&self) -> Self {
        let mut copy = SeqMap::default();
        for (seq, v) in self.iter() {
            copy.insert(seq, v.clone());
        }
        copy
    }
}

impl<V: PartialEq> PartialEq for SeqMap<V> {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl<V: Eq> Eq for SeqMap<V> {}

impl<V: fmt::Debug> fmt::Debug for SeqMap<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<V: Serialize> Serialize for SeqMap<V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.len))?;
        for (seq, v) in self.iter() {
            map.serialize_entry(&seq, v)?;
        }
        map.end()
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for SeqMap<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(SeqMapVisitor(PhantomData))
    }
}

struct SeqMapVisitor<V>(PhantomData<V>);

impl<'de, V: Deserialize<'de>> Visitor<'de> for SeqMapVisitor<V> {
    type Value = SeqMap<V>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map from sequence numbers to values")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<SeqMap<V>, A::Error> {
        let mut map = SeqMap::default();
        while let Some((seq, v)) = access.next_entry::<u64, V>()? {
            map.insert(seq, v);
        }
        Ok(map)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    #[derive(Clone, Debug)]
    enum Op {
        Insert(u64, u32),
        Remove(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0u64..1000, any::<u32>()).prop_map(|(s, v)| Op::Insert(s, v)),
            (0u64..1000).prop_map(Op::Remove),
        ]
    }

    proptest! {
        /// Whatever is inserted and removed, the map answers as a BTreeMap does.
        #[test]
        fn behaves_as_a_btree_map(ops in proptest::collection::vec(op(), 0..300)) {
            let mut map = SeqMap::default();
            let mut model = BTreeMap::new();
            for op in ops {
                match op {
                    Op::Insert(s, v) => prop_assert_eq!(map.insert(s, v), model.insert(s, v)),
                    Op::Remove(s) => prop_assert_eq!(map.remove(s), model.remove(&s)),
                }
                prop_assert_eq!(map.len(), model.len());
            }
            let got: Vec<(u64, u32)> = map.iter().map(|(s, v)| (s, *v)).collect();
            let want: Vec<(u64, u32)> = model.iter().map(|(s, v)| (*s, *v)).collect();
            prop_assert_eq!(&got, &want);
            for s in 0..1000 {
                prop_assert_eq!(map.get(s), model.get(&s));
            }
            let encoded = postcard::to_stdvec(&map).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(&encoded, &postcard::to_stdvec(&model).map_err(|e| TestCaseError::fail(e.to_string()))?);
            let decoded: SeqMap<u32> = postcard::from_bytes(&encoded).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(decoded, map);
        }
    }

    #[test]
    fn a_straggler_costs_a_chunk_not_a_slot_per_message() {
        let mut map = SeqMap::default();
        for seq in 0..100_000u64 {
            map.insert(seq, ());
        }
        for seq in 1..100_000u64 {
            map.remove(seq);
        }
        let full = map.chunks.iter().filter(|c| c.is_some()).count();
        assert_eq!((map.len(), full), (1, 1));
        map.remove(0);
        assert!(map.chunks.is_empty(), "empty chunks leave the ring");
    }
}
