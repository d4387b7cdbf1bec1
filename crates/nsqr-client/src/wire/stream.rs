//! The socket under a connection: TCP, a unix socket, or TLS over either. One enum rather than
//! a boxed trait object, so the plaintext path costs a match per syscall and nothing per
//! message.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpStream, UnixStream};
use tokio_rustls::client::TlsStream;

use crate::address::Address;
use crate::error::Error;

/// A connected socket, maybe wrapped in TLS.
pub(crate) enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    Tls(Box<TlsStream<Stream>>),
}

impl Stream {
    /// Connect to a TCP or unix address within `timeout`.
    pub(crate) async fn connect(addr: &Address, timeout: Duration) -> Result<Stream, Error> {
        let connect_err = |source| Error::Connect {
            addr: addr.to_string(),
            source,
        };
        let connecting = async {
            match addr {
                Address::Tcp(hp) => {
                    let s = TcpStream::connect(hp.as_str()).await?;
                    s.set_nodelay(true)?;
                    Ok(Stream::Tcp(s))
                }
                Address::Unix(path) => Ok(Stream::Unix(UnixStream::connect(path).await?)),
                Address::Inproc => Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "inproc:// has no socket",
                )),
            }
        };
        match tokio::time::timeout(timeout, connecting).await {
            Ok(r) => r.map_err(connect_err),
            Err(_) => Err(Error::Timeout(format!("connect to {addr}"))),
        }
    }
}

/// `$e` with `$s` bound to the socket of whichever variant `$stream` is (each one is
/// `AsyncRead + AsyncWrite + Unpin`, the TLS one through its `Box`).
macro_rules! on_socket {
    ($stream:expr, $s:ident => $e:expr) => {
        match $stream {
            Stream::Tcp($s) => $e,
            Stream::Unix($s) => $e,
            Stream::Tls($s) => $e,
        }
    };
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        on_socket!(self.get_mut(), s => Pin::new(s).poll_read(cx, buf))
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        on_socket!(self.get_mut(), s => Pin::new(s).poll_write(cx, buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        on_socket!(self.get_mut(), s => Pin::new(s).poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        on_socket!(self, s => s.is_write_vectored())
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        on_socket!(self.get_mut(), s => Pin::new(s).poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        on_socket!(self.get_mut(), s => Pin::new(s).poll_shutdown(cx))
    }
}
