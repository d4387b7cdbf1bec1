//! The compressed streams IDENTIFY can negotiate: snappy's framing format and raw DEFLATE
//! (RFC 1951, no zlib header, sync-flushed), as nsqd's `UpgradeSnappy` / `UpgradeDeflate` and
//! go-nsq's client stack them. Both ends of a connection use the same [`Codec`]: the server
//! decodes what the client sends and encodes what it answers, a client the reverse.
//!
//! Both work on whole buffers rather than as stream wrappers, with no IO of their own: the
//! caller reads raw bytes, [`Codec::decode`] turns every complete piece into plaintext, and
//! each flush of an output buffer is [`Codec::encode`]d in one go. So compression costs nothing
//! per message, and the plaintext path does not know it exists. Decoding is bounded per call
//! (`max`) so a small compressed input cannot balloon into an unbounded buffer before the
//! parser sees it.
//!
//! Built with the `compress` feature (on by default).

mod deflate;
mod snappy;

use bytes::BytesMut;

pub use deflate::Deflate;
pub use snappy::Snappy;

/// A corrupt or unsupported compressed stream from the peer. The stream cannot be resumed
/// after one: the connection must be closed.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    /// A snappy frame that breaks the framing format (unknown chunk, bad checksum, ...).
    #[error("snappy: corrupt input ({0})")]
    Snappy(&'static str),
    /// A snappy block that does not decompress (or, when encoding, does not compress).
    #[error("snappy: {0}")]
    SnappyBlock(#[from] snap::Error),
    /// DEFLATE data zlib refused, or data after the final block.
    #[error("flate: corrupt input ({0})")]
    Deflate(String),
}

/// One [`Codec::decode`] call as each stream sees it: the compressed input it consumes, the
/// plaintext it appends, and the bound on what one call produces.
pub(crate) struct Decoding<'a> {
    input: &'a mut BytesMut,
    out: &'a mut BytesMut,
    /// The length of `out` at which the call stops.
    until: usize,
}

impl Decoding<'_> {
    /// Whether the call may produce more: a stream decodes another block or step while this
    /// holds, so it passes the bound by at most one.
    fn wants_more(&self) -> bool {
        self.out.len() < self.until
    }
}

/// The negotiated compression of one connection, both directions.
pub enum Codec {
    /// Snappy's framing format.
    Snappy(Box<Snappy>),
    /// Raw DEFLATE.
    Deflate(Box<Deflate>),
}

impl Codec {
    /// A snappy stream (the stream identifier is sent with the first output).
    pub fn snappy() -> Codec {
        Codec::Snappy(Box::default())
    }

    /// A raw DEFLATE stream compressing at `level`, clamped to [1, 9].
    pub fn deflate(level: u32) -> Codec {
        Codec::Deflate(Box::new(Deflate::new(level)))
    }

    /// Decode what `input` holds into `out` (consuming what was decoded), stopping once about
    /// `max` bytes were produced (at most one block more). An incomplete tail stays in
    /// `input`. On error `out` holds only what was decoded before the corrupt piece.
    ///
    /// All plaintext whose compressed form has been given is produced without waiting for more
    /// input: a call that stops at `max` leaves the rest to the next call, which produces it
    /// even if `input` is then empty. So a call that produces nothing means more input is
    /// needed, and only then should the caller wait for the peer.
    pub fn decode(
        &mut self,
        input: &mut BytesMut,
        out: &mut BytesMut,
        max: usize,
    ) -> Result<(), CodecError> {
        let until = out.len().saturating_add(max);
        let mut step = Decoding { input, out, until };
        match self {
            Codec::Snappy(s) => s.decode(&mut step),
            Codec::Deflate(d) => d.decode(&mut step),
        }
    }

    /// Append the compressed form of `input` to `out`, complete and flushed: the peer can
    /// decode all of `input` from what was appended so far.
    pub fn encode(&mut self, input: &[u8], out: &mut BytesMut) -> Result<(), CodecError> {
        match self {
            Codec::Snappy(s) => s.encode(input, out),
            Codec::Deflate(d) => d.encode(input, out),
        }
    }
}

#[cfg(test)]
mod tests;
