//! What OBJECT and MEMORY USAGE report about one key: how Redis would encode its value, how
//! long since it was used (LRU) or how often (LFU), and what it costs here. Reading it is not
//! an access: the key's clock is left alone, as in Redis.

use crate::clock::{idle_seconds, lru_clock, now_ms};
use crate::keyspace::{Find, Keyspace};

/// Redis's longest `embstr` value.
const EMBSTR_MAX: usize = 44;

/// One key, as OBJECT sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyInfo {
    /// The encoding Redis would give this value: `int`, `embstr` or `raw` for a string, and
    /// see `collection.rs` for the other types.
    pub encoding: &'static str,
    /// Seconds since the last access (meaningful under an LRU or random policy).
    pub idle_seconds: u64,
    /// The LFU counter after decay (meaningful under an LFU policy).
    pub frequency: u8,
    /// Bytes the key costs: its block and its slot in the table.
    pub memory: usize,
}

/// The encoding Redis gives a string value.
pub fn string_encoding(v: &[u8]) -> &'static str {
    let canonical_int = v.len() <= 20
        && resp_wire::parse_i64(v).is_some_and(|n| itoa::Buffer::new().format(n).as_bytes() == v);
    if canonical_int {
        "int"
    } else if v.len() <= EMBSTR_MAX {
        "embstr"
    } else {
        "raw"
    }
}

impl Keyspace {
    /// OBJECT / MEMORY USAGE: what is known of `key`, or `None` if it does not exist.
    pub fn key_info(&self, key: &[u8]) -> Option<KeyInfo> {
        let now = now_ms();
        let hash = self.hash(key);
        let mut g = self.lock(hash);
        let e = self.find(&mut g, hash, key, now, Find::Peek)?;
        let clock = e.clock();
        Some(KeyInfo {
            encoding: match e.collection() {
                Some(c) => c.encoding(),
                None => string_encoding(e.string().unwrap_or_default()),
            },
            idle_seconds: u64::from(idle_seconds(lru_clock(now), clock)),
            frequency: crate::evict::lfu_decayed(clock, now) as u8,
            memory: e.cost() + std::mem::size_of::<crate::entry::Entry>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::mem;
    use crate::{Pending, SetOptions};

    #[test]
    fn encodings_as_redis() {
        assert_eq!(string_encoding(b"12345"), "int");
        assert_eq!(string_encoding(b"-7"), "int");
        assert_eq!(string_encoding(b"007"), "embstr");
        assert_eq!(string_encoding(b"1.5"), "embstr");
        assert_eq!(string_encoding(b"99999999999999999999"), "embstr");
        assert_eq!(string_encoding(&[b'a'; 44]), "embstr");
        assert_eq!(string_encoding(&[b'a'; 45]), "raw");
    }

    #[test]
    fn key_info_of_a_key_and_of_none() {
        let ks = mem();
        ks.set(
            b"k",
            b"foo",
            SetOptions::default(),
            None,
            &mut Pending::default(),
        )
        .unwrap();
        let info = ks.key_info(b"k").unwrap();
        assert_eq!(info.encoding, "embstr");
        assert!(info.idle_seconds <= 5);
        assert!(info.memory >= 16 + 3);
        assert_eq!(ks.key_info(b"none"), None);
    }
}
