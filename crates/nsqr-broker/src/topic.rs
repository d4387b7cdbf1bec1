//! A topic: assigns ids and timestamps to a published batch and hands it to every channel.
//!
//! The fan-out is a plain loop over the channels under the topic's lock (one lock per batch),
//! which also keeps ids increasing in every channel. With no channels, or while paused, the
//! topic keeps the batch in its own backlog (memory, then its disk queue: `spill_queue.rs`); the
//! first channel created takes that backlog, and unpausing hands it to all channels.
//!
//! Publishes go to the topic's receivers: every channel, except that a channel of a replicated
//! topic starts receiving only once the daemon says so ([`Topic::set_receiving`]), when its
//! creation is committed, so the leader's broker and the replicated state agree on which
//! messages a new channel starts with (`docs/replication.md`, "Taking over").

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use nsq_wire::message::IdGenerator;
use nsq_wire::Bodies;
use parking_lot::Mutex;
use tokio::time::Instant;

use crate::attrs::Attributes;
use crate::broker_config::BrokerConfig;
use crate::channel::Channel;
use crate::durability::Ticket;
use crate::e2e::E2eStream;
use crate::error::BrokerError;
use crate::events::Event;
use crate::message::{Message, Published};
use crate::queue_settings::{EffectiveSettings, Limits, QueueSettings};
use crate::registry::Shared;
use crate::replication::ReplicaOp;
use crate::run_queue::Span;
use crate::spill_queue::SpillQueue;
use crate::stats::{TopicCounts, TopicStats};

struct TopicState {
    channels: BTreeMap<String, Arc<Channel>>,
    /// The channels publishes and the backlog go to: all of them, but a replicated topic's
    /// channel until [`Topic::set_receiving`] admits it.
    receivers: BTreeMap<String, Arc<Channel>>,
    /// A replicated topic's first receiver while the backlog it took drains from disk: that
    /// backlog goes to it alone, as the replicated state gives it to the first channel.
    heir: Option<String>,
    paused: bool,
    /// Created while a listener holds new topics and not started yet (`events.rs`): the
    /// backlog is kept as if paused.
    held: bool,
    /// Messages waiting for a channel (or the unpause): memory, then disk.
    backlog: SpillQueue,
    /// Deferred publishes waiting for a channel (in memory; on disk in strict mode).
    deferred: Vec<(Message, Instant)>,
    ids: IdGenerator,
    /// The topic's settings: its backlog's, and its channels' defaults (`queue_settings.rs`).
    settings: QueueSettings,
}

/// How a publish is made: a delay, a time to live, an ordering key.
#[derive(Debug, Clone, Default)]
pub struct PutOptions {
    defer: Duration,
    ttl: Option<Duration>,
    ordering_key: Option<Arc<str>>,
    pub(crate) attrs: Option<Arc<Attributes>>,
}

impl PutOptions {
    /// Deliverable only after `delay` (nsqd's DPUB).
    pub fn defer(mut self, delay: Duration) -> PutOptions {
        self.defer = delay;
        self
    }

    /// Never delivered once `ttl` has passed since the publish (it becomes a dead letter,
    /// reason `expired`, or is dropped, as each channel's settings say).
    pub fn ttl(mut self, ttl: Duration) -> PutOptions {
        self.ttl = (!ttl.is_zero()).then_some(ttl);
        self
    }

    /// Delivered in order with the other messages of `key` on ordered channels (at most
    /// [`MAX_ORDERING_KEY_LEN`](crate::attrs::MAX_ORDERING_KEY_LEN) bytes: longer keys are
    /// cut).
    pub fn ordering_key(mut self, key: &str) -> PutOptions {
        let mut end = key.len().min(crate::attrs::MAX_ORDERING_KEY_LEN);
        while !key.is_char_boundary(end) {
            end -= 1;
        }
        self.ordering_key = Some(Arc::from(&key[..end]));
        self
    }

    /// True for a plain publish (nsqd's): no delay, time to live, ordering key or attributes,
    /// so publishes of it can be put together.
    pub fn is_plain(&self) -> bool {
        self.defer.is_zero()
            && self.ttl.is_none()
            && self.ordering_key.is_none()
            && self.attrs.is_none()
    }

