//! Decoding what the server sends: `[i32 size][i32 frame_type][data]` frames, split back into
//! responses, errors and messages. Sans-IO: feed it bytes as they arrive, in any pieces, and
//! take frames out; a frame's data is handed over as a slice of the decoder's buffer, never
//! copied. A frame larger than the decoder's bound is refused as soon as its size is read, so a
//! broken or hostile server cannot make the client buffer without limit.

use bytes::{Buf, Bytes, BytesMut};

use crate::command::IdToken;
use crate::frame::FrameType;
use crate::message::MESSAGE_HEADER_LEN;

/// The default bound on one frame's size: nsqd's largest message (its `--max-msg-size`
/// default is 1 MiB, but operators raise it) with room to spare.
pub const DEFAULT_MAX_FRAME_SIZE: usize = 64 << 20;

/// One frame from the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// `OK`, `CLOSE_WAIT`, `_heartbeat_`, or IDENTIFY's JSON.
    Response(Bytes),
    /// An error: `E_<CODE> text`.
    Error(Bytes),
    /// A delivered message.
    Message {
        /// When it was published, in Unix nanoseconds.
        timestamp: i64,
        /// How many times it has been delivered, this time included.
        attempts: u16,
        /// Its id, as FIN / REQ / TOUCH take it back (16 hex digits from nsqd).
        id: IdToken,
        /// The body.
        body: Bytes,
    },
}

/// One frame from the server, lent where it lies in the decoder's buffer
/// ([`FrameDecoder::with_next_frame`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameRef<'a> {
    /// `OK`, `CLOSE_WAIT`, `_heartbeat_`, or IDENTIFY's JSON.
    Response(&'a [u8]),
    /// An error: `E_<CODE> text`.
    Error(&'a [u8]),
    /// A delivered message.
    Message {
        /// When it was published, in Unix nanoseconds.
        timestamp: i64,
        /// How many times it has been delivered, this time included.
        attempts: u16,
        /// Its id.
        id: IdToken,
        /// The body.
        body: &'a [u8],
    },
}

/// A stream that is not NSQ frames. The stream cannot be resynchronised after one: the
/// connection must be closed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// The size field is below the 4 bytes of the frame type.
    #[error("frame size {0} is too small")]
    TooSmall(i32),
    /// The size field exceeds the decoder's bound.
    #[error("frame size {size} exceeds the limit of {max} bytes")]
    TooLarge {
        /// The frame's size field (frame type and data).
        size: usize,
        /// The decoder's bound.
        max: usize,
    },
    /// A frame type other than response (0), error (1) or message (2).
    #[error("unknown frame type {0}")]
    UnknownType(i32),
    /// A message frame shorter than a message's 26-byte header.
    #[error("message frame of {0} bytes is shorter than a message header")]
    ShortMessage(usize),
}

/// Accumulates the server's bytes and yields complete [`Frame`]s.
#[derive(Debug)]
pub struct FrameDecoder {
    buf: BytesMut,
    max_frame_size: usize,
}

impl Default for FrameDecoder {
    fn default() -> Self {
        FrameDecoder::new(DEFAULT_MAX_FRAME_SIZE)
    }
}

impl FrameDecoder {
    /// A decoder that refuses frames whose size field (frame type and data) exceeds
    /// `max_frame_size` bytes.
    pub fn new(max_frame_size: usize) -> FrameDecoder {
        FrameDecoder {
            buf: BytesMut::new(),
            max_frame_size,
        }
    }

    /// Append bytes read from the server.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The buffer to read into directly (e.g. with `read_buf`), instead of [`feed`]: bytes
    /// appended to it are decoded as if fed. Do not remove bytes from it.
    ///
    /// [`feed`]: FrameDecoder::feed
    pub fn buffer_mut(&mut self) -> &mut BytesMut {
        &mut self.buf
    }

    /// Bytes received but not yet returned as frames.
    pub fn pending(&self) -> usize {
        self.buf.len()
    }

    /// How many more bytes the frame at the front needs before [`next_frame`] can return it
    /// (at least 1 while it is incomplete; 0 when a frame or an error is ready). A reader can
    /// reserve this much room.
    ///
    /// [`next_frame`]: FrameDecoder::next_frame
    pub fn wanted(&self) -> usize {
        match self.front_size() {
            Some(Ok(size)) => (4 + size).saturating_sub(self.buf.len()),
            Some(Err(_)) => 0,
            None => 4 - self.buf.len(),
        }
    }

