//! Message ids and the wire layout of a message.
//!
//! An id is a u64 shown on the wire as 16 lowercase hex bytes, laid out as nsqd's guid:
//! `((ts - EPOCH) << 22) | (node_id << 12) | sequence` with ts = unix nanoseconds >> 20. Keeping
//! it a u64 inside the server makes FIN an integer hash lookup instead of a string compare.

use bytes::BufMut;

/// nsqd's custom epoch, in its (ns >> 20) time units.
pub const ID_EPOCH: i64 = 1_288_834_974_288;
const SEQUENCE_BITS: u32 = 12;
const NODE_SHIFT: u32 = 12;
const TS_SHIFT: u32 = 22;
const SEQUENCE_MASK: u64 = (1 << SEQUENCE_BITS) - 1;

/// Bytes before the body in a message frame / disk record: timestamp, attempts, id.
pub const MESSAGE_HEADER_LEN: usize = 8 + 2 + 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MessageId(pub u64);

impl MessageId {
    /// The 16-byte lowercase hex form sent to clients.
    pub fn to_hex(self) -> [u8; 16] {
        let hi = hex_ascii(spread_nibbles((self.0 >> 32) as u32));
        let lo = hex_ascii(spread_nibbles(self.0 as u32));
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&hi.to_be_bytes());
        out[8..].copy_from_slice(&lo.to_be_bytes());
        out
    }

    /// Parse the 16-byte hex form. None for anything that is not 16 hex digits: such an id can
    /// never be in flight (nsqd checks only the length, and then reports "not in flight").
    pub fn from_hex(b: &[u8]) -> Option<MessageId> {
        let b: &[u8; 16] = b.try_into().ok()?;
        let (hi, lo) = b.split_at(8);
        let hi = hex_value(u64::from_be_bytes(hi.try_into().ok()?))?;
        let lo = hex_value(u64::from_be_bytes(lo.try_into().ok()?))?;
        Some(MessageId(((hi as u64) << 32) | lo as u64))
    }
}

// Hex conversion eight characters at a time (SWAR): ids are encoded on every delivery and
// decoded on every FIN, so this is on the hot path of every consumer.

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// Spread the 8 nibbles of `x` into the low nibbles of 8 bytes, most significant first.
fn spread_nibbles(x: u32) -> u64 {
    let mut x = x as u64;
    x = (x | (x << 16)) & 0x0000_FFFF_0000_FFFF;
    x = (x | (x << 8)) & 0x00FF_00FF_00FF_00FF;
    (x | (x << 4)) & 0x0F0F_0F0F_0F0F_0F0F
}

/// Each byte 0..=15 to its lowercase hex character.
fn hex_ascii(nibbles: u64) -> u64 {
    let letters = ((nibbles + 6 * ONES) >> 4) & ONES;
    nibbles + 0x30 * ONES + letters * (b'a' - b'0' - 10) as u64
}

/// Bytes of `x` (all < 0x80) that lie in `lo..=hi` get their 0x80 bit set.
fn bytes_in_range(x: u64, lo: u8, hi: u8) -> u64 {
    (x + (0x80 - lo as u64) * ONES) & !(x + (0x7F - hi as u64) * ONES) & HIGH
}

/// Eight hex characters (big-endian in `x`) to their 32-bit value; None if any is not hex.
fn hex_value(x: u64) -> Option<u32> {
    if x & HIGH != 0 {
        return None;
    }
    let digit = bytes_in_range(x, b'0', b'9');
    let letter = bytes_in_range(x | (0x20 * ONES), b'a', b'f');
    if digit | letter != HIGH {
        return None;
    }
    let mut v = (x & (0x0F * ONES)) + ((x >> 6) & ONES) * 9;
    v = (v | (v >> 4)) & 0x00FF_00FF_00FF_00FF;
    v = (v | (v >> 8)) & 0x0000_FFFF_0000_FFFF;
    v = (v | (v >> 16)) & 0xFFFF_FFFF;
    Some(v as u32)
}

/// The node field of an id.
const NODE_FIELD: u64 = 0x3ff << NODE_SHIFT;

impl MessageId {
    /// The id `n` places after this one in an [`IdGenerator`]'s order within one call of
    /// [`IdGenerator::next_n`]: the sequence counts up, carrying into the time unit. A publish
    /// then stores its first id only.
    pub fn nth_after(self, n: u64) -> MessageId {
        let seq = (self.0 & SEQUENCE_MASK) + n;
        let ts = (self.0 >> TS_SHIFT) + (seq >> SEQUENCE_BITS);
        MessageId((ts << TS_SHIFT) | (self.0 & NODE_FIELD) | (seq & SEQUENCE_MASK))
    }
}

/// Generates strictly increasing ids in nsqd's layout. Where nsqd sleeps 1 ms when 4096 ids
/// were taken in one time unit (or the clock went back), this borrows the next time unit
/// instead, so publishing never stalls; ids stay unique and increasing.
#[derive(Debug, Clone)]
pub struct IdGenerator {
    node_id: u64,
    last_ts: i64,
    sequence: u64,
}

