//! HTTP consumers as the engine sees them, and how long they stay.
//!
//! Every long poll (`/channel/receive`) and every stream (`/channel/stream`) is one engine
//! `Consumer` of its channel (so `/stats` lists it among the channel's clients). A poll that
//! got messages cannot leave when it answers: leaving hands a consumer's in-flight messages
//! back at once, and these are now the client's to finish. So it stays, idle, until every
//! message it got is answered (by receipt, from any connection) or has timed out, and then
//! leaves. A consumer that vanishes therefore gets its messages redelivered after their
//! timeout, as the HTTP contract says. Leaving is checked right after each answer and, for
//! timeouts, once a second by a sweep of the idle ones.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use nsqr_broker::{Broker, Channel, Consumer, ConsumerInfo, ConsumerKind};
use parking_lot::Mutex;

use super::receipt::Receipts;
use crate::tcp::client::ClientInfo;

/// How often idle consumers are checked for leaving (their messages timed out).
pub const SWEEP_EVERY: Duration = Duration::from_secs(1);

struct Entry {
    channel: Arc<Channel>,
    consumer: Arc<Consumer>,
    /// A poll or a stream is running for it (it must not leave yet).
    active: bool,
}

/// The HTTP consumers of a server and its receipt key.
#[derive(Default)]
pub struct HttpConsumers {
    pub receipts: Receipts,
    entries: Mutex<HashMap<u64, Entry>>,
    /// The server is stopping: polls and streams end, no new ones start.
    closed: std::sync::atomic::AtomicBool,
}

impl HttpConsumers {
    /// The server is stopping: every running poll and stream is told to end (their
    /// messages stay in flight; the broker's shutdown takes them back).
    pub fn close(&self) {
        self.closed
            .store(true, std::sync::atomic::Ordering::Relaxed);
        for e in self.entries.lock().values().filter(|e| e.active) {
            e.consumer.kick();
        }
    }

    /// True once [`HttpConsumers::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.closed.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A new HTTP consumer of `topic`/`channel` (created if needed), active until
    /// [`HttpConsumers::finished`]: `max` messages at a time, `timeout` in flight (None:
    /// the channel's setting or the broker's `--msg-timeout`).
    pub async fn join(
        &self,
        broker: &Broker,
        topic: &str,
        channel: &str,
        who: HttpClient,
        max: i64,
        timeout: Option<Duration>,
    ) -> Result<(Arc<Channel>, Arc<Consumer>), nsqr_broker::BrokerError> {
        let details = ClientInfo::new(&who.remote_address);
        {
            let mut m = details.meta.lock();
            m.user_agent = who.user_agent;
        }
        details.set_state(nsq_wire::ClientState::Subscribed);
        let info =
            ConsumerInfo::new(ConsumerKind::Http, who.remote_address).details(Arc::new(details));
        let info = match timeout {
            Some(t) => info.msg_timeout(t),
            None => info,
        };
        let consumer = broker.new_consumer(info);
        consumer.set_ready_count(max);
        let ch = broker.join(topic, channel, &consumer).await?;
        self.entries.lock().insert(
            consumer.id(),
            Entry {
                channel: Arc::clone(&ch),
                consumer: Arc::clone(&consumer),
                active: true,
            },
        );
        Ok((ch, consumer))
    }

    /// The poll or stream of `consumer` is over: it takes nothing more, and leaves now if it
    /// holds nothing (else once its messages are answered or time out).
    pub fn finished(&self, broker: &Broker, consumer: &Consumer) {
        consumer.set_ready_count(0);
        let mut entries = self.entries.lock();
        if let Some(e) = entries.get_mut(&consumer.id()) {
            e.active = false;
            e.channel.set_not_ready(consumer.id());
        }
        Self::leave_if_idle(&mut entries, broker, consumer.id());
    }

    /// A message of `consumer_id` was answered: it leaves if that was its last one.
    pub fn answered(&self, broker: &Broker, consumer_id: u64) {
        Self::leave_if_idle(&mut self.entries.lock(), broker, consumer_id);
    }

    fn leave_if_idle(entries: &mut HashMap<u64, Entry>, broker: &Broker, id: u64) {
        let idle = entries
            .get(&id)
            .is_some_and(|e| !e.active && e.consumer.in_flight() <= 0);
        if idle {
            if let Some(e) = entries.remove(&id) {
                broker.consumer_left(&e.channel, &e.consumer);
            }
        }
    }

    /// Let every idle consumer whose messages all timed out leave (and forget those whose
    /// channel went away).
    pub fn sweep(&self, broker: &Broker) {
        let mut entries = self.entries.lock();
        let ids: Vec<u64> = entries
            .iter()
            .filter(|(_, e)| !e.active && (e.consumer.in_flight() <= 0 || e.channel.is_deleted()))
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            if let Some(e) = entries.remove(&id) {
                broker.consumer_left(&e.channel, &e.consumer);
            }
        }
    }

    /// How many HTTP consumers there are (polling, streaming or holding messages).
    pub fn count(&self) -> usize {
        self.entries.lock().len()
    }
}

/// Who is consuming, for `/stats`.
#[derive(Debug, Clone, Default)]
pub struct HttpClient {
    /// `ip:port` of the connection ("" on a unix socket).
    pub remote_address: String,
    /// The `User-Agent` header, or `nsqr http`.
    pub user_agent: String,
}

impl HttpClient {
    pub fn of<B>(req: &hyper::Request<B>, cx: super::RequestCtx) -> HttpClient {
        let remote_address = cx.peer.map(|p| p.to_string()).unwrap_or_default();
        let user_agent = req
            .headers()
            .get(hyper::header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("nsqr http")
            .to_string();
        HttpClient {
            remote_address,
            user_agent,
        }
    }
}

/// Run [`HttpConsumers::sweep`] every second until `stop` resolves.
pub async fn run_sweeper(
    consumers: Arc<HttpConsumers>,
    broker: Arc<Broker>,
    stop: impl std::future::Future<Output = ()>,
) {
    tokio::pin!(stop);
    let mut tick = tokio::time::interval(SWEEP_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => consumers.sweep(&broker),
            _ = &mut stop => return,
        }
    }
}
