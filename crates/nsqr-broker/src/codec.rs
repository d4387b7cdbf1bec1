//! A message as a disk queue record: nsqd's payload `[i64 timestamp][u16 attempts][16-byte hex
//! id][body]`, so the files stay readable by nsqd. Kept apart from the writer so the format is
//! in one small place.

use diskqueue::MESSAGE_HEADER_LEN;
use nsq_wire::MessageId;

use crate::message::Message;

/// Bytes a message takes in a data file.
pub(crate) fn record_len(body_len: usize) -> u64 {
    diskqueue::LENGTH_PREFIX_LEN + u64::from(MESSAGE_HEADER_LEN) + body_len as u64
}

pub(crate) fn encode(m: &Message, out: &mut Vec<u8>) {
    out.extend_from_slice(&m.timestamp().to_be_bytes());
    out.extend_from_slice(&m.attempts.to_be_bytes());
    out.extend_from_slice(&m.id.to_hex());
    out.extend_from_slice(m.body());
}

pub(crate) fn decode(p: Vec<u8>) -> Option<Message> {
    let ts: [u8; 8] = p.get(0..8)?.try_into().ok()?;
    let attempts: [u8; 2] = p.get(8..10)?.try_into().ok()?;
    let id = MessageId::from_hex(p.get(10..26)?)?;
    Message::from_record(
        id,
        i64::from_be_bytes(ts),
        u16::from_be_bytes(attempts),
        p,
        MESSAGE_HEADER_LEN as usize,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    #[test]
    fn encode_decode_round_trip() {
        let m = Message::new(MessageId(0x1234_abcd), -5, 7, Bytes::from_static(b"hello"))
            .expect("small");
        let mut buf = Vec::new();
        encode(&m, &mut buf);
        assert_eq!(buf.len() as u64 + 4, record_len(5));
        assert_eq!(&buf[10..26], b"000000001234abcd");
        let d = decode(buf).expect("decode");
        assert_eq!(
            (d.id, d.timestamp(), d.attempts, d.body()),
            (m.id, -5, 7, &b"hello"[..])
        );
        let mut bad = vec![0u8; 30];
        bad[10..26].copy_from_slice(b"zzzzzzzzzzzzzzzz");
        assert!(decode(bad).is_none());
    }
}
