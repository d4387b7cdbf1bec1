//! The values of the types beyond strings: hashes and sets, each a Rust collection behind the
//! key's entry (see `entry.rs`). Insertion-ordered maps (`indexmap`) rather than plain hash
//! tables, because HRANDFIELD, SPOP and SRANDMEMBER pick members at random: by index, in
//! constant time; a removal moves the last member into the hole (`swap_remove`), which the
//! HSCAN / SSCAN cursor allows for by walking from the end (see [`scan_step`]).
//!
//! A small hash (what Redis keeps as a listpack) is packed in one buffer (`pairs.rs`): a table
//! costs a slot, a hash and two heap blocks per field, where most hashes have a few short
//! fields.
//!
//! Each collection keeps an estimate of the bytes it costs (members' blocks as the allocator
//! rounds them, plus a fixed cost per slot), so `maxmemory` sees a collection grow and shrink
//! without walking it.
//!
//! A list is a deque of packed nodes (`quicklist.rs`).
//!
//! `OBJECT ENCODING` names what Redis 7.0 would use for the same value (a list is always a
//! `quicklist`): a small hash is a
//! `listpack` (at most 512 fields, none over 64 bytes) and a set of integers an `intset` (at
//! most 512), until one command makes it big; like Redis, a value never goes back to the
//! small encoding.

use indexmap::{IndexMap, IndexSet};

use crate::entry::cost_of;
use crate::pairs::Pairs;
pub use crate::quicklist::List;
use crate::stream::Stream;

type Build = foldhash::fast::RandomState;

/// Redis 7.0's `hash-max-listpack-entries` and `hash-max-listpack-value` (its defaults: 512,
/// unlike the sorted set's 128).
const HASH_SMALL_ENTRIES: usize = 512;
const HASH_SMALL_VALUE: usize = 64;
/// Redis's `set-max-intset-entries`.
const SET_SMALL_ENTRIES: usize = 512;
/// A slot's cost: its place in the entries' vector (hash and boxed member, value) and in the
/// index table (an 8-byte position and a control byte, tables about 7/8 full).
const HASH_SLOT: usize = 8 + 16 + 16 + 10;
const SET_SLOT: usize = 8 + 16 + 10;

/// The type of a key's value, as TYPE names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyType {
    String,
    List,
    Hash,
    Set,
    Stream,
    Zset,
}

impl KeyType {
    pub fn name(self) -> &'static str {
        match self {
            KeyType::String => "string",
            KeyType::List => "list",
            KeyType::Hash => "hash",
            KeyType::Set => "set",
            KeyType::Stream => "stream",
            KeyType::Zset => "zset",
        }
    }

    /// The kind TYPE and SCAN ... TYPE call `name` (`None` for a type not served here).
    pub fn from_name(name: &[u8]) -> Option<KeyType> {
        [
            KeyType::String,
            KeyType::List,
            KeyType::Hash,
            KeyType::Set,
            KeyType::Stream,
            KeyType::Zset,
        ]
        .into_iter()
        .find(|k| k.name().as_bytes().eq_ignore_ascii_case(name))
    }
}

/// A key's whole value, owned (RESTORE, snapshots and the log build entries from it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    String(Vec<u8>),
    Collection(Collection),
}

/// A value that is not a string. Streams and sorted sets, the largest structures, are boxed so
/// that every key of another type does not carry their size in its entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Collection {
    List(List),
    Hash(Hash),
    Set(Set),
    Stream(Box<Stream>),
    Zset(Box<crate::zset::ZSet>),
}

impl Collection {
    pub fn kind(&self) -> KeyType {
        match self {
            Collection::List(_) => KeyType::List,
            Collection::Hash(_) => KeyType::Hash,
            Collection::Set(_) => KeyType::Set,
            Collection::Stream(_) => KeyType::Stream,
            Collection::Zset(_) => KeyType::Zset,
        }
    }

    /// Bytes the collection costs (its heap blocks, estimated; a boxed one's box included).
    pub fn cost(&self) -> usize {
        match self {
            Collection::List(l) => l.cost(),
            Collection::Hash(h) => h.bytes,
            Collection::Set(s) => s.bytes,
            Collection::Stream(s) => cost_of(std::mem::size_of::<Stream>()) + s.cost(),
            Collection::Zset(z) => cost_of(std::mem::size_of::<crate::zset::ZSet>()) + z.cost(),
        }
    }

