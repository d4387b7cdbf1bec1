//! A producer's connection to one nsqd over TCP or a unix socket, pipelined as go-nsq's
//! `Producer`: publishes are queued, written as soon as the socket takes them, and nsqd's
//! answers (which come in command order) are matched to them first in, first out.
//!
//! Publishes queued together to one topic go out as one MPUB (with `coalesce_publishes`):
//! a sender that publishes faster than the round trip gets batching for free. A driver task
//! (re)connects when there is something to send, runs the connection's reader and writer, and
//! fails what was sent and not answered when the connection drops; what was queued and not
//! yet sent stays queued for the next connection.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use nsq_wire::client::{put_dpub, put_mpub_spliced, put_nop, put_pub_spliced, Frame};
use nsq_wire::spliced::Spliced;
use parking_lot::Mutex;
use tokio::sync::{oneshot, Notify};

use crate::address::Address;
use crate::config::Config;
use crate::error::Error;
use crate::wire::framed::Reader;
use crate::wire::handshake;
use crate::wire::{write_loop, Flow, Outgoing};

/// Where a publish's result goes (None: nobody is waiting).
pub(crate) type Waiter = Option<oneshot::Sender<Result<(), Error>>>;

/// The largest coalesced MPUB body: under nsqd's default `--max-body-size` (5 MiB).
const MAX_COALESCED: usize = 4 << 20;
/// Commands encoded per write at most, so the first bytes go out while more are queued.
const MAX_WRITE: usize = 1 << 20;

/// A queued command.
pub(crate) enum Op {
    Pub {
        topic: Arc<str>,
        body: Bytes,
        waiter: Waiter,
    },
    Mpub {
        topic: Arc<str>,
        bodies: Vec<Bytes>,
        waiter: Waiter,
    },
    Dpub {
        topic: Arc<str>,
        delay: Duration,
        body: Bytes,
        waiter: Waiter,
    },
    /// The answer to a heartbeat (no response).
    Nop,
    /// Resolves once a connection is up (nothing is sent).
    Probe(Waiter),
}

/// Commands written and not yet answered, in order; one entry per command.
enum Pending {
    One(Waiter),
    /// A coalesced MPUB: one answer for all of them.
    Many(Vec<Waiter>),
}

impl Pending {
    fn complete(self, r: Result<(), Error>) {
        let send = |w: Waiter, r: Result<(), Error>| {
            if let Some(tx) = w {
                let _ = tx.send(r);
            }
        };
        match self {
            Pending::One(w) => send(w, r),
            Pending::Many(ws) => {
                for w in ws {
                    let r = r.as_ref().map(|_| ()).map_err(Error::duplicate);
                    send(w, r);
                }
            }
        }
    }
}

#[derive(Default)]
struct State {
    ops: VecDeque<Op>,
    pending: VecDeque<Pending>,
    /// A connection is up (its writer drains `ops`).
    up: bool,
    /// No more publishes; finish what is queued and in flight, then stop.
    stopping: bool,
    /// The driver has exited.
    finished: bool,
}

/// What the handle, the driver, the reader and the writer share.
pub(crate) struct Shared {
    addr: Address,
    name: String,
    cfg: Config,
    state: Mutex<State>,
    /// Wakes the driver (to connect) or the writer (to write), whichever is waiting.
    wake: Notify,
    /// Told when the driver exits.
    done: Notify,
}

impl Shared {
    /// A producer for `addr`; its driver runs on the current runtime.
    pub(crate) fn start(addr: Address, cfg: Config) -> Arc<Shared> {
        let shared = Arc::new(Shared {
            name: addr.to_string(),
            addr,
            cfg,
            state: Mutex::new(State::default()),
            wake: Notify::new(),
            done: Notify::new(),
        });
        tokio::spawn(drive(Arc::clone(&shared)));
        shared
    }

