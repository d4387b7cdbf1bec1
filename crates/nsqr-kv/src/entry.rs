//! One key and its value in a single allocation, so a key costs one heap block plus its
//! 16-byte slot in the shard's table (Redis spends a dict entry, two objects and an SDS header
//! on the same key).
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

/// `flags` bit: the block holds a deadline.
const VOLATILE: u8 = 1;
const FIXED: usize = 8;
const DEADLINE: usize = 8;

/// A key, its value, its deadline and its access clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    block: Box<[u8]>,
}

impl Entry {
    /// A new entry; `clock` is the 24-bit LRU or LFU field.
    pub fn new(key: &[u8], value: &[u8], deadline: Option<u64>, clock: u32) -> Entry {
        Entry::from_parts(key, &[value], deadline, clock)
    }

    /// A new entry whose value is the concatenation of `parts` (APPEND builds its result
    /// straight into the new block).
    pub fn from_parts(key: &[u8], parts: &[&[u8]], deadline: Option<u64>, clock: u32) -> Entry {
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
        Entry {
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

    pub fn key(&self) -> &[u8] {
        let h = self.header_len();
        &self.block[h..h + self.key_len()]
    }

    pub fn value(&self) -> &[u8] {
        &self.block[self.header_len() + self.key_len()..]
    }

    /// The deadline (Unix ms), if the key is volatile.
    pub fn deadline(&self) -> Option<u64> {
        if self.block[0] & VOLATILE == 0 {
            return None;
        }
        let mut d = [0u8; 8];
        d.copy_from_slice(&self.block[FIXED..FIXED + DEADLINE]);
        Some(u64::from_le_bytes(d))
    }

    /// Whether the key is gone at `now_ms`.
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.deadline().is_some_and(|d| now_ms >= d)
    }

    /// Replaces the deadline (reallocating only when the key becomes or stops being volatile).
    pub fn set_deadline(&mut self, deadline: Option<u64>) {
        match (self.deadline().is_some(), deadline) {
            (true, Some(d)) => {
                self.block[FIXED..FIXED + DEADLINE].copy_from_slice(&d.to_le_bytes())
            }
            (false, None) => {}
            _ => *self = Entry::new(self.key(), self.value(), deadline, self.clock()),
        }
    }

    /// Replaces the value and deadline in place if the block's layout allows it (same value
    /// length, deadline present in both or neither); false if a new block is needed.
    pub fn overwrite(&mut self, value: &[u8], deadline: Option<u64>) -> bool {
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

    /// The 24-bit access clock (LRU seconds, or LFU counter and decrement time).
    pub fn clock(&self) -> u32 {
        u32::from_le_bytes([self.block[1], self.block[2], self.block[3], 0])
    }

    pub fn set_clock(&mut self, clock: u32) {
        self.block[1..4].copy_from_slice(&clock.to_le_bytes()[..3]);
    }

    /// Bytes this entry's block costs, as the allocator rounds it (16-byte granules with an
    /// 8-byte header); its table slot is counted with the table.
    pub fn cost(&self) -> usize {
        cost_of(self.block.len())
    }
}

/// The accounting cost of a block of `len` bytes (see [`Entry::cost`]).
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
            (e.key(), e.value(), e.deadline()),
            (&b"key"[..], &b"value"[..], None)
        );
        assert_eq!(e.clock(), 0x00ab_cdef);
        let v = Entry::new(b"k", b"", Some(1_700_000_000_123), 7);
        assert_eq!((v.key(), v.value()), (&b"k"[..], &b""[..]));
        assert_eq!(v.deadline(), Some(1_700_000_000_123));
        assert!(!v.is_expired(1_700_000_000_122));
        assert!(v.is_expired(1_700_000_000_123));
    }

    #[test]
    fn deadline_changes_keep_key_value_and_clock() {
        let mut e = Entry::new(b"k", b"v", None, 42);
        e.set_deadline(Some(10));
        assert_eq!(
            (e.deadline(), e.key(), e.value(), e.clock()),
            (Some(10), &b"k"[..], &b"v"[..], 42)
        );
        e.set_deadline(Some(20));
        assert_eq!(e.deadline(), Some(20));
        e.set_deadline(None);
        assert_eq!(
            (e.deadline(), e.key(), e.value(), e.clock()),
            (None, &b"k"[..], &b"v"[..], 42)
        );
    }

    #[test]
    fn appended_parts() {
        let e = Entry::from_parts(b"k", &[b"hello", b" ", b"world"], None, 0);
        assert_eq!(e.value(), b"hello world");
    }

    #[test]
    fn slot_is_two_words_and_cost_rounds_like_malloc() {
        assert_eq!(std::mem::size_of::<Entry>(), 16);
        // 8 header + 16 key + 32 value = 56 bytes: one 64-byte chunk.
        assert_eq!(cost_of(56), 64);
        assert_eq!(cost_of(57), 80);
    }
}