    /// The next complete frame, Ok(None) while more bytes are needed, or the error that makes
    /// the stream unreadable (returned again on every later call).
    pub fn next_frame(&mut self) -> Result<Option<Frame>, FrameError> {
        let Some((size, frame_type)) = self.front_frame()? else {
            return Ok(None);
        };
        if frame_type == FrameType::Message as i32 {
            return Ok(Some(self.message(size - 4)));
        }
        self.buf.advance(8);
        let data = self.buf.split_to(size - 4).freeze();
        Ok(Some(match frame_type {
            t if t == FrameType::Response as i32 => Frame::Response(data),
            _ => Frame::Error(data),
        }))
    }

    /// Like [`next_frame`](FrameDecoder::next_frame), but the frame is lent to `f` where it
    /// lies in the buffer (nothing is split off or reference counted), then consumed; `f`'s
    /// result comes back. For a client that handles each message before reading the next.
    pub fn with_next_frame<R>(
        &mut self,
        f: impl FnOnce(FrameRef<'_>) -> R,
    ) -> Result<Option<R>, FrameError> {
        let Some((size, frame_type)) = self.front_frame()? else {
            return Ok(None);
        };
        let data = &self.buf[8..4 + size];
        let frame = match frame_type {
            t if t == FrameType::Response as i32 => FrameRef::Response(data),
            t if t == FrameType::Error as i32 => FrameRef::Error(data),
            _ => {
                let (head, body) = data.split_at(MESSAGE_HEADER_LEN);
                let mut ts = [0u8; 8];
                ts.copy_from_slice(&head[..8]);
                let mut id = [0u8; 16];
                id.copy_from_slice(&head[10..26]);
                FrameRef::Message {
                    timestamp: i64::from_be_bytes(ts),
                    attempts: u16::from_be_bytes([head[8], head[9]]),
                    id,
                    body,
                }
            }
        };
        let r = f(frame);
        self.buf.advance(4 + size);
        Ok(Some(r))
    }

    /// The size and type of the complete, valid frame at the front; None while incomplete.
    fn front_frame(&self) -> Result<Option<(usize, i32)>, FrameError> {
        let size = match self.front_size() {
            None => return Ok(None),
            Some(size) => size?,
        };
        if self.buf.len() < 4 + size {
            return Ok(None);
        }
        let frame_type = i32::from_be_bytes([self.buf[4], self.buf[5], self.buf[6], self.buf[7]]);
        if frame_type == FrameType::Message as i32 && size - 4 < MESSAGE_HEADER_LEN {
            return Err(FrameError::ShortMessage(size - 4));
        }
        let known = [FrameType::Response, FrameType::Error, FrameType::Message];
        if !known.iter().any(|&t| t as i32 == frame_type) {
            return Err(FrameError::UnknownType(frame_type));
        }
        Ok(Some((size, frame_type)))
    }

    /// The message frame at the front, whose data (`len` bytes, at least a header) is all
    /// buffered: the header is read in place and only the body is split off, so a message
    /// costs one reference to the buffer, not three.
    fn message(&mut self, len: usize) -> Frame {
        let h = &self.buf[8..8 + MESSAGE_HEADER_LEN];
        let mut ts = [0u8; 8];
        ts.copy_from_slice(&h[..8]);
        let mut id = [0u8; 16];
        id.copy_from_slice(&h[10..26]);
        let attempts = u16::from_be_bytes([h[8], h[9]]);
        self.buf.advance(8 + MESSAGE_HEADER_LEN);
        let body = self.buf.split_to(len - MESSAGE_HEADER_LEN).freeze();
        Frame::Message {
            timestamp: i64::from_be_bytes(ts),
            attempts,
            id,
            body,
        }
    }

    /// The size field of the frame at the front, checked; None until its 4 bytes are here.
    fn front_size(&self) -> Option<Result<usize, FrameError>> {
        let head: [u8; 4] = self.buf.get(..4)?.try_into().ok()?;
        let size = i32::from_be_bytes(head);
        Some(match usize::try_from(size) {
            Ok(s) if s < 4 => Err(FrameError::TooSmall(size)),
            Err(_) => Err(FrameError::TooSmall(size)),
            Ok(s) if s > self.max_frame_size => Err(FrameError::TooLarge {
                size: s,
                max: self.max_frame_size,
            }),
            Ok(s) => Ok(s),
        })
    }
}
