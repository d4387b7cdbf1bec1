//! Publishing: a [`Producer`] sends to one nsqd (or the in-process broker), as go-nsq's
//! `Producer` does. Every publish is answered by the server; [`Producer::publish`] waits for
//! that answer, [`Producer::publish_async`] returns it as a future so a caller can keep many
//! publishes in flight (their answers come back in order over one connection).

mod coalesce;
mod inproc;
mod wire;

use std::collections::HashSet;
use std::future::Future;
use std::ops::Range;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use nsq_wire::client::EncodeError;
use nsq_wire::names::is_valid_name;
use nsqr_broker::{DiskError, Ticket};
use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::address::Address;
use crate::config::Config;
use crate::error::Error;
use wire::Op;

/// Publishes to one nsqd, or to the broker of [`Config::inproc`]. Cheap to clone; clones
/// share the connection. The connection is made on [`Producer::connect`] or the first
/// publish, and again after it drops.
#[derive(Clone)]
pub struct Producer {
    inner: Arc<Inner>,
}

struct Inner {
    backend: Backend,
    addr: Address,
    /// Topic names already checked, shared with queued commands.
    topics: Mutex<Topics>,
}

enum Backend {
    Wire(Arc<wire::Shared>),
    Inproc(Arc<inproc::Inproc>),
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Backend::Wire(w) = &self.backend {
            w.stop_soon();
        }
    }
}

impl Producer {
    /// A producer for `addr` (`tcp://host:port`, `unix:///path`, `inproc://` or
    /// `host:port`) that connects on its first publish. Must be called within a tokio
    /// runtime (its connection task runs there).
    pub fn new(addr: &str, config: Config) -> Result<Producer, Error> {
        config.validate()?;
        let addr = Address::parse(addr)?;
        let backend = match &addr {
            Address::Inproc => {
                let broker = config.broker.clone().ok_or(Error::NoBroker)?;
                Backend::Inproc(inproc::Inproc::new(broker, config.coalesce_publishes))
            }
            _ => {
                if tokio::runtime::Handle::try_current().is_err() {
                    return Err(Error::Config("Producer::new needs a tokio runtime".into()));
                }
                Backend::Wire(wire::Shared::start(addr.clone(), config))
            }
        };
        Ok(Producer {
            inner: Arc::new(Inner {
                backend,
                addr,
                topics: Mutex::default(),
            }),
        })
    }

    /// A producer for `addr`, connected (the connection's handshake succeeded), or the
    /// error that prevented it.
    pub async fn connect(addr: &str, config: Config) -> Result<Producer, Error> {
        let p = Producer::new(addr, config)?;
        p.ping().await?;
        Ok(p)
    }

    /// Connect now if not connected: resolves once the handshake (IDENTIFY, upgrades, AUTH)
    /// has succeeded, or with why it failed. In process there is nothing to connect.
    pub async fn ping(&self) -> Result<(), Error> {
        match &self.inner.backend {
            Backend::Inproc(_) => Ok(()),
            Backend::Wire(w) => {
                if w.is_connected() {
                    return Ok(());
                }
                let (tx, rx) = oneshot::channel();
                w.enqueue(Op::Probe(Some(tx)));
                rx.await.unwrap_or(Err(Error::Stopped))
            }
        }
    }

    /// The address it publishes to.
    pub fn address(&self) -> &Address {
        &self.inner.addr
    }

    /// Publish one message and wait for the server's answer.
    pub async fn publish(&self, topic: &str, body: impl Into<Bytes>) -> Result<(), Error> {
        match &self.inner.backend {
            Backend::Inproc(p) => {
                let body = body.into();
                if body.is_empty() {
                    return Err(Error::EmptyBody);
                }
                Publish::ticket(p.publish(topic, body)).await
            }
            Backend::Wire(_) => self.publish_async(topic, body).await,
        }
    }

    /// Publish several messages in one command (MPUB) and wait for the answer.
    pub async fn multi_publish<I>(&self, topic: &str, bodies: I) -> Result<(), Error>
    where
        I: IntoIterator,
        I::Item: Into<Bytes>,
    {
        self.multi_publish_async(topic, bodies).await
    }

    /// Publish one message that is delivered after `delay` (DPUB), and wait for the answer.
    pub async fn deferred_publish(
        &self,
        topic: &str,
        delay: Duration,
        body: impl Into<Bytes>,
    ) -> Result<(), Error> {
        self.deferred_publish_async(topic, delay, body).await
    }

