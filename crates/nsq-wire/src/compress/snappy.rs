//! Snappy's framing format (the `sNaPpY` stream of chunks, each block CRC-32C checked), both
//! directions, as Go's `github.com/golang/snappy` reader and writer that nsqd uses.

use bytes::{Buf, BytesMut};

use super::{CodecError, Decoding};

/// Largest uncompressed block in a snappy frame.
const MAX_BLOCK: usize = 65_536;
/// Largest chunk body we accept: a checksum plus the worst-case encoding of a full block.
const MAX_CHUNK: usize = 4 + 76_490;
/// The stream identifier chunk every stream starts with.
const STREAM_ID: &[u8] = b"\xff\x06\x00\x00sNaPpY";

/// The snappy framing format, both directions, for one connection.
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
    /// See [`super::Codec::decode`].
    pub(crate) fn decode(&mut self, step: &mut Decoding<'_>) -> Result<(), CodecError> {
        while step.wants_more() && step.input.len() >= 4 {
            let Decoding { input, out, .. } = step;
            let kind = input[0];
            let len = u32::from_le_bytes([input[1], input[2], input[3], 0]) as usize;
            if len > MAX_CHUNK {
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
                    if chunk != &STREAM_ID[4..] {
                        return Err(CodecError::Snappy("bad stream identifier"));
                    }
                    self.seen_stream_id = true;
                }
                0x00 | 0x01 => {
                    let at = out.len();
                    let r = self.decode_block(kind, chunk, out);
                    if r.is_err() {
                        out.truncate(at);
                    }
                    r?;
                }
                0x02..=0x7f => return Err(CodecError::Snappy("unsupported chunk type")),
                _ => {} // 0x80..=0xfe: skippable padding
            }
            input.advance(4 + len);
        }
        Ok(())
    }

    /// Append one data chunk's block (0x00 compressed, 0x01 stored) to `out`, checksum checked.
    fn decode_block(
        &mut self,
        kind: u8,
        chunk: &[u8],
        out: &mut BytesMut,
    ) -> Result<(), CodecError> {
        if chunk.len() < 4 {
            return Err(CodecError::Snappy("short chunk"));
        }
        let crc = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        let data = &chunk[4..];
        let at = out.len();
        if kind == 0x00 {
            let n = snap::raw::decompress_len(data)?;
            if n > MAX_BLOCK {
                return Err(CodecError::Snappy("block too large"));
            }
            out.resize(at + n, 0);
            self.decoder.decompress(data, &mut out[at..])?;
        } else {
            if data.len() > MAX_BLOCK {
                return Err(CodecError::Snappy("block too large"));
            }
            out.extend_from_slice(data);
        }
        if masked_crc(&out[at..]) != crc {
            return Err(CodecError::Snappy("checksum mismatch"));
        }
        Ok(())
    }

    /// See [`super::Codec::encode`].
    pub fn encode(&mut self, input: &[u8], out: &mut BytesMut) -> Result<(), CodecError> {
        if !self.sent_stream_id {
            out.extend_from_slice(STREAM_ID);
            self.sent_stream_id = true;
        }
        for block in input.chunks(MAX_BLOCK) {
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
