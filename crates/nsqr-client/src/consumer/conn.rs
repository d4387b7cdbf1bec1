//! One of a consumer's connections: to an nsqd (a reader task that turns frames into
//! [`Message`]s for the consumer's inbox, a writer task for RDY / FIN / REQ / TOUCH / NOP /
//! CLS), or the in-process subscription standing in for one (its RDY is the subscription's
//! max-in-flight). The RDY bookkeeping of go-nsq's `Conn` lives here; the decisions are
//! `rdy.rs`'s.
//!
//! Closing follows go-nsq: after CLS the server answers `CLOSE_WAIT`; the connection then
//! waits for its messages in flight to be answered, and closes its writing side once they
//! are (the server closes, the reader sees the end and cleans up).

use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64};
use std::sync::Arc;
use std::time::Instant;

use bytes::BytesMut;
use nsq_wire::client::{put_cls, put_nop, put_rdy, EncodeError, Frame};
use tokio::sync::Notify;

use super::shared::Shared;
use crate::config::Config;
use crate::error::Error;
use crate::message::{Message, Origin};
use crate::wire::commands::Commands;
use crate::wire::framed::Reader;
use crate::wire::write_loop;

/// How RDY reaches the server.
pub(crate) enum Transport {
    /// Commands over a socket.
    Wire(Commands),
    /// The in-process subscription: RDY is read by `Consumer::next`, woken here.
    Inproc(Notify),
}

/// One connection of a consumer.
pub(crate) struct Conn {
    name: String,
    pub(crate) transport: Transport,
    pub(crate) consumer: Arc<Shared>,
    /// The server's `max_rdy_count`.
    pub(crate) max_rdy: i64,
    /// The RDY last sent (go-nsq's `rdyCount`); written under the consumer's RDY lock.
    pub(crate) rdy: AtomicI64,
    /// Delivered and not yet answered.
    pub(crate) in_flight: AtomicI64,
    /// Nanoseconds since the consumer started, of the last RDY > 0 sent and last message.
    pub(crate) last_rdy_at: AtomicU64,
    pub(crate) last_msg_at: AtomicU64,
    /// CLS sent or the connection failed: no more RDY, close when nothing is in flight.
    closing: AtomicBool,
    /// The server said `CLOSE_WAIT` (or will send nothing more).
    close_wait: AtomicBool,
}

impl Conn {
    pub(crate) fn new(
        name: String,
        transport: Transport,
        consumer: Arc<Shared>,
        max_rdy: i64,
    ) -> Conn {
        Conn {
            name,
            transport,
            consumer,
            max_rdy: max_rdy.max(1),
            rdy: AtomicI64::new(0),
            in_flight: AtomicI64::new(0),
            last_rdy_at: AtomicU64::new(0),
            last_msg_at: AtomicU64::new(0),
            closing: AtomicBool::new(false),
            close_wait: AtomicBool::new(false),
        }
    }

