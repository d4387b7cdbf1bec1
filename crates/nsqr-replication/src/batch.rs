//! How a publish batch is laid out in a log entry and on the wire: one byte string holding
//! every message back to back, rather than one serde value per message. Decoding it copies the
//! string once and makes each body a slice of that copy, so a batch of 200 messages costs one
//! allocation, not 200, each time an entry is read from the disk or the network.
//!
//! A message is `[id: 16][timestamp_ns: i64 LE][deferred: u8][deliver_at_ms: u64 LE, if
//! deferred is 1][body length: u32 LE][body]`. Anything else (a short string, a flag other than
//! 0 or 1, a length past the end) is a decode error: the bytes come from a peer or the disk.

use bytes::{Buf, BufMut, Bytes};
use serde::de::{Error as _, Visitor};
use serde::{Deserializer, Serializer};

use crate::command::{Message, MessageId};

/// The fixed part of a message: id, timestamp, the deferred flag, the body's length.
const FIXED: usize = 16 + 8 + 1 + 4;

/// Serializes `messages` as one byte string (serde's `with`).
pub(crate) fn serialize<S: Serializer>(messages: &[Message], s: S) -> Result<S::Ok, S::Error> {
    let size: usize = messages.iter().map(|m| FIXED + 8 + m.body.len()).sum();
    let mut out = Vec::with_capacity(size);
    for m in messages {
        let len = u32::try_from(m.body.len())
            .map_err(|_| serde::ser::Error::custom("a message body over 4 GiB"))?;
        out.put_slice(&m.id.0);
        out.put_i64_le(m.timestamp_ns);
        match m.deliver_at_ms {
            None => out.put_u8(0),
            Some(at) => {
                out.put_u8(1);
                out.put_u64_le(at);
            }
        }
        out.put_u32_le(len);
        out.put_slice(&m.body);
    }
    s.serialize_bytes(&out)
}

/// Deserializes the byte string [`serialize`] wrote (serde's `with`).
pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Message>, D::Error> {
    let bytes = d.deserialize_bytes(BytesVisitor)?;
    decode(bytes).map_err(D::Error::custom)
}

/// Splits a batch's byte string into its messages, bodies sliced from `bytes`.
fn decode(bytes: Bytes) -> Result<Vec<Message>, &'static str> {
    let mut messages = Vec::with_capacity(bytes.len() / (FIXED + 64));
    let mut rest = bytes.clone();
    while rest.has_remaining() {
        if rest.remaining() < FIXED {
            return Err("a publish batch ends inside a message");
        }
        let mut id = [0u8; 16];
        rest.copy_to_slice(&mut id);
        let timestamp_ns = rest.get_i64_le();
        let deliver_at_ms = match rest.get_u8() {
            0 => None,
            1 if rest.remaining() >= 8 + 4 => Some(rest.get_u64_le()),
            1 => return Err("a publish batch ends inside a message"),
            _ => return Err("a publish batch has a bad deferred flag"),
        };
        let len = rest.get_u32_le() as usize;
        if rest.remaining() < len {
            return Err("a publish batch's body runs past its end");
        }
        let body = rest.split_to(len);
        messages.push(Message {
            id: MessageId(id),
            timestamp_ns,
            deliver_at_ms,
            body,
        });
    }
    Ok(messages)
}

struct BytesVisitor;

impl<'de> Visitor<'de> for BytesVisitor {
    type Value = Bytes;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a publish batch's bytes")
    }

    fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Bytes, E> {
        Ok(Bytes::copy_from_slice(v))
    }

    fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Bytes, E> {
        Ok(Bytes::from(v))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::command::Command;

    fn message(n: u8, deferred: Option<u64>, body: Vec<u8>) -> Message {
        Message {
            id: MessageId([n; 16]),
            timestamp_ns: -i64::from(n),
            deliver_at_ms: deferred,
            body: Bytes::from(body),
        }
    }

    proptest! {
        #[test]
        fn a_batch_round_trips(
            raw in proptest::collection::vec(
                (any::<u8>(), proptest::option::of(any::<u64>()), proptest::collection::vec(any::<u8>(), 0..64)),
                0..20,
            )
        ) {
            let batch: Vec<Message> = raw.into_iter().map(|(n, d, b)| message(n, d, b)).collect();
            let command = Command::Publish(batch);
            let encoded = postcard::to_stdvec(&command).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let decoded: Command = postcard::from_bytes(&encoded).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(decoded, command);
        }

        #[test]
        fn any_bytes_decode_or_fail_cleanly(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode(Bytes::from(bytes));
        }
    }

    #[test]
    fn truncated_and_bad_batches_are_refused() {
        let command = Command::Publish(vec![message(1, Some(5), vec![7; 10])]);
        let encoded = postcard::to_stdvec(&command).expect("encode");
        // The variant's tag, the byte string's varint length (one byte here), the string.
        assert_eq!(usize::from(encoded[1]), encoded.len() - 2);
        let inner = Bytes::copy_from_slice(&encoded[2..]);
        assert_eq!(decode(inner.clone()).map(|m| m.len()), Ok(1));
        for cut in 1..inner.len() {
            assert!(decode(inner.slice(..cut)).is_err(), "cut at {cut}");
        }
        let mut bad = inner.to_vec();
        bad[24] = 2;
        assert_eq!(
            decode(Bytes::from(bad)),
            Err("a publish batch has a bad deferred flag")
        );
    }
}
