//! Consuming: a [`Consumer`] reads one topic's channel from any number of nsqd (given, or
//! found through nsqlookupd) or from the in-process broker, as go-nsq's `Consumer` does. Take
//! messages one at a time with [`Consumer::next`] (a stream), hand them to a [`Handler`]
//! with [`Consumer::run`], or have each read's messages lent in place with
//! [`Consumer::next_batch`]; either way max-in-flight is spread over the connections, failures
//! back off, messages delivered too often are given up on, and dropped connections come
//! back.

pub(crate) mod conn;
mod handler;
mod inproc;
mod rdy;
mod readers;
mod shared;
mod supervisor;

use std::collections::VecDeque;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use nsq_wire::client::EncodeError;
use nsq_wire::names::is_valid_name;
use tokio::sync::mpsc;
use tokio::task::{JoinHandle, JoinSet};

use crate::address::Address;
use crate::config::Config;
use crate::error::Error;
use crate::message::{Message, MessageRef, Reply};
pub use handler::{handler_fn, FnHandler, Handler, HandlerError};
pub use shared::Stats;
use shared::{Event, Shared};

/// Most owned messages [`Consumer::next_batch`] lends in one call.
const MAX_LENT: usize = 1024;

/// Reads one channel of one topic.
pub struct Consumer {
    shared: Arc<Shared>,
    /// Messages read, not yet handed out.
    local: VecDeque<Message>,
    readers: readers::Readers,
    inproc: Option<inproc::Source>,
    supervisor: JoinHandle<()>,
}

/// Stops a consumer from another task (cheap to clone).
#[derive(Clone)]
pub struct Stopper {
    shared: Arc<Shared>,
}

impl Stopper {
    /// Ask the consumer to stop: it takes no more messages ([`Consumer::next`] returns None
    /// and [`Consumer::run`] returns once its handlers are done).
    pub fn stop(&self) {
        self.shared.begin_stop();
    }
}

fn check_name(what: &'static str, name: &str) -> Result<(), Error> {
    if is_valid_name(name.as_bytes()) {
        Ok(())
    } else {
        Err(EncodeError::BadName {
            what,
            name: name.to_string(),
        }
        .into())
    }
}

impl Consumer {
    /// A consumer of `channel` on `topic`, not yet connected. Must be called within a tokio
    /// runtime (its background task runs there).
    pub fn new(topic: &str, channel: &str, config: Config) -> Result<Consumer, Error> {
        config.validate()?;
        check_name("topic", topic)?;
        check_name("channel", channel)?;
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(Error::Config("Consumer::new needs a tokio runtime".into()));
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let (conns_tx, conns_rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared::new(
            topic.into(),
            channel.into(),
            config,
            tx,
            conns_tx,
        ));
        let supervisor = tokio::spawn(supervisor::supervise(Arc::clone(&shared), rx));
        Ok(Consumer {
            shared,
            local: VecDeque::new(),
            readers: readers::Readers::new(conns_rx),
            inproc: None,
            supervisor,
        })
    }

    /// Connect to an nsqd (`tcp://host:port`, `unix:///path` or `host:port`) or, with
    /// `inproc://`, to the broker of the config, and subscribe. An nsqd given here is
    /// reconnected whenever its connection drops.
    pub async fn connect(&mut self, addr: &str) -> Result<(), Error> {
        let sh = &self.shared;
        if Address::parse(addr)? == Address::Inproc {
            let broker = sh.cfg.broker.clone().ok_or(Error::NoBroker)?;
            if self.inproc.is_some() {
                return Ok(());
            }
            if !sh.conns.lock().live.is_empty() {
                return Err(Error::Config(
                    "a consumer reads either inproc:// or nsqd connections, not both".into(),
                ));
            }
            self.inproc = Some(inproc::Source::connect(sh, &broker).await?);
            return Ok(());
        }
        if self.inproc.is_some() {
            return Err(Error::Config(
                "a consumer reads either inproc:// or nsqd connections, not both".into(),
            ));
        }
        {
            let mut c = sh.conns.lock();
            if !c.nsqd.iter().any(|a| a == addr) {
                c.nsqd.push(addr.to_string());
            }
        }
        supervisor::connect_nsqd(sh, addr).await
    }

    /// [`Consumer::connect`] to each address in turn; the first error stops.
    pub async fn connect_all<S: AsRef<str>>(&mut self, addrs: &[S]) -> Result<(), Error> {
        for a in addrs {
            self.connect(a.as_ref()).await?;
        }
        Ok(())
    }