    pub fn is_empty(&self) -> bool {
        match self {
            Collection::List(l) => l.is_empty(),
            Collection::Hash(h) => h.is_empty(),
            Collection::Set(s) => s.set.is_empty(),
            Collection::Stream(s) => !s.exists,
            Collection::Zset(z) => z.is_empty(),
        }
    }

    /// The encoding Redis would report (`OBJECT ENCODING`).
    pub fn encoding(&self) -> &'static str {
        match self {
            Collection::List(_) => "quicklist",
            Collection::Hash(h) if h.is_compact() => "listpack",
            Collection::Hash(_) => "hashtable",
            Collection::Set(s) if !s.big => "intset",
            Collection::Set(_) => "hashtable",
            Collection::Stream(_) => "stream",
            Collection::Zset(z) if z.is_compact() => "listpack",
            Collection::Zset(_) => "skiplist",
        }
    }
}

/// Gives typed access to one kind of collection (used by the commands' generic steps in
/// `typed.rs`).
pub trait Typed: Default + Into<Collection> {
    const KIND: KeyType;
    /// Whether a change is logged as the whole value (lists: their commands are not
    /// idempotent) rather than as the state of the members it touched.
    const WHOLE: bool = false;
    fn is_empty(&self) -> bool;
    /// A member's state for the log: its value (empty for a set member) if present.
    fn state(&self, member: &[u8]) -> Option<&[u8]>;
    fn of(c: &Collection) -> Option<&Self>;
    fn of_mut(c: &mut Collection) -> Option<&mut Self>;
}

/// A hash: fields to values, packed while Redis would keep it a listpack (`pairs.rs`), a
/// table from the command that makes it big on.
#[derive(Debug, Clone, Default)]
pub struct Hash {
    fields: Fields,
    bytes: usize,
}

#[derive(Debug, Clone)]
enum Fields {
    Packed(Pairs),
    Table(IndexMap<Box<[u8]>, Box<[u8]>, Build>),
}

impl Default for Fields {
    fn default() -> Fields {
        Fields::Packed(Pairs::default())
    }
}

impl PartialEq for Hash {
    fn eq(&self, other: &Hash) -> bool {
        self.len() == other.len() && self.iter().all(|(f, v)| other.get(f) == Some(v))
    }
}

impl Eq for Hash {}

impl From<Hash> for Collection {
    fn from(h: Hash) -> Collection {
        Collection::Hash(h)
    }
}

impl Typed for Hash {
    const KIND: KeyType = KeyType::Hash;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn state(&self, field: &[u8]) -> Option<&[u8]> {
        self.get(field)
    }
    fn of(c: &Collection) -> Option<&Hash> {
        match c {
            Collection::Hash(h) => Some(h),
            _ => None,
        }
    }
    fn of_mut(c: &mut Collection) -> Option<&mut Hash> {
        match c {
            Collection::Hash(h) => Some(h),
            _ => None,
        }
    }
}

fn pair_cost(field: &[u8], value: &[u8]) -> usize {
    HASH_SLOT + cost_of(field.len()) + cost_of(value.len())
}

