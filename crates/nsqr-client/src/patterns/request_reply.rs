//! Request-reply over NSQ, the counterpart of ZeroMQ's ROUTER/DEALER: a [`Requester`] owns
//! a topic of its own (`reply.<random>#ephemeral`, gone with it), sends each request with
//! that topic and a correlation id in front of the body, and waits for the reply with a
//! timeout; [`Responder`]s consume the request topic from one channel (so several share the
//! load, as a work queue) and publish each reply to the topic the request names.
//!
//! Requesters and responders must reach the same nsqd (or broker): the reply topic lives
//! where the requester subscribed. A reply that comes after its request timed out is
//! dropped; a request whose responder fails is requeued for another (NSQ's at-least-once
//! delivery), so a handler should be idempotent.
//!
//! A request's payload is written into the request once ([`Requester::request`] copies it,
//! [`Requester::send_with`] has it written in place), or not at all when the caller lays its
//! requests out in a buffer of its own ([`Requester::send_batch`]).
//!
//! ```
//! use std::time::Duration;
//! use bytes::Bytes;
//! use nsqr_broker::{Broker, BrokerConfig};
//! use nsqr_client::patterns::{Requester, Responder};
//! use nsqr_client::Config;
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let broker = Broker::start(BrokerConfig::default()).await?;
//! let config = Config::inproc(broker.clone());
//!
//! let mut server = Responder::connect("inproc://", "upper", "servers", config.clone()).await?;
//! let stop = server.stopper();
//! let serving = tokio::spawn(async move {
//!     server
//!         .serve(|p: Bytes| async move { Ok::<_, String>(p.to_ascii_uppercase().into()) })
//!         .await
//! });
//!
//! let client = Requester::connect("inproc://", config).await?;
//! let reply = client.request("upper", b"hello", Duration::from_secs(5)).await?;
//! assert_eq!(&reply[..], b"HELLO");
//!
//! stop.stop();
//! serving.await??;
//! client.close().await;
//! # broker.shutdown().await?;
//! # Ok(())
//! # }
//! ```

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::caller_buffer::BatchSent;
use super::envelope;
use super::request_buffers::{Carver, MAX_CARVED};
use crate::config::Config;
use crate::consumer::Consumer;
use crate::error::Error;
use crate::message::{Message, MessageRef, Reply};
use crate::producer::Producer;

pub(super) type Waiting = Mutex<HashMap<u64, oneshot::Sender<Result<Bytes, Error>>>>;

/// Sends requests and waits for their replies.
pub struct Requester {
    pub(super) producer: Producer,
    pub(super) reply_topic: Arc<str>,
    pub(super) waiting: Arc<Waiting>,
    pub(super) next_id: AtomicU64,
    /// Where small requests are built (`request_buffers.rs`).
    carver: Mutex<Carver>,
    replies: JoinHandle<()>,
    stopper: crate::consumer::Stopper,
}

/// A random-enough 64-bit value (reply topic names, first correlation ids).
fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish()
}

impl Requester {
    /// A requester on `addr` (any transport), subscribed to its own reply topic.
    pub async fn connect(addr: &str, config: Config) -> Result<Requester, Error> {
        let reply_topic: Arc<str> = format!("reply.{:016x}#ephemeral", random_u64()).into();
        let mut replies_cfg = config.clone();
        replies_cfg.max_in_flight = replies_cfg.max_in_flight.max(2500);
        replies_cfg.max_attempts = 0;
        let mut consumer = Consumer::new(&reply_topic, "requester#ephemeral", replies_cfg)?;
        consumer.connect(addr).await?;
        let producer = Producer::connect(addr, config).await?;
        let waiting: Arc<Waiting> = Arc::default();
        let stopper = consumer.stopper();
        let replies = tokio::spawn(take_replies(consumer, Arc::clone(&waiting)));
        Ok(Requester {
            producer,
            reply_topic,
            waiting,
            next_id: AtomicU64::new(random_u64() >> 1),
            carver: Mutex::default(),
            replies,
            stopper,
        })
    }

    /// The topic replies come back on.
    pub fn reply_topic(&self) -> &str {
        &self.reply_topic
    }

    /// Send `payload` to `topic` and wait up to `timeout` for the reply.
    pub async fn request(
        &self,
        topic: &str,
        payload: &[u8],
        timeout: Duration,
    ) -> Result<Bytes, Error> {
        self.send_with(topic, payload.len(), |b| b.copy_from_slice(payload))
            .wait(timeout)
            .await
    }

    /// Send a request whose payload of `len` bytes `fill` writes straight into the message
    /// (no intermediate buffer); the reply is waited for with [`PendingReply::wait`], so a
    /// caller can have many requests out at once.
    pub fn send_with(&self, topic: &str, len: usize, fill: impl FnOnce(&mut [u8])) -> PendingReply {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        // Waited for before it is sent: its reply may come back before `send` returns.
        let (tx, rx) = oneshot::channel();
        self.waiting.lock().insert(id, tx);
        let sent = self.build_and_send(topic, id, len, fill);
        PendingReply {
            sent: Sent::One(sent),
            reply: rx,
            id,
            waiting: Arc::clone(&self.waiting),
            topic: topic.into(),
        }
    }