    /// Find the topic's nsqd through the nsqlookupd at `http_addr` (`host:port` or
    /// `http://host:port`), now and every `lookupd_poll_interval`, and connect to each.
    pub async fn connect_to_lookupd(&mut self, http_addr: &str) -> Result<(), Error> {
        crate::lookupd::parse_lookupd_address(http_addr)?;
        if self.inproc.is_some() {
            return Err(Error::Config("an inproc:// consumer has no lookupd".into()));
        }
        let first = {
            let mut c = self.shared.conns.lock();
            if !c.lookupd.iter().any(|a| a == http_addr) {
                c.lookupd.push(http_addr.to_string());
            }
            c.lookupd.len() == 1
        };
        if first {
            let _ = self.shared.events.send(Event::LookupdAdded);
        }
        Ok(())
    }

    /// Close the connection to `addr` and stop reconnecting to it.
    pub fn disconnect(&self, addr: &str) {
        let conn = {
            let mut c = self.shared.conns.lock();
            c.nsqd.retain(|a| a != addr);
            c.live.get(addr).cloned()
        };
        if let Some(conn) = conn {
            conn.start_close();
        }
    }

    /// The next message, waiting for one; None once stopped (or, in process, once the
    /// broker shuts down or the channel is deleted). Messages delivered more than
    /// `max_attempts` times are finished and skipped (counted in [`Stats::given_up`]).
    pub async fn next(&mut self) -> Option<Message> {
        loop {
            let m = match self.local.pop_front() {
                Some(m) if !self.shared.is_stopping() => m,
                _ => self.next_delivered().await?,
            };
            if let Some(m) = self.within_attempts(m) {
                return Some(m);
            }
        }
    }

