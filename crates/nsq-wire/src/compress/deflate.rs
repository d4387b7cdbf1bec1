//! Raw DEFLATE (RFC 1951, no zlib header), both directions: every encode ends with a sync
//! flush, so the peer can decode each write whole, as Go's `flate.Writer.Flush` does for nsqd.

use bytes::{Buf, BytesMut};
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

use super::{CodecError, Decoding};

/// Plaintext produced per inflate step.
const INFLATE_STEP: usize = 32 * 1024;

/// Raw DEFLATE, both directions, for one connection.
pub struct Deflate {
    compress: Compress,
    decompress: Decompress,
    /// The peer sent a final block: nothing may follow.
    ended: bool,
    /// The last inflate step made progress, so the inflater may still hold plaintext even
    /// with no input left.
    pending: bool,
}

impl Deflate {
    /// Compressing at `level`, clamped to [1, 9].
    pub fn new(level: u32) -> Deflate {
        Deflate {
            compress: Compress::new(Compression::new(level.clamp(1, 9)), false),
            decompress: Decompress::new(false),
            ended: false,
            pending: false,
        }
    }

    /// See [`super::Codec::decode`]. The inflater takes in compressed bytes ahead of the
    /// plaintext it has handed out: it can consume all of `input` and still hold decoded bytes
    /// (its 32 KiB window wrapped, or our output step filled). So it is called again, with no
    /// more input if need be, until a call makes no progress: every byte whose compressed form
    /// has arrived comes out now (or, past `max`, on the next call, even with no new input),
    /// not when the peer next writes.
    pub(crate) fn decode(&mut self, step: &mut Decoding<'_>) -> Result<(), CodecError> {
        while step.wants_more() && (self.pending || !step.input.is_empty()) {
            let Decoding { input, out, .. } = step;
            if self.ended {
                if input.is_empty() {
                    break;
                }
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
            // Progress may leave more inside; none means it needs more input.
            self.pending = consumed > 0 || produced > 0;
            match status? {
                // Only once all output is out.
                Status::StreamEnd => {
                    self.ended = true;
                    self.pending = false;
                }
                Status::Ok | Status::BufError => {
                    if !self.pending {
                        break;
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
