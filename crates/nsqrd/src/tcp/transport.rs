//! The byte stream under one client connection, and the layers IDENTIFY can stack on it.
//!
//! Layers, bottom up: the socket (`S`: TCP or unix), then optionally TLS (rustls, the socket
//! moved inside), then optionally snappy or deflate (`compress::Codec`, applied to whole
//! buffers). `Io::read` / `Io::write_all` are what the connection loop calls; with neither TLS
//! nor compression they are one `match` away from the socket's own `read_buf` / `write_all`, so
//! the plaintext path pays no copy and no dynamic dispatch.
//!
//! Upgrades happen between two commands, after the IDENTIFY reply (as in nsqd): the caller
//! flushes what it has, then hands over whatever bytes it had already read past the IDENTIFY,
//! which belong to the new layer (the start of a TLS handshake, or compressed data).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use nsq_wire::spliced::Cursor;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use super::compress::{Codec, CodecError};
use crate::tls::SessionInfo;

/// nsqd gives a TLS handshake 5 s.
pub const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long closing may take. A TLS close writes a `close_notify` alert, which never completes
/// for a client that stopped reading (its socket buffers are full); Go's `tls.Conn.Close` gives
/// it 5 s too. Without the bound such a connection would keep its task and socket forever.
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);
const RAW_READ_CHUNK: usize = 64 * 1024;
/// Slices per vectored write (well under the kernel's `IOV_MAX` of 1024).
const MAX_IOVECS: usize = 64;
/// Plaintext produced per decode step before the parser gets to look at it.
const DECODE_STEP: usize = 64 * 1024;

/// Why an IDENTIFY upgrade failed; the text follows `E_IDENTIFY_FAILED IDENTIFY failed `.
#[derive(Debug, thiserror::Error)]
pub enum UpgradeError {
    #[error("{0}")]
    Handshake(io::Error),
    #[error("TLS handshake timed out")]
    Timeout,
    #[error("connection already upgraded")]
    AlreadyUpgraded,
    /// Go's words, for the same case: the client's first bytes are not a TLS record.
    #[error("tls: first record does not look like a TLS handshake")]
    NotTls,
    #[error("EOF")]
    Eof,
}

/// The content type of a TLS handshake record.
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

/// Bytes read ahead of a layer change, replayed before the socket's.
pub struct Rewind<S> {
    prefix: Bytes,
    inner: S,
}

impl<S: AsyncRead + Unpin> AsyncRead for Rewind<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if !self.prefix.is_empty() {
            let n = self.prefix.len().min(buf.remaining());
            buf.put_slice(&self.prefix[..n]);
            self.prefix.advance(n);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Rewind<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// The socket, or TLS around it.
enum Layer<S> {
    Plain(S),
    Tls(Box<TlsStream<Rewind<S>>>),
    /// Only while a handshake owns the socket, or after it failed.
    Gone,
}

fn gone() -> io::Error {
    io::Error::new(io::ErrorKind::NotConnected, "connection closed")
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for Layer<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Layer::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Layer::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
            Layer::Gone => Poll::Ready(Ok(())),
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Layer<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Layer::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Layer::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
            Layer::Gone => Poll::Ready(Err(gone())),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Layer::Plain(s) => Pin::new(s).poll_flush(cx),
            Layer::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
            Layer::Gone => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Layer::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Layer::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
            Layer::Gone => Poll::Ready(Ok(())),
        }
    }
}

