//! The client's frame decoder, fed what a server (or something pretending to be one) sends.
//!
//! Input: `[mode][piece][stream...]`: mode picks the frame size bound (`mode * 4`, so small
//! bounds are exercised), the stream arrives `piece` bytes at a time. Checks: the same frames
//! and the same error whatever the pieces; a decoded frame encoded again decodes to itself;
//! the decoder never holds more than it was fed.

use bytes::BufMut;
use nsq_wire::client::{Frame, FrameDecoder, FrameError};
use nsq_wire::frame::{put_frame, FrameType};

pub fn client_frames(data: &[u8]) {
    let [mode, piece, stream @ ..] = data else {
        return;
    };
    let max = usize::from(*mode) * 4;
    let piece = usize::from(*piece).max(1);
    let whole = decode_all(max, &[stream]);
    let pieces: Vec<&[u8]> = stream.chunks(piece).collect();
    assert_eq!(
        whole,
        decode_all(max, &pieces),
        "{piece}-byte pieces differ"
    );
    for frame in &whole.0 {
        let mut wire = Vec::new();
        encode(frame, &mut wire);
        assert_eq!(decode_all(max, &[&wire]), (vec![frame.clone()], None));
    }
}

/// Every frame of `pieces` fed in turn, and the error that stopped the stream, if any.
fn decode_all(max: usize, pieces: &[&[u8]]) -> (Vec<Frame>, Option<FrameError>) {
    let mut dec = FrameDecoder::new(max);
    let mut frames = Vec::new();
    let mut fed = 0;
    for piece in pieces {
        dec.feed(piece);
        fed += piece.len();
        loop {
            match dec.next_frame() {
                Ok(Some(f)) => frames.push(f),
                Ok(None) => {
                    assert!(dec.wanted() > 0, "incomplete, yet nothing wanted");
                    break;
                }
                Err(e) => return (frames, Some(e)),
            }
        }
        assert!(dec.pending() <= fed);
    }
    (frames, None)
}

fn encode(frame: &Frame, wire: &mut Vec<u8>) {
    match frame {
        Frame::Response(d) => put_frame(wire, FrameType::Response, d),
        Frame::Error(d) => put_frame(wire, FrameType::Error, d),
        Frame::Message {
            timestamp,
            attempts,
            id,
            body,
        } => {
            let mut data = Vec::new();
            data.put_i64(*timestamp);
            data.put_u16(*attempts);
            data.put_slice(id);
            data.put_slice(body);
            put_frame(wire, FrameType::Message, &data);
        }
    }
}