    /// Send a request that expects no reply (ZeroMQ's ROUTER sending to a peer by its
    /// routing id): the same envelope, its payload of `len` bytes written by `fill`, no
    /// correlation kept. The future resolves with the server's answer to the publish; a
    /// responder takes it with [`Responder::next`] and answers it with [`Request::finish`].
    pub fn send_one_way_with(
        &self,
        topic: &str,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> crate::producer::Publish {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.build_and_send(topic, id, len, fill)
    }

    /// Request `id`'s envelope and its payload of `len` bytes written by `fill`, published to
    /// `topic`: a slice of a shared buffer when small (which the producer may join to the
    /// requests before it), else a buffer of its own.
    fn build_and_send(
        &self,
        topic: &str,
        id: u64,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> crate::producer::Publish {
        let size = envelope::request_header(&self.reply_topic) + len;
        if size <= MAX_CARVED {
            let (mut piece, at, buffer) = {
                let mut carver = self.carver.lock();
                let (buf, buffer) = carver.room(size);
                let at = envelope::put_request(buf, id, &self.reply_topic, len);
                (buf.split(), at, buffer)
            };
            fill(&mut piece[at..]);
            self.producer.publish_piece_async(topic, piece, buffer)
        } else {
            let (mut body, at) = envelope::request(id, &self.reply_topic, len);
            fill(&mut body[at..]);
            self.producer.publish_async(topic, body.freeze())
        }
    }

    /// Stop: no more replies are read; requests still waiting fail.
    pub async fn close(self) {
        self.stopper.stop();
        let _ = self.replies.await;
        self.producer.stop().await;
    }
}

/// A request sent, its reply not yet received.
#[must_use = "the reply comes through wait()"]
pub struct PendingReply {
    pub(super) sent: Sent,
    pub(super) reply: oneshot::Receiver<Result<Bytes, Error>>,
    pub(super) id: u64,
    pub(super) waiting: Arc<Waiting>,
    pub(super) topic: Arc<str>,
}

/// How a request went out: alone, or in a batch laid out by the caller (`caller_buffer.rs`).
pub(super) enum Sent {
    One(crate::producer::Publish),
    Batch(Arc<BatchSent>),
}

impl PendingReply {
    /// The reply, or why there is none (the publish failed, the responder failed, nothing
    /// came within `timeout` of this call).
    pub async fn wait(self, timeout: Duration) -> Result<Bytes, Error> {
        let PendingReply {
            sent,
            reply,
            id,
            waiting,
            topic,
        } = self;
        let forget = || {
            waiting.lock().remove(&id);
        };
        let sent = match sent {
            Sent::One(publish) => publish.await,
            Sent::Batch(batch) => batch.wait().await,
        };
        if let Err(e) = sent {
            forget();
            return Err(e);
        }
        match tokio::time::timeout(timeout, reply).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Err(Error::Stopped),
            Err(_) => {
                forget();
                Err(Error::Timeout(format!("request to {topic} (no reply)")))
            }
        }
    }
}

/// Read replies and hand each to its request.
async fn take_replies(mut consumer: Consumer, waiting: Arc<Waiting>) {
    while let Some(m) = consumer.next().await {
        if let Some((id, r)) = envelope::open_reply(m.body()) {
            if let Some(tx) = waiting.lock().remove(&id) {
                let _ = tx.send(r.map_err(Error::Remote));
            }
        }
        let _ = m.finish();
    }
    consumer.stop().await;
    waiting.lock().clear();
}

/// Serves requests from one channel of a topic.
pub struct Responder {
    consumer: Consumer,
    producer: Producer,
}

/// A request, to answer with [`Request::reply`] (or [`Request::fail`]).
pub struct Request {
    message: Message,
    correlation: u64,
    /// The reply topic's name (UTF-8, checked when the request was opened).
    reply_to: Bytes,
    payload: Bytes,
    producer: Producer,
}

impl Responder {
    /// A responder of `channel` on `topic` at `addr` (any transport). Responders of one
    /// channel share its requests.
    pub async fn connect(
        addr: &str,
        topic: &str,
        channel: &str,
        config: Config,
    ) -> Result<Responder, Error> {
        let mut consumer = Consumer::new(topic, channel, config.clone())?;
        consumer.connect(addr).await?;
        let producer = Producer::connect(addr, config).await?;
        Ok(Responder { consumer, producer })
    }

    /// The next request; None once stopped. Messages that are not requests are finished and
    /// skipped.
    pub async fn next(&mut self) -> Option<Request> {
        loop {
            let message = self.consumer.next().await?;
            match envelope::open_request(message.body()) {
                Some((correlation, reply_to, payload)) => {
                    return Some(Request {
                        message,
                        correlation,
                        reply_to,
                        payload,
                        producer: self.producer.clone(),
                    })
                }
                None => {
                    tracing::warn!("nsqr-client: responder got a message that is not a request");
                    let _ = message.finish();
                }
            }
        }
    }

