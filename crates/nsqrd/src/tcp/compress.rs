//! Connection compression negotiated through IDENTIFY: snappy's framing format and raw DEFLATE
//! (RFC 1951, no zlib header, sync-flushed), as nsqd's `UpgradeSnappy` / `UpgradeDeflate`.
//!
//! Both work on whole buffers rather than as stream wrappers: the connection reads raw bytes,
//! `decode` turns every complete piece into plaintext for the command parser, and each flush of
//! the output buffer is `encode`d in one go. So compression costs nothing per message, and the
//! plaintext path does not know it exists. Decoding is bounded per call (`max`) so a small
//! compressed input cannot balloon into an unbounded buffer before the parser sees it.

use bytes::{Buf, BytesMut};
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

/// Largest uncompressed block in a snappy frame.
const SNAPPY_MAX_BLOCK: usize = 65_536;
/// Largest chunk body we accept: a checksum plus the worst-case encoding of a full block.
const SNAPPY_MAX_CHUNK: usize = 4 + 76_490;
const SNAPPY_STREAM_ID: &[u8] = b"\xff\x06\x00\x00sNaPpY";

/// A corrupt or unsupported compressed stream from the client.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error("snappy: corrupt input ({0})")]
    Snappy(&'static str),
    #[error("snappy: {0}")]
    SnappyBlock(#[from] snap::Error),
    #[error("flate: corrupt input ({0})")]
    Deflate(String),
}

/// The negotiated compression of one connection.
pub enum Codec {
    Snappy(Box<Snappy>),
    Deflate(Box<Deflate>),
}

impl Codec {
    pub fn snappy() -> Codec {
        Codec::Snappy(Box::default())
    }

    /// `level` in [1, 9].
    pub fn deflate(level: u32) -> Codec {
        Codec::Deflate(Box::new(Deflate {
            compress: Compress::new(Compression::new(level.clamp(1, 9)), false),
            decompress: Decompress::new(false),
            ended: false,
        }))
    }

    /// Decode what `input` holds into `out` (consuming what was decoded), stopping once about
    /// `max` bytes were produced. An incomplete tail stays in `input`.
    pub fn decode(
        &mut self,
        input: &mut BytesMut,
        out: &mut BytesMut,
        max: usize,
    ) -> Result<(), CodecError> {
        match self {
            Codec::Snappy(s) => s.decode(input, out, max),
            Codec::Deflate(d) => d.decode(input, out, max),
        }
    }

    /// Append the compressed form of `input` to `out`, complete and flushed.
    pub fn encode(&mut self, input: &[u8], out: &mut BytesMut) -> Result<(), CodecError> {
        match self {
            Codec::Snappy(s) => s.encode(input, out),
            Codec::Deflate(d) => d.encode(input, out),
        }
    }
}

/// The snappy framing format, both directions.
pub struct Snappy {
    seen_stream_id: bool,
    sent_stream_id: bool,
    decoder: snap::raw::Decoder,
    encoder: snap::raw::Encoder,
    scratch: Vec<u8>,
}

impl Default for Snappy {
    fn default() -> Self {
        Snappy {
            seen_stream_id: false,
            sent_stream_id: false,
            decoder: snap::raw::Decoder::new(),
            encoder: snap::raw::Encoder::new(),
            scratch: Vec::new(),
        }
    }
}

/// The checksum the framing format stores: CRC-32C, masked.
fn masked_crc(data: &[u8]) -> u32 {
    let c = crc32c::crc32c(data);
    (c.rotate_right(15)).wrapping_add(0xa282_ead8)
}

impl Snappy {
    fn decode(
        &mut self,
        input: &mut BytesMut,
        out: &mut BytesMut,
        max: usize,
    ) -> Result<(), CodecError> {
        let start = out.len();
        while out.len() - start < max && input.len() >= 4 {
            let kind = input[0];
            let len = u32::from_le_bytes([input[1], input[2], input[3], 0]) as usize;
            if len > SNAPPY_MAX_CHUNK {
                return Err(CodecError::Snappy("chunk too large"));
            }
            if input.len() < 4 + len {
                break;
            }
            let chunk = &input[4..4 + len];
            if kind != 0xff && !self.seen_stream_id {
                return Err(CodecError::Snappy("missing stream identifier"));
            }
            match kind {
                0xff => {
                    if chunk != &SNAPPY_STREAM_ID[4..] {
                        return Err(CodecError::Snappy("bad stream identifier"));
                    }
                    self.seen_stream_id = true;
                }
                0x00 | 0x01 => {
                    if len < 4 {
                        return Err(CodecError::Snappy("short chunk"));
                    }
                    let crc = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
                    let data = &chunk[4..];
                    let at = out.len();
                    if kind == 0x00 {
                        let n = snap::raw::decompress_len(data)?;
                        if n > SNAPPY_MAX_BLOCK {
                            return Err(CodecError::Snappy("block too large"));
                        }
                        out.resize(at + n, 0);
                        self.decoder.decompress(data, &mut out[at..])?;
                    } else {
                        if data.len() > SNAPPY_MAX_BLOCK {
                            return Err(CodecError::Snappy("block too large"));
                        }
                        out.extend_from_slice(data);
                    }
                    if masked_crc(&out[at..]) != crc {
                        return Err(CodecError::Snappy("checksum mismatch"));
                    }
                }
                0x02..=0x7f => return Err(CodecError::Snappy("unsupported chunk type")),
                _ => {} // 0x80..=0xfe: skippable padding
            }
            input.advance(4 + len);
        }
        Ok(())
    }

    fn encode(&mut self, input: &[u8], out: &mut BytesMut) -> Result<(), CodecError> {
        if !self.sent_stream_id {
            out.extend_from_slice(SNAPPY_STREAM_ID);
            self.sent_stream_id = true;
        }
        for block in input.chunks(SNAPPY_MAX_BLOCK) {
            let crc = masked_crc(block);
            self.scratch
                .resize(snap::raw::max_compress_len(block.len()), 0);
            let n = self.encoder.compress(block, &mut self.scratch)?;
            // Go's rule: keep the compressed form only when it saves at least 1/8.
            let (kind, body) = if n < block.len() - block.len() / 8 {
                (0x00u8, &self.scratch[..n])
            } else {
                (0x01u8, block)
            };
            let len = (body.len() + 4) as u32;
            out.extend_from_slice(&[kind, len as u8, (len >> 8) as u8, (len >> 16) as u8]);
            out.extend_from_slice(&crc.to_le_bytes());
            out.extend_from_slice(body);
        }
        Ok(())
    }
}

/// Raw DEFLATE, both directions.
pub struct Deflate {
    compress: Compress,
    decompress: Decompress,
    /// The client sent a final block: nothing may follow.
    ended: bool,
}

const INFLATE_STEP: usize = 32 * 1024;

impl Deflate {
    fn decode(
        &mut self,
        input: &mut BytesMut,
        out: &mut BytesMut,
        max: usize,
    ) -> Result<(), CodecError> {
        let start = out.len();
        while !input.is_empty() && out.len() - start < max {
            if self.ended {
                return Err(CodecError::Deflate("data after the final block".into()));
            }
            let at = out.len();
            out.resize(at + INFLATE_STEP, 0);
            let (in0, out0) = (self.decompress.total_in(), self.decompress.total_out());
            let status = self
                .decompress
                .decompress(&input[..], &mut out[at..], FlushDecompress::None)
                .map_err(|e| CodecError::Deflate(e.to_string()));
            let consumed = (self.decompress.total_in() - in0) as usize;
            let produced = (self.decompress.total_out() - out0) as usize;
            out.truncate(at + produced);
            input.advance(consumed);
            match status? {
                Status::StreamEnd => self.ended = true,
                Status::Ok | Status::BufError => {
                    if consumed == 0 && produced == 0 {
                        break; // needs more input
                    }
                }
            }
        }
        Ok(())
    }

    fn encode(&mut self, mut input: &[u8], out: &mut BytesMut) -> Result<(), CodecError> {
        loop {
            let at = out.len();
            let room = (input.len() / 2).max(4096);
            out.resize(at + room, 0);
            let (in0, out0) = (self.compress.total_in(), self.compress.total_out());
            let r = self
                .compress
                .compress(input, &mut out[at..], FlushCompress::Sync);
            let consumed = (self.compress.total_in() - in0) as usize;
            let produced = (self.compress.total_out() - out0) as usize;
            out.truncate(at + produced);
            r.map_err(|e| CodecError::Deflate(e.to_string()))?;
            input = &input[consumed..];
            if input.is_empty() && produced < room {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn roundtrip(mut c: Codec, mut d: Codec, data: &[u8]) {
        let mut wire = BytesMut::new();
        c.encode(data, &mut wire).unwrap();
        // Feed it in small pieces to exercise partial chunks.
        let mut input = BytesMut::new();
        let mut out = BytesMut::new();
        for piece in wire.chunks(7) {
            input.extend_from_slice(piece);
            loop {
                let before = out.len();
                d.decode(&mut input, &mut out, 1000).unwrap();
                if out.len() == before {
                    break;
                }
            }
        }
        assert_eq!(&out[..], data);
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
        assert!(Codec::snappy().decode(&mut bad_crc, &mut out, 100).is_err());
        let mut huge = BytesMut::from(&b"\xff\x06\x00\x00sNaPpY\x00\xff\xff\xff"[..]);
        assert!(Codec::snappy().decode(&mut huge, &mut out, 100).is_err());
        let mut bad = BytesMut::from(&[0xffu8, 0xff, 0xff, 0xff][..]);
        assert!(Codec::deflate(6).decode(&mut bad, &mut out, 100).is_err());
    }

    #[test]
    fn decode_is_bounded_per_call() {
        let data = vec![0u8; 1 << 20];
        let mut wire = BytesMut::new();
        Codec::deflate(9).encode(&data, &mut wire).unwrap();
        let mut d = Codec::deflate(9);
        let mut out = BytesMut::new();
        d.decode(&mut wire, &mut out, 64 * 1024).unwrap();
        assert!(out.len() < 128 * 1024, "{}", out.len());
    }
}
