//! Message bodies and MPUB batches.
//!
//! Every benchmark body starts with 16 bytes: a sequence word `[u16 run tag][u8 publisher]
//! [u40 sequence]` and the send time in nanoseconds since the run started; the rest is filler.
//! The sequence word lets the receiver count loss and duplicates exactly, the run tag keeps
//! messages left over from another run out of the counts, and the timestamp gives latency.

/// Bytes of header at the front of every body; the minimum `--size`.
pub const HEADER_LEN: usize = 16;
/// Publishers per run (the publisher index is one byte).
pub const MAX_PUBLISHERS: usize = 256;
const SEQ_BITS: u32 = 40;
const SEQ_MASK: u64 = (1 << SEQ_BITS) - 1;

/// nsqd's default `--max-body-size` (an MPUB body may not be larger).
pub const DEFAULT_MAX_BODY_SIZE: usize = 5 * 1024 * 1024;
/// nsqd's default `--max-msg-size`.
pub const DEFAULT_MAX_MSG_SIZE: usize = 1024 * 1024;

pub fn seq_word(tag: u16, publisher: u8, seq: u64) -> u64 {
    ((tag as u64) << 48) | ((publisher as u64) << SEQ_BITS) | (seq & SEQ_MASK)
}

/// The decoded header of a benchmark body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub tag: u16,
    pub publisher: u8,
    pub seq: u64,
    pub sent_ns: u64,
}

#[inline]
pub fn decode(body: &[u8]) -> Option<Header> {
    let w = u64::from_be_bytes(body.get(..8)?.try_into().ok()?);
    let ts = u64::from_be_bytes(body.get(8..16)?.try_into().ok()?);
    Some(Header {
        tag: (w >> 48) as u16,
        publisher: (w >> SEQ_BITS) as u8,
        seq: w & SEQ_MASK,
        sent_ns: ts,
    })
}

/// The largest batch that fits nsqd's default MPUB body limit for this message size.
pub fn max_batch_for(size: usize) -> usize {
    ((DEFAULT_MAX_BODY_SIZE - 4) / (size + 4)).max(1)
}

/// A ready-to-send `MPUB` command for up to `capacity` messages of one size; stamping rewrites
/// only the headers (the tests of the floor server and the tracker feed it raw MPUBs).
#[cfg(test)]
pub struct MpubBatch {
    buf: Vec<u8>,
    /// Offset of the `[i32 body size][i32 count]` words.
    sizes_at: usize,
    size: usize,
    capacity: usize,
}

#[cfg(test)]
impl MpubBatch {
    pub fn new(topic: &str, size: usize, capacity: usize) -> Self {
        let size = size.max(HEADER_LEN);
        let capacity = capacity.max(1);
        let mut buf = Vec::with_capacity(topic.len() + 14 + capacity * (size + 4));
        buf.extend_from_slice(b"MPUB ");
        buf.extend_from_slice(topic.as_bytes());
        buf.push(b'\n');
        let sizes_at = buf.len();
        buf.extend_from_slice(&[0u8; 8]);
        for _ in 0..capacity {
            buf.extend_from_slice(&(size as u32).to_be_bytes());
            buf.extend_from_slice(&[0u8; HEADER_LEN]);
            buf.resize(buf.len() + size - HEADER_LEN, b'x');
        }
        MpubBatch {
            buf,
            sizes_at,
            size,
            capacity,
        }
    }

    /// Stamp the first `n` messages with sequence numbers `first_seq..first_seq+n` and the send
    /// time, and return the command bytes for exactly those `n` messages.
    pub fn stamp(
        &mut self,
        n: usize,
        tag: u16,
        publisher: u8,
        first_seq: u64,
        sent_ns: u64,
    ) -> &[u8] {
        let n = n.clamp(1, self.capacity);
        let body_size = 4 + n * (4 + self.size);
        let at = self.sizes_at;
        self.buf[at..at + 4].copy_from_slice(&(body_size as u32).to_be_bytes());
        self.buf[at + 4..at + 8].copy_from_slice(&(n as u32).to_be_bytes());
        let ts = sent_ns.to_be_bytes();
        for i in 0..n {
            let off = at + 8 + i * (4 + self.size) + 4;
            let w = seq_word(tag, publisher, first_seq + i as u64).to_be_bytes();
            self.buf[off..off + 8].copy_from_slice(&w);
            self.buf[off + 8..off + 16].copy_from_slice(&ts);
        }
        &self.buf[..at + 4 + body_size]
    }
}

/// Bodies of one size for [`nsqr_client::Producer::multi_publish`]: each batch is stamped
/// into one fresh buffer (the publish hands it to the connection) and split into a `Bytes`
/// per message, which share it.
pub struct BodyBatch {
    size: usize,
    filler: Vec<u8>,
}

impl BodyBatch {
    pub fn new(size: usize) -> BodyBatch {
        let size = size.max(HEADER_LEN);
        BodyBatch {
            size,
            filler: vec![b'x'; size - HEADER_LEN],
        }
    }

    /// `n` bodies with sequence numbers `first_seq..first_seq+n` and the send time.
    pub fn stamp(
        &self,
        n: usize,
        tag: u16,
        publisher: u8,
        first_seq: u64,
        sent_ns: u64,
    ) -> Vec<bytes::Bytes> {
        use bytes::BufMut;
        let mut buf = bytes::BytesMut::with_capacity(n * self.size);
        for i in 0..n {
            buf.put_u64(seq_word(tag, publisher, first_seq + i as u64));
            buf.put_u64(sent_ns);
            buf.put_slice(&self.filler);
        }
        let mut all = buf.freeze();
        (0..n).map(|_| all.split_to(self.size)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_layout_and_decode() {
        let mut b = MpubBatch::new("t", 20, 3);
        let bytes = b.stamp(2, 7, 3, 100, 555).to_vec();
        assert_eq!(&bytes[..7], b"MPUB t\n");
        assert_eq!(
            u32::from_be_bytes(bytes[7..11].try_into().unwrap()),
            4 + 2 * 24
        );
        assert_eq!(u32::from_be_bytes(bytes[11..15].try_into().unwrap()), 2);
        assert_eq!(bytes.len(), 7 + 8 + 2 * 24);
        let second = &bytes[15 + 24 + 4..15 + 48];
        assert_eq!(
            decode(second),
            Some(Header {
                tag: 7,
                publisher: 3,
                seq: 101,
                sent_ns: 555
            })
        );
        assert_eq!(&second[16..], b"xxxx");
    }

    #[test]
    fn body_batches_match_mpub_batches() {
        let mut raw = MpubBatch::new("t", 20, 3);
        let wire = raw.stamp(3, 7, 3, 100, 555).to_vec();
        let bodies = BodyBatch::new(20).stamp(3, 7, 3, 100, 555);
        let mut expect = Vec::new();
        nsq_wire::client::put_mpub(&mut expect, "t", &bodies).unwrap();
        assert_eq!(wire, expect);
    }

    #[test]
    fn batch_limit() {
        assert_eq!(max_batch_for(65536), 79);
        assert!(max_batch_for(200) > 200);
    }
}
