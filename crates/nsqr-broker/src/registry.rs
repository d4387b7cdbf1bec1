//! The broker: the topic registry, the set of connected clients, and the cleanup rules that
//! span topics and channels (an ephemeral channel goes with its last client, an ephemeral topic
//! with its last channel).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use rustc_hash::FxHashMap;
use tokio::sync::Notify;

use crate::channel::Channel;
use crate::client::Client;
use crate::config::BrokerConfig;
use crate::error::BrokerError;
use crate::events::{Event, EventSink, Events, TopicStart};
use crate::metadata::{self, ChannelMeta, Metadata, MetadataError, TopicMeta};
use crate::stats::{ClientStats, Snapshot};
use crate::topic::Topic;

pub struct Broker {
    cfg: Arc<BrokerConfig>,
    topics: RwLock<BTreeMap<String, Arc<Topic>>>,
    clients: Mutex<FxHashMap<u64, Arc<Client>>>,
    next_client_id: AtomicU64,
    /// Unix seconds.
    pub start_time: i64,
    /// Unix nanoseconds, for `/stats` uptime.
    pub start_time_ns: i64,
    exiting: AtomicBool,
    /// Something in `nsqd.dat` changed; the background writer rewrites it.
    meta_dirty: Arc<Notify>,
    /// Serialises `nsqd.dat` writers so the newest snapshot is the one left on disk.
    meta_write: Mutex<()>,
    /// Lifecycle events for the daemon (lookupd registration); see `events.rs`.
    events: Arc<Events>,
}

impl Broker {
    pub fn new(cfg: BrokerConfig) -> Broker {
        let start_time_ns = crate::now_unix_nanos();
        Broker {
            cfg: Arc::new(cfg),
            topics: RwLock::new(BTreeMap::new()),
            clients: Mutex::new(FxHashMap::default()),
            next_client_id: AtomicU64::new(1),
            start_time: start_time_ns.div_euclid(1_000_000_000),
            start_time_ns,
            exiting: AtomicBool::new(false),
            meta_dirty: Arc::new(Notify::new()),
            meta_write: Mutex::new(()),
            events: Arc::new(Events::default()),
        }
    }

    pub fn config(&self) -> &BrokerConfig {
        &self.cfg
    }

    /// Install the lifecycle event sink (once; false if one was already set). Topics created
    /// from then on start held until their [`Event::TopicCreated`] guard is dropped.
    pub fn set_event_sink(&self, sink: EventSink) -> bool {
        self.events.set(sink)
    }

    pub fn is_exiting(&self) -> bool {
        self.exiting.load(Relaxed)
    }

    pub fn set_exiting(&self) {
        self.exiting.store(true, Relaxed);
    }

    /// Record the outcome of a disk write: `Some(error)` makes the node unhealthy until the
    /// next success (`None`).
    pub fn set_health(&self, error: Option<String>) {
        match error {
            Some(e) => self.cfg.health.set_error(&e),
            None => self.cfg.health.set_ok(),
        }
    }

    pub fn is_healthy(&self) -> bool {
        self.cfg.health.is_ok()
    }

    /// `OK` or `NOK - <error>`, as `/ping` and `/stats` report it.
    pub fn health(&self) -> String {
        self.cfg.health.text()
    }

    pub fn topic(&self, name: &str) -> Option<Arc<Topic>> {
        self.topics.read().get(name).cloned()
    }

    /// The topic, created if needed. The name must already be valid.
    pub fn get_or_create_topic(&self, name: &str) -> Result<Arc<Topic>, BrokerError> {
        if let Some(t) = self.topic(name) {
            return Ok(t);
        }
        if self.is_exiting() {
            return Err(BrokerError::Exiting);
        }
        let mut topics = self.topics.write();
        if let Some(t) = topics.get(name) {
            return Ok(Arc::clone(t));
        }
        let held = self.events.is_set();
        let t = Topic::new(
            name,
            Arc::clone(&self.cfg),
            Arc::clone(&self.meta_dirty),
            Arc::clone(&self.events),
            held,
        );
        topics.insert(name.to_string(), Arc::clone(&t));
        if !t.ephemeral {
            self.meta_dirty.notify_one();
        }
        tracing::info!("TOPIC({name}): created");
        // Under the registry lock, so a delete of the same name cannot be announced first.
        self.events.emit(|| Event::TopicCreated {
            topic: Arc::clone(&t),
            start: TopicStart::new(Arc::clone(&t)),
        });
        drop(topics);
        Ok(t)
    }

