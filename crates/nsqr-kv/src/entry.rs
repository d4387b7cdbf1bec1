//! One key and its value. A string key is a single allocation, so it costs one heap block plus
//! its 16-byte slot in the shard's table (Redis spends a dict entry, two objects and an SDS
//! header on the same key). A key of another type keeps the same header block (with an empty
//! value) beside its collection (`collection.rs`), both behind one box: the slot stays 16
//! bytes, and telling the two apart is the null-pointer niche of the string's block, no flag.
//!
//! Layout of the block:
//!
//! ```text
//! [flags: u8][lru / lfu: 24 bits][key length: u32 LE][deadline: u64 LE, only if volatile][key][value]
//! ```
//!
//! The deadline is an absolute Unix time in milliseconds: the key is gone from that millisecond
//! on. Changing whether a key has a deadline reallocates the block; changing the deadline or
//! the access clock does not.

use crate::collection::{Collection, KeyType, Value};

/// `flags` bit: the block holds a deadline.
const VOLATILE: u8 = 1;
const FIXED: usize = 8;
const DEADLINE: usize = 8;

/// A key, its value, its deadline and its access clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    Str(Block),
    Typed(Box<TypedEntry>),
}

/// A key whose value is a collection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypedEntry {
    /// Key, deadline and clock; its value part is empty.
    head: Block,
    value: Collection,
}

impl Entry {
    /// A new string entry; `clock` is the 24-bit LRU or LFU field.
    pub fn new(key: &[u8], value: &[u8], deadline: Option<u64>, clock: u32) -> Entry {
        Entry::Str(Block::new(key, &[value], deadline, clock))
    }

    /// A new string entry whose value is the concatenation of `parts` (APPEND builds its
    /// result straight into the new block).
    pub fn from_parts(key: &[u8], parts: &[&[u8]], deadline: Option<u64>, clock: u32) -> Entry {
        Entry::Str(Block::new(key, parts, deadline, clock))
    }

    /// A new entry holding a collection.
    pub fn typed(key: &[u8], value: Collection, deadline: Option<u64>, clock: u32) -> Entry {
        Entry::Typed(Box::new(TypedEntry {
            head: Block::new(key, &[], deadline, clock),
            value,
        }))
    }

    /// An entry holding `value`.
    pub fn of(key: &[u8], value: Value, deadline: Option<u64>, clock: u32) -> Entry {
        match value {
            Value::String(v) => Entry::new(key, &v, deadline, clock),
            Value::Collection(c) => Entry::typed(key, c, deadline, clock),
        }
    }

    /// The same value, deadline and clock under another key (RENAME): a collection is moved,
    /// not copied.
    pub fn renamed(self, key: &[u8]) -> Entry {
        let (deadline, clock) = (self.deadline(), self.clock());
        match self {
            Entry::Str(b) => Entry::new(key, b.value(), deadline, clock),
            Entry::Typed(mut t) => {
                t.head = Block::new(key, &[], deadline, clock);
                Entry::Typed(t)
            }
        }
    }

    /// A copy of the value and deadline under another key, with the access clock `clock`
    /// (COPY).
    pub fn copied(&self, key: &[u8], clock: u32) -> Entry {
        match self {
            Entry::Str(b) => Entry::new(key, b.value(), self.deadline(), clock),
            Entry::Typed(t) => Entry::typed(key, t.value.clone(), self.deadline(), clock),
        }
    }

    fn head(&self) -> &Block {
        match self {
            Entry::Str(b) => b,
            Entry::Typed(t) => &t.head,
        }
    }

    fn head_mut(&mut self) -> &mut Block {
        match self {
            Entry::Str(b) => b,
            Entry::Typed(t) => &mut t.head,
        }
    }

    pub fn key(&self) -> &[u8] {
        self.head().key()
    }

    /// The value of a string key; `None` for a key of another type.
    pub fn string(&self) -> Option<&[u8]> {
        match self {
            Entry::Str(b) => Some(b.value()),
            Entry::Typed(_) => None,
        }
    }