    /// Wait for messages, then lend every one already received to `f`, in order, and answer
    /// each by what `f` returns; the number handled (None once stopped, as
    /// [`Consumer::next`]). Nothing is copied or reference counted per message and the
    /// answers of one read go out together: the fastest way to consume, for handlers that
    /// answer at once.
    pub async fn next_batch(
        &mut self,
        mut f: impl FnMut(MessageRef<'_>) -> Reply,
    ) -> Option<usize> {
        if self.local.is_empty() {
            if let Some(src) = self.inproc.as_mut() {
                return src.lend_batch(&self.shared, MAX_LENT, &mut f).await;
            }
        }
        if self.inproc.is_some() || !self.local.is_empty() {
            // Owned messages first (left by `next`), or the in-process subscription's.
            let first = self.next().await?;
            let mut n = 1;
            let _ = first.lend(&mut f);
            while n < MAX_LENT {
                let Some(m) = self.ready_now() else { break };
                let _ = m.lend(&mut f);
                n += 1;
            }
            return Some(n);
        }
        loop {
            if self.shared.is_stopping() {
                return None;
            }
            let n = self.readers.lend(&mut f, &self.shared);
            if n > 0 {
                return Some(n);
            }
            self.readers.wait(&self.shared).await;
        }
    }

    /// A message that can be had without waiting.
    fn ready_now(&mut self) -> Option<Message> {
        loop {
            if self.shared.is_stopping() {
                return None;
            }
            let m = match self.local.pop_front() {
                Some(m) => m,
                None => self.inproc.as_mut()?.try_next()?,
            };
            if let Some(m) = self.within_attempts(m) {
                return Some(m);
            }
        }
    }

    /// Messages read and not yet handed out.
    pub fn buffered(&self) -> usize {
        self.local.len()
    }

    /// Hand every message to `handler`, up to `handler_concurrency` at once, until the
    /// consumer is stopped (through a [`Stopper`]); then stop it cleanly.
    pub async fn run<H: Handler>(&mut self, handler: H) -> Result<(), Error> {
        let handler = Arc::new(handler);
        let limit = self.shared.cfg.handler_concurrency.max(1);
        let mut running = JoinSet::new();
        loop {
            if running.len() >= limit {
                // Keep reading (heartbeats, CLOSE_WAIT) while every handler is busy.
                tokio::select! {
                    _ = running.join_next() => {}
                    _ = self.pump() => {}
                }
                continue;
            }
            let Some(m) = self.next_delivered().await else {
                break;
            };
            if self.over_attempts(&m) {
                self.give_up(m, |m| handler.failed(m));
                continue;
            }
            if limit == 1 {
                handler::handle_one(&*handler, m).await;
                continue;
            }
            let h = Arc::clone(&handler);
            running.spawn(async move { handler::handle_one(&*h, m).await });
        }
        while running.join_next().await.is_some() {}
        self.stop().await;
        Ok(())
    }

    fn over_attempts(&self, m: &Message) -> bool {
        let max = self.shared.cfg.max_attempts;
        max > 0 && m.attempts() > max
    }

    /// `m`, unless it was delivered more than `max_attempts` times: then it is given up on
    /// (logged, counted, finished).
    fn within_attempts(&self, m: Message) -> Option<Message> {
        if !self.over_attempts(&m) {
            return Some(m);
        }
        self.give_up(m, |m| {
            tracing::warn!(
                "nsqr-client: message {} attempted {} times, giving up",
                m.id_str(),
                m.attempts()
            )
        });
        None
    }

    fn give_up(&self, m: Message, tell: impl FnOnce(&Message)) {
        tell(&m);
        self.shared.counters.given_up.fetch_add(1, Relaxed);
        let _ = m.finish();
    }

    async fn next_delivered(&mut self) -> Option<Message> {
        if let Some(src) = self.inproc.as_mut() {
            return src.next(&self.shared).await;
        }
        loop {
            if self.shared.is_stopping() {
                self.local.clear();
                return None;
            }
            if let Some(m) = self.local.pop_front() {
                return Some(m);
            }
            self.readers.uncork();
            if !self.readers.decode(&mut self.local) {
                self.readers.wait(&self.shared).await;
            }
        }
    }

    /// Read what arrives without handing messages out (they wait in `local`); cancel-safe.
    async fn pump(&mut self) {
        if self.inproc.is_some() {
            return std::future::pending().await;
        }
        self.readers.uncork();
        if !self.readers.decode(&mut self.local) {
            self.readers.wait(&self.shared).await;
        }
    }

    /// A handle that stops this consumer from elsewhere.
    pub fn stopper(&self) -> Stopper {
        Stopper {
            shared: Arc::clone(&self.shared),
        }
    }

    /// Stop cleanly: no more messages are taken (those received and not handed out are
    /// requeued), each connection sends CLS and closes once its messages in flight are
    /// answered, or after `drain_timeout`.
    pub async fn stop(&mut self) {
        let sh = Arc::clone(&self.shared);
        sh.begin_stop();
        self.local.clear();
        if let Some(src) = self.inproc.take() {
            src.close();
        }
        // Read on until every connection is closed (messages still arriving go back at
        // once), or the drain timeout.
        let deadline = tokio::time::Instant::now() + sh.cfg.drain_timeout;
        let drained = tokio::time::timeout_at(deadline, async {
            while !self.readers.is_empty() {
                self.readers.decode(&mut self.local);
                self.local.clear();
                if self.readers.is_empty() {
                    break;
                }
                self.readers.wait(&sh).await;
            }
        })
        .await;
        if drained.is_err() {
            tracing::warn!("nsqr-client: messages still in flight after the drain timeout");
        }
        self.readers.close_all();
        self.supervisor.abort();
    }

    /// Message counts and connections.
    pub fn stats(&self) -> Stats {
        self.shared.stats()
    }

    /// A new max-in-flight (0 pauses), spread over the connections at once.
    pub fn change_max_in_flight(&self, n: u32) {
        self.shared.rdy.change_max_in_flight(&self.shared, n);
    }

    /// Some connection holds (nearly) as many messages as its RDY allows: the consumer is
    /// the bottleneck (go-nsq's `IsStarved`).
    pub fn is_starved(&self) -> bool {
        self.shared.live_conns().iter().any(|c| {
            let threshold = (c.rdy.load(Relaxed) as f64 * 0.85) as i64;
            let in_flight = c.in_flight.load(Relaxed);
            in_flight >= threshold && in_flight > 0 && !c.is_closing()
        })
    }

    /// The backoff level now (0: not backing off).
    pub fn backoff_level(&self) -> u32 {
        self.shared.rdy.backoff_level()
    }

    /// The RDY each open connection has, by address (for tests and monitoring).
    pub fn rdy_counts(&self) -> Vec<(String, i64)> {
        let mut v: Vec<(String, i64)> = self
            .shared
            .live_conns()
            .iter()
            .map(|c| (c.name().to_string(), c.rdy.load(Relaxed)))
            .collect();
        v.sort();
        v
    }

    /// The topic.
    pub fn topic(&self) -> &str {
        &self.shared.topic
    }

    /// The channel.
    pub fn channel(&self) -> &str {
        &self.shared.channel
    }
}

impl Drop for Consumer {
    fn drop(&mut self) {
        self.shared.begin_stop();
        self.local.clear();
        if let Some(src) = self.inproc.take() {
            src.close();
        }
        self.readers.close_all();
        self.supervisor.abort();
    }
}

impl std::fmt::Debug for Consumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer")
            .field("topic", &self.shared.topic)
            .field("channel", &self.shared.channel)
            .finish()
    }
}
