//! The topic registry and the rules that span topics and channels: creating and deleting them
//! (announced on the event bus), cleaning up ephemeral ones (an `#ephemeral` channel goes with
//! its last consumer, an `#ephemeral` topic with its last channel), and what `nsqd.dat` holds.
//!
//! Creating a topic opens (and recovers) its disk queue. That IO happens with no registry
//! lock held: creations are serialised by their own lock, which publishers never take, so
//! publishing to existing topics goes on while a topic with a large backlog is opened.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use tokio::sync::Notify;

use crate::broker_config::BrokerConfig;
use crate::channel::Channel;
use crate::consumer::{Consumer, ConsumerInfo};
use crate::dead_letter::DeadLetterBox;
use crate::error::BrokerError;
use crate::events::EventBus;
use crate::metadata::{self, ChannelMeta, Metadata, MetadataError, TopicMeta};
use crate::queue_settings::{Limits, QueueSettings};
use crate::timers::Timers;
use crate::topic::Topic;

/// What every topic and channel of one broker shares with it.
#[derive(Debug)]
pub(crate) struct Shared {
    pub cfg: Arc<BrokerConfig>,
    /// Something in `nsqd.dat` changed; the metadata writer rewrites it.
    pub meta_dirty: Notify,
    pub events: Arc<EventBus>,
    pub timers: Arc<Timers>,
    /// Dead letters on their way to their topics (`dead_letter.rs`).
    pub dead_letters: DeadLetterBox,
    /// Set when the queues start closing (shutdown): publishing fails from then on, as it
    /// does in nsqd once a topic's exit flag is set.
    pub closing: AtomicBool,
}

/// Topics by name, and the broker-wide state around them.
#[derive(Debug)]
pub(crate) struct Registry {
    pub shared: Arc<Shared>,
    topics: RwLock<BTreeMap<String, Arc<Topic>>>,
    /// Serialises topic creation (the disk queue is opened under it, not under `topics`).
    creating: Mutex<()>,
    /// Serialises `nsqd.dat` writers so the newest snapshot is the one left on disk.
    meta_write: Mutex<()>,
    next_consumer_id: AtomicU64,
    exiting: AtomicBool,
}

impl Registry {
    pub fn new(cfg: BrokerConfig) -> Registry {
        Registry {
            shared: Arc::new(Shared {
                cfg: Arc::new(cfg),
                meta_dirty: Notify::new(),
                events: Arc::new(EventBus::default()),
                timers: Arc::new(Timers::default()),
                dead_letters: DeadLetterBox::default(),
                closing: AtomicBool::new(false),
            }),
            topics: RwLock::new(BTreeMap::new()),
            creating: Mutex::new(()),
            meta_write: Mutex::new(()),
            next_consumer_id: AtomicU64::new(1),
            exiting: AtomicBool::new(false),
        }
    }

    pub fn cfg(&self) -> &BrokerConfig {
        &self.shared.cfg
    }

    pub fn is_exiting(&self) -> bool {
        self.exiting.load(Relaxed)
    }

    pub fn set_exiting(&self) {
        self.exiting.store(true, Relaxed);
    }

    pub fn topic(&self, name: &str) -> Option<Arc<Topic>> {
        self.topics.read().get(name).cloned()
    }

    /// Every topic, in name order.
    pub fn topics(&self) -> Vec<Arc<Topic>> {
        self.topics.read().values().cloned().collect()
    }

    pub fn topic_names(&self) -> Vec<String> {
        self.topics.read().keys().cloned().collect()
    }

    /// The topic, created if needed (blocking: may open its disk queue). The name must
    /// already be valid.
    pub fn get_or_create_topic(&self, name: &str) -> Result<Arc<Topic>, BrokerError> {
        self.topic_or_create(name, false)
    }

    /// [`Registry::get_or_create_topic`] for the broker's own use (dead letters), which may
    /// still create a topic while shutting down, until the queues close.
    pub fn get_or_create_topic_internal(&self, name: &str) -> Result<Arc<Topic>, BrokerError> {
        self.topic_or_create(name, true)
    }

    fn topic_or_create(&self, name: &str, internal: bool) -> Result<Arc<Topic>, BrokerError> {
        if let Some(t) = self.topic(name) {
            return Ok(t);
        }
        let _creating = self.creating.lock();
        if let Some(t) = self.topic(name) {
            return Ok(t);
        }
        let refused = if internal {
            self.shared.closing.load(Relaxed)
        } else {
            self.is_exiting()
        };
        if refused {
            return Err(BrokerError::Exiting);
        }
        let held = self.shared.events.holds_new_topics();
        let t = Topic::open(name, Arc::clone(&self.shared), held);
        let mut topics = self.topics.write();
        topics.insert(name.to_string(), Arc::clone(&t));
        if !t.is_ephemeral() {
            self.shared.meta_dirty.notify_one();
        }
        tracing::info!("TOPIC({name}): created");
        // Under the registry lock, so a delete of the same name cannot be announced first.
        self.shared.events.topic_created(&t);
        drop(topics);
        Ok(t)
    }

