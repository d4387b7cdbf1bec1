//! The snappy and deflate stream decoders, fed what a peer might send.
//!
//! Input: `[piece][max][stream...]`: the stream arrives `piece` bytes at a time and each
//! decode call may produce about `max * 256` bytes. Checks: a call never produces much more
//! than asked (one block or inflate step over); decoding in pieces gives the same plaintext
//! and the same verdict as decoding all at once; the input bytes themselves, encoded and
//! decoded again, come back unchanged.

use bytes::BytesMut;
use nsq_wire::compress::Codec;

/// The most one decode call may overshoot its `max`: a snappy block (64 KiB) or an inflate
/// step (32 KiB).
const OVERSHOOT: usize = 64 * 1024;

pub fn snappy_stream(data: &[u8]) {
    stream(data, Codec::snappy);
}

pub fn deflate_stream(data: &[u8]) {
    stream(data, || Codec::deflate(6));
}

fn stream(data: &[u8], codec: fn() -> Codec) {
    let [piece, max, input @ ..] = data else {
        return;
    };
    let piece = usize::from(*piece).max(1);
    let max = (usize::from(*max) * 256).max(1);
    let whole = decode_all(codec(), &[input], max);
    let pieces: Vec<&[u8]> = input.chunks(piece).collect();
    let split = decode_all(codec(), &pieces, max);
    assert_eq!(whole, split, "decoding in {piece}-byte pieces differs");

    let mut wire = BytesMut::new();
    let encoded = codec().encode(input, &mut wire);
    assert!(encoded.is_ok(), "encoding failed: {encoded:?}");
    assert_eq!(decode_all(codec(), &[&wire], max), (input.to_vec(), true));
}

/// Feed `pieces` in turn, decoding after each until no progress; the plaintext and whether
/// the stream was accepted.
fn decode_all(mut codec: Codec, pieces: &[&[u8]], max: usize) -> (Vec<u8>, bool) {
    let mut input = BytesMut::new();
    let mut out = BytesMut::new();
    for piece in pieces {
        input.extend_from_slice(piece);
        loop {
            let (before_in, before_out) = (input.len(), out.len());
            if codec.decode(&mut input, &mut out, max).is_err() {
                return (out.to_vec(), false);
            }
            let produced = out.len() - before_out;
            assert!(
                produced <= max + OVERSHOOT,
                "{produced} bytes for max {max}"
            );
            if input.len() == before_in && produced == 0 {
                break;
            }
        }
    }
    (out.to_vec(), true)
}
