//! Raw DEFLATE (RFC 1951, no zlib header), both directions: every encode ends with a sync
//! flush, so the peer can decode each write whole, as Go's `flate.Writer.Flush` does for nsqd.

use bytes::{Buf, BytesMut};
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

use super::CodecError;

/// Plaintext produced per inflate step.
const INFLATE_STEP: usize = 32 * 1024;

/// Raw DEFLATE, both directions, for one connection.
pub struct Deflate {
    compress: Compress,
    decompress: Decompress,
    /// The peer sent a final block: nothing may follow.
    ended: bool,
}

impl Deflate {
    /// Compressing at `level`, clamped to [1, 9].
    pub fn new(level: u32) -> Deflate {
        Deflate {
            compress: Compress::new(Compression::new(level.clamp(1, 9)), false),
            decompress: Decompress::new(false),
            ended: false,
        }
    }

    /// See [`super::Codec::decode`].
    pub fn decode(
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

    /// See [`super::Codec::encode`].
    pub fn encode(&mut self, mut input: &[u8], out: &mut BytesMut) -> Result<(), CodecError> {
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
