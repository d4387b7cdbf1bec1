//! A small NSQ V2 client for the benchmarks: one TCP stream, a big read buffer whose frames are
//! parsed in place, and a write buffer that batches commands (many FINs per syscall).

use std::time::Duration;

use nsq_wire::frame::FrameType;
use nsq_wire::message::MESSAGE_HEADER_LEN;
use nsq_wire::MAGIC_V2;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub type Error = Box<dyn std::error::Error + Send + Sync>;
pub type Result<T> = std::result::Result<T, Error>;

/// An error from a message.
pub fn err(msg: impl Into<String>) -> Error {
    msg.into().into()
}

/// How long a connection attempt or a wait for one response may take.
pub const IO_TIMEOUT: Duration = Duration::from_secs(30);
/// Frames larger than this are treated as a protocol error.
const MAX_FRAME: usize = 64 << 20;
const READ_BUF: usize = 256 << 10;

/// One server frame, borrowed from the read buffer.
#[derive(Debug)]
pub enum Frame<'a> {
    Response(&'a [u8]),
    Error(&'a [u8]),
    Message(Msg<'a>),
}

/// A message frame's fields.
#[derive(Debug)]
pub struct Msg<'a> {
    pub attempts: u16,
    pub id: &'a [u8],
    pub body: &'a [u8],
}

/// Accumulates bytes from the socket and yields complete frames without copying them.
pub struct FrameReader {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl Default for FrameReader {
    fn default() -> Self {
        Self::new()
    }
}

impl FrameReader {
    pub fn new() -> Self {
        FrameReader {
            buf: vec![0; READ_BUF],
            start: 0,
            end: 0,
        }
    }

    /// Size of the frame at the front of the buffer (header included), if its header is here.
    fn pending_len(&self) -> Option<usize> {
        let b = self.buf.get(self.start..self.end)?;
        let h: [u8; 4] = b.get(..4)?.try_into().ok()?;
        Some(4 + u32::from_be_bytes(h) as usize)
    }

    /// Read more bytes (at least one) from `r`. Cancel safe: nothing is lost if dropped.
    pub async fn fill<R: AsyncRead + Unpin>(&mut self, r: &mut R) -> Result<()> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        let need = self.pending_len().unwrap_or(0).max(4);
        if self.start + need > self.buf.len() || self.end == self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            if need > self.buf.len() {
                self.buf.resize(need.next_power_of_two(), 0);
            }
        }
        let n = r.read(&mut self.buf[self.end..]).await?;
        if n == 0 {
            return Err(err("connection closed by the server"));
        }
        self.end += n;
        Ok(())
    }

    /// The next complete frame in the buffer, or None if more bytes are needed.
    pub fn next_frame(&mut self) -> Result<Option<Frame<'_>>> {
        let Some(total) = self.pending_len() else {
            return Ok(None);
        };
        if !(8..=MAX_FRAME).contains(&total) {
            return Err(err(format!("bad frame size {}", total - 4)));
        }
        if self.end - self.start < total {
            return Ok(None);
        }
        let at = self.start;
        self.start += total;
        let f = &self.buf[at + 4..at + total];
        let ft = i32::from_be_bytes([f[0], f[1], f[2], f[3]]);
        let data = &f[4..];
        Ok(Some(match ft {
            t if t == FrameType::Response as i32 => Frame::Response(data),
            t if t == FrameType::Error as i32 => Frame::Error(data),
            t if t == FrameType::Message as i32 => {
                if data.len() < MESSAGE_HEADER_LEN {
                    return Err(err("message frame too short"));
                }
                Frame::Message(Msg {
                    attempts: u16::from_be_bytes([data[8], data[9]]),
                    id: &data[10..26],
                    body: &data[26..],
                })
            }
            t => return Err(err(format!("unknown frame type {t}"))),
        }))
    }
}

/// Append `IDENTIFY` with a JSON body.
pub fn put_identify(buf: &mut Vec<u8>, json: &str) {
    buf.extend_from_slice(b"IDENTIFY\n");
    buf.extend_from_slice(&(json.len() as u32).to_be_bytes());
    buf.extend_from_slice(json.as_bytes());
}

pub fn put_sub(buf: &mut Vec<u8>, topic: &str, channel: &str) {
    buf.extend_from_slice(format!("SUB {topic} {channel}\n").as_bytes());
}

pub fn put_rdy(buf: &mut Vec<u8>, n: u32) {
    buf.extend_from_slice(format!("RDY {n}\n").as_bytes());
}