    /// A publish whose messages carry exactly `attrs` (dead letters).
    pub(crate) fn with_attributes(attrs: Option<Arc<Attributes>>) -> PutOptions {
        PutOptions {
            attrs,
            ..PutOptions::default()
        }
    }

    /// The attributes the messages of a publish made at `now_ns` carry.
    fn attributes(&self, now_ns: i64) -> Option<Arc<Attributes>> {
        if self.attrs.is_some() {
            return self.attrs.clone();
        }
        Attributes {
            expires_at: self.ttl.map_or(0, |t| {
                now_ns.saturating_add(i64::try_from(t.as_nanos()).unwrap_or(i64::MAX))
            }),
            ordering_key: self.ordering_key.clone(),
            dead_letter: None,
        }
        .into_shared()
    }
}

/// A topic: what publishers publish to; every channel of it gets every message.
pub struct Topic {
    name: String,
    ephemeral: bool,
    shared: Arc<Shared>,
    /// Serialises channel creation (the disk queue is opened under it, not under `state`).
    creating: Mutex<()>,
    state: Mutex<TopicState>,
    deleted: AtomicBool,
    /// False while another node leads this replicated topic (`Topic::set_serving`).
    serving: AtomicBool,
    message_count: AtomicU64,
    message_bytes: AtomicU64,
}

impl Topic {
    /// A new topic, its disk queue opened (and recovered): blocking IO, so callers hold no
    /// lock other publishers need. `held` keeps its messages in the backlog until
    /// [`Topic::start`].
    pub(crate) fn open(name: &str, shared: Arc<Shared>, held: bool) -> Arc<Topic> {
        let ephemeral = nsq_wire::names::is_ephemeral(name);
        let cfg = &shared.cfg;
        let t = Arc::new(Topic {
            name: name.to_string(),
            ephemeral,
            state: Mutex::new(TopicState {
                channels: BTreeMap::new(),
                receivers: BTreeMap::new(),
                heir: None,
                paused: false,
                held,
                backlog: disk::backlog_queue(cfg, name, ephemeral),
                deferred: Vec::new(),
                ids: IdGenerator::new(cfg.node_id),
                settings: QueueSettings::default(),
            }),
            shared,
            creating: Mutex::new(()),
            deleted: AtomicBool::new(false),
            serving: AtomicBool::new(true),
            message_count: AtomicU64::new(0),
            message_bytes: AtomicU64::new(0),
        });
        disk::attach(&t);
        t
    }