    /// The address it was connected with.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn config(&self) -> &Config {
        &self.consumer.cfg
    }

    pub(crate) fn is_closing(&self) -> bool {
        self.closing.load(Acquire)
    }

    /// Queue a command; an error if the connection is gone.
    pub(crate) fn command(
        &self,
        encode: impl FnOnce(&mut BytesMut) -> Result<(), EncodeError>,
    ) -> Result<(), Error> {
        let Transport::Wire(cmds) = &self.transport else {
            return Ok(());
        };
        let mut failed = None;
        let queued = cmds.push(|b| {
            let at = b.len();
            if let Err(e) = encode(b) {
                b.truncate(at);
                failed = Some(e);
            }
        });
        match (queued, failed) {
            (_, Some(e)) => Err(e.into()),
            (false, None) => Err(Error::Closed(self.name.clone())),
            (true, None) => Ok(()),
        }
    }

    /// Send `RDY count` (the consumer's RDY lock is held).
    pub(crate) fn send_rdy(&self, count: i64) -> Result<(), Error> {
        match &self.transport {
            Transport::Wire(_) => {
                let n = u64::try_from(count).unwrap_or(0);
                self.command(|b| {
                    put_rdy(b, n);
                    Ok(())
                })
            }
            Transport::Inproc(wake) => {
                wake.notify_one();
                Ok(())
            }
        }
    }

    /// A message was answered: counts, backoff, and the close that may have waited for it.
    pub(crate) fn answered(self: &Arc<Self>, finished: bool, backoff: bool) {
        let left = self.in_flight.fetch_sub(1, AcqRel) - 1;
        self.consumer.answered(self, finished, backoff);
        if left <= 0 && self.close_wait.load(Acquire) {
            self.close_writer();
        }
    }

    /// Start closing: CLS (the server answers `CLOSE_WAIT`).
    pub(crate) fn start_close(&self) {
        if self.closing.swap(true, AcqRel) {
            return;
        }
        match &self.transport {
            Transport::Wire(_) => {
                let _ = self.command(|b| {
                    put_cls(b);
                    Ok(())
                });
            }
            Transport::Inproc(wake) => wake.notify_one(),
        }
    }

    /// Close the writing side now (what is queued is still sent).
    pub(crate) fn close_writer(&self) {
        self.closing.store(true, Release);
        if let Transport::Wire(cmds) = &self.transport {
            cmds.close();
        }
    }

    fn now_ns(&self) -> u64 {
        self.consumer.started.elapsed().as_nanos() as u64
    }

    pub(crate) fn mark_rdy_sent(&self) {
        self.last_rdy_at.store(self.now_ns(), Relaxed);
    }

    /// How long ago the last message arrived and the last RDY > 0 was sent.
    pub(crate) fn idle_times(&self, now: Instant) -> (std::time::Duration, std::time::Duration) {
        let now = now.duration_since(self.consumer.started).as_nanos() as u64;
        let ago =
            |at: &AtomicU64| std::time::Duration::from_nanos(now.saturating_sub(at.load(Relaxed)));
        (ago(&self.last_msg_at), ago(&self.last_rdy_at))
    }
}

/// Run a socket connection: its writer and reader tasks. When the reader ends (the server
/// closed, an error, a timeout) the connection is removed from the consumer.
pub(crate) fn spawn(conn: Arc<Conn>, reader: Reader, writer: crate::wire::framed::Writer) {
    let timeout = conn.consumer.cfg.write_timeout;
    let w = Arc::clone(&conn);
    tokio::spawn(async move {
        if let Transport::Wire(cmds) = &w.transport {
            if let Err(e) = write_loop(writer, cmds, timeout).await {
                tracing::warn!("nsqr-client: writing to {}: {e}", w.name);
                w.close_writer();
            }
        }
    });
    tokio::spawn(async move {
        let r = read_loop(&conn, reader).await;
        if let Err(e) = &r {
            if !conn.is_closing() {
                tracing::warn!("nsqr-client: reading from {}: {e}", conn.name);
            }
        }
        conn.close_wait.store(true, Release);
        conn.close_writer();
        conn.consumer.conn_closed(&conn);
    });
}

/// Turn frames into messages for the consumer, a read at a time.
async fn read_loop(conn: &Arc<Conn>, mut r: Reader) -> Result<(), Error> {
    let mut batch: Vec<Message> = Vec::with_capacity(256);
    loop {
        while let Some(frame) = r.next_frame()? {
            match frame {
                Frame::Message {
                    timestamp,
                    attempts,
                    id,
                    body,
                } => batch.push(Message {
                    id,
                    attempts,
                    timestamp,
                    body,
                    origin: Some(Origin::Wire(Arc::clone(conn))),
                }),
                Frame::Response(b) if b == "_heartbeat_" => {
                    let _ = conn.command(|b| {
                        put_nop(b);
                        Ok(())
                    });
                }
                Frame::Response(b) if b == "CLOSE_WAIT" => {
                    conn.close_wait.store(true, Release);
                    if conn.in_flight.load(Acquire) <= 0 {
                        conn.close_writer();
                    }
                }
                Frame::Response(_) => {}
                Frame::Error(e) => {
                    let e = Error::from_frame(&e);
                    match e.code() {
                        Some(c) if !c.is_fatal() => {
                            tracing::debug!("nsqr-client: {}: {e}", conn.name)
                        }
                        _ => tracing::warn!("nsqr-client: {}: {e}", conn.name),
                    }
                }
            }
        }
        if !batch.is_empty() {
            let n = batch.len() as i64;
            conn.in_flight.fetch_add(n, AcqRel);
            conn.last_msg_at.store(conn.now_ns(), Relaxed);
            conn.consumer.deliver(&mut batch);
        }
        r.fill(conn.consumer.cfg.read_timeout).await?;
    }
}
