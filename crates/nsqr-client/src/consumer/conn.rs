//! One of a consumer's connections: to an nsqd (read by the consumer itself, see
//! `readers.rs`; written by a task of its own: RDY / FIN / REQ / TOUCH / NOP / CLS), or the
//! in-process subscription standing in for one (its RDY is the subscription's max-in-flight).
//! The RDY bookkeeping of go-nsq's `Conn` lives here; the decisions are `rdy.rs`'s.
//!
//! Closing follows go-nsq: after CLS the server answers `CLOSE_WAIT`; the connection then
//! waits for its messages in flight to be answered, and closes its writing side once they
//! are (the server closes, the reader sees the end and cleans up).

use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64};
use std::sync::Arc;
use std::time::Instant;

use std::collections::VecDeque;

use bytes::BytesMut;
use nsq_wire::client::{put_cls, put_nop, put_rdy, EncodeError, Frame};
use tokio::sync::Notify;

use super::shared::Shared;
use crate::config::Config;
use crate::error::Error;
use crate::message::Message;
use crate::wire::commands::Commands;
use crate::wire::write_loop;

/// A frame from the server that is not a message.
pub(crate) enum Other {
    Heartbeat,
    CloseWait,
    Error(Error),
    Ignored,
}

/// What a batch of messages lent in place came to.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    pub(crate) messages: u64,
    pub(crate) finished: u64,
    pub(crate) requeued: u64,
    /// Requeues with backoff.
    pub(crate) backoffs: u64,
    pub(crate) given_up: u64,
}

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
    /// Reported gone to the consumer.
    gone: AtomicBool,
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
            gone: AtomicBool::new(false),
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

/// Start a socket connection's writer task. Besides what is queued it sends a NOP whenever
/// nothing was written for a heartbeat interval, so the server keeps the connection while the
/// program is busy elsewhere and not reading (nsqd drops a client silent for two intervals).
pub(crate) fn spawn_writer(conn: Arc<Conn>, writer: crate::wire::framed::Writer) {
    let timeout = conn.consumer.cfg.write_timeout;
    let keepalive = conn.consumer.cfg.heartbeat_interval;
    tokio::spawn(async move {
        if let Transport::Wire(cmds) = &conn.transport {
            if let Err(e) = write_loop(writer, cmds, timeout, keepalive).await {
                conn.lost(&e);
            }
        }
    });
}

impl Conn {
    /// A frame from the server; messages go to `out`.
    pub(crate) fn on_frame(self: &Arc<Self>, frame: Frame, out: &mut VecDeque<Message>) {
        match frame {
            Frame::Message {
                timestamp,
                attempts,
                id,
                body,
            } => out.push_back(Message::wire(
                id,
                attempts,
                timestamp,
                body,
                Arc::clone(self),
            )),
            Frame::Response(b) if b == "_heartbeat_" => self.on_other(Other::Heartbeat),
            Frame::Response(b) if b == "CLOSE_WAIT" => self.on_other(Other::CloseWait),
            Frame::Response(_) => {}
            Frame::Error(e) => self.on_other(Other::Error(Error::from_frame(&e))),
        }
    }

    /// A frame other than a message: answer a heartbeat, close after CLOSE_WAIT once
    /// nothing is in flight, log an error (FIN / REQ / TOUCH failures quietly).
    pub(crate) fn on_other(&self, other: Other) {
        match other {
            Other::Heartbeat => {
                let _ = self.command(|b| {
                    put_nop(b);
                    Ok(())
                });
            }
            Other::CloseWait => {
                self.close_wait.store(true, Release);
                if self.in_flight.load(Acquire) <= 0 {
                    self.close_writer();
                }
            }
            Other::Error(e) => match e.code() {
                Some(c) if !c.is_fatal() => tracing::debug!("nsqr-client: {}: {e}", self.name),
                _ => tracing::warn!("nsqr-client: {}: {e}", self.name),
            },
            Other::Ignored => {}
        }
    }

    /// `n` messages were just received: their answers will follow shortly (cork).
    pub(crate) fn received(&self, n: usize) {
        self.in_flight.fetch_add(n as i64, AcqRel);
        self.last_msg_at.store(self.now_ns(), Relaxed);
        if let Transport::Wire(cmds) = &self.transport {
            cmds.cork();
        }
    }

    /// Answers to messages lent in place (`Readers::lend`): queued in one go, and counted.
    /// Nothing more is coming for this read, so the queue is uncorked: a cork left by
    /// messages taken with `next` before would otherwise hold every later write back for
    /// the writer's cork timeout.
    pub(crate) fn lent(self: &Arc<Self>, answers: &[u8], t: &Tally) {
        if t.messages == 0 {
            return;
        }
        let _ = self.command(|b| {
            b.extend_from_slice(answers);
            Ok(())
        });
        self.uncork();
        let c = &self.consumer.counters;
        c.received.fetch_add(t.messages, Relaxed);
        c.finished.fetch_add(t.finished, Relaxed);
        if t.requeued > 0 {
            c.requeued.fetch_add(t.requeued, Relaxed);
        }
        if t.given_up > 0 {
            c.given_up.fetch_add(t.given_up, Relaxed);
        }
        self.last_msg_at.store(self.now_ns(), Relaxed);
        let rdy = &self.consumer.rdy;
        for _ in 0..t.backoffs {
            rdy.on_failure(self);
        }
        if rdy.backoff_level() > 0 {
            for _ in 0..t.finished {
                rdy.on_success(self);
            }
        }
    }

    /// The messages received so far were handed out: send their answers.
    pub(crate) fn uncork(&self) {
        if let Transport::Wire(cmds) = &self.transport {
            cmds.uncork();
        }
    }

    /// The connection is gone (end of stream, an error, a timeout): no more commands, and
    /// the consumer forgets it.
    pub(crate) fn lost(self: &Arc<Self>, why: &Error) {
        if self.gone.swap(true, AcqRel) {
            return;
        }
        if !self.is_closing() {
            tracing::warn!("nsqr-client: {}: {why}", self.name);
        }
        self.close_wait.store(true, Release);
        self.close_writer();
        self.consumer.conn_closed(self);
    }
}
