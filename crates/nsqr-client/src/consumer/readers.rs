//! Reading a consumer's nsqd connections, done by the consumer's own task inside
//! [`Consumer::next`](super::Consumer::next) rather than by a task per connection: frames are
//! decoded straight into the queue `next` hands out from, so a message is made, handed out,
//! answered and dropped on one thread (its reference counts never bounce between cores) and
//! no task has to wake another per read. This is what keeps the per-message cost near the
//! bare protocol's.
//!
//! New connections (made by `connect`, lookupd polling or a reconnect) arrive through a
//! channel. A connection silent for the read timeout while being read, at end of stream or
//! sending bytes that are not frames, is dropped and reported to the consumer.

use std::collections::VecDeque;
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Instant;

use bytes::BytesMut;
use nsq_wire::client::{put_fin, put_req, FrameRef};
use tokio::sync::mpsc;

use super::conn::{Conn, Other, Tally};
use super::shared::Shared;
use crate::error::Error;
use crate::message::{Message, MessageRef, Reply};
use crate::wire::framed::Reader;

/// A connection's reading half.
pub(crate) struct ConnReader {
    conn: Arc<Conn>,
    reader: Reader,
    /// When bytes last arrived (or reading started).
    heard: Instant,
}

impl ConnReader {
    pub(crate) fn new(conn: Arc<Conn>, reader: Reader) -> ConnReader {
        ConnReader {
            conn,
            reader,
            heard: Instant::now(),
        }
    }
}

/// Every connection being read.
pub(crate) struct Readers {
    list: Vec<ConnReader>,
    incoming: mpsc::UnboundedReceiver<ConnReader>,
    /// Where the next decode starts, so no connection always goes first.
    start: usize,
    /// Answers to lent messages, before they are queued on their connection.
    answers: BytesMut,
}

impl Readers {
    pub(crate) fn new(incoming: mpsc::UnboundedReceiver<ConnReader>) -> Readers {
        Readers {
            list: Vec::new(),
            incoming,
            start: 0,
            answers: BytesMut::new(),
        }
    }

    /// Take in connections made since the last call.
    fn accept(&mut self) {
        while let Ok(c) = self.incoming.try_recv() {
            self.list.push(c);
        }
    }

    /// Decode every frame already read, messages into `out`; true if any frame was there.
    pub(crate) fn decode(&mut self, out: &mut VecDeque<Message>) -> bool {
        self.accept();
        let n = self.list.len();
        let mut any = false;
        let mut broken = Vec::new();
        for k in 0..n {
            let i = (self.start + k) % n;
            let cr = &mut self.list[i];
            let before = out.len();
            loop {
                match cr.reader.next_frame() {
                    Ok(Some(frame)) => {
                        any = true;
                        cr.conn.on_frame(frame, out);
                    }
                    Ok(None) => break,
                    Err(e) => {
                        broken.push((i, e));
                        break;
                    }
                }
            }
            if out.len() > before {
                cr.conn.received(out.len() - before);
            }
        }
        self.start = self.start.wrapping_add(1);
        any |= !broken.is_empty();
        self.drop_conns(broken);
        any
    }