fn corrupt(e: CodecError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

/// A client connection's byte stream with its negotiated layers.
pub struct Io<S> {
    layer: Layer<S>,
    codec: Option<Codec>,
    /// Compressed bytes read but not decoded yet.
    raw_in: BytesMut,
    /// Compressed output of one flush.
    raw_out: BytesMut,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Io<S> {
    pub fn new(stream: S) -> Self {
        Io {
            layer: Layer::Plain(stream),
            codec: None,
            raw_in: BytesMut::new(),
            raw_out: BytesMut::new(),
        }
    }

    /// Read more plaintext into `rbuf`; Ok(0) at end of stream. Cancel-safe: everything read
    /// is kept in `self` or `rbuf`.
    pub async fn read(&mut self, rbuf: &mut BytesMut) -> io::Result<usize> {
        let Some(codec) = &mut self.codec else {
            return self.layer.read_buf(rbuf).await;
        };
        loop {
            let before = rbuf.len();
            codec
                .decode(&mut self.raw_in, rbuf, DECODE_STEP)
                .map_err(corrupt)?;
            if rbuf.len() > before {
                return Ok(rbuf.len() - before);
            }
            if self.raw_in.capacity() - self.raw_in.len() < 4096 {
                self.raw_in.reserve(RAW_READ_CHUNK);
            }
            if self.layer.read_buf(&mut self.raw_in).await? == 0 {
                return Ok(0);
            }
        }
    }

    /// Write all of `data` (compressed if negotiated) and flush it to the socket.
    pub async fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        match &mut self.codec {
            None => self.layer.write_all(data).await?,
            Some(codec) => {
                self.raw_out.clear();
                codec.encode(data, &mut self.raw_out).map_err(corrupt)?;
                self.layer.write_all(&self.raw_out).await?;
            }
        }
        if let Layer::Tls(_) = self.layer {
            self.layer.flush().await?;
        }
        Ok(())
    }

    /// Neither TLS nor compression: bytes go to the socket as they are.
    pub fn is_plain(&self) -> bool {
        self.codec.is_none() && matches!(self.layer, Layer::Plain(_))
    }

    /// Write all of `parts`, in order: vectored writes on a plain socket (no copy), else
    /// joined into one buffer and written as [`Io::write_all`] does.
    pub async fn write_all_vectored(&mut self, parts: &[&[u8]]) -> io::Result<()> {
        let (Layer::Plain(s), None) = (&mut self.layer, &self.codec) else {
            return self.write_all(&parts.concat()).await;
        };
        let mut at = Cursor::default();
        while !at.done(parts) {
            let iov = at.iov(parts, MAX_IOVECS);
            let n = s.write_vectored(&iov).await?;
            if n == 0 && iov.iter().any(|v| !v.is_empty()) {
                return Err(io::ErrorKind::WriteZero.into());
            }
            at.advance(parts, n);
        }
        Ok(())
    }

    /// Close the write side (TLS: send `close_notify` first), bounded by `SHUTDOWN_TIMEOUT`.
    pub async fn shutdown(&mut self) -> io::Result<()> {
        match tokio::time::timeout(SHUTDOWN_TIMEOUT, self.layer.shutdown()).await {
            Ok(r) => r,
            Err(_) => Err(io::Error::new(io::ErrorKind::TimedOut, "close timed out")),
        }
    }

    /// TLS server handshake on the socket (bounded by `TLS_HANDSHAKE_TIMEOUT`); `prefix` is
    /// what was read past the IDENTIFY. On failure the socket stays usable as plain (so the
    /// error frame can still be sent) unless the handshake timed out.
    pub async fn upgrade_tls(
        &mut self,
        acceptor: &TlsAcceptor,
        prefix: Bytes,
    ) -> Result<SessionInfo, UpgradeError> {
        if self.codec.is_some() {
            return Err(UpgradeError::AlreadyUpgraded);
        }
        let stream = match std::mem::replace(&mut self.layer, Layer::Gone) {
            Layer::Plain(s) => s,
            other => {
                self.layer = other;
                return Err(UpgradeError::AlreadyUpgraded);
            }
        };
        let deadline = tokio::time::Instant::now() + TLS_HANDSHAKE_TIMEOUT;
        let mut rewind = Rewind {
            prefix,
            inner: stream,
        };
        // Refuse a client that is not speaking TLS before rustls answers it with an alert, so
        // the error frame that follows is readable (Go's server does not send one either).
        if rewind.prefix.is_empty() {
            let mut first = BytesMut::with_capacity(4096);
            let read = tokio::time::timeout_at(deadline, rewind.inner.read_buf(&mut first)).await;
            let failed = match read {
                Err(_) => Some(UpgradeError::Timeout),
                Ok(Err(e)) => Some(UpgradeError::Handshake(e)),
                Ok(Ok(0)) => Some(UpgradeError::Eof),
                Ok(Ok(_)) => None,
            };
            if let Some(e) = failed {
                self.layer = Layer::Plain(rewind.inner);
                return Err(e);
            }
            rewind.prefix = first.freeze();
        }
        if rewind.prefix.first() != Some(&TLS_HANDSHAKE_RECORD) {
            self.layer = Layer::Plain(rewind.inner);
            return Err(UpgradeError::NotTls);
        }
        let accept = acceptor.accept(rewind).into_fallible();
        match tokio::time::timeout_at(deadline, accept).await {
            Ok(Ok(tls)) => {
                let info = SessionInfo::of(tls.get_ref().1);
                self.layer = Layer::Tls(Box::new(tls));
                Ok(info)
            }
            Ok(Err((e, rewind))) => {
                self.layer = Layer::Plain(rewind.inner);
                Err(UpgradeError::Handshake(e))
            }
            Err(_) => Err(UpgradeError::Timeout),
        }
    }

    /// Switch both directions to `codec`; `prefix` (bytes read past the IDENTIFY) is already
    /// compressed.
    pub fn upgrade_codec(&mut self, codec: Codec, prefix: &[u8]) -> Result<(), UpgradeError> {
        if self.codec.is_some() {
            return Err(UpgradeError::AlreadyUpgraded);
        }
        self.raw_in = BytesMut::with_capacity(RAW_READ_CHUNK.max(prefix.len()));
        self.raw_in.extend_from_slice(prefix);
        self.codec = Some(codec);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Through a pipe that takes a few bytes per write, every part arrives, in order, the
    /// partial writes resumed where they stopped (empty parts included).
    #[tokio::test]
    async fn vectored_writes_resume_after_partial_ones() {
        let (a, mut b) = tokio::io::duplex(7);
        let mut io = Io::new(a);
        assert!(io.is_plain());
        let big: Vec<u8> = (0..100u8).collect();
        let parts: [&[u8]; 5] = [b"head", &big, b"", b"mid", &big[..33]];
        let want = parts.concat();
        let reading = tokio::spawn(async move {
            let mut got = vec![0; want.len()];
            b.read_exact(&mut got).await.map(|_| got == want)
        });
        io.write_all_vectored(&parts).await.unwrap();
        assert!(reading.await.unwrap().unwrap());
    }
}