    /// The topic's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn cfg(&self) -> &BrokerConfig {
        &self.shared.cfg
    }

    /// An `#ephemeral` topic: memory only, deleted with its last channel.
    pub fn is_ephemeral(&self) -> bool {
        self.ephemeral
    }

    /// True once deleted.
    pub fn is_deleted(&self) -> bool {
        self.deleted.load(Relaxed)
    }

    /// Whether this node serves the topic to consumers: every topic is served, except a
    /// replicated one on a node that does not lead its group. A change is an
    /// [`Event::Serving`], which lookupd registration follows.
    pub fn set_serving(&self, serving: bool) {
        if self.serving.swap(serving, Relaxed) == serving {
            return;
        }
        self.shared.events.emit(|| Event::Serving {
            topic: self.name.clone(),
            channels: self.channel_names(),
            serving,
        });
    }

    /// False while another node leads this replicated topic.
    pub fn is_serving(&self) -> bool {
        self.serving.load(Relaxed)
    }

    /// Publish a batch (PUB is a batch of one); `defer` > 0 holds it in each channel first.
    /// The ticket completes once the batch is durable (at once unless `--durability=strict`).
    /// Several publishes at once (pipelined PUBs) keep their own buffers.
    pub fn put(&self, publishes: &[Bodies], defer: Duration) -> Result<Ticket, BrokerError> {
        self.put_with(publishes, &PutOptions::default().defer(defer))
    }

    /// Publish as [`Topic::put`] does, with a time to live or an ordering key. On a
    /// replicated topic (`replicas` above 1) the batch goes to the replicated log instead
    /// (`replication.rs`) and is queued once committed, by [`Topic::put_committed`].
    pub fn put_with(&self, publishes: &[Bodies], opts: &PutOptions) -> Result<Ticket, BrokerError> {
        let defer = opts.defer.min(self.cfg().max_req_timeout);
        let now_ns = crate::now_unix_nanos();
        let attrs = opts.attributes(now_ns);
        let bytes: usize = publishes.iter().map(Bodies::total_bytes).sum();
        let n: usize = publishes.iter().map(Bodies::len).sum();
        let due = (!defer.is_zero()).then(|| Instant::now() + defer);
        let mut st = self.state.lock();
        if self.is_deleted() || self.shared.closing.load(Relaxed) {
            return Err(BrokerError::Exiting);
        }
        let ids = &mut st.ids;
        let published: Vec<Published> = publishes
            .iter()
            .map(|b| {
                let first = ids.next_n(now_ns, b.len() as u64);
                Published::with_attributes(b, now_ns, first, attrs.clone())
            })
            .collect();
        if let Some(replication) = self.replication(&st) {
            drop(st);
            if attrs.is_some() {
                return Err(BrokerError::NotReplicable {
                    topic: self.name.clone(),
                    option: "ttl or ordering_key",
                });
            }
            let batch = crate::replication::batch(&published, due);
            return replication.0.publish(&self.name, batch);
        }
        let ticket = store(&mut st, self, &published, due)?;
        drop(st);
        self.message_count.fetch_add(n as u64, Relaxed);
        self.message_bytes.fetch_add(bytes as u64, Relaxed);
        Ok(ticket)
    }

    /// The replicated log this topic's publishes go to, if its `replicas` is above 1.
    fn replication<'a>(&'a self, st: &TopicState) -> Option<&'a crate::Replication> {
        if st.settings.replicas.unwrap_or(1) > 1 {
            self.cfg().replication.as_ref()
        } else {
            None
        }
    }

    /// Report a change of this replicated topic or one of its channels to the hook.
    fn replicate(&self, st: &TopicState, channel: Option<&str>, op: ReplicaOp) {
        if let Some(r) = self.replication(st) {
            r.0.channel_op(&self.name, channel, op);
        }
    }

    /// Queue a batch of a replicated topic that its log committed, with the ids, timestamps
    /// and due times the leader gave it (on the topic's leader).
    pub fn put_committed(&self, batch: &[crate::ReplicaMessage]) -> Result<Ticket, BrokerError> {
        let mut ticket = Ticket::done();
        let mut st = self.state.lock();
        if self.is_deleted() || self.shared.closing.load(Relaxed) {
            return Err(BrokerError::Exiting);
        }
        for run in crate::replication::runs(batch) {
            let due = crate::replication::due(run.deliver_at_ms);
            ticket.merge(store(&mut st, self, &[run.published], due)?);
            self.message_count.fetch_add(run.len as u64, Relaxed);
            self.message_bytes.fetch_add(run.bytes as u64, Relaxed);
        }
        Ok(ticket)
    }

    /// The channel called `name`, if it exists.
    pub fn channel(&self, name: &str) -> Option<Arc<Channel>> {
        self.state.lock().channels.get(name).cloned()
    }

    /// Every channel, in name order.
    pub fn channels(&self) -> Vec<Arc<Channel>> {
        self.state.lock().channels.values().cloned().collect()
    }

    /// The channel, created if needed; a first channel takes the topic's backlog. Creating
    /// one opens its disk queue (blocking IO) with no topic lock held, so publishing goes on
    /// meanwhile; in async code use [`Broker::open_channel`](crate::Broker::open_channel).
    /// The name must already be valid.
    pub fn get_or_create_channel(&self, name: &str) -> Result<Arc<Channel>, BrokerError> {
        self.get_or_create_channel_with(name, None)
    }

    /// [`Topic::get_or_create_channel`]; a channel created here starts with settings `own`
    /// (loading `nsqd.dat`: an ordered channel must know it is one when its queue opens).
    pub(crate) fn get_or_create_channel_with(
        &self,
        name: &str,
        own: Option<QueueSettings>,
    ) -> Result<Arc<Channel>, BrokerError> {
        if let Some(ch) = self.existing_channel(name)? {
            return Ok(ch);
        }
        let _creating = self.creating.lock();
        if let Some(ch) = self.existing_channel(name)? {
            return Ok(ch);
        }
        let topic_settings = self.state.lock().settings.clone();
        let ch = Channel::open(
            &self.name,
            name,
            Arc::clone(&self.shared),
            own.unwrap_or_default(),
            &topic_settings,
        );
        let mut st = self.state.lock();
        if self.is_deleted() {
            drop(st);
            ch.delete();
            return Err(BrokerError::Exiting);
        }
        if st.settings != topic_settings {
            ch.inherit(&st.settings);
        }
        st.channels.insert(name.to_string(), Arc::clone(&ch));
        self.replicate(&st, Some(name), ReplicaOp::Created);
        if self.replication(&st).is_none() {
            admit(&mut st, name, &ch, false);
        }
        self.shared.events.emit(|| Event::ChannelCreated {
            topic: self.name.clone(),
            channel: name.to_string(),
        });
        if !self.ephemeral && !ch.is_ephemeral() {
            self.shared.meta_dirty.notify_one();
        }
        Ok(ch)
    }

    fn existing_channel(&self, name: &str) -> Result<Option<Arc<Channel>>, BrokerError> {
        let st = self.state.lock();
        if self.is_deleted() {
            return Err(BrokerError::Exiting);
        }
        Ok(st.channels.get(name).cloned())
    }

    /// Remove a channel (the registry handles ephemeral-topic cleanup).
    pub(crate) fn remove_channel(&self, name: &str) -> Result<Arc<Channel>, BrokerError> {
        let ch = {
            let mut st = self.state.lock();
            let ch = st
                .channels
                .remove(name)
                .ok_or(BrokerError::ChannelNotFound)?;
            withdraw(&mut st, name);
            self.replicate(&st, Some(name), ReplicaOp::Deleted);
            self.shared.events.emit(|| Event::ChannelDeleted {
                topic: self.name.clone(),
                channel: name.to_string(),
            });
            ch
        };
        ch.delete();
        Ok(ch)
    }

    /// Whether publishes (and the backlog, for a first receiver) go to channel `name`: always
    /// for a topic that is not replicated; for a replicated one's, from when the daemon admits
    /// it (its creation is committed) until it withdraws it. False if there is no such channel.
    pub fn set_receiving(&self, name: &str, receiving: bool) -> bool {
        let mut st = self.state.lock();
        let Some(ch) = st.channels.get(name).cloned() else {
            return false;
        };
        if receiving {
            let replicated = self.replication(&st).is_some();
            admit(&mut st, name, &ch, replicated);
        } else {
            withdraw(&mut st, name);
        }
        true
    }

    /// True if channel `name` gets the topic's publishes.
    pub fn is_receiving(&self, name: &str) -> bool {
        self.state.lock().receivers.contains_key(name)
    }

    /// How many channels it has.
    pub fn channel_count(&self) -> usize {
        self.state.lock().channels.len()
    }

    /// Pause (keep messages in the topic's backlog) or unpause (hand the backlog on).
    pub fn set_paused(&self, paused: bool) {
        let mut st = self.state.lock();
        st.paused = paused;
        self.replicate(&st, None, ReplicaOp::Paused(paused));
        if !paused && !st.held && !st.receivers.is_empty() {
            flush_backlog(&mut st);
        } else {
            st.backlog.set_drain(false);
        }
    }

    /// Release a held topic: its backlog goes to every channel it has by now.
    pub(crate) fn start(&self) {
        let mut st = self.state.lock();
        st.held = false;
        if !st.paused && !st.receivers.is_empty() {
            flush_backlog(&mut st);
        } else {
            st.backlog.set_drain(false);
        }
    }

    /// True while paused.
    pub fn is_paused(&self) -> bool {
        self.state.lock().paused
    }

    /// Drop the topic's own backlog, memory and disk (not its channels' queues).
    pub fn empty(&self) {
        let mut st = self.state.lock();
        st.backlog.empty();
        st.deferred.clear();
    }

    /// Mark deleted and delete every channel.
    pub(crate) fn delete(&self) {
        self.deleted.store(true, Relaxed);
        let mut st = self.state.lock();
        let disk = st.backlog.delete();
        st.deferred.clear();
        let channels = std::mem::take(&mut st.channels);
        st.receivers.clear();
        st.heir = None;
        drop(st);
        for (_, ch) in channels {
            ch.delete();
        }
        if let Some(backend) = disk {
            backend.delete_now();
        }
    }

    /// Every message the topic and its channels hold in memory.
    pub fn messages_in_memory(&self) -> usize {
        let st = self.state.lock();
        st.backlog.len()
            + st.deferred.len()
            + st.channels
                .values()
                .map(|c| c.messages_in_memory())
                .sum::<usize>()
    }

    /// Its channels' names, in order.
    pub fn channel_names(&self) -> Vec<String> {
        self.state.lock().channels.keys().cloned().collect()
    }

    /// A snapshot of its counters and its channels' (only `channel` if given).
    pub fn stats(&self, channel: Option<&str>, include_consumers: bool) -> TopicStats {
        let (all, paused, depth, backend_depth, disk_queue, settings) = {
            let st = self.state.lock();
            let all: Vec<Arc<Channel>> = st.channels.values().cloned().collect();
            (
                all,
                st.paused,
                st.backlog.depth() + st.deferred.len() as i64,
                st.backlog.backend_depth(),
                st.backlog.disk_stats(),
                (!st.settings.is_empty()).then(|| st.settings.clone()),
            )
        };
        let channels: Vec<&Arc<Channel>> = all
            .iter()
            .filter(|c| channel.is_none_or(|n| c.name() == n))
            .collect();
        TopicStats {
            topic_name: self.name.clone(),
            channels: channels
                .iter()
                .map(|c| c.stats(include_consumers))
                .collect(),
            counts: TopicCounts {
                depth,
                backend_depth,
                message_count: self.message_count.load(Relaxed),
                message_bytes: self.message_bytes.load(Relaxed),
            },
            paused,
            e2e_processing_latency: E2eStream::aggregate(all.iter().filter_map(|c| c.e2e())),
            disk_queue,
            settings,
        }
    }

    /// The topic's own settings.
    pub fn settings(&self) -> QueueSettings {
        self.state.lock().settings.clone()
    }

    /// What a channel of this topic without settings of its own runs with.
    pub fn effective_settings(&self) -> EffectiveSettings {
        let p = self.settings();
        EffectiveSettings::resolve(&self.name, &QueueSettings::default(), &p, self.cfg())
    }

    /// Apply `changes` (a JSON object, `queue_settings.rs`) to the topic's settings; every channel
    /// follows. All or nothing: a bad key or value changes nothing.
    pub fn configure(&self, changes: &serde_json::Value) -> Result<QueueSettings, BrokerError> {
        let mut st = self.state.lock();
        let p = st
            .settings
            .patch(changes, &Limits::of(self.cfg(), &self.name))?;
        self.replace_settings(&mut st, p.clone());
        self.replicate(&st, None, ReplicaOp::Configured(p.to_json().to_string()));
        Ok(p)
    }

    /// Replace the topic's settings (loading `nsqd.dat`, the config file).
    pub(crate) fn set_settings(&self, p: QueueSettings) {
        let mut st = self.state.lock();
        self.replace_settings(&mut st, p);
    }

    fn replace_settings(&self, st: &mut TopicState, p: QueueSettings) {
        let changed = st.settings != p;
        st.backlog
            .set_cap(p.mem_queue_size.unwrap_or(self.cfg().mem_queue_size));
        for ch in st.channels.values() {
            ch.inherit(&p);
        }
        st.settings = p;
        match self.replication(st) {
            Some(r) => {
                r.0.topic_replicated(&self.name, st.settings.replicas.unwrap_or(1))
            }
            None => admit_all(st),
        }
        if changed && !self.ephemeral {
            self.shared.meta_dirty.notify_one();
        }
    }

    /// Apply `changes` to the settings of channel `name` (which must exist).
    pub fn configure_channel(
        &self,
        name: &str,
        changes: &serde_json::Value,
    ) -> Result<QueueSettings, BrokerError> {
        let st = self.state.lock();
        let ch = st
            .channels
            .get(name)
            .cloned()
            .ok_or(BrokerError::ChannelNotFound)?;
        let p = ch
            .settings()
            .patch(changes, &Limits::of(self.cfg(), &self.name))?;
        self.replace_channel_settings(&st, &ch, p.clone());
        self.replicate(
            &st,
            Some(name),
            ReplicaOp::Configured(p.to_json().to_string()),
        );
        Ok(p)
    }

    /// Replace the settings of a channel of this topic.
    pub(crate) fn set_channel_settings(&self, ch: &Channel, p: QueueSettings) {
        let st = self.state.lock();
        self.replace_channel_settings(&st, ch, p);
    }

    fn replace_channel_settings(&self, st: &TopicState, ch: &Channel, p: QueueSettings) {
        let changed = ch.settings() != p;
        ch.set_settings(p, &st.settings);
        if changed && !self.ephemeral && !ch.is_ephemeral() {
            self.shared.meta_dirty.notify_one();
        }
    }
}