impl Hash {
    pub fn len(&self) -> usize {
        match &self.fields {
            Fields::Packed(p) => p.len(),
            Fields::Table(m) => m.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether Redis would still keep this hash as a listpack.
    pub fn is_compact(&self) -> bool {
        matches!(self.fields, Fields::Packed(_))
    }

    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match &self.fields {
            Fields::Packed(p) => p.get(field),
            Fields::Table(m) => m.get(field).map(|v| &**v),
        }
    }

    /// Sets a field; whether it is new. A new value as long as the old one is written over it
    /// (no new block).
    pub fn insert(&mut self, field: &[u8], value: &[u8]) -> bool {
        let long = field.len() > HASH_SMALL_VALUE || value.len() > HASH_SMALL_VALUE;
        if let Fields::Packed(p) = &mut self.fields {
            let full = p.len() >= HASH_SMALL_ENTRIES && p.get(field).is_none();
            if !long && !full {
                if let Some(new) = p.insert(field, value) {
                    self.bytes = cost_of(p.heap_bytes());
                    return new;
                }
            }
            self.make_table();
        }
        let Fields::Table(map) = &mut self.fields else {
            return false;
        };
        self.bytes += pair_cost(field, value);
        match map.get_mut(field) {
            Some(v) => {
                self.bytes -= pair_cost(field, v);
                if v.len() == value.len() {
                    v.copy_from_slice(value);
                } else {
                    *v = value.into();
                }
                false
            }
            None => {
                map.insert(field.into(), value.into());
                true
            }
        }
    }

    /// Turns the packed form into the table (once: a hash never goes back, as in Redis).
    fn make_table(&mut self) {
        let Fields::Packed(p) = &self.fields else {
            return;
        };
        let mut map = IndexMap::with_capacity_and_hasher(p.len() + 1, Build::default());
        let mut bytes = 0;
        for (f, v) in p.iter() {
            bytes += pair_cost(f, v);
            map.insert(f.into(), v.into());
        }
        self.fields = Fields::Table(map);
        self.bytes = bytes;
    }

    /// Removes a field; whether it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match &mut self.fields {
            Fields::Packed(p) => {
                let found = p.remove(field);
                self.bytes = cost_of(p.heap_bytes());
                found
            }
            Fields::Table(m) => match m.swap_remove_entry(field) {
                Some((f, v)) => {
                    self.bytes -= pair_cost(&f, &v);
                    true
                }
                None => false,
            },
        }
    }

    /// The field and value at `i` (0 ≤ i < len): for random picks and scans.
    pub fn at(&self, i: usize) -> Option<(&[u8], &[u8])> {
        match &self.fields {
            Fields::Packed(p) => p.at(i),
            Fields::Table(m) => m.get_index(i).map(|(f, v)| (&**f, &**v)),
        }
    }

    /// The pairs at `positions` (each 0 ≤ i < len), in that order: for random picks, which may
    /// repeat positions millions of times. A packed hash is walked once, not once per position.
    pub fn pairs_at<'a>(
        &'a self,
        positions: &'a [usize],
    ) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + 'a {
        let packed: Vec<(&[u8], &[u8])> = match &self.fields {
            Fields::Packed(p) => p.iter().collect(),
            Fields::Table(_) => Vec::new(),
        };
        positions.iter().filter_map(move |&i| match &self.fields {
            Fields::Packed(_) => packed.get(i).copied(),
            Fields::Table(m) => m.get_index(i).map(|(f, v)| (&**f, &**v)),
        })
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&[u8], &[u8])> {
        match &self.fields {
            Fields::Packed(p) => HashIter::Packed(p.iter()),
            Fields::Table(m) => HashIter::Table(m.iter()),
        }
    }
}

/// A hash's pairs in either form.
enum HashIter<'a> {
    Packed(crate::pairs::Iter<'a>),
    Table(indexmap::map::Iter<'a, Box<[u8]>, Box<[u8]>>),
}

impl<'a> Iterator for HashIter<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            HashIter::Packed(p) => p.next(),
            HashIter::Table(m) => m.next().map(|(f, v)| (&**f, &**v)),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            HashIter::Packed(p) => p.size_hint(),
            HashIter::Table(m) => m.size_hint(),
        }
    }
}

impl ExactSizeIterator for HashIter<'_> {}

/// A set of members.
#[derive(Debug, Clone, Default)]
pub struct Set {
    set: IndexSet<Box<[u8]>, Build>,
    bytes: usize,
    big: bool,
}

impl PartialEq for Set {
    fn eq(&self, other: &Set) -> bool {
        self.set == other.set
    }
}

impl Eq for Set {}

impl From<Set> for Collection {
    fn from(s: Set) -> Collection {
        Collection::Set(s)
    }
}

impl Typed for Set {
    const KIND: KeyType = KeyType::Set;
    fn is_empty(&self) -> bool {
        self.set.is_empty()
    }
    fn state(&self, member: &[u8]) -> Option<&[u8]> {
        self.contains(member).then_some(&[][..])
    }
    fn of(c: &Collection) -> Option<&Set> {
        match c {
            Collection::Set(s) => Some(s),
            _ => None,
        }
    }
    fn of_mut(c: &mut Collection) -> Option<&mut Set> {
        match c {
            Collection::Set(s) => Some(s),
            _ => None,
        }
    }
}

/// Whether Redis would keep `m` in an intset: the canonical text of a 64-bit integer.
fn is_intset_member(m: &[u8]) -> bool {
    m.len() <= 20
        && resp_wire::parse_i64(m).is_some_and(|n| itoa::Buffer::new().format(n).as_bytes() == m)
}

impl Set {
    pub fn len(&self) -> usize {
        self.set.len()
    }

    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    /// Whether Redis would still keep this set as an intset.
    pub fn is_compact(&self) -> bool {
        !self.big
    }