    /// The collection of a key that is not a string.
    pub fn collection(&self) -> Option<&Collection> {
        match self {
            Entry::Str(_) => None,
            Entry::Typed(t) => Some(&t.value),
        }
    }

    pub fn collection_mut(&mut self) -> Option<&mut Collection> {
        match self {
            Entry::Str(_) => None,
            Entry::Typed(t) => Some(&mut t.value),
        }
    }

    pub fn kind(&self) -> KeyType {
        match self {
            Entry::Str(_) => KeyType::String,
            Entry::Typed(t) => t.value.kind(),
        }
    }

    /// The deadline (Unix ms), if the key is volatile.
    pub fn deadline(&self) -> Option<u64> {
        self.head().deadline()
    }

    /// Whether the key is gone at `now_ms`.
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.deadline().is_some_and(|d| now_ms >= d)
    }

    /// Replaces the deadline (reallocating the header only when the key becomes or stops
    /// being volatile).
    pub fn set_deadline(&mut self, deadline: Option<u64>) {
        self.head_mut().set_deadline(deadline)
    }

    /// Replaces a string's value and deadline in place if the block's layout allows it (same
    /// value length, deadline present in both or neither); false if a new entry is needed.
    pub fn overwrite(&mut self, value: &[u8], deadline: Option<u64>) -> bool {
        match self {
            Entry::Str(b) => b.overwrite(value, deadline),
            Entry::Typed(_) => false,
        }
    }

    /// The 24-bit access clock (LRU seconds, or LFU counter and decrement time).
    pub fn clock(&self) -> u32 {
        self.head().clock()
    }

    pub fn set_clock(&mut self, clock: u32) {
        self.head_mut().set_clock(clock)
    }

    /// Bytes this entry costs, as the allocator rounds its blocks (a collection's by its
    /// estimate); its table slot is counted with the table.
    pub fn cost(&self) -> usize {
        match self {
            Entry::Str(b) => b.cost(),
            Entry::Typed(t) => {
                t.head.cost() + cost_of(std::mem::size_of::<TypedEntry>()) + t.value.cost()
            }
        }
    }
}

/// The header, key and (for a string) value, in one heap block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    block: Box<[u8]>,
}

impl Block {
    fn new(key: &[u8], parts: &[&[u8]], deadline: Option<u64>, clock: u32) -> Block {
        let header = FIXED + if deadline.is_some() { DEADLINE } else { 0 };
        let vlen: usize = parts.iter().map(|p| p.len()).sum();
        let mut block = Vec::with_capacity(header + key.len() + vlen);
        block.push(if deadline.is_some() { VOLATILE } else { 0 });
        block.extend_from_slice(&clock.to_le_bytes()[..3]);
        // Keys are bounded by the protocol's bulk limit (512 MiB), far below u32::MAX.
        block.extend_from_slice(&(key.len() as u32).to_le_bytes());
        if let Some(d) = deadline {
            block.extend_from_slice(&d.to_le_bytes());
        }
        block.extend_from_slice(key);
        for p in parts {
            block.extend_from_slice(p);
        }
        Block {
            block: block.into_boxed_slice(),
        }
    }

    fn header_len(&self) -> usize {
        FIXED
            + if self.block[0] & VOLATILE != 0 {
                DEADLINE
            } else {
                0
            }
    }

    fn key_len(&self) -> usize {
        u32::from_le_bytes([self.block[4], self.block[5], self.block[6], self.block[7]]) as usize
    }

    fn key(&self) -> &[u8] {
        let h = self.header_len();
        &self.block[h..h + self.key_len()]
    }

    fn value(&self) -> &[u8] {
        &self.block[self.header_len() + self.key_len()..]
    }

    fn deadline(&self) -> Option<u64> {
        if self.block[0] & VOLATILE == 0 {
            return None;
        }
        let mut d = [0u8; 8];
        d.copy_from_slice(&self.block[FIXED..FIXED + DEADLINE]);
        Some(u64::from_le_bytes(d))
    }

