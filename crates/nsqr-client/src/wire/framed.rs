//! Bytes to frames and commands to bytes over a [`Stream`], with the negotiated compression in
//! between. Reads are large (256 KiB) and go straight into the frame decoder's buffer, whose
//! message bodies are handed out as slices of it (no copy); compression works on whole
//! buffers (nsq-wire's `Codec`), so it costs per read and per write, not per message.
//!
//! A connection is one [`Framed`] during its handshake, then splits into a [`Reader`] and a
//! [`Writer`] driven by separate tasks, so a client writing a long batch never stops reading
//! (and the server never blocks on a full socket towards it).

use bytes::BytesMut;
use nsq_wire::client::{Frame, FrameDecoder, FrameRef};
use nsq_wire::compress::Codec;
use nsq_wire::spliced::Cursor;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadHalf, WriteHalf};

use super::stream::Stream;
use crate::error::Error;

/// Bytes asked of the socket per read.
const READ_CHUNK: usize = 256 << 10;
/// Slices per vectored write (well under the kernel's `IOV_MAX` of 1024).
const MAX_IOVECS: usize = 64;
/// A read buffer with less room than this gets a fresh [`READ_CHUNK`] first.
const MIN_ROOM: usize = 16 << 10;

/// The reading direction's state: the decompressor (if any), its raw input, the frames.
pub(crate) struct ReadState {
    codec: Option<Codec>,
    raw: BytesMut,
    frames: FrameDecoder,
}

impl ReadState {
    pub(crate) fn new(max_frame_size: usize) -> ReadState {
        ReadState {
            codec: None,
            raw: BytesMut::new(),
            frames: FrameDecoder::new(max_frame_size),
        }
    }

    /// The next complete frame, if one is buffered.
    pub(crate) fn next_frame(&mut self, addr: &str) -> Result<Option<Frame>, Error> {
        self.frames.next_frame().map_err(|source| Error::Frame {
            addr: addr.to_string(),
            source,
        })
    }

    /// Decompress what follows with `codec`. Bytes already read past the last frame were sent
    /// after the upgrade, so they are compressed input.
    fn set_codec(&mut self, codec: Codec) {
        let early = self.frames.buffer_mut().split();
        let mut raw = early;
        raw.extend_from_slice(&self.raw);
        self.raw = raw;
        self.codec = Some(codec);
    }

    /// Bytes read but not yet returned as frames (before a TLS upgrade there must be none).
    fn buffered(&self) -> usize {
        self.frames.pending() + self.raw.len()
    }

    /// Read until at least one more plaintext byte is buffered; false at end of stream.
    async fn fill<R: AsyncRead + Unpin>(&mut self, io: &mut R) -> Result<bool, Error> {
        loop {
            let Some(codec) = self.codec.as_mut() else {
                let wanted = self.frames.wanted();
                let buf = self.frames.buffer_mut();
                let room = buf.capacity() - buf.len();
                if room < MIN_ROOM || room < wanted {
                    buf.reserve(wanted.max(READ_CHUNK));
                }
                let n = io.read_buf(buf).await.map_err(io_err)?;
                return Ok(n > 0);
            };
            let out = self.frames.buffer_mut();
            let before = (self.raw.len(), out.len());
            codec.decode(&mut self.raw, out, READ_CHUNK)?;
            if out.len() > before.1 {
                return Ok(true);
            }
            if self.raw.len() != before.0 {
                continue; // consumed a header chunk (stream identifier) without output
            }
            if self.raw.capacity() - self.raw.len() < MIN_ROOM {
                self.raw.reserve(READ_CHUNK);
            }
            if io.read_buf(&mut self.raw).await.map_err(io_err)? == 0 {
                return Ok(false);
            }
        }
    }
}

/// The writing direction's state: the compressor (if any) and its output buffer.
pub(crate) struct WriteState {
    codec: Option<Codec>,
    scratch: BytesMut,
}

impl WriteState {
    fn new() -> WriteState {
        WriteState {
            codec: None,
            scratch: BytesMut::new(),
        }
    }

    /// Write all of `data` (compressed if negotiated) and flush it.
    async fn write_all<W: AsyncWrite + Unpin>(
        &mut self,
        io: &mut W,
        data: &[u8],
    ) -> Result<(), Error> {
        match self.codec.as_mut() {
            None => io.write_all(data).await.map_err(io_err)?,
            Some(codec) => {
                self.scratch.clear();
                codec.encode(data, &mut self.scratch)?;
                io.write_all(&self.scratch).await.map_err(io_err)?;
                if self.scratch.capacity() > 4 * READ_CHUNK {
                    self.scratch = BytesMut::new();
                }
            }
        }
        io.flush().await.map_err(io_err)
    }

    /// Write all of `parts` in order and flush: vectored writes (no copy) unless compressed.
    async fn write_parts<W: AsyncWrite + Unpin>(
        &mut self,
        io: &mut W,
        parts: &[&[u8]],
    ) -> Result<(), Error> {
        if self.codec.is_some() {
            return self.write_all(io, &parts.concat()).await;
        }
        let mut at = Cursor::default();
        while !at.done(parts) {
            let iov = at.iov(parts, MAX_IOVECS);
            let n = io.write_vectored(&iov).await.map_err(io_err)?;
            if n == 0 && iov.iter().any(|v| !v.is_empty()) {
                return Err(io_err(std::io::ErrorKind::WriteZero.into()));
            }
            at.advance(parts, n);
        }
        io.flush().await.map_err(io_err)
    }
}