    pub fn contains(&self, m: &[u8]) -> bool {
        self.set.contains(m)
    }

    /// Adds a member; whether it is new.
    pub fn insert(&mut self, m: &[u8]) -> bool {
        if self.set.contains(m) {
            return false;
        }
        self.big |= !is_intset_member(m);
        self.bytes += SET_SLOT + cost_of(m.len());
        self.set.insert(m.into());
        self.big |= self.set.len() > SET_SMALL_ENTRIES;
        true
    }

    /// Removes a member; whether it was there.
    pub fn remove(&mut self, m: &[u8]) -> bool {
        let found = self.set.swap_remove(m);
        if found {
            self.bytes -= SET_SLOT + cost_of(m.len());
        }
        found
    }

    /// The member at `i` (0 ≤ i < len).
    pub fn at(&self, i: usize) -> Option<&[u8]> {
        self.set.get_index(i).map(|m| &**m)
    }

    /// Removes and returns the member at `i`.
    pub fn take(&mut self, i: usize) -> Option<Box<[u8]>> {
        let m = self.set.swap_remove_index(i)?;
        self.bytes -= SET_SLOT + cost_of(m.len());
        Some(m)
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[u8]> {
        self.set.iter().map(|m| &**m)
    }
}

/// Positions of random members in a collection of `len`, as HRANDFIELD and SRANDMEMBER pick
/// them: `count` distinct ones (all of them if `count` is `len` or more), or for a negative
/// `count`, `-count` picks that may repeat. The caller bounds `-count`.
pub fn random_indices(len: usize, count: i64) -> Vec<usize> {
    if len == 0 {
        return Vec::new();
    }
    if count < 0 {
        let n = usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX);
        return (0..n).map(|_| fastrand::usize(..len)).collect();
    }
    let n = usize::try_from(count).unwrap_or(usize::MAX);
    if n >= len {
        return (0..len).collect();
    }
    if n.saturating_mul(3) > len {
        // A large share: shuffle the front of all positions.
        let mut all: Vec<usize> = (0..len).collect();
        for i in 0..n {
            all.swap(i, fastrand::usize(i..len));
        }
        all.truncate(n);
        return all;
    }
    let mut picked = hashbrown::HashSet::with_capacity_and_hasher(n, Build::default());
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let i = fastrand::usize(..len);
        if picked.insert(i) {
            out.push(i);
        }
    }
    out
}

