//! A message as a disk queue record: nsqd's payload `[i64 timestamp][u16 attempts][16-byte hex
//! id][body]`, so the files stay readable by nsqd. Kept apart from the writer so the format is
//! in one small place. Records come back from disk a chunk at a time; the messages of a chunk
//! point into its buffer ([`RecordBatch`]).

use diskqueue::{Chunk, PayloadRanges, MESSAGE_HEADER_LEN};
use nsq_wire::MessageId;

use crate::message::{Message, RecordBatch};

/// Bytes a message takes in a data file.
pub(crate) fn record_len(body_len: usize) -> u64 {
    diskqueue::LENGTH_PREFIX_LEN + u64::from(MESSAGE_HEADER_LEN) + body_len as u64
}

#[inline(always)]
pub(crate) fn encode(m: &Message, out: &mut Vec<u8>) {
    out.extend_from_slice(&m.timestamp().to_be_bytes());
    out.extend_from_slice(&m.attempts.to_be_bytes());
    out.extend_from_slice(&m.id.to_hex());
    out.extend_from_slice(m.body());
}

/// The messages of a chunk read from disk, in order; None for a record whose header does not
/// decode (an id that is not 16 hex digits), which the caller reports.
pub(crate) fn decode_chunk(chunk: Chunk, mut place: impl FnMut(Option<Message>)) {
    let batch = RecordBatch::new(crate::chunk_pool::POOL.share(chunk.into_data()));
    for payload in PayloadRanges::new(batch.data()) {
        let header = batch.data().get(payload.clone()).and_then(header);
        let body = payload.start + MESSAGE_HEADER_LEN as usize..payload.end;
        place(header.and_then(|(id, attempts)| batch.message(id, attempts, body)));
    }
}

/// One record's payload as a message with a buffer of its own (side files: `head_store.rs`).
pub(crate) fn decode_one(payload: &[u8]) -> Option<Message> {
    let (id, attempts) = header(payload)?;
    let ts: [u8; 8] = payload.get(..8)?.try_into().ok()?;
    let body = payload.get(MESSAGE_HEADER_LEN as usize..)?;
    Message::new(
        id,
        i64::from_be_bytes(ts),
        attempts,
        bytes::Bytes::copy_from_slice(body),
    )
}

/// Id and attempts of a record's payload (its timestamp stays in the buffer, see
/// [`timestamp_before`]).
fn header(p: &[u8]) -> Option<(MessageId, u16)> {
    let attempts: [u8; 2] = p.get(8..10)?.try_into().ok()?;
    let id = MessageId::from_hex(p.get(10..26)?)?;
    Some((id, u16::from_be_bytes(attempts)))
}

/// The timestamp of the record whose body starts at `body_at` of `data` (0 if there is no
/// header there, which `decode_chunk` never lets happen).
pub(crate) fn timestamp_before(data: &[u8], body_at: usize) -> i64 {
    let at = body_at.wrapping_sub(MESSAGE_HEADER_LEN as usize);
    data.get(at..at.wrapping_add(8))
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map_or(0, i64::from_be_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn chunk_of(payloads: &[Vec<u8>]) -> Chunk {
        let mut data = Vec::new();
        for p in payloads {
            data.extend_from_slice(&(p.len() as u32).to_be_bytes());
            data.extend_from_slice(p);
        }
        Chunk::from_layout(data).expect("whole records")
    }

    fn decoded(chunk: Chunk) -> Vec<Option<Message>> {
        let mut out = Vec::new();
        decode_chunk(chunk, |m| out.push(m));
        out
    }

    #[test]
    fn encode_decode_round_trip() {
        let m = Message::new(MessageId(0x1234_abcd), -5, 7, Bytes::from_static(b"hello"))
            .expect("small");
        let mut buf = Vec::new();
        encode(&m, &mut buf);
        assert_eq!(buf.len() as u64 + 4, record_len(5));
        assert_eq!(&buf[10..26], b"000000001234abcd");
        let d = decoded(chunk_of(&[buf])).remove(0).expect("decode");
        assert_eq!(
            (d.id, d.timestamp(), d.attempts, d.body()),
            (m.id, -5, 7, &b"hello"[..])
        );
    }

    #[test]
    fn the_messages_of_a_chunk_share_its_buffer_and_keep_their_own_header() {
        let msgs: Vec<Message> = (0..5u16)
            .map(|i| {
                let body = Bytes::from(vec![b'a' + i as u8; usize::from(i) * 3]);
                Message::new(MessageId(100 + u64::from(i)), 1000 * i64::from(i), i, body)
                    .expect("small")
            })
            .collect();
        let mut payloads: Vec<Vec<u8>> = msgs
            .iter()
            .map(|m| {
                let mut p = Vec::new();
                encode(m, &mut p);
                p
            })
            .collect();
        // record 2 has an id that is not hex: reported as None, the others still decode
        payloads[2][10..26].copy_from_slice(b"zzzzzzzzzzzzzzzz");
        let got = decoded(chunk_of(&payloads));
        assert_eq!(got.len(), 5);
        assert!(got[2].is_none());
        for (i, (m, want)) in got.iter().zip(&msgs).enumerate() {
            let Some(m) = m else { continue };
            assert_eq!(
                (m.id, m.timestamp(), m.attempts, m.body()),
                (want.id, want.timestamp(), want.attempts, want.body()),
                "message {i}"
            );
            // a requeue with a delay copies it out, header included
            let d = m.detached();
            assert_eq!((d.timestamp(), d.body()), (want.timestamp(), want.body()));
        }
    }
}