#[inline]
pub fn put_fin(buf: &mut Vec<u8>, id: &[u8]) {
    buf.extend_from_slice(b"FIN ");
    buf.extend_from_slice(id);
    buf.push(b'\n');
}

pub fn put_nop(buf: &mut Vec<u8>) {
    buf.extend_from_slice(b"NOP\n");
}

/// A connection that has sent the V2 magic.
pub struct Conn {
    pub stream: TcpStream,
    pub reader: FrameReader,
    pub wbuf: Vec<u8>,
}

impl Conn {
    pub async fn connect(addr: &str) -> Result<Conn> {
        let stream = tokio::time::timeout(IO_TIMEOUT, TcpStream::connect(addr))
            .await
            .map_err(|_| err(format!("connect to {addr}: timed out")))?
            .map_err(|e| err(format!("connect to {addr}: {e}")))?;
        stream.set_nodelay(true)?;
        let mut c = Conn {
            stream,
            reader: FrameReader::new(),
            wbuf: Vec::with_capacity(64 << 10),
        };
        c.wbuf.extend_from_slice(MAGIC_V2);
        Ok(c)
    }

    /// Write out everything buffered.
    pub async fn flush(&mut self) -> Result<()> {
        if !self.wbuf.is_empty() {
            self.stream.write_all(&self.wbuf).await?;
            self.wbuf.clear();
        }
        Ok(())
    }

    /// Wait for the next response (answering heartbeats); an error frame or a message is an
    /// error.
    pub async fn expect_response(&mut self, what: &str) -> Result<()> {
        loop {
            let mut heartbeat = false;
            loop {
                match self.reader.next_frame()? {
                    None => break,
                    Some(Frame::Response(b"_heartbeat_")) => heartbeat = true,
                    Some(Frame::Response(_)) => {
                        if heartbeat {
                            put_nop(&mut self.wbuf);
                            self.flush().await?;
                        }
                        return Ok(());
                    }
                    Some(Frame::Error(e)) => {
                        return Err(err(format!("{what}: {}", String::from_utf8_lossy(e))))
                    }
                    Some(Frame::Message(_)) => {
                        return Err(err(format!("{what}: unexpected message frame")))
                    }
                }
            }
            if heartbeat {
                put_nop(&mut self.wbuf);
                self.flush().await?;
            }
            tokio::time::timeout(IO_TIMEOUT, self.reader.fill(&mut self.stream))
                .await
                .map_err(|_| err(format!("{what}: no response within {IO_TIMEOUT:?}")))??;
        }
    }

    /// IDENTIFY (without feature negotiation) and wait for `OK`.
    pub async fn identify(&mut self, json: &str) -> Result<()> {
        put_identify(&mut self.wbuf, json);
        self.flush().await?;
        self.expect_response("IDENTIFY").await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nsq_wire::frame::{put_message_frame, put_response};
    use nsq_wire::MessageId;

    #[tokio::test]
    async fn parses_frames_split_across_reads() {
        let mut wire = Vec::new();
        put_response(&mut wire, b"OK");
        put_message_frame(&mut wire, 42, 1, MessageId(0xabc), &[7u8; 300_000]);
        put_response(&mut wire, b"_heartbeat_");
        let mut r = FrameReader::new();
        let mut src: &[u8] = &wire;
        let mut seen = Vec::new();
        while seen.len() < 3 {
            let mut chunk = &src[..src.len().min(1000)];
            src = &src[chunk.len()..];
            r.fill(&mut chunk).await.unwrap();
            while let Some(f) = r.next_frame().unwrap() {
                seen.push(match f {
                    Frame::Response(d) => String::from_utf8_lossy(d).into_owned(),
                    Frame::Message(m) => {
                        assert_eq!(m.attempts, 1);
                        assert_eq!(m.id, b"0000000000000abc");
                        format!("msg {}", m.body.len())
                    }
                    Frame::Error(_) => "error".into(),
                });
            }
        }
        assert_eq!(seen, ["OK", "msg 300000", "_heartbeat_"]);
    }

    #[test]
    fn encodes_commands() {
        let mut b = Vec::new();
        put_sub(&mut b, "t", "c");
        put_rdy(&mut b, 2500);
        put_fin(&mut b, b"0000000000000abc");
        put_nop(&mut b);
        assert_eq!(b, b"SUB t c\nRDY 2500\nFIN 0000000000000abc\nNOP\n");
    }
}