    /// Lend every message already read to `f` where it lies and answer it by `f`'s reply
    /// (the answers of one connection are queued in one go); the number of messages lent.
    /// Messages over `max_attempts` are finished without `f` seeing them.
    pub(crate) fn lend(
        &mut self,
        f: &mut impl FnMut(MessageRef<'_>) -> Reply,
        sh: &Shared,
    ) -> usize {
        self.accept();
        let n = self.list.len();
        let mut lent = 0;
        let mut broken = Vec::new();
        for k in 0..n {
            let i = (self.start + k) % n;
            let cr = &mut self.list[i];
            let mut t = Tally::default();
            loop {
                let answers = &mut self.answers;
                let r = cr.reader.with_next_frame(|frame| match frame {
                    FrameRef::Message {
                        timestamp,
                        attempts,
                        id,
                        body,
                    } => {
                        let m = MessageRef {
                            id,
                            attempts,
                            timestamp,
                            body,
                        };
                        answer_lent(answers, &mut t, m, f, sh);
                        None
                    }
                    FrameRef::Response(b"_heartbeat_") => Some(Other::Heartbeat),
                    FrameRef::Response(b"CLOSE_WAIT") => Some(Other::CloseWait),
                    FrameRef::Response(_) => Some(Other::Ignored),
                    FrameRef::Error(e) => Some(Other::Error(Error::from_frame(e))),
                });
                match r {
                    Ok(Some(None)) => continue,
                    Ok(Some(Some(other))) => {
                        // Answers first: a CLOSE_WAIT may close the connection.
                        cr.conn.lent(&self.answers, &std::mem::take(&mut t));
                        self.answers.clear();
                        cr.conn.on_other(other);
                    }
                    Ok(None) => break,
                    Err(e) => {
                        broken.push((i, e));
                        break;
                    }
                }
            }
            lent += t.messages as usize;
            cr.conn.lent(&self.answers, &t);
            self.answers.clear();
        }
        self.start = self.start.wrapping_add(1);
        self.drop_conns(broken);
        lent
    }

    /// Wait until a connection has more bytes, fails, or comes in, or `sh` is told to wake
    /// (a stop). Cancel-safe.
    pub(crate) async fn wait(&mut self, sh: &Shared) {
        self.accept();
        let timeout = sh.cfg.read_timeout;
        let earliest = self.list.iter().map(|c| c.heard).min();
        let deadline = earliest.map_or_else(|| Instant::now() + timeout, |t| t + timeout);
        let mut sleep = pin!(tokio::time::sleep_until(deadline.into()));
        let mut woken = pin!(sh.wake.notified());
        let mut broken = Vec::new();
        let Readers { list, incoming, .. } = self;
        poll_fn(|cx| {
            let mut ready = false;
            while let Poll::Ready(Some(c)) = incoming.poll_recv(cx) {
                list.push(c);
                ready = true;
            }
            for (i, cr) in list.iter_mut().enumerate() {
                let fill = pin!(cr.reader.fill_untimed());
                match fill.poll(cx) {
                    Poll::Ready(Ok(())) => {
                        cr.heard = Instant::now();
                        ready = true;
                    }
                    Poll::Ready(Err(e)) => {
                        broken.push((i, e));
                        ready = true;
                    }
                    Poll::Pending => {}
                }
            }
            ready |= woken.as_mut().poll(cx).is_ready();
            ready |= sleep.as_mut().poll(cx).is_ready();
            if ready {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
        let now = Instant::now();
        for (i, cr) in self.list.iter().enumerate() {
            if now.duration_since(cr.heard) >= timeout && !broken.iter().any(|(b, _)| *b == i) {
                let what = format!("read from {} (silent for {timeout:?})", cr.conn.name());
                broken.push((i, Error::Timeout(what)));
            }
        }
        self.drop_conns(broken);
    }

    fn drop_conns(&mut self, mut broken: Vec<(usize, Error)>) {
        broken.sort_by_key(|(i, _)| std::cmp::Reverse(*i));
        for (i, e) in broken {
            let cr = self.list.swap_remove(i);
            cr.conn.lost(&e);
        }
    }

    /// Every message read was handed out: answers may go now.
    pub(crate) fn uncork(&self) {
        for cr in &self.list {
            cr.conn.uncork();
        }
    }

    /// No connection left to read.
    pub(crate) fn is_empty(&mut self) -> bool {
        self.accept();
        self.list.is_empty()
    }

    /// Forget every connection (their writers close them).
    pub(crate) fn close_all(&mut self) {
        self.accept();
        for cr in self.list.drain(..) {
            cr.conn.lost(&Error::Stopped);
        }
    }
}

/// Hand one lent message to `f` (unless it was delivered too often) and encode its answer.
fn answer_lent(
    answers: &mut BytesMut,
    t: &mut Tally,
    m: MessageRef<'_>,
    f: &mut impl FnMut(MessageRef<'_>) -> Reply,
    sh: &Shared,
) {
    t.messages += 1;
    let max = sh.cfg.max_attempts;
    let reply = if max > 0 && m.attempts > max {
        tracing::warn!(
            "nsqr-client: message {} attempted {} times, giving up",
            String::from_utf8_lossy(&m.id),
            m.attempts
        );
        t.given_up += 1;
        Reply::Finish
    } else {
        f(m)
    };
    let requeue = |answers: &mut BytesMut, d: Option<std::time::Duration>| {
        let d = d.unwrap_or_else(|| sh.cfg.requeue_delay(m.attempts));
        let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let _ = put_req(answers, &m.id, ms);
    };
    match reply {
        Reply::Finish => {
            t.finished += 1;
            let _ = put_fin(answers, &m.id);
        }
        Reply::Requeue(d) => {
            t.requeued += 1;
            t.backoffs += 1;
            requeue(answers, d);
        }
        Reply::RequeueWithoutBackoff(d) => {
            t.requeued += 1;
            requeue(answers, d);
        }
    }
}
