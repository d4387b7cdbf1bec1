//! Server-to-client frames: `[i32 size][i32 frame_type][data]`, size = 4 + len(data).

use bytes::BufMut;

use crate::message::{put_message, MessageId, MESSAGE_HEADER_LEN};

/// The 4 bytes a V2 client sends first.
pub const MAGIC_V2: &[u8; 4] = b"  V2";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum FrameType {
    Response = 0,
    Error = 1,
    Message = 2,
}

/// Append a response frame (`OK`, `CLOSE_WAIT`, `_heartbeat_`, JSON).
pub fn put_response<B: BufMut>(buf: &mut B, data: &[u8]) {
    put_frame(buf, FrameType::Response, data);
}

/// Append an error frame.
pub fn put_error<B: BufMut>(buf: &mut B, text: &str) {
    put_frame(buf, FrameType::Error, text.as_bytes());
}

pub fn put_frame<B: BufMut>(buf: &mut B, t: FrameType, data: &[u8]) {
    buf.put_i32(4 + data.len() as i32);
    buf.put_i32(t as i32);
    buf.put_slice(data);
}

/// Append a message frame.
pub fn put_message_frame<B: BufMut>(
    buf: &mut B,
    timestamp: i64,
    attempts: u16,
    id: MessageId,
    body: &[u8],
) {
    buf.put_i32((4 + MESSAGE_HEADER_LEN + body.len()) as i32);
    buf.put_i32(FrameType::Message as i32);
    put_message(buf, timestamp, attempts, id, body);
}

/// A message frame without its body, which the caller sends next (`body_len` bytes): the
/// same bytes as [`put_message_frame`] up to the body, for writing a large body from where it
/// lies instead of copying it after the header.
pub fn put_message_frame_header<B: BufMut>(
    buf: &mut B,
    timestamp: i64,
    attempts: u16,
    id: MessageId,
    body_len: usize,
) {
    buf.put_i32((4 + MESSAGE_HEADER_LEN + body_len) as i32);
    buf.put_i32(FrameType::Message as i32);
    put_message(buf, timestamp, attempts, id, &[]);
}

/// Bytes a message frame with this body takes.
pub fn message_frame_len(body_len: usize) -> usize {
    8 + MESSAGE_HEADER_LEN + body_len
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_then_body_is_the_frame() {
        let id = MessageId(0x0123_4567_89ab_cdef);
        let mut whole = Vec::new();
        put_message_frame(&mut whole, 12345, 3, id, b"the body");
        let mut parts = Vec::new();
        put_message_frame_header(&mut parts, 12345, 3, id, 8);
        assert_eq!(parts.len(), message_frame_len(8) - 8);
        parts.extend_from_slice(b"the body");
        assert_eq!(parts, whole);
    }

    #[test]
    fn response_layout() {
        let mut b = Vec::new();
        put_response(&mut b, b"OK");
        assert_eq!(b, [0, 0, 0, 6, 0, 0, 0, 0, b'O', b'K']);
    }

    #[test]
    fn message_layout() {
        let mut b = Vec::new();
        put_message_frame(&mut b, 7, 1, MessageId(0xabc), b"hi");
        assert_eq!(b.len(), message_frame_len(2));
        assert_eq!(&b[0..4], &(4 + 26 + 2i32).to_be_bytes());
        assert_eq!(&b[4..8], &2i32.to_be_bytes());
        assert_eq!(&b[8..16], &7i64.to_be_bytes());
        assert_eq!(&b[16..18], &1u16.to_be_bytes());
        assert_eq!(&b[18..34], b"0000000000000abc");
        assert_eq!(&b[34..], b"hi");
    }
}
