//! Round trips in pieces, interop with the reference libraries' stream readers and writers,
//! corrupt input, and the per-call bound on decoding.

#![allow(clippy::unwrap_used)]

use super::*;
use proptest::prelude::*;
use std::io::{Read, Write};

/// Encode `data` with `c` in the given writes, then decode with `d` fed `piece` bytes at a time.
fn roundtrip_in_pieces(mut c: Codec, mut d: Codec, writes: &[&[u8]], piece: usize) -> Vec<u8> {
    let mut wire = BytesMut::new();
    for w in writes {
        c.encode(w, &mut wire).unwrap();
    }
    let mut input = BytesMut::new();
    let mut out = BytesMut::new();
    for piece in wire.chunks(piece) {
        input.extend_from_slice(piece);
        loop {
            let before = out.len();
            d.decode(&mut input, &mut out, 1000).unwrap();
            if out.len() == before {
                break;
            }
        }
    }
    out.to_vec()
}

fn roundtrip(c: Codec, d: Codec, data: &[u8]) {
    assert_eq!(roundtrip_in_pieces(c, d, &[data], 7), data);
}

fn sample() -> Vec<u8> {
    (0..200_000u32)
        .map(|i| (i % 251) as u8 ^ (i / 1000) as u8)
        .collect()
}

#[test]
fn snappy_roundtrip_and_library_interop() {
    roundtrip(Codec::snappy(), Codec::snappy(), &sample());
    roundtrip(Codec::snappy(), Codec::snappy(), b"x");
    // Ours decodes the reference encoder's output, and the reverse.
    let mut w = snap::write::FrameEncoder::new(Vec::new());
    w.write_all(&sample()).unwrap();
    let theirs = w.into_inner().unwrap();
    let mut input = BytesMut::from(&theirs[..]);
    let mut out = BytesMut::new();
    Codec::snappy()
        .decode(&mut input, &mut out, usize::MAX)
        .unwrap();
    assert_eq!(&out[..], &sample()[..]);
    let mut ours = BytesMut::new();
    Codec::snappy().encode(&sample(), &mut ours).unwrap();
    let mut back = Vec::new();
    snap::read::FrameDecoder::new(&ours[..])
        .read_to_end(&mut back)
        .unwrap();
    assert_eq!(back, sample());
}

#[test]
fn deflate_roundtrip_and_library_interop() {
    roundtrip(Codec::deflate(6), Codec::deflate(6), &sample());
    roundtrip(Codec::deflate(1), Codec::deflate(9), b"hello");
    let mut ours = BytesMut::new();
    let mut c = Codec::deflate(6);
    c.encode(b"first ", &mut ours).unwrap();
    c.encode(b"second", &mut ours).unwrap();
    let mut back = vec![0u8; 12];
    flate2::read::DeflateDecoder::new(&ours[..])
        .read_exact(&mut back)
        .unwrap();
    assert_eq!(&back, b"first second");
}

#[test]
fn corrupt_input_is_an_error() {
    let mut out = BytesMut::new();
    let mut garbage = BytesMut::from(&b"\x00\x05\x00\x00hello"[..]);
    assert!(Codec::snappy().decode(&mut garbage, &mut out, 100).is_err());
    let mut bad_crc = BytesMut::new();
    Codec::snappy().encode(b"hello", &mut bad_crc).unwrap();
    let last = bad_crc.len() - 1;
    bad_crc[last] ^= 1;
    assert!(matches!(
        Codec::snappy().decode(&mut bad_crc, &mut out, 100),
        Err(CodecError::Snappy("checksum mismatch"))
    ));
    assert!(out.is_empty(), "a refused block leaves nothing behind");
    let mut huge = BytesMut::from(&b"\xff\x06\x00\x00sNaPpY\x00\xff\xff\xff"[..]);
    assert!(Codec::snappy().decode(&mut huge, &mut out, 100).is_err());
    let mut bad = BytesMut::from(&[0xffu8, 0xff, 0xff, 0xff][..]);
    assert!(Codec::deflate(6).decode(&mut bad, &mut out, 100).is_err());
}

#[test]
fn deflate_refuses_data_after_the_final_block() {
    let mut wire = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::new(6));
    wire.write_all(b"done").unwrap();
    let mut input = BytesMut::from(&wire.finish().unwrap()[..]);
    input.extend_from_slice(b"more");
    let mut out = BytesMut::new();
    let r = Codec::deflate(6).decode(&mut input, &mut out, 100);
    assert!(matches!(r, Err(CodecError::Deflate(_))), "{r:?}");
    assert_eq!(&out[..], b"done");
}