    /// Queue one message now; the returned future resolves with the server's answer.
    /// Dropping it does not cancel the publish. In process (with `coalesce_publishes`)
    /// consecutive ones to one topic go to the broker together: when one of them is awaited
    /// or dropped, at 256, before a publish to another topic or of another kind, or within
    /// about 1 ms.
    pub fn publish_async(&self, topic: &str, body: impl Into<Bytes>) -> Publish {
        let body = body.into();
        if body.is_empty() {
            return Publish::ready(Err(Error::EmptyBody));
        }
        match &self.inner.backend {
            Backend::Inproc(p) => match p.gather(topic, body) {
                Ok(outcome) => Publish {
                    state: State::Gathered {
                        inproc: Arc::clone(p),
                        outcome,
                        wait: None,
                    },
                },
                Err(body) => Publish::ticket(p.publish(topic, body)),
            },
            Backend::Wire(w) => self.send(w, topic, |topic, waiter| Op::Pub {
                topic,
                body,
                waiter,
            }),
        }
    }

    /// [`Producer::publish_async`] of a request carved from carver buffer `buffer`
    /// (`patterns/request_buffers.rs`): in process, consecutive pieces of one buffer reach the
    /// broker as one run of bodies.
    pub(crate) fn publish_piece_async(&self, topic: &str, piece: BytesMut, buffer: u64) -> Publish {
        match &self.inner.backend {
            Backend::Inproc(p) if !piece.is_empty() => match p.gather_piece(topic, piece, buffer) {
                Ok(outcome) => Publish {
                    state: State::Gathered {
                        inproc: Arc::clone(p),
                        outcome,
                        wait: None,
                    },
                },
                Err(piece) => self.publish_async(topic, piece.freeze()),
            },
            _ => self.publish_async(topic, piece.freeze()),
        }
    }

    /// [`Producer::multi_publish`] without waiting: the answer comes as a future.
    pub fn multi_publish_async<I>(&self, topic: &str, bodies: I) -> Publish
    where
        I: IntoIterator,
        I::Item: Into<Bytes>,
    {
        let bodies: Vec<Bytes> = bodies.into_iter().map(Into::into).collect();
        if bodies.is_empty() || bodies.iter().any(Bytes::is_empty) {
            return Publish::ready(Err(Error::EmptyBody));
        }
        match &self.inner.backend {
            Backend::Inproc(p) => Publish::ticket(p.publish_batch(topic, bodies)),
            Backend::Wire(w) => self.send(w, topic, |topic, waiter| Op::Mpub {
                topic,
                bodies,
                waiter,
            }),
        }
    }

    /// [`Producer::multi_publish_async`] of bodies that lie in one buffer, at `ranges` of
    /// `data` (say, records read into one buffer, or bodies written back to back). In process
    /// the broker keeps one reference to `data` for the whole batch rather than one per
    /// message; over a socket it is an MPUB like any other. A range outside `data` fails the
    /// publish ([`Error::BodyOutOfRange`]), as an empty one does ([`Error::EmptyBody`]).
    ///
    /// ```no_run
    /// # async fn f(p: nsqr_client::Producer) -> Result<(), nsqr_client::Error> {
    /// let data = bytes::Bytes::from_static(b"firstsecond");
    /// p.multi_publish_slices_async("events", data, [0..5, 5..11]).await
    /// # }
    /// ```
    pub fn multi_publish_slices_async<R>(&self, topic: &str, data: Bytes, ranges: R) -> Publish
    where
        R: IntoIterator<Item = Range<usize>>,
    {
        let ranges: Vec<Range<usize>> = ranges.into_iter().collect();
        if let Some(r) = ranges
            .iter()
            .find(|r| r.start > r.end || r.end > data.len())
        {
            return Publish::ready(Err(Error::BodyOutOfRange {
                range: r.clone(),
                len: data.len(),
            }));
        }
        if ranges.is_empty() || ranges.iter().any(|r| r.is_empty()) {
            return Publish::ready(Err(Error::EmptyBody));
        }
        match &self.inner.backend {
            Backend::Inproc(p) => Publish::ticket(p.publish_slices(topic, data, ranges)),
            Backend::Wire(w) => {
                let bodies = ranges.into_iter().map(|r| data.slice(r)).collect();
                self.send(w, topic, |topic, waiter| Op::Mpub {
                    topic,
                    bodies,
                    waiter,
                })
            }
        }
    }

    /// [`Producer::deferred_publish`] without waiting: the answer comes as a future.
    pub fn deferred_publish_async(
        &self,
        topic: &str,
        delay: Duration,
        body: impl Into<Bytes>,
    ) -> Publish {
        let body = body.into();
        if body.is_empty() {
            return Publish::ready(Err(Error::EmptyBody));
        }
        match &self.inner.backend {
            Backend::Inproc(p) => Publish::ticket(p.publish_deferred(topic, body, delay)),
            Backend::Wire(w) => self.send(w, topic, |topic, waiter| Op::Dpub {
                topic,
                delay,
                body,
                waiter,
            }),
        }
    }