    fn set_deadline(&mut self, deadline: Option<u64>) {
        match (self.deadline().is_some(), deadline) {
            (true, Some(d)) => {
                self.block[FIXED..FIXED + DEADLINE].copy_from_slice(&d.to_le_bytes())
            }
            (false, None) => {}
            _ => *self = Block::new(self.key(), &[self.value()], deadline, self.clock()),
        }
    }

    fn overwrite(&mut self, value: &[u8], deadline: Option<u64>) -> bool {
        if value.len() != self.value().len() || deadline.is_some() != self.deadline().is_some() {
            return false;
        }
        let start = self.header_len() + self.key_len();
        self.block[start..].copy_from_slice(value);
        if let Some(d) = deadline {
            self.block[FIXED..FIXED + DEADLINE].copy_from_slice(&d.to_le_bytes());
        }
        true
    }

    fn clock(&self) -> u32 {
        u32::from_le_bytes([self.block[1], self.block[2], self.block[3], 0])
    }

    fn set_clock(&mut self, clock: u32) {
        self.block[1..4].copy_from_slice(&clock.to_le_bytes()[..3]);
    }

    /// Bytes the block costs, as the allocator rounds it (16-byte granules with an 8-byte
    /// header).
    fn cost(&self) -> usize {
        cost_of(self.block.len())
    }
}

/// The accounting cost of a heap block of `len` bytes (see [`Entry::cost`]).
pub fn cost_of(len: usize) -> usize {
    (len + 8).div_ceil(16) * 16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_round_trip() {
        let e = Entry::new(b"key", b"value", None, 0x00ab_cdef);
        assert_eq!(
            (e.key(), e.string().unwrap(), e.deadline()),
            (&b"key"[..], &b"value"[..], None)
        );
        assert_eq!(e.clock(), 0x00ab_cdef);
        let v = Entry::new(b"k", b"", Some(1_700_000_000_123), 7);
        assert_eq!((v.key(), v.string().unwrap()), (&b"k"[..], &b""[..]));
        assert_eq!(v.deadline(), Some(1_700_000_000_123));
        assert!(!v.is_expired(1_700_000_000_122));
        assert!(v.is_expired(1_700_000_000_123));
    }

    #[test]
    fn deadline_changes_keep_key_value_and_clock() {
        let mut e = Entry::new(b"k", b"v", None, 42);
        e.set_deadline(Some(10));
        assert_eq!(
            (e.deadline(), e.key(), e.string().unwrap(), e.clock()),
            (Some(10), &b"k"[..], &b"v"[..], 42)
        );
        e.set_deadline(Some(20));
        assert_eq!(e.deadline(), Some(20));
        e.set_deadline(None);
        assert_eq!(
            (e.deadline(), e.key(), e.string().unwrap(), e.clock()),
            (None, &b"k"[..], &b"v"[..], 42)
        );
    }

    #[test]
    fn appended_parts() {
        let e = Entry::from_parts(b"k", &[b"hello", b" ", b"world"], None, 0);
        assert_eq!(e.string().unwrap(), b"hello world");
    }

    #[test]
    fn typed_entries_keep_their_header() {
        let mut h = crate::collection::Hash::default();
        h.insert(b"f", b"v");
        let mut e = Entry::typed(b"key", h.into(), None, 9);
        assert_eq!(
            (e.key(), e.kind(), e.string(), e.clock()),
            (&b"key"[..], KeyType::Hash, None, 9)
        );
        e.set_deadline(Some(5));
        assert_eq!(
            (e.key(), e.deadline(), e.clock()),
            (&b"key"[..], Some(5), 9)
        );
        assert!(!e.overwrite(b"x", Some(5)));
        assert_eq!(e.collection().map(Collection::is_empty), Some(false));
        assert!(e.cost() > Entry::new(b"key", b"", Some(5), 9).cost());
    }

    #[test]
    fn slot_is_two_words_and_cost_rounds_like_malloc() {
        assert_eq!(std::mem::size_of::<Entry>(), 16);
        // 8 header + 16 key + 32 value = 56 bytes: one 64-byte chunk.
        assert_eq!(cost_of(56), 64);
        assert_eq!(cost_of(57), 80);
    }
}