    /// Announce a deleted topic (call with the registry lock held).
    fn topic_deleted(&self, t: &Topic) {
        self.events.emit(|| Event::TopicDeleted {
            topic: t.name.clone(),
            channels: t.channel_names(),
        });
    }

    pub fn delete_topic(&self, name: &str) -> Result<(), BrokerError> {
        let mut topics = self.topics.write();
        let t = topics.remove(name).ok_or(BrokerError::TopicNotFound)?;
        self.topic_deleted(&t);
        drop(topics);
        t.delete();
        tracing::info!("TOPIC({name}): deleted");
        if !t.ephemeral {
            self.meta_dirty.notify_one();
        }
        Ok(())
    }

    /// Delete a channel; an ephemeral topic left without channels goes too.
    pub fn delete_channel(&self, topic: &str, channel: &str) -> Result<(), BrokerError> {
        let t = self.topic(topic).ok_or(BrokerError::TopicNotFound)?;
        let ch = t.remove_channel(channel)?;
        tracing::info!("TOPIC({topic}): deleted channel({channel})");
        if !ch.ephemeral && !t.ephemeral {
            self.meta_dirty.notify_one();
        }
        if t.ephemeral && t.channel_count() == 0 {
            let mut topics = self.topics.write();
            if topics.get(topic).is_some_and(|cur| Arc::ptr_eq(cur, &t)) && t.channel_count() == 0 {
                topics.remove(topic);
                self.topic_deleted(&t);
                drop(topics);
                t.delete();
            }
        }
        Ok(())
    }

    /// A consumer left `ch`: an ephemeral channel without consumers is deleted.
    pub fn consumer_left(&self, ch: &Arc<Channel>, client_id: u64) {
        let remaining = ch.remove_client(client_id);
        if remaining == 0 && ch.ephemeral && !ch.is_deleted() {
            let _ = self.delete_channel(&ch.topic_name, &ch.name);
        }
    }

    /// A new TCP client.
    pub fn register_client(&self, remote_address: String, connect_ts: i64) -> Arc<Client> {
        let id = self.next_client_id.fetch_add(1, Relaxed);
        let c = Arc::new(Client::new(
            id,
            remote_address,
            connect_ts,
            self.cfg.msg_timeout,
        ));
        self.clients.lock().insert(id, Arc::clone(&c));
        c
    }

    pub fn unregister_client(&self, id: u64) {
        self.clients.lock().remove(&id);
    }

    /// Kick every client (shutdown).
    pub fn kick_all_clients(&self) {
        for c in self.clients.lock().values() {
            c.kick();
        }
    }

    pub fn client_count(&self) -> usize {
        self.clients.lock().len()
    }

    /// Every message held anywhere in the broker (backlogs, ready, in flight, deferred).
    pub fn held_messages(&self) -> usize {
        let topics: Vec<Arc<Topic>> = self.topics.read().values().cloned().collect();
        topics.iter().map(|t| t.held()).sum()
    }

    pub fn topic_names(&self) -> Vec<String> {
        self.topics.read().keys().cloned().collect()
    }

    /// A `/stats` snapshot: topics sorted by name, channels sorted by name.
    pub fn snapshot(
        &self,
        topic: Option<&str>,
        channel: Option<&str>,
        include_clients: bool,
    ) -> Snapshot {
        let topics: Vec<Arc<Topic>> = match topic {
            Some(name) => self.topic(name).into_iter().collect(),
            None => self.topics.read().values().cloned().collect(),
        };
        let topic_stats = if topic.is_some() && topics.is_empty() {
            None
        } else {
            Some(
                topics
                    .iter()
                    .map(|t| t.stats(channel, include_clients))
                    .filter(|ts| channel.is_none() || !ts.channels.is_empty())
                    .collect(),
            )
        };
        let producers = if include_clients {
            let clients: Vec<Arc<Client>> = self.clients.lock().values().cloned().collect();
            clients
                .iter()
                .filter(|c| !c.pub_counts.lock().is_empty())
                .map(|c| ClientStats::of(c, topic))
                .filter(|s| topic.is_none() || !s.pub_counts.is_empty())
                .collect()
        } else {
            Vec::new()
        };
        Snapshot {
            topics: topic_stats,
            producers,
        }
    }