    /// Queue a command. Once stopped it is dropped (its waiter sees the producer stopped).
    pub(crate) fn enqueue(&self, op: Op) {
        let mut s = self.state.lock();
        if s.stopping {
            return;
        }
        let was_empty = s.ops.is_empty();
        s.ops.push_back(op);
        drop(s);
        if was_empty {
            self.wake.notify_one();
        }
    }

    /// True while a connection is up.
    pub(crate) fn is_connected(&self) -> bool {
        self.state.lock().up
    }

    /// Stop taking publishes; resolves once everything queued was answered (or failed) and
    /// the connection is closed.
    pub(crate) async fn stop(&self) {
        let done = self.done.notified();
        tokio::pin!(done);
        done.as_mut().enable();
        {
            let mut s = self.state.lock();
            s.stopping = true;
            if s.finished {
                return;
            }
        }
        self.wake.notify_one();
        done.await;
    }

    /// Stop without waiting (the last handle was dropped).
    pub(crate) fn stop_soon(&self) {
        self.state.lock().stopping = true;
        self.wake.notify_one();
    }

    /// Fail everything queued and unsent with `e`.
    fn fail_queued(&self, e: &Error) {
        let ops: Vec<Op> = self.state.lock().ops.drain(..).collect();
        for op in ops {
            fail(op, e.duplicate());
        }
    }

    /// The connection dropped: what was sent and not answered fails with `e`.
    fn connection_lost(&self, e: &Error) {
        let pending: Vec<Pending> = {
            let mut s = self.state.lock();
            s.up = false;
            s.pending.drain(..).collect()
        };
        for p in pending {
            p.complete(Err(e.duplicate()));
        }
    }
}

/// Tell a queued publish it failed.
pub(crate) fn fail(op: Op, e: Error) {
    match op {
        Op::Pub { waiter, .. }
        | Op::Mpub { waiter, .. }
        | Op::Dpub { waiter, .. }
        | Op::Probe(waiter) => Pending::One(waiter).complete(Err(e)),
        Op::Nop => {}
    }
}

/// Connect whenever there is something to send, until stopped.
async fn drive(p: Arc<Shared>) {
    loop {
        let (work, stopping) = {
            let s = p.state.lock();
            (s.ops.iter().any(|o| !matches!(o, Op::Nop)), s.stopping)
        };
        if !work {
            if stopping {
                break;
            }
            p.wake.notified().await;
            continue;
        }
        match handshake::open(&p.addr, &p.cfg, None).await {
            Err(e) => {
                tracing::warn!("nsqr-client: connecting to {}: {e}", p.name);
                p.fail_queued(&e);
            }
            Ok(conn) => {
                p.state.lock().up = true;
                let reading = read_loop(conn.reader, &p);
                let writing = write_loop(conn.writer, &*p, p.cfg.write_timeout, None);
                tokio::pin!(reading);
                let e = tokio::select! {
                    r = &mut reading => r.err(),
                    r = writing => match r {
                        Ok(()) => None,
                        Err(write_error) => Some(answer_before(&mut reading, write_error).await),
                    },
                };
                let e = e.unwrap_or_else(|| Error::Closed(p.name.clone()));
                p.connection_lost(&e);
            }
        }
    }
    p.state.lock().finished = true;
    p.done.notify_waiters();
}

/// The error to report for a connection whose write failed. nsqd closes a connection right
/// after sending a fatal error (a message too big, a bad topic), so a publisher still writing
/// then sees a broken pipe; the server's error frame is in the socket already. The reader goes
/// on for at most [`ANSWER_AFTER_WRITE_ERROR`]: if it reads an error frame, that answer (with
/// nsqd's words) is what the publish gets, else the write error.
async fn answer_before(
    reading: &mut (impl std::future::Future<Output = Result<(), Error>> + Unpin),
    write_error: Error,
) -> Error {
    match tokio::time::timeout(ANSWER_AFTER_WRITE_ERROR, reading).await {
        Ok(Err(e @ Error::Closed(_))) => e,
        _ => write_error,
    }
}