/// An IO error without the address yet (the connection adds it).
fn io_err(e: std::io::Error) -> Error {
    Error::Io {
        addr: String::new(),
        source: e,
    }
}

/// Put the address into errors raised below it.
pub(crate) fn at(addr: &str, e: Error) -> Error {
    match e {
        Error::Io { addr: a, source } if a.is_empty() => Error::Io {
            addr: addr.to_string(),
            source,
        },
        e => e,
    }
}

/// A connection during its handshake: one stream, both directions.
pub(crate) struct Framed {
    pub(crate) stream: Stream,
    pub(crate) rd: ReadState,
    pub(crate) wr: WriteState,
}

impl Framed {
    pub(crate) fn new(stream: Stream, max_frame_size: usize) -> Framed {
        Framed {
            stream,
            rd: ReadState::new(max_frame_size),
            wr: WriteState::new(),
        }
    }

    /// Send bytes (through the negotiated layers).
    pub(crate) async fn send(&mut self, data: &[u8]) -> Result<(), Error> {
        self.wr.write_all(&mut self.stream, data).await
    }

    /// The next frame; Err(Closed) at end of stream.
    pub(crate) async fn recv(&mut self, addr: &str) -> Result<Frame, Error> {
        loop {
            if let Some(f) = self.rd.next_frame(addr)? {
                return Ok(f);
            }
            if !self.rd.fill(&mut self.stream).await? {
                return Err(Error::Closed(addr.to_string()));
            }
        }
    }

    /// Compress both directions from now on.
    pub(crate) fn set_codec(&mut self, reading: Codec, writing: Codec) {
        self.rd.set_codec(reading);
        self.wr.codec = Some(writing);
    }

    /// Bytes received and not yet consumed.
    pub(crate) fn buffered(&self) -> usize {
        self.rd.buffered()
    }

    /// Two halves for two tasks.
    pub(crate) fn split(self, addr: &str) -> (Reader, Writer) {
        let (r, w) = tokio::io::split(self.stream);
        (
            Reader {
                io: r,
                st: self.rd,
                addr: addr.to_string(),
            },
            Writer {
                io: w,
                st: self.wr,
                addr: addr.to_string(),
            },
        )
    }
}

/// The reading half of an established connection.
pub(crate) struct Reader {
    io: ReadHalf<Stream>,
    st: ReadState,
    addr: String,
}

impl Reader {
    /// The next buffered frame, without reading.
    pub(crate) fn next_frame(&mut self) -> Result<Option<Frame>, Error> {
        self.st.next_frame(&self.addr)
    }

    /// The next buffered frame lent to `f` in place, without reading.
    pub(crate) fn with_next_frame<R>(
        &mut self,
        f: impl FnOnce(FrameRef<'_>) -> R,
    ) -> Result<Option<R>, Error> {
        self.st
            .frames
            .with_next_frame(f)
            .map_err(|source| Error::Frame {
                addr: self.addr.clone(),
                source,
            })
    }

    /// Read more from the socket (no time limit; cancel-safe); Err(Closed) at end of stream.
    pub(crate) async fn fill_untimed(&mut self) -> Result<(), Error> {
        match self.st.fill(&mut self.io).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(Error::Closed(self.addr.clone())),
            Err(e) => Err(at(&self.addr, e)),
        }
    }

    /// Read more from the socket; Err(Closed) at end of stream, Err(Timeout) after
    /// `timeout` of silence.
    pub(crate) async fn fill(&mut self, timeout: std::time::Duration) -> Result<(), Error> {
        match tokio::time::timeout(timeout, self.st.fill(&mut self.io)).await {
            Ok(Ok(true)) => Ok(()),
            Ok(Ok(false)) => Err(Error::Closed(self.addr.clone())),
            Ok(Err(e)) => Err(at(&self.addr, e)),
            Err(_) => Err(Error::Timeout(format!("read from {}", self.addr))),
        }
    }
}

/// The writing half of an established connection.
pub(crate) struct Writer {
    io: WriteHalf<Stream>,
    st: WriteState,
    addr: String,
}

impl Writer {
    /// Write and flush `data` within `timeout`.
    pub(crate) async fn write(
        &mut self,
        data: &[u8],
        timeout: std::time::Duration,
    ) -> Result<(), Error> {
        match tokio::time::timeout(timeout, self.st.write_all(&mut self.io, data)).await {
            Ok(r) => r.map_err(|e| at(&self.addr, e)),
            Err(_) => Err(Error::Timeout(format!("write to {}", self.addr))),
        }
    }

    /// [`Writer::write`] of `parts`, one after the other.
    pub(crate) async fn write_parts(
        &mut self,
        parts: &[&[u8]],
        timeout: std::time::Duration,
    ) -> Result<(), Error> {
        match tokio::time::timeout(timeout, self.st.write_parts(&mut self.io, parts)).await {
            Ok(r) => r.map_err(|e| at(&self.addr, e)),
            Err(_) => Err(Error::Timeout(format!("write to {}", self.addr))),
        }
    }

    /// Close the writing direction (the server sees end of stream and closes its side).
    pub(crate) async fn shutdown(&mut self) {
        let _ = tokio::time::timeout(std::time::Duration::from_secs(1), self.io.shutdown()).await;
    }
}