    /// What `nsqd.dat` holds: durable topics and channels with their paused flags.
    pub fn metadata(&self) -> Metadata {
        let topics: Vec<Arc<Topic>> = self.topics.read().values().cloned().collect();
        Metadata {
            topics: topics
                .iter()
                .filter(|t| !t.ephemeral)
                .map(|t| {
                    let channels: Vec<ChannelMeta> = t
                        .channel_names()
                        .into_iter()
                        .filter_map(|n| t.channel(&n))
                        .filter(|c| !c.ephemeral)
                        .map(|c| ChannelMeta {
                            name: c.name.clone(),
                            paused: c.is_paused(),
                        })
                        .collect();
                    TopicMeta {
                        name: t.name.clone(),
                        paused: t.is_paused(),
                        channels: (!channels.is_empty()).then_some(channels),
                    }
                })
                .collect(),
            version: crate::NSQD_COMPAT_VERSION.to_string(),
        }
    }

    /// Write `nsqd.dat` now (no-op without a data path).
    pub fn persist_metadata(&self) -> Result<(), MetadataError> {
        let Some(dir) = &self.cfg.data_path else {
            return Ok(());
        };
        let _guard = self.meta_write.lock();
        metadata::save(dir, &self.metadata())
    }

    /// Recreate the topics, channels and paused flags of `nsqd.dat` (startup). Invalid names
    /// are skipped with a warning, as nsqd does.
    pub fn load_metadata(&self) -> Result<(), MetadataError> {
        let Some(dir) = &self.cfg.data_path else {
            return Ok(());
        };
        let Some(md) = metadata::load(dir)? else {
            return Ok(());
        };
        for tm in md.topics {
            if !nsq_wire::names::is_valid_name(tm.name.as_bytes()) {
                tracing::warn!("skipping creation of invalid topic {}", tm.name);
                continue;
            }
            let Ok(t) = self.get_or_create_topic(&tm.name) else {
                continue;
            };
            t.set_paused(tm.paused);
            for cm in tm.channels.unwrap_or_default() {
                if !nsq_wire::names::is_valid_name(cm.name.as_bytes()) {
                    tracing::warn!("skipping creation of invalid channel {}", cm.name);
                    continue;
                }
                if let Ok(c) = t.get_or_create_channel(&cm.name) {
                    c.set_paused(cm.paused);
                }
            }
        }
        Ok(())
    }

    /// The `--sync-timeout` tick of every disk queue: sync what changed, retry failed writes,
    /// acknowledge finished messages (strict mode).
    pub fn tick_queues(&self) {
        let topics: Vec<Arc<Topic>> = self.topics.read().values().cloned().collect();
        for t in topics {
            t.tick_queues();
        }
    }

    /// Run `tick_queues` every `--sync-timeout`.
    pub async fn run_sync_ticker(self: Arc<Self>) {
        let period = self
            .cfg
            .sync_timeout
            .max(std::time::Duration::from_millis(10));
        let mut t = tokio::time::interval(period);
        t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        t.tick().await;
        loop {
            t.tick().await;
            let b = Arc::clone(&self);
            let _ = tokio::task::spawn_blocking(move || b.tick_queues()).await;
        }
    }

    /// Shutdown (blocking): for each topic, flush every channel's memory, in-flight and
    /// deferred messages to its disk queue and close it, then the topic's (nsqd's order).
    pub fn close_queues(&self) {
        self.set_exiting();
        let topics: Vec<Arc<Topic>> = self.topics.read().values().cloned().collect();
        for t in topics {
            t.close_queues();
        }
    }

    /// Rewrite `nsqd.dat` whenever a durable topic or channel is created or deleted.
    pub async fn run_metadata_writer(self: Arc<Self>) {
        loop {
            self.meta_dirty.notified().await;
            let b = Arc::clone(&self);
            match tokio::task::spawn_blocking(move || b.persist_metadata()).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::error!("{e}"),
                Err(e) => tracing::error!("metadata writer: {e}"),
            }
        }
    }
}
