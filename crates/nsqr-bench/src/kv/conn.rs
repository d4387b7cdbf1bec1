//! A small RESP client for the keyspace benchmarks: requests are encoded into a write buffer
//! (so a pipeline is one write), replies decoded with resp-wire.

use std::time::Duration;

use resp_wire::Frame;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::fail::{err, Result};

/// How long one reply may take.
const IO_TIMEOUT: Duration = Duration::from_secs(60);

pub struct RespConn {
    stream: TcpStream,
    rbuf: Vec<u8>,
    start: usize,
    wbuf: Vec<u8>,
}

impl RespConn {
    pub async fn connect(addr: &str) -> Result<RespConn> {
        let stream = tokio::time::timeout(IO_TIMEOUT, TcpStream::connect(addr))
            .await
            .map_err(|_| err(format!("connect {addr}: timed out")))?
            .map_err(|e| err(format!("connect {addr}: {e}")))?;
        stream.set_nodelay(true)?;
        Ok(RespConn {
            stream,
            rbuf: Vec::with_capacity(64 << 10),
            start: 0,
            wbuf: Vec::with_capacity(64 << 10),
        })
    }

    /// Adds a request to the write buffer.
    pub fn queue<A: AsRef<[u8]>>(&mut self, args: &[A]) {
        resp_wire::encode_request(args, &mut self.wbuf);
    }

    /// Writes what is queued.
    pub async fn flush(&mut self) -> Result<()> {
        self.stream.write_all(&self.wbuf).await?;
        self.wbuf.clear();
        Ok(())
    }

    /// The next reply.
    pub async fn read(&mut self) -> Result<Frame> {
        loop {
            if let Some((f, n)) = resp_wire::decode(&self.rbuf[self.start..])? {
                self.start += n;
                if self.start == self.rbuf.len() {
                    self.rbuf.clear();
                    self.start = 0;
                }
                return Ok(f);
            }
            if self.start > 0 {
                self.rbuf.drain(..self.start);
                self.start = 0;
            }
            if self.rbuf.capacity() - self.rbuf.len() < 16 << 10 {
                self.rbuf.reserve(64 << 10);
            }
            let n = tokio::time::timeout(IO_TIMEOUT, self.stream.read_buf(&mut self.rbuf))
                .await
                .map_err(|_| err("no reply within 60s"))??;
            if n == 0 {
                return Err(err("the server closed the connection"));
            }
        }
    }

    /// One request and its reply; an error reply is an error.
    pub async fn cmd<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Result<Frame> {
        self.queue(args);
        self.flush().await?;
        match self.read().await? {
            Frame::Error(e) => Err(err(String::from_utf8_lossy(&e).into_owned())),
            f => Ok(f),
        }
    }

    /// Reads `n` replies of a pipeline; fails on the first error reply.
    pub async fn replies(&mut self, n: usize) -> Result<()> {
        for _ in 0..n {
            if let Frame::Error(e) = self.read().await? {
                return Err(err(String::from_utf8_lossy(&e).into_owned()));
            }
        }
        Ok(())
    }
}

/// The server's process id from `INFO server` (both Redis and nsqrd report it).
pub async fn server_pid(addr: &str) -> Result<u32> {
    let mut c = RespConn::connect(addr).await?;
    let info = c.cmd(&["INFO", "server"]).await?;
    let text = info
        .as_bytes()
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix("process_id:"))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| err("INFO server has no process_id"))
}
