//! The TCP side: one tokio task per nsqd connection, speaking protocol V1 (`protocol.rs`) and
//! applying it to the registry. Per read, every complete request in the buffer is executed and
//! all replies go out in one write; the first error is answered and closes the connection. When
//! a connection ends, for whatever reason, its peer leaves every registration.
//!
//! Bounds nsqlookupd does not have (docs/compatibility.md): the magic must arrive within
//! [`MAGIC_TIMEOUT`], a reply must be accepted by the client within [`WRITE_TIMEOUT`]. After
//! identification there is no read deadline, as upstream: nsqd PINGs every 15 s, and liveness
//! is judged by `--inactive-producer-timeout` at query time.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::{Buf, BytesMut};
use nsq_common::net::{self, Connections, StopSignal, SHUTDOWN_GRACE};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::protocol::{self, Request, Target};
use crate::registry::{PeerInfo, Registration, Registry};

/// How long a new connection may take to send the 4-byte magic.
pub const MAGIC_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a write may block on a client that does not read.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// After a fatal error: how long we read and discard what the client still sends, so our
/// error reply is not destroyed by a reset when we close with unread input.
const LINGER: Duration = Duration::from_millis(500);
/// An empty read buffer larger than this is replaced by a small one.
const SHRINK_ABOVE: usize = 64 * 1024;

/// What every connection needs.
pub struct TcpContext {
    pub registry: Arc<Registry>,
    /// The IDENTIFY reply (fixed for the life of the process).
    pub identify_reply: Vec<u8>,
}

/// Unix time in nanoseconds (Go's `time.Now().UnixNano()`).
pub fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Accepts connections until `shutdown` resolves, then closes every client connection.
pub async fn serve(
    listener: TcpListener,
    ctx: Arc<TcpContext>,
    shutdown: impl Future<Output = ()>,
) {
    let on_accept = |(stream, peer): (TcpStream, SocketAddr), conns: &mut Connections| {
        let _ = stream.set_nodelay(true);
        tracing::info!("TCP: new client({peer})");
        conns.spawn(handle(stream, peer, Arc::clone(&ctx), conns.stop_signal()));
    };
    let conns = net::accept_until(
        shutdown,
        || listener.accept(),
        on_accept,
        |e| tracing::warn!("TCP: accept failed - {e}"),
    )
    .await;
    if let Ok(addr) = listener.local_addr() {
        tracing::info!("TCP: closing {addr}");
    }
    drop(listener);
    conns.shutdown(SHUTDOWN_GRACE).await;
}

/// How a connection's loop ended.
enum Exit {
    /// The client closed, or the connection failed.
    Closed,
    /// We answered a fatal error.
    Fatal,
    /// Shutdown.
    Stopped,
}

struct Conn {
    stream: TcpStream,
    id: String,
    ctx: Arc<TcpContext>,
    buf: BytesMut,
    out: Vec<u8>,
    peer: Option<Arc<PeerInfo>>,
}

async fn handle(
    mut stream: TcpStream,
    addr: SocketAddr,
    ctx: Arc<TcpContext>,
    mut stop: StopSignal,
) {
    let mut magic = [0u8; 4];
    tokio::select! {
        r = tokio::time::timeout(MAGIC_TIMEOUT, stream.read_exact(&mut magic)) => match r {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                tracing::error!("failed to read protocol version - {e}");
                return;
            }
            Err(_) => {
                tracing::error!("client({addr}) sent no protocol magic within {MAGIC_TIMEOUT:?}");
                return;
            }
        },
        _ = stop.stopped() => return,
    }
    let shown = String::from_utf8_lossy(&magic).into_owned();
    tracing::info!("CLIENT({addr}): desired protocol magic '{shown}'");
    if !protocol::is_v1_magic(&magic) {
        let mut out = Vec::new();
        protocol::encode_reply(&mut out, protocol::BAD_PROTOCOL);
        tracing::error!("client({addr}) bad protocol magic '{shown}'");
        if write_all(&mut stream, &out).await {
            linger_close(stream).await;
        }
        return;
    }
    let mut conn = Conn {
        stream,
        id: addr.to_string(),
        ctx,
        buf: BytesMut::with_capacity(4096),
        out: Vec::with_capacity(512),
        peer: None,
    };
    let exit = conn.run(&mut stop).await;
    tracing::info!("PROTOCOL(V1): [{}] exiting ioloop", conn.id);
    if conn.peer.is_some() {
        for r in conn.ctx.registry.disconnect(&conn.id) {
            log_db(&conn.id, "UNREGISTER", &r);
        }
    }
    if matches!(exit, Exit::Fatal) {
        linger_close(conn.stream).await;
    }
}

