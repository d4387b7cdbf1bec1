//! A delivered message and the answers a consumer gives it: finish, requeue (with or without
//! backoff), touch. Over a socket an answer is a command queued on the connection it came
//! from; in process it is a call into the broker. Either way it also tells the consumer (its
//! counts, its backoff), which is all the per-message work there is.
//!
//! A message dropped without an answer is requeued at once without backoff, so a consumer
//! that stops early, or a task that panics, does not leave it in flight until its timeout.
//!
//! A message is small (one enum, no copy of what the broker's delivery already holds): it is
//! moved a few times on its way out of `next`, so its size is part of the per-message cost.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use nsq_wire::client::{put_fin, put_req, put_touch};
use nsq_wire::command::IdToken;
use nsqr_broker::Delivery;

use crate::consumer::conn::Conn;
use crate::error::Error;

/// One message from nsqd or the in-process broker, in flight until answered.
pub struct Message {
    inner: Inner,
}

enum Inner {
    /// From a socket.
    Wire {
        id: IdToken,
        attempts: u16,
        timestamp: i64,
        body: Bytes,
        conn: Arc<Conn>,
    },
    /// From the broker in this process.
    Inproc { delivery: Delivery, conn: Arc<Conn> },
    /// Answered already (only `Drop` sees this).
    Answered,
}

static NO_BODY: Bytes = Bytes::new();

/// How a message is answered.
enum Answer {
    Fin,
    Req { delay: Duration, backoff: bool },
}

/// How [`Consumer::next_batch`](crate::Consumer::next_batch) answers a message it lent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// FIN.
    Finish,
    /// REQ with backoff; None: `default_requeue_delay` times the attempts.
    Requeue(Option<Duration>),
    /// REQ without backoff.
    RequeueWithoutBackoff(Option<Duration>),
}

/// A message lent where it was read ([`Consumer::next_batch`](crate::Consumer::next_batch)):
/// nothing is copied or reference counted; it is answered by what the handler returns.
#[derive(Debug, Clone, Copy)]
pub struct MessageRef<'a> {
    pub(crate) id: IdToken,
    pub(crate) attempts: u16,
    pub(crate) timestamp: i64,
    pub(crate) body: &'a [u8],
}

impl MessageRef<'_> {
    /// The body.
    pub fn body(&self) -> &[u8] {
        self.body
    }

    /// The id, as the server sent it.
    pub fn id(&self) -> IdToken {
        self.id
    }

    /// How many times it has been delivered, this time included.
    pub fn attempts(&self) -> u16 {
        self.attempts
    }

    /// When it was published, in Unix nanoseconds.
    pub fn timestamp(&self) -> i64 {
        self.timestamp
    }
}

impl Message {
    pub(crate) fn wire(
        id: IdToken,
        attempts: u16,
        timestamp: i64,
        body: Bytes,
        conn: Arc<Conn>,
    ) -> Message {
        Message {
            inner: Inner::Wire {
                id,
                attempts,
                timestamp,
                body,
                conn,
            },
        }
    }

    pub(crate) fn inproc(delivery: Delivery, conn: Arc<Conn>) -> Message {
        Message {
            inner: Inner::Inproc { delivery, conn },
        }
    }

    /// The body. Over a socket it shares the buffer the frame was read into; in process it
    /// is the buffer that was published (no copy either way).
    pub fn body(&self) -> &Bytes {
        match &self.inner {
            Inner::Wire { body, .. } => body,
            Inner::Inproc { delivery, .. } => delivery.body(),
            Inner::Answered => &NO_BODY,
        }
    }

    /// The id, as the server sent it (16 hex digits from nsqd).
    pub fn id(&self) -> IdToken {
        match &self.inner {
            Inner::Wire { id, .. } => *id,
            Inner::Inproc { delivery, .. } => delivery.id().to_hex(),
            Inner::Answered => [b'0'; 16],
        }
    }

    /// The id as text.
    pub fn id_str(&self) -> String {
        String::from_utf8_lossy(&self.id()).into_owned()
    }

    /// How many times it has been delivered, this time included.
    pub fn attempts(&self) -> u16 {
        match &self.inner {
            Inner::Wire { attempts, .. } => *attempts,
            Inner::Inproc { delivery, .. } => delivery.attempts(),
            Inner::Answered => 0,
        }
    }