/// One step of HSCAN / SSCAN over a collection of `len` members: the indices to visit (about
/// `count` of them) and the cursor to return. The walk goes from the last index down: a
/// removal moves the last member into the hole, which is then either still ahead of the walk
/// or a member already returned, so every member present for the whole scan is returned.
/// Cursor 0 starts a scan and ends one; cursor `c` resumes at index `c - 1`.
pub fn scan_step(len: usize, cursor: u64, count: usize) -> (std::ops::Range<usize>, u64) {
    let top = match cursor {
        0 => len,
        c => usize::try_from(c).unwrap_or(usize::MAX).min(len),
    };
    let bottom = top.saturating_sub(count.max(1));
    (bottom..top, bottom as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_counts_its_bytes_and_encoding() {
        let mut h = Hash::default();
        assert!(h.insert(b"f", b"v"));
        assert!(!h.insert(b"f", b"longer value"));
        assert_eq!(h.get(b"f"), Some(&b"longer value"[..]));
        // Packed: one block of the pair and its two length bytes.
        assert_eq!(h.bytes, cost_of(2 + 1 + 12));
        let c = Collection::Hash(h.clone());
        assert_eq!((c.encoding(), c.kind().name()), ("listpack", "hash"));
        h.insert(b"g", &[b'x'; 65]);
        assert_eq!(Collection::Hash(h.clone()).encoding(), "hashtable");
        assert_eq!(
            h.bytes,
            pair_cost(b"f", b"longer value") + pair_cost(b"g", &[0; 65])
        );
        assert_eq!(h.get(b"f"), Some(&b"longer value"[..]));
        assert!(h.remove(b"g") && h.remove(b"f") && !h.remove(b"f"));
        assert_eq!((h.bytes, h.len()), (0, 0));
        // Never back to the small encoding.
        assert_eq!(Collection::Hash(h).encoding(), "hashtable");
    }

    #[test]
    fn hash_turns_into_a_table_past_512_fields_and_keeps_them() {
        let mut h = Hash::default();
        for i in 0..HASH_SMALL_ENTRIES {
            assert!(h.insert(format!("f{i}").as_bytes(), b"v"));
        }
        let packed = h.clone();
        // Replacing a field of a full packed hash keeps it packed.
        assert!(!h.insert(b"f0", b"w"));
        assert!(h.is_compact() && h != packed);
        assert!(h.insert(b"one more", b"v"));
        assert!(!h.is_compact());
        assert_eq!(
            (h.len(), h.get(b"f0"), h.get(b"f511")),
            (513, Some(&b"w"[..]), Some(&b"v"[..]))
        );
        assert!(h.remove(b"one more") && !h.insert(b"f0", b"v"));
        // Random picks by position, repeats included, in either form.
        let picks = [128, 0, 128, 511, 512];
        for x in [&h, &packed] {
            let at: Vec<_> = picks.iter().filter_map(|&i| x.at(i)).collect();
            assert_eq!(x.pairs_at(&picks).collect::<Vec<_>>(), at);
            assert_eq!(at.len(), 4);
        }
        // Equal across forms, either way round: the same fields and values.
        assert_eq!(h, packed);
        assert_eq!(packed, h);
        assert_eq!(h.iter().len(), packed.iter().len());
    }

    #[test]
    fn set_encoding_follows_redis() {
        let mut s = Set::default();
        for m in [&b"1"[..], b"-20", b"300"] {
            assert!(s.insert(m));
        }
        assert!(!s.insert(b"1"));
        assert_eq!(Collection::Set(s.clone()).encoding(), "intset");
        s.insert(b"01");
        assert_eq!(Collection::Set(s.clone()).encoding(), "hashtable");
        let mut n = Set::default();
        for i in 0..=SET_SMALL_ENTRIES {
            n.insert(i.to_string().as_bytes());
        }
        assert_eq!(Collection::Set(n).encoding(), "hashtable");
        while let Some(m) = s.take(0) {
            assert!(!s.contains(&m));
        }
        assert_eq!(s.bytes, 0);
    }

    #[test]
    fn scan_walks_down_and_survives_removals() {
        assert_eq!(scan_step(25, 0, 10), (15..25, 15));
        assert_eq!(scan_step(25, 15, 10), (5..15, 5));
        assert_eq!(scan_step(25, 5, 10), (0..5, 0));
        // The collection shrank below the cursor: resume at its end.
        assert_eq!(scan_step(3, 15, 10), (0..3, 0));
        let mut s = Set::default();
        for i in 0..50 {
            s.insert(format!("m{i}").as_bytes());
        }
        let (mut seen, mut cursor) = (Vec::new(), 0);
        loop {
            let (range, next) = scan_step(s.len(), cursor, 7);
            seen.extend(range.filter_map(|i| s.at(i)).map(<[u8]>::to_vec));
            // Remove a member already returned, as a client might meanwhile.
            s.remove(&seen[0].clone());
            cursor = next;
            if cursor == 0 {
                break;
            }
        }
        for i in 1..50 {
            let m = format!("m{i}").into_bytes();
            assert!(seen.contains(&m) || !s.contains(&m), "{i} missed");
        }
    }

    #[test]
    fn random_picks_distinct_or_repeated() {
        assert!(random_indices(0, 5).is_empty() && random_indices(0, -5).is_empty());
        assert_eq!(random_indices(3, 10), vec![0, 1, 2]);
        for (len, count) in [(100, 10), (100, 90)] {
            let mut got = random_indices(len, count);
            got.sort_unstable();
            got.dedup();
            assert_eq!(got.len(), count as usize);
            assert!(got.iter().all(|&i| i < len));
        }
        let rep = random_indices(2, -50);
        assert_eq!(rep.len(), 50);
        assert!(rep.iter().all(|&i| i < 2));
    }

    #[test]
    fn an_entry_of_a_hash_set_or_list_stays_small() {
        // The size every hash, set or list key's entry pays (see `entry.rs`).
        assert!(std::mem::size_of::<Collection>() <= 88);
    }

    #[test]
    fn kinds_by_name() {
        assert_eq!(KeyType::from_name(b"HASH"), Some(KeyType::Hash));
        assert_eq!(KeyType::from_name(b"zset"), Some(KeyType::Zset));
        assert_eq!(KeyType::from_name(b"stream"), Some(KeyType::Stream));
        assert_eq!(KeyType::from_name(b"vectorset"), None);
    }
}