#[test]
fn decode_is_bounded_per_call() {
    let data = vec![0u8; 1 << 20];
    for mut c in [Codec::deflate(9), Codec::snappy()] {
        let mut wire = BytesMut::new();
        c.encode(&data, &mut wire).unwrap();
        let mut d = match c {
            Codec::Snappy(_) => Codec::snappy(),
            Codec::Deflate(_) => Codec::deflate(9),
        };
        let mut out = BytesMut::new();
        d.decode(&mut wire, &mut out, 64 * 1024).unwrap();
        assert!(out.len() < 128 * 1024, "{}", out.len());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Whatever the writes and however the compressed bytes are cut, the plaintext comes back.
    #[test]
    fn round_trip_whatever_the_pieces(
        writes in proptest::collection::vec(proptest::collection::vec(0u8..4, 0..3000), 1..6),
        piece in 1usize..5000,
        snappy in any::<bool>(),
        level in 1u32..10,
    ) {
        let refs: Vec<&[u8]> = writes.iter().map(Vec::as_slice).collect();
        let (c, d) = if snappy {
            (Codec::snappy(), Codec::snappy())
        } else {
            (Codec::deflate(level), Codec::deflate(level))
        };
        prop_assert_eq!(roundtrip_in_pieces(c, d, &refs, piece), writes.concat());
    }

    /// Arbitrary bytes: an error or plaintext, never a panic, and never much past `max`.
    #[test]
    fn arbitrary_input_is_refused_or_bounded(
        data in proptest::collection::vec(any::<u8>(), 0..2000),
        snappy in any::<bool>(),
    ) {
        let mut d = if snappy { Codec::snappy() } else { Codec::deflate(6) };
        let mut input = BytesMut::from(&data[..]);
        let mut out = BytesMut::new();
        if d.decode(&mut input, &mut out, 4096).is_ok() {
            prop_assert!(out.len() <= 4096 + 64 * 1024);
        }
    }
}

/// Compressible bodies of `len` bytes: one short pattern repeated, as a publisher of uniform
/// payloads sends them.
fn repeated(pattern: &[u8], len: usize) -> Vec<u8> {
    pattern.iter().copied().cycle().take(len).collect()
}

/// Incompressible bytes (xorshift).
fn noise(len: usize, mut x: u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// The writes of a deflate or snappy connection carrying large message bodies: small frames,
/// 20-70 KB of compressible data, incompressible data, and both in one write.
fn large_body_writes() -> Vec<Vec<u8>> {
    let mut mixed = repeated(b"abc", 40_000);
    mixed.extend_from_slice(&noise(10_000, 7));
    vec![
        b"\x00\x00\x00\x06\x00\x00\x00\x00OK".to_vec(),
        repeated(b"x", 20_000),
        repeated(b"0123456789", 33_000),
        repeated(b"the same message body, again and again; ", 70_000),
        noise(50_000, 1),
        b"hello".to_vec(),
        repeated(b"y", 33_000),
        mixed,
        repeated(b"z", 65_536 + 1),
        repeated(b"0123456789", 33_000),
    ]
}

/// Each write is encoded (and flushed) on its own and its compressed bytes are fed to the
/// decoder in pieces cut the way a socket might deliver them. After the last byte of write `k`
/// has arrived, the decoder -- called as the connections call it: again while it produces or
/// consumes something -- must have produced all plaintext of writes 1..=k, without waiting for
/// the peer's next bytes.
fn every_write_is_decoded_once_received(mut c: Codec, mut d: Codec, max: usize) {
    let writes = large_body_writes();
    let pieces = [1460usize, 7, 4096, 65_536, 1, 16_384, 300];
    let mut input = BytesMut::new();
    let mut out = BytesMut::new();
    let mut expected = Vec::new();
    let mut p = 0;
    for (k, w) in writes.iter().enumerate() {
        let mut wire = BytesMut::new();
        c.encode(w, &mut wire).unwrap();
        expected.extend_from_slice(w);
        for piece in wire.chunks(pieces[p % pieces.len()]) {
            p += 1;
            input.extend_from_slice(piece);
            loop {
                let before = (input.len(), out.len());
                d.decode(&mut input, &mut out, max).unwrap();
                if (input.len(), out.len()) == before {
                    break;
                }
            }
        }
        assert!(
            out.len() == expected.len() && out[..] == expected[..],
            "max {max}: after all {} compressed bytes of write {} ({} B), decoded {} of {} \
             plaintext bytes ({} B of input left)",
            wire.len(),
            k + 1,
            w.len(),
            out.len(),
            expected.len(),
            input.len(),
        );
    }
}

#[test]
fn deflate_decodes_each_received_write_whole() {
    for level in [1, 6, 9] {
        for max in [64 * 1024, 256 * 1024, 1000, 1] {
            every_write_is_decoded_once_received(Codec::deflate(level), Codec::deflate(level), max);
        }
    }
}

#[test]
fn snappy_decodes_each_received_write_whole() {
    for max in [64 * 1024, 256 * 1024, 1000, 1] {
        every_write_is_decoded_once_received(Codec::snappy(), Codec::snappy(), max);
    }
}

/// A decode bounded by `max` leaves plaintext inside the decoder; calls with no new input must
/// hand out the rest.
#[test]
fn bounded_decode_resumes_without_new_input() {
    let bodies = [
        repeated(b"x", 20_000),
        repeated(b"0123456789", 33_000),
        repeated(b"the same message body, again and again; ", 70_000),
        repeated(b"0123456789", 200_000),
        noise(70_000, 3),
    ];
    for body in &bodies {
        for max in [1, 1000, 4096, 40_000, 64 * 1024] {
            for (mut c, mut d) in [
                (Codec::deflate(6), Codec::deflate(6)),
                (Codec::deflate(1), Codec::deflate(1)),
                (Codec::snappy(), Codec::snappy()),
            ] {
                let mut input = BytesMut::new();
                c.encode(body, &mut input).unwrap();
                let mut out = BytesMut::new();
                let mut calls = 0;
                while out.len() < body.len() {
                    let before = out.len();
                    d.decode(&mut input, &mut out, max).unwrap();
                    assert!(
                        out.len() > before,
                        "{} B body, max {max}, call {calls}: stuck at {} B with {} B of input left",
                        body.len(),
                        out.len(),
                        input.len()
                    );
                    calls += 1;
                }
                assert_eq!(&out[..], &body[..]);
                assert!(input.is_empty());
                // Drained: nothing more comes out, and more input decodes as usual.
                d.decode(&mut input, &mut out, max).unwrap();
                assert_eq!(out.len(), body.len());
                c.encode(b"next", &mut input).unwrap();
                while out.len() < body.len() + 4 {
                    let before = out.len();
                    d.decode(&mut input, &mut out, max).unwrap();
                    assert!(out.len() > before, "the next write is stuck");
                }
                assert_eq!(&out[body.len()..], b"next");
            }
        }
    }
}