impl IdGenerator {
    pub fn new(node_id: u16) -> Self {
        IdGenerator {
            node_id: (node_id as u64) & 0x3ff,
            last_ts: 0,
            sequence: 0,
        }
    }

    /// The next id, given the current unix time in nanoseconds.
    pub fn next(&mut self, now_ns: i64) -> MessageId {
        let ts = now_ns >> 20;
        if ts > self.last_ts {
            self.last_ts = ts;
            self.sequence = 0;
        } else {
            self.sequence += 1;
            if self.sequence > SEQUENCE_MASK {
                self.last_ts += 1;
                self.sequence = 0;
            }
        }
        let rel = (self.last_ts - ID_EPOCH).max(0) as u64;
        MessageId((rel << TS_SHIFT) | (self.node_id << NODE_SHIFT) | self.sequence)
    }

    /// `n` ids at once (at least one is taken): the first, the others being
    /// `first.nth_after(i)`; the same ids as `n` calls of [`IdGenerator::next`].
    pub fn next_n(&mut self, now_ns: i64, n: u64) -> MessageId {
        let first = self.next(now_ns);
        let seq = self.sequence + n.saturating_sub(1);
        self.last_ts += (seq >> SEQUENCE_BITS) as i64;
        self.sequence = seq & SEQUENCE_MASK;
        first
    }
}

/// Append the message-frame data (or disk record payload):
/// `[i64 timestamp][u16 attempts][16-byte hex id][body]`.
pub fn put_message<B: BufMut>(
    buf: &mut B,
    timestamp: i64,
    attempts: u16,
    id: MessageId,
    body: &[u8],
) {
    buf.put_i64(timestamp);
    buf.put_u16(attempts);
    buf.put_slice(&id.to_hex());
    buf.put_slice(body);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn decodes_nsqd_example() {
        let id = MessageId::from_hex(b"18a3799c26269000").expect("hex");
        assert_eq!((id.0 >> NODE_SHIFT) & 0x3ff, 617);
        assert_eq!(id.0 & SEQUENCE_MASK, 0);
        assert_eq!(&id.to_hex(), b"18a3799c26269000");
    }

    #[test]
    fn rejects_non_hex_and_wrong_length() {
        assert!(MessageId::from_hex(b"18a3799c2626900z").is_none());
        assert!(MessageId::from_hex(b"18a3799c2626900").is_none());
    }

    #[test]
    fn ids_increase_past_sequence_exhaustion() {
        let mut g = IdGenerator::new(5);
        let now = 1_795_290_495_000_000_000i64;
        let mut last = g.next(now);
        for _ in 0..10_000 {
            let id = g.next(now);
            assert!(id > last);
            assert_eq!((id.0 >> NODE_SHIFT) & 0x3ff, 5);
            last = id;
        }
        // the clock going back never produces a smaller id
        assert!(g.next(now - 1_000_000_000) > last);
    }

    fn reference_from_hex(b: &[u8]) -> Option<u64> {
        if b.len() != 16 {
            return None;
        }
        u64::from_str_radix(std::str::from_utf8(b).ok()?, 16)
            .ok()
            .filter(|_| b.iter().all(|c| c.is_ascii_hexdigit()))
    }

    #[test]
    fn every_byte_value_is_judged_like_the_reference() {
        for c in 0u8..=255 {
            let mut id = *b"0123456789abcdef";
            for pos in [0, 7, 8, 15] {
                id[pos] = c;
                assert_eq!(
                    MessageId::from_hex(&id).map(|m| m.0),
                    reference_from_hex(&id),
                    "byte {c:#x} at {pos}"
                );
                id[pos] = b'0';
            }
        }
        assert_eq!(
            &MessageId(0x0123_4567_89ab_cdef).to_hex(),
            b"0123456789abcdef"
        );
        assert_eq!(
            MessageId::from_hex(b"0123456789ABCDEF"),
            Some(MessageId(0x0123_4567_89ab_cdef))
        );
    }

    proptest! {
        #[test]
        fn arbitrary_16_bytes_match_the_reference(b in proptest::collection::vec(any::<u8>(), 16)) {
            prop_assert_eq!(MessageId::from_hex(&b).map(|m| m.0), reference_from_hex(&b));
        }

        #[test]
        fn hex_round_trip(v in any::<u64>()) {
            let id = MessageId(v);
            prop_assert_eq!(MessageId::from_hex(&id.to_hex()), Some(id));
        }
    }

    proptest::proptest! {
        /// Taking n ids at once gives what n single calls give, and `nth_after` finds each.
        #[test]
        fn next_n_matches_repeated_next(
            before in 0u64..5000, counts in proptest::collection::vec(1u64..9000, 1..4),
            node in 0u16..1024,
        ) {
            let now = 1_700_000_000_000_000_000i64;
            let (mut one, mut many) = (IdGenerator::new(node), IdGenerator::new(node));
            for _ in 0..before {
                one.next(now);
                many.next(now);
            }
            for n in counts {
                let first = many.next_n(now, n);
                for i in 0..n {
                    proptest::prop_assert_eq!(one.next(now), first.nth_after(i));
                }
            }
            proptest::prop_assert_eq!(one.next(now + (1 << 20)), many.next(now + (1 << 20)));
        }
    }
}
