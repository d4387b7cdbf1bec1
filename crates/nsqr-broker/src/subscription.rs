//! Consuming from the same process: a [`Subscription`] is a consumer of one channel, driven by
//! its owner's calls to [`Subscription::next`] instead of by a socket.
//!
//! It takes messages as a TCP consumer does: up to its max-in-flight at a time, each in flight
//! with a timeout until answered with [`Delivery::fin`], [`Delivery::req`] or renewed with
//! [`Delivery::touch`]. Dropping the subscription leaves the channel, and the messages it held
//! go back to the front of the queue at once, as a disconnecting TCP consumer's do. A delivery
//! dropped without an answer stays in flight until its timeout, as with a TCP consumer that
//! never answers.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use nsq_wire::MessageId;

use crate::attrs::Attributes;
use crate::channel::{Channel, Settle};
use crate::consumer::Consumer;
use crate::error::BrokerError;
use crate::registry::Registry;

/// How a subscription consumes.
#[derive(Debug, Clone)]
pub struct SubscribeOptions {
    pub(crate) max_in_flight: u32,
    pub(crate) msg_timeout: Option<Duration>,
}

impl Default for SubscribeOptions {
    /// One message in flight at a time; the broker's `msg_timeout`.
    fn default() -> SubscribeOptions {
        SubscribeOptions {
            max_in_flight: 1,
            msg_timeout: None,
        }
    }
}

impl SubscribeOptions {
    /// How many unanswered messages it may hold (nsqd's RDY); at least 1.
    pub fn max_in_flight(mut self, n: u32) -> SubscribeOptions {
        self.max_in_flight = n.max(1);
        self
    }

    /// How long a delivery stays in flight unanswered before it is delivered again (at most
    /// the broker's `max_msg_timeout`).
    pub fn msg_timeout(mut self, timeout: Duration) -> SubscribeOptions {
        self.msg_timeout = Some(timeout);
        self
    }
}

/// What a subscription and its deliveries share.
struct Member {
    reg: Arc<Registry>,
    channel: Arc<Channel>,
    consumer: Arc<Consumer>,
}

impl Member {
    /// An answer freed a place: a `next` waiting with every place taken may go on.
    fn room_made(&self) {
        if self.consumer.capacity() == 1 {
            self.consumer.wake();
        }
    }
}

/// A consumer of one channel in this process; from
/// [`Broker::subscribe`](crate::Broker::subscribe).
pub struct Subscription {
    member: Arc<Member>,
    /// Delivered by the channel (in flight already), not yet handed out by `next`.
    taken: VecDeque<Delivered>,
    rng: u64,
}

/// A message the channel delivered to this subscription: what a [`Delivery`] shows of it.
struct Delivered {
    id: MessageId,
    attempts: u16,
    timestamp: i64,
    body: Bytes,
    delivery: u64,
    attrs: Option<Arc<Attributes>>,
}

impl Subscription {
    pub(crate) fn new(
        reg: Arc<Registry>,
        channel: Arc<Channel>,
        consumer: Arc<Consumer>,
    ) -> Subscription {
        Subscription {
            rng: consumer.id().wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
            member: Arc::new(Member {
                reg,
                channel,
                consumer,
            }),
            taken: VecDeque::new(),
        }
    }

    /// The next message, waiting for one if needed; None once the channel or its topic is
    /// deleted or the broker shuts down. Cancel-safe.
    pub async fn next(&mut self) -> Option<Delivery> {
        loop {
            if let Some(d) = self.try_next() {
                return Some(d);
            }
            if self.is_closed() {
                return None;
            }
            self.member.consumer.notified().await;
        }
    }

    /// The next message if one can be had now.
    pub fn try_next(&mut self) -> Option<Delivery> {
        if self.taken.is_empty() {
            self.take();
        }
        let d = self.taken.pop_front()?;
        Some(Delivery {
            msg: d,
            member: Arc::clone(&self.member),
        })
    }

    /// Take as many as it may hold now from the channel.
    fn take(&mut self) {
        let m = &self.member;
        if m.consumer.is_kicked() {
            return;
        }
        let free = m.consumer.capacity();
        if free <= 0 {
            return;
        }
        let want = usize::try_from(free).unwrap_or(usize::MAX).min(1024);
        let taken = &mut self.taken;
        m.channel
            .deliver_numbered(&m.consumer, want, 0, &mut self.rng, |msg, delivery| {
                taken.push_back(Delivered {
                    id: msg.id,
                    attempts: msg.attempts,
                    timestamp: msg.timestamp(),
                    body: msg.body_bytes(),
                    delivery,
                    attrs: msg.attributes().cloned(),
                })
            });
    }