    /// Wait for requests, then lend every one already received to `f`, in order, and answer
    /// each by what `f` returns ([`Reply::Finish`] or a requeue): the number of messages
    /// handled (None once stopped). Nothing is copied or reference counted per request and
    /// the answers of one batch are settled together ([`Consumer::next_batch`]): the fast
    /// way to serve one-way requests ([`Requester::send_one_way_with`]); a request to reply
    /// to goes through [`Responder::next`]. Messages that are not requests are finished.
    pub async fn next_batch(
        &mut self,
        mut f: impl FnMut(RequestRef<'_>) -> Reply,
    ) -> Option<usize> {
        self.consumer
            .next_batch(|m| match envelope::parse_request(m.body()) {
                Some((correlation, reply_to, payload)) => f(RequestRef {
                    correlation,
                    reply_to,
                    payload,
                    message: m,
                }),
                None => {
                    tracing::warn!("nsqr-client: responder got a message that is not a request");
                    Reply::Finish
                }
            })
            .await
    }

    /// Answer every request with `f` (Ok: the reply's payload; Err: its text goes back as
    /// an error) until stopped.
    pub async fn serve<F, Fut, E>(&mut self, f: F) -> Result<(), Error>
    where
        F: Fn(Bytes) -> Fut,
        Fut: Future<Output = Result<Bytes, E>>,
        E: std::fmt::Display,
    {
        while let Some(req) = self.next().await {
            let r = f(req.payload.clone()).await;
            let sent = match r {
                Ok(reply) => req.reply(&reply).await,
                Err(e) => req.fail(&e.to_string()).await,
            };
            if let Err(e) = sent {
                tracing::warn!("nsqr-client: sending a reply: {e}");
            }
        }
        Ok(())
    }

    /// Stops [`Responder::next`] and [`Responder::serve`] from another task.
    pub fn stopper(&self) -> crate::consumer::Stopper {
        self.consumer.stopper()
    }

    /// Stop cleanly.
    pub async fn close(mut self) {
        self.consumer.stop().await;
        self.producer.stop().await;
    }
}

/// A request lent by [`Responder::next_batch`]: its parts borrowed from the message where
/// it was read, nothing copied.
#[derive(Debug, Clone, Copy)]
pub struct RequestRef<'a> {
    correlation: u64,
    reply_to: &'a [u8],
    payload: &'a [u8],
    message: MessageRef<'a>,
}

impl<'a> RequestRef<'a> {
    /// The request's payload.
    pub fn payload(&self) -> &'a [u8] {
        self.payload
    }

    /// The requester's correlation id.
    pub fn correlation(&self) -> u64 {
        self.correlation
    }

    /// The topic the requester takes replies on (None if it is not UTF-8).
    pub fn reply_to(&self) -> Option<&'a str> {
        std::str::from_utf8(self.reply_to).ok()
    }

    /// The message it came in (id, attempts, timestamp).
    pub fn message(&self) -> MessageRef<'a> {
        self.message
    }
}

impl Request {
    /// The request's payload (a slice of the message, not a copy).
    pub fn payload(&self) -> &Bytes {
        &self.payload
    }

    /// The message it came in (attempts, timestamp, touch).
    pub fn message(&self) -> &Message {
        &self.message
    }

    /// Reply with `payload` and finish the request.
    pub async fn reply(self, payload: &[u8]) -> Result<(), Error> {
        self.reply_with(payload.len(), |b| b.copy_from_slice(payload))
            .await
    }

    /// Reply with a payload of `len` bytes written by `fill` into the reply message.
    pub async fn reply_with(self, len: usize, fill: impl FnOnce(&mut [u8])) -> Result<(), Error> {
        let mut body = envelope::reply(self.correlation, true, len);
        fill(&mut body[envelope::REPLY_HEADER..]);
        self.send(body.freeze()).await
    }

    /// Finish the request without replying (one sent with
    /// [`Requester::send_one_way_with`]; a requester waiting for a reply would time out).
    pub fn finish(self) -> Result<(), Error> {
        self.message.finish()
    }

    /// Reply with an error (the requester gets [`Error::Remote`] with `text`).
    pub async fn fail(self, text: &str) -> Result<(), Error> {
        let mut body = envelope::reply(self.correlation, false, text.len());
        body[envelope::REPLY_HEADER..].copy_from_slice(text.as_bytes());
        self.send(body.freeze()).await
    }

    async fn send(self, body: Bytes) -> Result<(), Error> {
        let reply_to = String::from_utf8_lossy(&self.reply_to);
        match self.producer.publish(&reply_to, body).await {
            Ok(()) => self.message.finish(),
            Err(e) => {
                // Another responder may get it through.
                let _ = self.message.requeue_without_backoff(Some(Duration::ZERO));
                Err(e)
            }
        }
    }
}
