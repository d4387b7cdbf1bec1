//! The harness's NSQ connection: TCP protocol V2 through `nsq_wire`'s client codec, with
//! heartbeats answered inside `next_frame` so publishers and consumers see only their own
//! frames. Every wait is bounded by the caller (`tokio::time::timeout`).

use std::net::SocketAddr;
use std::time::Duration;

use bytes::BytesMut;
use nsq_wire::client::{put_magic, EncodeError, Frame, FrameDecoder, FrameError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long a connection attempt may take before the node counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// Why a connection is no longer usable.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    #[error("connect timed out")]
    ConnectTimeout,
    #[error("closed by the server")]
    Closed,
    #[error("bad frame: {0}")]
    Frame(#[from] FrameError),
    #[error("encode: {0}")]
    Encode(#[from] EncodeError),
}

/// One NSQ connection.
pub struct NsqConn {
    stream: TcpStream,
    decoder: FrameDecoder,
    out: BytesMut,
}

impl NsqConn {
    /// Connects and sends the protocol magic.
    pub async fn connect(addr: SocketAddr) -> Result<NsqConn, ClientError> {
        let stream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr))
            .await
            .map_err(|_| ClientError::ConnectTimeout)??;
        stream.set_nodelay(true)?;
        let mut conn = NsqConn {
            stream,
            decoder: FrameDecoder::new(nsq_wire::client::DEFAULT_MAX_FRAME_SIZE),
            out: BytesMut::new(),
        };
        put_magic(&mut conn.out);
        conn.flush().await?;
        Ok(conn)
    }

    /// Encodes a command into the output buffer (sent by `flush`).
    pub fn put(
        &mut self,
        encode: impl FnOnce(&mut BytesMut) -> Result<(), EncodeError>,
    ) -> Result<(), ClientError> {
        encode(&mut self.out)?;
        Ok(())
    }

    /// Writes what `put` encoded.
    pub async fn flush(&mut self) -> Result<(), ClientError> {
        if !self.out.is_empty() {
            self.stream.write_all(&self.out).await?;
            self.out.clear();
        }
        Ok(())
    }

    /// The next frame that is not a heartbeat (each heartbeat is answered with NOP).
    pub async fn next_frame(&mut self) -> Result<Frame, ClientError> {
        let mut buf = [0u8; 16 << 10];
        loop {
            while let Some(frame) = self.decoder.next_frame()? {
                if matches!(&frame, Frame::Response(r) if &r[..] == b"_heartbeat_") {
                    nsq_wire::client::put_nop(&mut self.out);
                    self.flush().await?;
                    continue;
                }
                return Ok(frame);
            }
            let n = self.stream.read(&mut buf).await?;
            if n == 0 {
                return Err(ClientError::Closed);
            }
            self.decoder.feed(&buf[..n]);
        }
    }
}