/// How long a failed connection's reader may go on to find the server's answer.
const ANSWER_AFTER_WRITE_ERROR: Duration = Duration::from_secs(1);

/// Match the server's answers to what was sent; answer heartbeats.
async fn read_loop(mut r: Reader, p: &Shared) -> Result<(), Error> {
    loop {
        while let Some(frame) = r.next_frame()? {
            let result = match frame {
                Frame::Response(b) if b == "_heartbeat_" => {
                    let mut s = p.state.lock();
                    let was_empty = s.ops.is_empty();
                    s.ops.push_front(Op::Nop);
                    drop(s);
                    if was_empty {
                        p.wake.notify_one();
                    }
                    continue;
                }
                Frame::Response(_) => Ok(()),
                Frame::Error(e) => Err(Error::from_frame(&e)),
                Frame::Message { .. } => {
                    return Err(Error::Handshake(format!(
                        "{} sent a message to a producer",
                        p.name
                    )))
                }
            };
            let (front, close) = {
                let mut s = p.state.lock();
                let front = s.pending.pop_front();
                let close = s.stopping && s.pending.is_empty() && s.ops.is_empty();
                (front, close)
            };
            // nsqd closes the connection after any error a publish can get: nothing more
            // is sent on it (what was queued goes out on the next connection).
            let fatal = result
                .as_ref()
                .err()
                .map(|e| Error::Closed(format!("{} after {e}", p.name)));
            match front {
                Some(w) => w.complete(result),
                None => {
                    return Err(Error::Handshake(format!(
                        "{} answered a command that was not sent",
                        p.name
                    )))
                }
            }
            if let Some(e) = fatal {
                return Err(e);
            }
            if close {
                p.wake.notify_one();
            }
        }
        r.fill(p.cfg.read_timeout).await?;
    }
}

impl Outgoing for Shared {
    fn take(&self, out: &mut BytesMut, spliced: &mut Spliced) -> Flow {
        let mut s = self.state.lock();
        let coalesce = self.cfg.coalesce_publishes;
        while out.len() + spliced.bytes() < MAX_WRITE {
            let Some(op) = s.ops.pop_front() else { break };
            let pending = match op {
                Op::Nop => {
                    put_nop(out);
                    continue;
                }
                Op::Probe(waiter) => {
                    Pending::One(waiter).complete(Ok(()));
                    continue;
                }
                Op::Pub {
                    topic,
                    body,
                    waiter,
                } => {
                    if coalesce && next_joins(&s.ops, &topic, body.len()) {
                        encode_coalesced(out, spliced, &mut s.ops, topic, body, waiter)
                    } else {
                        encoded(put_pub_spliced(out, spliced, &*topic, &body), waiter)
                    }
                }
                Op::Mpub {
                    topic,
                    bodies,
                    waiter,
                } => encoded(put_mpub_spliced(out, spliced, &*topic, &bodies), waiter),
                Op::Dpub {
                    topic,
                    delay,
                    body,
                    waiter,
                } => {
                    let ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
                    encoded(put_dpub(out, &*topic, ms, &body), waiter)
                }
            };
            if let Some(p) = pending {
                s.pending.push_back(p);
            }
        }
        if !out.is_empty() {
            Flow::Write
        } else if s.stopping && s.pending.is_empty() {
            Flow::Close
        } else {
            Flow::Idle
        }
    }

    fn wakeup(&self) -> &Notify {
        &self.wake
    }
}

/// The pending entry of an encoded command, or None (its waiter told) if it could not be
/// encoded (nothing was written then).
fn encoded(r: Result<(), nsq_wire::client::EncodeError>, waiter: Waiter) -> Option<Pending> {
    match r {
        Ok(()) => Some(Pending::One(waiter)),
        Err(e) => {
            Pending::One(waiter).complete(Err(e.into()));
            None
        }
    }
}