    /// Stop: no more publishes are taken; resolves once every queued publish was answered
    /// (or failed) and the connection is closed. Other clones are stopped too.
    pub async fn stop(&self) {
        match &self.inner.backend {
            Backend::Wire(w) => w.stop().await,
            Backend::Inproc(p) => p.flush_all(),
        }
    }

    /// Queue a command for `topic`, checking the name once per topic.
    fn send(
        &self,
        w: &wire::Shared,
        topic: &str,
        make: impl FnOnce(Arc<str>, wire::Waiter) -> Op,
    ) -> Publish {
        let topic = match self.topic(topic) {
            Ok(t) => t,
            Err(e) => return Publish::ready(Err(e)),
        };
        let (tx, rx) = oneshot::channel();
        w.enqueue(make(topic, Some(tx)));
        Publish {
            state: State::Wire(rx),
        }
    }

    /// `name` checked (once per name) and shared: the last one used is compared first, the
    /// common case of a producer publishing to one topic (hashing it cost more).
    fn topic(&self, name: &str) -> Result<Arc<str>, Error> {
        let mut topics = self.inner.topics.lock();
        if let Some(t) = topics.last.as_ref().filter(|t| ***t == *name) {
            return Ok(Arc::clone(t));
        }
        let t = match topics.known.get(name) {
            Some(t) => Arc::clone(t),
            None if !is_valid_name(name.as_bytes()) => {
                return Err(EncodeError::BadName {
                    what: "topic",
                    name: name.to_string(),
                }
                .into())
            }
            None => {
                let t: Arc<str> = Arc::from(name);
                topics.known.insert(Arc::clone(&t));
                t
            }
        };
        topics.last = Some(Arc::clone(&t));
        Ok(t)
    }
}

/// The topic names a producer has checked.
#[derive(Default)]
struct Topics {
    known: HashSet<Arc<str>>,
    last: Option<Arc<str>>,
}

impl std::fmt::Debug for Producer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Producer")
            .field("addr", &self.inner.addr.to_string())
            .finish()
    }
}

/// The answer to a publish: a future that resolves once the server (or the broker) has
/// accepted the message, or with why not.
#[must_use = "a publish's answer says whether the message was accepted"]
pub struct Publish {
    state: State,
}

/// A gathered publish waiting for the disk.
type Waiting = Pin<Box<dyn Future<Output = Result<(), Error>> + Send>>;

enum State {
    Ready(Option<Result<(), Error>>),
    Wire(oneshot::Receiver<Result<(), Error>>),
    /// An in-process publish still waiting for the disk (strict durability).
    Disk(Pin<Box<dyn Future<Output = Result<(), DiskError>> + Send>>),
    /// An in-process publish gathered with others (`coalesce.rs`).
    Gathered {
        inproc: Arc<inproc::Inproc>,
        outcome: Arc<coalesce::Outcome>,
        /// Waiting for the disk after the batch went out.
        wait: Option<Waiting>,
    },
}

impl Publish {
    fn ready(r: Result<(), Error>) -> Publish {
        Publish {
            state: State::Ready(Some(r)),
        }
    }

    /// A publish that failed before it was sent.
    pub(crate) fn failed(e: Error) -> Publish {
        Publish::ready(Err(e))
    }

    fn ticket(t: Result<Ticket, Error>) -> Publish {
        match t {
            Err(e) => Publish::ready(Err(e)),
            Ok(mut t) => match t.try_result() {
                Some(r) => Publish::ready(r.map_err(Error::from)),
                None => Publish {
                    state: State::Disk(Box::pin(t.wait())),
                },
            },
        }
    }
}

impl Future for Publish {
    type Output = Result<(), Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        match &mut self.state {
            State::Ready(r) => Poll::Ready(r.take().unwrap_or(Err(Error::Stopped))),
            State::Wire(rx) => Pin::new(rx)
                .poll(cx)
                .map(|r| r.unwrap_or(Err(Error::Stopped))),
            State::Disk(f) => f.as_mut().poll(cx).map(|r| r.map_err(Error::from)),
            State::Gathered {
                inproc,
                outcome,
                wait,
            } => {
                if let Some(w) = wait {
                    return w.as_mut().poll(cx);
                }
                inproc.flush(outcome);
                if let Some(r) = outcome.get() {
                    return Poll::Ready(r);
                }
                let o = Arc::clone(outcome);
                let w = wait.insert(Box::pin(async move { o.wait().await }));
                w.as_mut().poll(cx)
            }
        }
    }
}

impl Drop for Publish {
    /// A gathered publish whose answer nobody will look at goes out now.
    fn drop(&mut self) {
        if let State::Gathered {
            inproc, outcome, ..
        } = &self.state
        {
            inproc.flush(outcome);
        }
    }
}