impl std::fmt::Debug for Topic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Topic").field("name", &self.name).finish()
    }
}

/// Queue stamped publishes: in every channel, or in the topic's backlog while it has none
/// (or is paused or held). One publish (an MPUB, a PUB) stays one run in every queue;
/// pipelined PUBs and deferred messages go message by message (all or nothing, as one put).
fn store(
    st: &mut TopicState,
    topic: &Topic,
    published: &[Published],
    due: Option<Instant>,
) -> Result<Ticket, BrokerError> {
    let single = match (due, published) {
        (None, [p]) => Some(p),
        _ => None,
    };
    let all = || -> Vec<Message> {
        published
            .iter()
            .flat_map(|p| p.messages(0, p.len()))
            .collect()
    };
    let ticket = if st.receivers.is_empty() || st.paused || st.held {
        match due {
            Some(at) if !st.backlog.is_strict() => {
                let room = if topic.ephemeral {
                    topic
                        .cfg()
                        .mem_queue_size
                        .saturating_sub(st.backlog.len() + st.deferred.len())
                } else {
                    usize::MAX
                };
                st.deferred
                    .extend(all().into_iter().take(room).map(|m| (m, at)));
                Ticket::done()
            }
            Some(at) => {
                st.backlog
                    .put(all(), Some(crate::channel::unix_due(at)))?
                    .ticket
            }
            None => match single {
                Some(p) => st.backlog.put_published(p, None)?.ticket,
                None => st.backlog.put(all(), None)?.ticket,
            },
        }
    } else {
        match single {
            Some(p) => fan_out_published(st.receivers.values(), p)?,
            None => fan_out(st.receivers.values(), all(), due)?,
        }
    };
    Ok(ticket)
}