    /// Announce a deleted topic (call with the registry lock held).
    fn topic_deleted(&self, t: &Topic) {
        self.shared
            .events
            .emit(|| crate::events::Event::TopicDeleted {
                topic: t.name().to_string(),
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
        if !t.is_ephemeral() {
            self.shared.meta_dirty.notify_one();
        }
        Ok(())
    }

    /// Delete a channel; an ephemeral topic left without channels goes too.
    pub fn delete_channel(&self, topic: &str, channel: &str) -> Result<(), BrokerError> {
        let t = self.topic(topic).ok_or(BrokerError::TopicNotFound)?;
        let ch = t.remove_channel(channel)?;
        tracing::info!("TOPIC({topic}): deleted channel({channel})");
        if !ch.is_ephemeral() && !t.is_ephemeral() {
            self.shared.meta_dirty.notify_one();
        }
        if t.is_ephemeral() && t.channel_count() == 0 {
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

    /// A consumer left `ch`: its in-flight messages go back at once, and an ephemeral channel
    /// left without consumers is deleted.
    pub fn consumer_left(&self, ch: &Channel, consumer_id: u64) {
        let remaining = ch.remove_consumer(consumer_id);
        if remaining == 0 && ch.is_ephemeral() && !ch.is_deleted() {
            let _ = self.delete_channel(ch.topic_name(), ch.name());
        }
    }

    pub fn new_consumer(&self, info: ConsumerInfo) -> Arc<Consumer> {
        let id = self.next_consumer_id.fetch_add(1, Relaxed);
        Arc::new(Consumer::new(id, info, self.cfg().msg_timeout))
    }

    /// Messages held in memory anywhere (backlogs, ready, in flight, deferred).
    pub fn messages_in_memory(&self) -> usize {
        self.topics().iter().map(|t| t.messages_in_memory()).sum()
    }

    /// What `nsqd.dat` holds: durable topics and channels with their paused flags.
    pub fn metadata(&self) -> Metadata {
        Metadata {
            topics: self
                .topics()
                .iter()
                .filter(|t| !t.is_ephemeral())
                .map(|t| {
                    let channels: Vec<ChannelMeta> = t
                        .channels()
                        .iter()
                        .filter(|c| !c.is_ephemeral())
                        .map(|c| ChannelMeta {
                            name: c.name().to_string(),
                            paused: c.is_paused(),
                            settings: settings_json(&c.settings()),
                        })
                        .collect();
                    TopicMeta {
                        name: t.name().to_string(),
                        paused: t.is_paused(),
                        channels: (!channels.is_empty()).then_some(channels),
                        settings: settings_json(&t.settings()),
                    }
                })
                .collect(),
            version: crate::NSQD_COMPAT_VERSION.to_string(),
        }
    }

    /// Write `nsqd.dat` now (no-op without a data path).
    pub fn persist_metadata(&self) -> Result<(), MetadataError> {
        let Some(dir) = &self.cfg().data_path else {
            return Ok(());
        };
        let _guard = self.meta_write.lock();
        metadata::save(dir, &self.metadata())
    }

    /// Recreate the topics, channels and paused flags of `nsqd.dat` (startup, blocking).
    /// Invalid names are skipped with a warning, as nsqd does.
    pub fn load_metadata(&self) -> Result<(), MetadataError> {
        let Some(dir) = &self.cfg().data_path else {
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
            let limits = Limits::of(self.cfg(), &tm.name);
            if let Some(v) = &tm.settings {
                let what = format!("TOPIC({})", tm.name);
                t.set_settings(QueueSettings::from_json_lenient(v, &limits, &what));
            }
            t.set_paused(tm.paused);
            for cm in tm.channels.unwrap_or_default() {
                if !nsq_wire::names::is_valid_name(cm.name.as_bytes()) {
                    tracing::warn!("skipping creation of invalid channel {}", cm.name);
                    continue;
                }
                let own = cm.settings.as_ref().map(|v| {
                    let what = format!("TOPIC({}) CHANNEL({})", tm.name, cm.name);
                    QueueSettings::from_json_lenient(v, &limits, &what)
                });
                if let Ok(c) = t.get_or_create_channel_with(&cm.name, own) {
                    c.set_paused(cm.paused);
                }
            }
        }
        Ok(())
    }

    /// The `--sync-timeout` tick of every disk queue: sync what changed, retry failed writes,
    /// acknowledge finished messages (strict mode).
    pub fn tick_queues(&self) {
        for t in self.topics() {
            t.tick_queues();
        }
    }

    /// Every consumer of every channel is told to go, and its in-flight messages are taken
    /// back (shutdown: they are written to disk with the rest).
    pub fn kick_consumers(&self) {
        for t in self.topics() {
            for ch in t.channels() {
                ch.kick_consumers();
            }
        }
    }

    /// Shutdown (blocking): for each topic, flush every channel's memory, in-flight and
    /// deferred messages to its disk queue and close it, then the topic's (nsqd's order).
    pub fn close_queues(&self) {
        self.set_exiting();
        self.shared.closing.store(true, Relaxed);
        for t in self.topics() {
            t.close_queues();
        }
    }
}

/// Settings as `nsqd.dat` keeps them (None when there are none, so nothing is written).
fn settings_json(p: &QueueSettings) -> Option<serde_json::Value> {
    (!p.is_empty()).then(|| p.to_json())
}