    /// True once it will deliver nothing more (channel deleted, broker shutting down).
    pub fn is_closed(&self) -> bool {
        self.taken.is_empty()
            && (self.member.consumer.is_kicked() || self.member.channel.is_deleted())
    }

    /// Change how many unanswered messages it may hold (at least 1).
    pub fn set_max_in_flight(&mut self, n: u32) {
        self.member.consumer.set_ready_count(i64::from(n.max(1)));
        self.member.consumer.wake();
    }

    /// FIN many deliveries of this subscription under one channel lock; the errors of those
    /// that failed, by position.
    pub fn fin_all(&self, deliveries: Vec<Delivery>) -> Vec<(usize, BrokerError)> {
        let ids: Vec<u64> = deliveries.iter().map(|d| d.msg.id.0).collect();
        let mut errors = Vec::new();
        let m = &self.member;
        m.channel
            .finish(&m.consumer, &ids, |i, e| errors.push((i, e)));
        m.consumer.wake();
        errors
    }

    /// The channel it consumes.
    pub fn channel(&self) -> &Arc<Channel> {
        &self.member.channel
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let m = &self.member;
        m.reg.consumer_left(&m.channel, m.consumer.id());
    }
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("topic", &self.member.channel.topic_name())
            .field("channel", &self.member.channel.name())
            .field("consumer", &self.member.consumer.id())
            .finish()
    }
}

/// One message handed to a [`Subscription`], in flight until answered.
pub struct Delivery {
    msg: Delivered,
    member: Arc<Member>,
}

impl Delivery {
    /// The body: the buffer that was published, shared, not copied.
    pub fn body(&self) -> &Bytes {
        &self.msg.body
    }

    /// The message id.
    pub fn id(&self) -> MessageId {
        self.msg.id
    }

    /// Deliveries of this message on this channel so far, this one included.
    pub fn attempts(&self) -> u16 {
        self.msg.attempts
    }

    /// Unix nanoseconds when it was published.
    pub fn timestamp(&self) -> i64 {
        self.msg.timestamp
    }

    /// Its expiry time, ordering key and, in a dead-letter topic, where it came from and why.
    pub fn attributes(&self) -> Option<&Arc<Attributes>> {
        self.msg.attrs.as_ref()
    }

    /// Give up on it: it goes to the channel's dead-letter topic (reason `rejected`).
    pub fn term(self) -> Result<(), BrokerError> {
        self.settle(Settle::Term)
    }

    /// Deliver it again after `delay` without counting this delivery as an attempt.
    pub fn req_without_attempt(self, delay: Duration) -> Result<(), BrokerError> {
        self.settle(Settle::Req {
            delay,
            count_attempt: false,
        })
    }

    fn settle(self, action: Settle) -> Result<(), BrokerError> {
        let m = &self.member;
        let mut failed = None;
        m.channel
            .settle(&[(self.msg.id.0, self.msg.delivery)], action, |_, r| {
                failed = r.err()
            });
        m.room_made();
        failed.map_or(Ok(()), Err)
    }

    /// Done with it (nsqd's FIN).
    pub fn fin(self) -> Result<(), BrokerError> {
        let mut failed = None;
        let m = &self.member;
        m.channel
            .finish(&m.consumer, &[self.msg.id.0], |_, e| failed = Some(e));
        m.room_made();
        failed.map_or(Ok(()), Err)
    }

    /// Deliver it again, at once or after `delay` (nsqd's REQ; at most `max_req_timeout`).
    pub fn req(self, delay: Duration) -> Result<(), BrokerError> {
        let m = &self.member;
        let delay = delay.min(m.reg.cfg().max_req_timeout);
        let r = m.channel.requeue(&m.consumer, self.msg.id.0, delay);
        m.room_made();
        r
    }

    /// A fresh timeout (nsqd's TOUCH; never past delivery + `max_msg_timeout`).
    pub fn touch(&self) -> Result<(), BrokerError> {
        let m = &self.member;
        m.channel.touch(&m.consumer, self.msg.id.0)
    }
}

impl std::fmt::Debug for Delivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delivery")
            .field("id", &self.msg.id)
            .field("attempts", &self.msg.attempts)
            .field("len", &self.msg.body.len())
            .finish()
    }
}