/// Writes with [`WRITE_TIMEOUT`]; false if the write failed or timed out.
async fn write_all(stream: &mut TcpStream, data: &[u8]) -> bool {
    matches!(
        tokio::time::timeout(WRITE_TIMEOUT, stream.write_all(data)).await,
        Ok(Ok(()))
    )
}

/// Half-closes, then discards input for a bounded time so the client can read our last reply.
async fn linger_close(mut stream: TcpStream) {
    let _ = stream.shutdown().await;
    let mut scratch = [0u8; 4096];
    let _ = tokio::time::timeout(LINGER, async {
        while matches!(stream.read(&mut scratch).await, Ok(n) if n > 0) {}
    })
    .await;
}

fn log_db(id: &str, action: &str, r: &Registration) {
    tracing::info!(
        "DB: client({id}) {action} category:{} key:{} subkey:{}",
        r.category.as_str(),
        r.key,
        r.subkey
    );
}

impl Conn {
    async fn run(&mut self, stop: &mut StopSignal) -> Exit {
        loop {
            let fatal = self.process_buffer();
            if !self.out.is_empty() {
                let out = std::mem::take(&mut self.out);
                if !write_all(&mut self.stream, &out).await {
                    return Exit::Closed;
                }
                self.out = out;
                self.out.clear();
            }
            if fatal {
                return Exit::Fatal;
            }
            if self.buf.is_empty() && self.buf.capacity() > SHRINK_ABOVE {
                // Do not keep a large IDENTIFY body's buffer for the life of the connection.
                self.buf = BytesMut::with_capacity(4096);
            }
            tokio::select! {
                r = self.stream.read_buf(&mut self.buf) => match r {
                    Ok(0) => return self.at_eof().await,
                    Ok(_) => {}
                    Err(e) => {
                        tracing::error!("client({}) - {e}", self.id);
                        return Exit::Closed;
                    }
                },
                _ = stop.stopped() => return Exit::Stopped,
            }
        }
    }

    /// Executes every complete request in the buffer, queueing replies. True after a fatal
    /// error (whose reply is queued last).
    fn process_buffer(&mut self) -> bool {
        loop {
            match protocol::parse(&self.buf, self.peer.is_some()) {
                Ok(Some((req, n))) => {
                    self.buf.advance(n);
                    let reply = self.exec(req);
                    protocol::encode_reply(&mut self.out, &reply);
                }
                Ok(None) => return false,
                Err(e) => {
                    tracing::error!("[{}] - {e}", self.id);
                    protocol::encode_reply(&mut self.out, &e.payload());
                    return true;
                }
            }
        }
    }

    /// The client closed its side: answer an IDENTIFY cut short, as nsqlookupd does.
    async fn at_eof(&mut self) -> Exit {
        let Some(e) = protocol::error_at_eof(&self.buf) else {
            return Exit::Closed;
        };
        tracing::error!("[{}] - {e}", self.id);
        let mut out = Vec::new();
        protocol::encode_reply(&mut out, &e.payload());
        let _ = write_all(&mut self.stream, &out).await;
        Exit::Closed
    }

    fn exec(&mut self, req: Request) -> Vec<u8> {
        let now = now_ns();
        match req {
            Request::Ping => {
                if let Some(p) = &self.peer {
                    let since =
                        Duration::from_nanos(now.saturating_sub(p.last_update()).max(0) as u64);
                    tracing::info!("CLIENT({}): pinged (last ping {since:?})", self.id);
                    p.touch(now);
                }
                b"OK".to_vec()
            }
            Request::Identify(body) => {
                tracing::info!(
                    "CLIENT({}): IDENTIFY Address:{} TCP:{} HTTP:{} Version:{}",
                    self.id,
                    body.broadcast_address,
                    body.tcp_port,
                    body.http_port,
                    body.version
                );
                let peer = Arc::new(PeerInfo::new(self.id.clone(), body, now));
                if self.ctx.registry.identify(&peer) {
                    tracing::info!(
                        "DB: client({}) REGISTER category:client key: subkey:",
                        self.id
                    );
                }
                self.peer = Some(peer);
                self.ctx.identify_reply.clone()
            }
            Request::Register(Target { topic, channel }) => {
                if let Some(peer) = &self.peer {
                    for r in self.ctx.registry.register(peer, &topic, channel.as_deref()) {
                        log_db(&self.id, "REGISTER", &r);
                    }
                }
                b"OK".to_vec()
            }
            Request::Unregister(Target { topic, channel }) => {
                let u = self
                    .ctx
                    .registry
                    .unregister(&self.id, &topic, channel.as_deref());
                for r in &u.unexpected {
                    tracing::warn!(
                        "client({}) unexpected UNREGISTER category:channel key:{} subkey:{}",
                        self.id,
                        r.key,
                        r.subkey
                    );
                }
                for r in &u.removed {
                    log_db(&self.id, "UNREGISTER", r);
                }
                b"OK".to_vec()
            }
        }
    }
}