/// The next queued op is a publish to the same topic that fits in one MPUB with this one.
fn next_joins(ops: &VecDeque<Op>, topic: &Arc<str>, len: usize) -> bool {
    matches!(ops.front(), Some(Op::Pub { topic: t, body, .. })
        if **t == **topic && len + body.len() + 8 <= MAX_COALESCED)
}

/// `body` and the publishes to `topic` right after it as one MPUB.
fn encode_coalesced(
    out: &mut BytesMut,
    spliced: &mut Spliced,
    ops: &mut VecDeque<Op>,
    topic: Arc<str>,
    body: Bytes,
    waiter: Waiter,
) -> Option<Pending> {
    out.put_slice(b"MPUB ");
    out.put_slice(topic.as_bytes());
    out.put_u8(b'\n');
    let sizes_at = out.len();
    out.put_slice(&[0u8; 8]);
    let mut waiters = vec![waiter];
    let mut total = 4 + 4 + body.len();
    out.put_u32(body.len() as u32);
    spliced.put_body(out, &body);
    while next_joins(ops, &topic, total) {
        let Some(Op::Pub { body, waiter, .. }) = ops.pop_front() else {
            break;
        };
        total += 4 + body.len();
        out.put_u32(body.len() as u32);
        spliced.put_body(out, &body);
        waiters.push(waiter);
    }
    // total <= MAX_COALESCED, and the count is below it: both fit their 32 bits.
    out[sizes_at..sizes_at + 4].copy_from_slice(&(total as u32).to_be_bytes());
    out[sizes_at + 4..sizes_at + 8].copy_from_slice(&(waiters.len() as u32).to_be_bytes());
    Some(Pending::Many(waiters))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(topic: &Arc<str>, body: &'static [u8]) -> Op {
        Op::Pub {
            topic: Arc::clone(topic),
            body: Bytes::from_static(body),
            waiter: None,
        }
    }

    #[test]
    fn consecutive_publishes_to_one_topic_become_one_mpub() {
        let (a, b): (Arc<str>, Arc<str>) = ("a".into(), "b".into());
        let mut ops: VecDeque<Op> = [op(&a, b"1"), op(&a, b"22"), op(&b, b"3")].into();
        let mut out = BytesMut::new();
        let first = ops.pop_front().unwrap();
        let Op::Pub {
            topic,
            body,
            waiter,
        } = first
        else {
            unreachable!()
        };
        let p = encode_coalesced(
            &mut out,
            &mut Spliced::default(),
            &mut ops,
            topic,
            body,
            waiter,
        );
        assert!(matches!(p, Some(Pending::Many(ref w)) if w.len() == 2));
        // The server's parser reads it back as one MPUB of both bodies.
        let mut expect = BytesMut::new();
        nsq_wire::client::put_mpub(&mut expect, "a", &[&b"1"[..], b"22"]).unwrap();
        assert_eq!(out, expect);
        assert_eq!(ops.len(), 1);
    }

    #[test]
    fn large_coalesced_bodies_are_left_where_they_lie() {
        let a: Arc<str> = "a".into();
        let big = Bytes::from(vec![5u8; nsq_wire::spliced::SPLICE_MIN]);
        let mut ops: VecDeque<Op> = [Op::Pub {
            topic: Arc::clone(&a),
            body: big.clone(),
            waiter: None,
        }]
        .into();
        let (mut out, mut spliced) = (BytesMut::new(), Spliced::default());
        let p = encode_coalesced(
            &mut out,
            &mut spliced,
            &mut ops,
            a,
            Bytes::from_static(b"1"),
            None,
        );
        assert!(matches!(p, Some(Pending::Many(ref w)) if w.len() == 2));
        assert_eq!(spliced.bytes(), big.len());
        let mut expect = BytesMut::new();
        nsq_wire::client::put_mpub(&mut expect, "a", &[&b"1"[..], &big]).unwrap();
        assert_eq!(spliced.slices(&out, out.len()).concat(), &expect[..]);
    }
}
