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

const HEX: &[u8; 16] = b"0123456789abcdef";

impl MessageId {
    /// The 16-byte lowercase hex form sent to clients.
    pub fn to_hex(self) -> [u8; 16] {
        let mut out = [0u8; 16];
        for (i, o) in out.iter_mut().enumerate() {
            *o = HEX[((self.0 >> (60 - 4 * i)) & 0xf) as usize];
        }
        out
    }

    /// Parse the 16-byte hex form. None for anything that is not 16 hex digits: such an id can
    /// never be in flight (nsqd checks only the length, and then reports "not in flight").
    pub fn from_hex(b: &[u8]) -> Option<MessageId> {
        let b: &[u8; 16] = b.try_into().ok()?;
        let mut v: u64 = 0;
        let mut bad = 0u8;
        for &c in b {
            let d = HEX_VALUE[c as usize];
            bad |= d;
            v = (v << 4) | (d & 0xf) as u64;
        }
        (bad & 0x80 == 0).then_some(MessageId(v))
    }
}

/// Hex digit values; 0x80 marks a byte that is not a hex digit (FIN is per message, so this
/// is a table lookup per byte rather than a chain of range checks).
static HEX_VALUE: [u8; 256] = {
    let mut t = [0x80u8; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

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

    proptest! {
        #[test]
        fn hex_round_trip(v in any::<u64>()) {
            let id = MessageId(v);
            prop_assert_eq!(MessageId::from_hex(&id.to_hex()), Some(id));
        }
    }
}
