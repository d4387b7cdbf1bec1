//! A delivered message and the answers a consumer gives it: finish, requeue (with or without
//! backoff), touch. Over a socket an answer is a command queued on the connection it came
//! from; in process it is a call into the broker. Either way it also tells the consumer (its
//! counts, its backoff), which is all the per-message work there is.
//!
//! A message dropped without an answer is requeued at once without backoff, so a consumer
//! that stops early, or a task that panics, does not leave it in flight until its timeout.

use std::time::Duration;

use bytes::Bytes;
use nsq_wire::client::{put_fin, put_req, put_touch};
use nsq_wire::command::IdToken;

use crate::consumer::conn::Conn;
use crate::error::Error;

/// One message from nsqd or the in-process broker, in flight until answered.
pub struct Message {
    pub(crate) id: IdToken,
    pub(crate) attempts: u16,
    pub(crate) timestamp: i64,
    pub(crate) body: Bytes,
    /// None once answered.
    pub(crate) origin: Option<Origin>,
}

/// Where the message came from, to answer it there.
pub(crate) enum Origin {
    Wire(std::sync::Arc<Conn>),
    Inproc(nsqr_broker::Delivery, std::sync::Arc<Conn>),
}

impl Origin {
    fn conn(&self) -> &std::sync::Arc<Conn> {
        match self {
            Origin::Wire(c) | Origin::Inproc(_, c) => c,
        }
    }
}

/// How a message is answered.
enum Answer {
    Fin,
    Req { delay: Duration, backoff: bool },
}

impl Message {
    /// The body. Over a socket it shares the buffer the frame was read into; in process it
    /// is the buffer that was published (no copy either way).
    pub fn body(&self) -> &Bytes {
        &self.body
    }

    /// The id, as the server sent it (16 hex digits from nsqd).
    pub fn id(&self) -> &[u8; 16] {
        &self.id
    }

    /// The id as text.
    pub fn id_str(&self) -> &str {
        std::str::from_utf8(&self.id).unwrap_or("")
    }

    /// How many times it has been delivered, this time included.
    pub fn attempts(&self) -> u16 {
        self.attempts
    }

    /// When it was published, in Unix nanoseconds.
    pub fn timestamp(&self) -> i64 {
        self.timestamp
    }

    /// The nsqd it came from (`host:port`, `unix:///path` or `inproc://`).
    pub fn source(&self) -> &str {
        self.origin.as_ref().map_or("", |o| o.conn().name())
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

    /// A fresh in-flight timeout (TOUCH).
    pub fn touch(&self) -> Result<(), Error> {
        match &self.origin {
            None => Ok(()),
            Some(Origin::Wire(c)) => c.command(|b| put_touch(b, &self.id)),
            Some(Origin::Inproc(d, _)) => Ok(d.touch()?),
        }
    }

    fn delay(&self, delay: Option<Duration>) -> Duration {
        match (delay, &self.origin) {
            (Some(d), _) => d,
            (None, Some(o)) => o.conn().config().requeue_delay(self.attempts),
            (None, None) => Duration::ZERO,
        }
    }

    fn answer(&mut self, a: Answer) -> Result<(), Error> {
        let Some(origin) = self.origin.take() else {
            return Ok(());
        };
        let r = match (&origin, &a) {
            (Origin::Wire(c), Answer::Fin) => c.command(|b| put_fin(b, &self.id)),
            (Origin::Wire(c), Answer::Req { delay, .. }) => {
                let ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
                c.command(|b| put_req(b, &self.id, ms))
            }
            (Origin::Inproc(..), _) => Ok(()),
        };
        let (r, conn) = match origin {
            Origin::Wire(c) => (r, c),
            Origin::Inproc(d, c) => {
                let r = match a {
                    Answer::Fin => d.fin(),
                    Answer::Req { delay, .. } => d.req(delay),
                };
                (r.map_err(Error::from), c)
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
        if self.origin.is_some() {
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
            .field("attempts", &self.attempts)
            .field("len", &self.body.len())
            .field("source", &self.source())
            .finish()
    }
}
