//! The broker handle: what a program holds to run the engine.
//!
//! [`Broker::start`] loads the data directory and spawns every task the engine needs on the
//! current tokio runtime: the timer of all channels (`timers.rs`), the `--sync-timeout`
//! ticker of the disk queues and the `nsqd.dat` writer. The handle owns them:
//! [`Broker::shutdown`] flushes and closes the queues and stops them, and dropping the last
//! clone of the handle stops them too (without the flush, as a crash would). Topics and
//! channels never spawn anything themselves, so nothing depends on which runtime happens to be
//! current when they are created.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::task::JoinHandle;

use crate::broker_config::BrokerConfig;
use crate::channel::Channel;
use crate::consumer::{Consumer, ConsumerInfo};
use crate::error::{BrokerError, StartError};
use crate::events::{EventListener, Listening};
use crate::metadata::MetadataError;
use crate::publisher::Publisher;
use crate::queue_settings::{Limits, QueueSettings};
use crate::registry::Registry;
use crate::stats::Snapshot;
use crate::subscription::{SubscribeOptions, Subscription};
use crate::topic::Topic;

/// A running broker. Cheap to clone; every clone is the same broker.
#[derive(Clone)]
pub struct Broker {
    reg: Arc<Registry>,
    tasks: Arc<Tasks>,
    start_time_ns: i64,
}

/// The broker's background tasks, aborted when the last handle goes.
struct Tasks(Mutex<Vec<JoinHandle<()>>>);

impl Tasks {
    fn stop(&self) {
        for t in self.0.lock().drain(..) {
            t.abort();
        }
    }
}

impl Drop for Tasks {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Broker {
    /// Start a broker on the current tokio runtime: recreate the topics and channels of
    /// `nsqd.dat` (opening their disk queues on the blocking pool) and spawn the engine's
    /// tasks. Panics outside a tokio runtime, as `tokio::spawn` does.
    pub async fn start(mut config: BrokerConfig) -> Result<Broker, StartError> {
        if config.runtime.is_none() {
            config.runtime = Some(tokio::runtime::Handle::current());
        }
        let reg = Arc::new(Registry::new(config));
        let r = Arc::clone(&reg);
        tokio::task::spawn_blocking(move || -> Result<(), MetadataError> {
            r.load_metadata()?;
            r.persist_metadata()
        })
        .await??;
        Ok(Broker::with_tasks(reg))
    }

    fn with_tasks(reg: Arc<Registry>) -> Broker {
        let shared = Arc::clone(&reg.shared);
        let tasks = vec![
            tokio::spawn(Arc::clone(&shared.timers).run()),
            tokio::spawn(run_sync_ticker(Arc::clone(&reg))),
            tokio::spawn(run_metadata_writer(Arc::clone(&reg))),
            tokio::spawn(crate::dead_letter::run(Arc::clone(&reg))),
        ];
        Broker {
            reg,
            tasks: Arc::new(Tasks(Mutex::new(tasks))),
            start_time_ns: crate::now_unix_nanos(),
        }
    }

    /// Shut down gracefully: consumers are told to go (their in-flight messages are taken
    /// back), `nsqd.dat` is written, every queue's memory, in-flight and deferred messages are
    /// flushed to its disk queue (nsqd's order), and the tasks stop. Publishing fails with
    /// [`BrokerError::Exiting`] from the start of the shutdown.
    pub async fn shutdown(&self) -> Result<(), MetadataError> {
        self.reg.set_exiting();
        self.reg.kick_consumers();
        let reg = Arc::clone(&self.reg);
        let closed = tokio::task::spawn_blocking(move || {
            // Dead letters still on their way reach their topics (created if need be) first.
            crate::dead_letter::publish_pending(&reg);
            let persisted = reg.persist_metadata();
            reg.close_queues();
            persisted
        })
        .await;
        self.tasks.stop();
        match closed {
            Ok(r) => r,
            Err(e) => {
                tracing::error!("closing the disk queues failed - {e}");
                Ok(())
            }
        }
    }

    /// The configuration it runs with.
    pub fn config(&self) -> &BrokerConfig {
        self.reg.cfg()
    }

    /// A publisher to `topic`, created if needed (which may open its disk queue).
    pub fn publisher(&self, topic: &str) -> Result<Publisher, BrokerError> {
        check_name(topic)?;
        let t = self.reg.get_or_create_topic(topic)?;
        Ok(Publisher::new(Arc::clone(&self.reg), t))
    }