/// Give every channel the publish as one run; the first error is returned (every channel
/// gets it even if one fails).
fn fan_out_published<'a>(
    channels: impl Iterator<Item = &'a Arc<Channel>>,
    p: &Published,
) -> Result<Ticket, BrokerError> {
    merge_puts(channels.map(|ch| ch.put_published(p)))
}

/// Give every channel its own copy (shared body) of the batch; the last one takes ownership.
/// Every channel gets it even if one fails; the first error is returned.
fn fan_out<'a>(
    channels: impl ExactSizeIterator<Item = &'a Arc<Channel>>,
    msgs: Vec<Message>,
    due: Option<Instant>,
) -> Result<Ticket, BrokerError> {
    let last = channels.len().saturating_sub(1);
    // Looked at once here rather than by every channel.
    let attrs = msgs.iter().any(|m| m.attributes().is_some());
    let mut msgs = Some(msgs);
    merge_puts(channels.enumerate().map(|(i, ch)| {
        let batch = if i == last {
            msgs.take().unwrap_or_default()
        } else {
            msgs.as_ref().cloned().unwrap_or_default()
        };
        match due {
            Some(at) => ch.put_deferred(batch, at),
            None => ch.put_marked(batch, attrs),
        }
    }))
}

/// One ticket for all the puts (each one is made), or the first error.
fn merge_puts(
    puts: impl Iterator<Item = Result<Ticket, BrokerError>>,
) -> Result<Ticket, BrokerError> {
    let mut ticket = Ticket::done();
    let mut first_err = None;
    for put in puts {
        match put {
            Ok(t) => ticket.merge(t),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(ticket),
    }
}

/// Make `ch` a receiver and hand it the backlog (unless the topic is paused or held), as nsqd
/// hands it to a new channel. A `replicated` topic's first receiver is the backlog's heir:
/// what is left of it on disk is read for that channel alone.
fn admit(st: &mut TopicState, name: &str, ch: &Arc<Channel>, replicated: bool) {
    let first = st.receivers.is_empty();
    if st
        .receivers
        .insert(name.to_string(), Arc::clone(ch))
        .is_some()
    {
        return;
    }
    if st.paused || st.held {
        return;
    }
    flush_backlog(st);
    if replicated && first && st.backlog.backend_depth() > 0 {
        st.heir = Some(name.to_string());
    }
}

/// Every channel made a receiver: a topic no longer replicated is served as nsqd's.
fn admit_all(st: &mut TopicState) {
    if st.receivers.len() == st.channels.len() {
        return;
    }
    let waiting: Vec<(String, Arc<Channel>)> = st
        .channels
        .iter()
        .filter(|(name, _)| !st.receivers.contains_key(*name))
        .map(|(name, ch)| (name.clone(), Arc::clone(ch)))
        .collect();
    for (name, ch) in waiting {
        admit(st, &name, &ch, false);
    }
}

/// Channel `name` no longer receives (deleted, or withdrawn).
fn withdraw(st: &mut TopicState, name: &str) {
    st.receivers.remove(name);
    if st.heir.as_deref() == Some(name) {
        st.heir = None;
    }
    if st.receivers.is_empty() {
        st.backlog.set_drain(false);
    }
}

/// Hand the backlog in memory to the receivers; the writer fans out the part on disk. Runs
/// stay runs (one reference per channel, as a publish fans out), so handing on a backlog of
/// millions costs one step per publish, not per message.
fn flush_backlog(st: &mut TopicState) {
    st.backlog.set_drain(true);
    let spans = st.backlog.drain_mem_spans();
    let deferred = std::mem::take(&mut st.deferred);
    let now = Instant::now();
    let mut failed: Option<BrokerError> = None;
    let mut note = |r: Result<Ticket, BrokerError>| {
        if let Err(e) = r {
            failed.get_or_insert(e);
        }
    };
    let mut ones = Vec::new();
    for s in spans {
        match s {
            Span::One(m) => ones.push(m),
            Span::Run(p, range) => {
                if !ones.is_empty() {
                    note(fan_out(
                        st.receivers.values(),
                        std::mem::take(&mut ones),
                        None,
                    ));
                }
                note(merge_puts(
                    st.receivers
                        .values()
                        .map(|ch| ch.put_run(&p, range.clone())),
                ));
            }
        }
    }
    let mut later = Vec::new();
    for (msg, at) in deferred {
        if at > now {
            later.push((msg, at));
        } else {
            ones.push(msg);
        }
    }
    if !ones.is_empty() {
        note(fan_out(st.receivers.values(), ones, None));
    }
    for (msg, at) in later {
        note(fan_out(st.receivers.values(), vec![msg], Some(at)));
    }
    if let Some(e) = failed {
        tracing::error!("backlog could not be handed to every channel - {e}");
    }
}

mod disk;