    /// When it was published, in Unix nanoseconds.
    pub fn timestamp(&self) -> i64 {
        match &self.inner {
            Inner::Wire { timestamp, .. } => *timestamp,
            Inner::Inproc { delivery, .. } => delivery.timestamp(),
            Inner::Answered => 0,
        }
    }

    fn conn(&self) -> Option<&Arc<Conn>> {
        match &self.inner {
            Inner::Wire { conn, .. } | Inner::Inproc { conn, .. } => Some(conn),
            Inner::Answered => None,
        }
    }

    /// The nsqd it came from (`host:port`, `unix:///path` or `inproc://`).
    pub fn source(&self) -> &str {
        self.conn().map_or("", |c| c.name())
    }

    /// Done with it (FIN).
    pub fn finish(mut self) -> Result<(), Error> {
        self.answer(Answer::Fin)
    }

    /// Deliver it again after `delay` (REQ), and back off: a failure slows the consumer
    /// down (go-nsq's `Requeue`). None takes `default_requeue_delay` times its attempts, at
    /// most `max_requeue_delay`.
    pub fn requeue(mut self, delay: Option<Duration>) -> Result<(), Error> {
        let delay = self.delay(delay);
        self.answer(Answer::Req {
            delay,
            backoff: true,
        })
    }

    /// Deliver it again after `delay` without backing off (go-nsq's
    /// `RequeueWithoutBackoff`).
    pub fn requeue_without_backoff(mut self, delay: Option<Duration>) -> Result<(), Error> {
        let delay = self.delay(delay);
        self.answer(Answer::Req {
            delay,
            backoff: false,
        })
    }

    /// Lend it as a [`MessageRef`], then answer it by `reply`.
    pub(crate) fn lend(self, f: &mut impl FnMut(MessageRef<'_>) -> Reply) -> Result<(), Error> {
        let reply = f(MessageRef {
            id: self.id(),
            attempts: self.attempts(),
            timestamp: self.timestamp(),
            body: self.body(),
        });
        match reply {
            Reply::Finish => self.finish(),
            Reply::Requeue(d) => self.requeue(d),
            Reply::RequeueWithoutBackoff(d) => self.requeue_without_backoff(d),
        }
    }

    /// A fresh in-flight timeout (TOUCH).
    pub fn touch(&self) -> Result<(), Error> {
        match &self.inner {
            Inner::Wire { id, conn, .. } => conn.command(|b| put_touch(b, id)),
            Inner::Inproc { delivery, .. } => Ok(delivery.touch()?),
            Inner::Answered => Ok(()),
        }
    }

    fn delay(&self, delay: Option<Duration>) -> Duration {
        match (delay, self.conn()) {
            (Some(d), _) => d,
            (None, Some(c)) => c.config().requeue_delay(self.attempts()),
            (None, None) => Duration::ZERO,
        }
    }

    fn answer(&mut self, a: Answer) -> Result<(), Error> {
        let (r, conn) = match std::mem::replace(&mut self.inner, Inner::Answered) {
            Inner::Answered => return Ok(()),
            Inner::Wire { id, conn, .. } => {
                let r = match a {
                    Answer::Fin => conn.command(|b| put_fin(b, &id)),
                    Answer::Req { delay, .. } => {
                        let ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
                        conn.command(|b| put_req(b, &id, ms))
                    }
                };
                (r, conn)
            }
            Inner::Inproc { delivery, conn } => {
                let r = match a {
                    Answer::Fin => delivery.fin(),
                    Answer::Req { delay, .. } => delivery.req(delay),
                };
                (r.map_err(Error::from), conn)
            }
        };
        match a {
            Answer::Fin => conn.answered(true, false),
            Answer::Req { backoff, .. } => conn.answered(false, backoff),
        }
        r
    }
}

impl Drop for Message {
    fn drop(&mut self) {
        if !matches!(self.inner, Inner::Answered) {
            let _ = self.answer(Answer::Req {
                delay: Duration::ZERO,
                backoff: false,
            });
        }
    }
}

impl std::fmt::Debug for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Message")
            .field("id", &self.id_str())
            .field("attempts", &self.attempts())
            .field("len", &self.body().len())
            .field("source", &self.source())
            .finish()
    }
}