    /// Join `channel` of `topic` (both created if needed) as an in-process consumer.
    pub async fn subscribe(
        &self,
        topic: &str,
        channel: &str,
        options: SubscribeOptions,
    ) -> Result<Subscription, BrokerError> {
        let info = ConsumerInfo::new(crate::ConsumerKind::InProcess, "");
        let info = match options.msg_timeout {
            Some(t) => info.msg_timeout(t.min(self.config().max_msg_timeout)),
            None => info,
        };
        let consumer = self.new_consumer(info);
        consumer.set_ready_count(i64::from(options.max_in_flight));
        let ch = self.join(topic, channel, &consumer).await?;
        Ok(Subscription::new(Arc::clone(&self.reg), ch, consumer))
    }

    /// Make `consumer` a consumer of `channel` of `topic` (both created if needed; an
    /// ephemeral one that is going away as it joins is tried once more, as nsqd does).
    pub async fn join(
        &self,
        topic: &str,
        channel: &str,
        consumer: &Arc<Consumer>,
    ) -> Result<Arc<Channel>, BrokerError> {
        let mut last = BrokerError::Exiting;
        for _ in 0..2 {
            let ch = self.open_channel(topic, channel).await?;
            match ch.add_consumer(Arc::clone(consumer)) {
                Ok(()) => return Ok(ch),
                Err(e @ BrokerError::TooManyConsumers { .. }) => return Err(e),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// The channel (and its topic), created if needed; creating opens disk queues on the
    /// blocking pool, so the caller's thread keeps serving other tasks.
    pub async fn open_channel(
        &self,
        topic: &str,
        channel: &str,
    ) -> Result<Arc<Channel>, BrokerError> {
        check_name(topic)?;
        check_name(channel)?;
        if let Some(ch) = self.reg.topic(topic).and_then(|t| t.channel(channel)) {
            return Ok(ch);
        }
        let reg = Arc::clone(&self.reg);
        let (topic, channel) = (topic.to_string(), channel.to_string());
        tokio::task::spawn_blocking(move || {
            reg.get_or_create_topic(&topic)?
                .get_or_create_channel(&channel)
        })
        .await
        .map_err(|_| BrokerError::Exiting)?
    }

    /// A new consumer, not yet in any channel (see [`Broker::join`]).
    pub fn new_consumer(&self, info: ConsumerInfo) -> Arc<Consumer> {
        self.reg.new_consumer(info)
    }

    /// `consumer` left `channel`: its in-flight messages go back to the queue at once, and an
    /// ephemeral channel left without consumers is deleted.
    pub fn consumer_left(&self, channel: &Channel, consumer: &Consumer) {
        self.reg.consumer_left(channel, consumer.id());
    }

    /// Follow topic and channel events until the returned guard is dropped.
    pub fn listen(&self, listener: Arc<dyn EventListener>) -> Listening {
        self.reg.shared.events.add(listener)
    }

    /// The topic called `name`, if it exists.
    pub fn topic(&self, name: &str) -> Option<Arc<Topic>> {
        self.reg.topic(name)
    }

    /// The topic, created if needed (blocking: creating one opens its disk queue, with no
    /// lock held that publishers to other topics need). The name must be valid.
    pub fn get_or_create_topic(&self, name: &str) -> Result<Arc<Topic>, BrokerError> {
        self.reg.get_or_create_topic(name)
    }

    /// Apply `changes` (a JSON object of settings: `queue_settings.rs`, `docs/http-queues.md`) to
    /// `topic`'s settings, which are also its channels' defaults; the topic is created if
    /// needed (blocking). All or nothing: a bad key or value changes (and creates) nothing.
    pub fn configure_topic(
        &self,
        topic: &str,
        changes: &serde_json::Value,
    ) -> Result<QueueSettings, BrokerError> {
        check_name(topic)?;
        QueueSettings::default().patch(changes, &Limits::of(self.config(), topic))?;
        self.reg.get_or_create_topic(topic)?.configure(changes)
    }

    /// Apply `changes` to the settings of `channel` of `topic`, both created if needed
    /// (blocking). All or nothing, as [`Broker::configure_topic`].
    pub fn configure_channel(
        &self,
        topic: &str,
        channel: &str,
        changes: &serde_json::Value,
    ) -> Result<QueueSettings, BrokerError> {
        check_name(topic)?;
        check_name(channel)?;
        QueueSettings::default().patch(changes, &Limits::of(self.config(), topic))?;
        let t = self.reg.get_or_create_topic(topic)?;
        t.get_or_create_channel(channel)?;
        t.configure_channel(channel, changes)
    }

    /// Replace `topic`'s settings (created if needed; blocking).
    pub fn set_topic_settings(
        &self,
        topic: &str,
        settings: &QueueSettings,
    ) -> Result<(), BrokerError> {
        check_name(topic)?;
        let p = QueueSettings::from_json(&settings.to_json(), &Limits::of(self.config(), topic))?;
        self.reg.get_or_create_topic(topic)?.set_settings(p);
        Ok(())
    }

    /// Replace the settings of `channel` of `topic` (both created if needed; blocking).
    pub fn set_channel_settings(
        &self,
        topic: &str,
        channel: &str,
        settings: &QueueSettings,
    ) -> Result<(), BrokerError> {
        check_name(topic)?;
        check_name(channel)?;
        let p = QueueSettings::from_json(&settings.to_json(), &Limits::of(self.config(), topic))?;
        let t = self.reg.get_or_create_topic(topic)?;
        let ch = t.get_or_create_channel(channel)?;
        t.set_channel_settings(&ch, p);
        Ok(())
    }

    /// Every topic's name, in order.
    pub fn topic_names(&self) -> Vec<String> {
        self.reg.topic_names()
    }

    /// Delete a topic with its channels and their messages, memory and disk.
    pub fn delete_topic(&self, name: &str) -> Result<(), BrokerError> {
        self.reg.delete_topic(name)
    }

    /// Delete a channel and its messages; an ephemeral topic left without channels goes too.
    pub fn delete_channel(&self, topic: &str, channel: &str) -> Result<(), BrokerError> {
        self.reg.delete_channel(topic, channel)
    }

    /// Counters of every topic (or only `topic`), its channels (or only `channel`) and, with
    /// `include_consumers`, their consumers.
    pub fn snapshot(
        &self,
        topic: Option<&str>,
        channel: Option<&str>,
        include_consumers: bool,
    ) -> Snapshot {
        let topics: Vec<Arc<Topic>> = match topic {
            Some(name) => self.reg.topic(name).into_iter().collect(),
            None => self.reg.topics(),
        };
        let topics = if topic.is_some() && topics.is_empty() {
            None
        } else {
            Some(
                topics
                    .iter()
                    .map(|t| t.stats(channel, include_consumers))
                    .filter(|ts| channel.is_none() || !ts.channels.is_empty())
                    .collect(),
            )
        };
        Snapshot { topics }
    }

    /// Write `nsqd.dat` now (after a pause or unpause; creations and deletions are written in
    /// the background). Blocking; a no-op without a data path.
    pub fn persist_metadata(&self) -> Result<(), MetadataError> {
        self.reg.persist_metadata()
    }

    /// Sync every disk queue now, as the `--sync-timeout` tick does: fsync and metadata where
    /// anything changed, retry failed writes, acknowledge finished messages (strict mode).
    /// Blocking.
    pub fn sync_queues(&self) {
        self.reg.tick_queues();
    }

    /// Messages held in memory anywhere: backlogs, ready, in flight, deferred.
    pub fn messages_in_memory(&self) -> usize {
        self.reg.messages_in_memory()
    }

    /// True once shutting down.
    pub fn is_exiting(&self) -> bool {
        self.reg.is_exiting()
    }

    /// Refuse new topics and channels from now on (the first step of a shutdown).
    pub fn set_exiting(&self) {
        self.reg.set_exiting();
    }

    /// False after a failed disk write, until the next one succeeds (nsqd's rule).
    pub fn is_healthy(&self) -> bool {
        self.config().health.is_ok()
    }

    /// `OK` or `NOK - <error>`, as nsqd's `/ping` and `/stats` report it.
    pub fn health(&self) -> String {
        self.config().health.text()
    }

    /// Unix seconds when it started.
    pub fn start_time(&self) -> i64 {
        self.start_time_ns.div_euclid(1_000_000_000)
    }

    /// Unix nanoseconds when it started.
    pub fn start_time_ns(&self) -> i64 {
        self.start_time_ns
    }
}

impl std::fmt::Debug for Broker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Broker")
            .field("topics", &self.reg.topic_names().len())
            .finish()
    }
}

fn check_name(name: &str) -> Result<(), BrokerError> {
    if nsq_wire::names::is_valid_name(name.as_bytes()) {
        Ok(())
    } else {
        Err(BrokerError::InvalidName(name.to_string()))
    }
}

/// Run the disk queues' `--sync-timeout` tick on the blocking pool.
async fn run_sync_ticker(reg: Arc<Registry>) {
    let period = reg.cfg().sync_timeout.max(Duration::from_millis(10));
    let mut t = tokio::time::interval(period);
    t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    t.tick().await;
    loop {
        t.tick().await;
        let r = Arc::clone(&reg);
        let _ = tokio::task::spawn_blocking(move || r.tick_queues()).await;
    }
}

/// Rewrite `nsqd.dat` whenever a durable topic or channel is created or deleted.
async fn run_metadata_writer(reg: Arc<Registry>) {
    loop {
        reg.shared.meta_dirty.notified().await;
        let r = Arc::clone(&reg);
        match tokio::task::spawn_blocking(move || r.persist_metadata()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::error!("{e}"),
            Err(e) => tracing::error!("metadata writer: {e}"),
        }
    }
}
