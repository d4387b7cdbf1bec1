//! What the broker holds of a replicated topic, following the group's leadership
//! (`docs/replication.md`, "Taking over").
//!
//! The group's state (`nsqr_replication::TopicState`) is the one copy of the topic's channels
//! that every node keeps in step: every committed publish and channel operation applies to it,
//! on every node, and a snapshot carries all of it. The broker's copy is only the leader's:
//!
//! - Following, the broker holds no message of the topic: its channels are emptied, lookupd
//!   is told the topic is not served here, and committed entries go to the state alone, except
//!   that channels are created, deleted and paused as the leader's were (empty, so `/stats`
//!   on any node lists the same channels). So a follower's memory and disk grow with the
//!   unfinished messages only, and installing a snapshot or restarting needs nothing of the
//!   broker.
//! - Taking over, once every entry committed before the election is applied (the state is then
//!   complete), the broker's copy is rebuilt from the state at that index: the topic's and
//!   channels' settings and pauses, and every unfinished message of every channel, in publish
//!   order, at its due time. Entries after that index are this leader's own: its publishes are
//!   queued as they commit; its channel operations are already in its broker, except that a
//!   channel it made receives publishes only from its `Create`'s commit (`Topic::set_receiving`),
//!   where the state starts it: empty, or with the topic's backlog if it is the first.
//! - Losing the lead, the broker's copy is emptied again, so two nodes never deliver a
//!   channel's messages at once beyond the time the old leader takes to notice.
//!
//! Rebuilding from the state rather than counting what was queued makes a restart queue each
//! message once: the broker's copy is emptied first, whatever an earlier run left on its disk.
//! Until then the topic's channels deliver nothing (`ops.rs`), so what the broker kept from an
//! earlier run is never handed out.
//!
//! A channel a consumer (or `/channel/create`) makes on this node while it follows, or while it
//! takes over, is not in the state: the takeover keeps it and proposes its creation, as a
//! leader does for a channel made on it. Only channels the state had and dropped (a deletion
//! committed before this node mirrored it) are deleted; the follower remembers which channels
//! it had from the state (`Follower::known`) to tell the two apart. Such a channel starts as one
//! made on a leader does: receiving nothing until its `Create` commits, so of two made while
//! taking over a topic without channels, only the first gets the backlog, as in the state.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use nsqr_broker::{Broker, BrokerError, Channel, ReplicaMessage, ReplicaOp, Topic};
use nsqr_replication::{
    ChannelOp, Command, Committed, Message, ReplicatedLog, StoredMessage, TopicState,
};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::ops::Pass;

/// One channel of the state, as the broker gets it at a takeover.
struct ChannelCopy {
    paused: bool,
    settings_json: Option<String>,
    /// Unfinished messages in publish order, with their due times.
    messages: Vec<(ReplicaMessage, Option<u64>)>,
}

/// The whole state at `index`, as the broker gets it.
struct Copy {
    index: u64,
    paused: bool,
    settings_json: Option<String>,
    channels: BTreeMap<String, ChannelCopy>,
    /// Published while the topic had no channel.
    backlog: Vec<ReplicaMessage>,
}

/// Follows group `topic`: applies its committed entries to the broker while this node leads,
/// rebuilds the broker's copy when it takes over and empties it when it stops leading.
pub(super) async fn follow(
    topic: String,
    log: Arc<ReplicatedLog>,
    pass: Arc<Pass>,
    mut committed: mpsc::Receiver<Committed>,
    mut broker: watch::Receiver<Option<Broker>>,
) {
    let broker = match broker.wait_for(Option::is_some).await {
        Ok(b) => b.clone(),
        Err(_) => return,
    };
    let Some(broker) = broker else { return };
    let mut copy = Follower {
        topic,
        broker,
        pass,
        leading: None,
        local: None,
        known: BTreeSet::new(),
    };
    copy.step_down(&log).await;
    // What the broker has at start is from an earlier run: the state decides every channel.
    copy.known = copy.local_channels().await;
    copy.sync_channels(&log).await;
    let mut status = log.watch();
    loop {
        tokio::select! {
            entry = committed.recv() => match entry {
                Some(Committed::Restored { .. }) if copy.leading.is_none() => {
                    copy.sync_channels(&log).await;
                }
                Some(entry) => copy.apply(entry).await,
                None => return,
            },
            changed = status.changed() => {
                if !changed {
                    return;
                }
                // A lead lost and won again between two looks is a new term: the entries of
                // the leader in between are in the state, not in the broker's copy.
                let s = log.status();
                if copy.leading.is_some_and(|l| !s.is_leader || s.term != l.term) {
                    copy.step_down(&log).await;
                }
                if s.is_leader && s.applied_in_term && copy.leading.is_none() {
                    copy.take_over(&log, s.term).await;
                }
            }
        }
    }
}

/// This node's lead of the group.
#[derive(Clone, Copy)]
struct Lead {
    /// The index of the state the broker's copy was rebuilt from.
    since: u64,
    /// The term it leads in.
    term: u64,
}

struct Follower {
    topic: String,
    broker: Broker,
    pass: Arc<Pass>,
    /// Set while this node leads the group.
    leading: Option<Lead>,
    local: Option<Arc<Topic>>,
    /// While following: the channels the state had as far as this node followed it (any
    /// other channel of the broker's was made on this node).
    known: BTreeSet<String>,
}

impl Follower {
    /// The broker's topic, created if needed.
    async fn topic(&mut self) -> Result<Arc<Topic>, BrokerError> {
        if let Some(t) = self.local.as_ref().filter(|t| !t.is_deleted()) {
            return Ok(Arc::clone(t));
        }
        let b = self.broker.clone();
        let n = self.topic.clone();
        let t = tokio::task::spawn_blocking(move || b.get_or_create_topic(&n))
            .await
            .map_err(|_| BrokerError::Exiting)??;
        self.local = Some(Arc::clone(&t));
        Ok(t)
    }

    /// A committed entry: a publish of this leader's is queued; a follower's broker follows
    /// the channels' existence and pauses; anything else is in the state alone.
    async fn apply(&mut self, entry: Committed) {
        let Committed::Entry { index, command } = entry else {
            return;
        };
        let mine = self.leading.is_some_and(|lead| index > lead.since);
        match (&command, command.channel_ops()) {
            (Command::Publish(messages), _) if mine => self.queue(index, messages).await,
            (_, Some(ops)) if mine => self.admit(ops),
            (_, Some(ops)) if self.leading.is_none() => self.mirror(ops).await,
            _ => {}
        }
    }

    async fn queue(&mut self, index: u64, messages: &[Message]) {
        let batch: Vec<ReplicaMessage> = messages.iter().filter_map(from_log).collect();
        if batch.len() != messages.len() {
            tracing::error!(
                "cluster: topic {}: entry {index} has unreadable ids",
                self.topic
            );
        }
        let queued = match self.topic().await {
            Ok(t) => put(&t, &batch).await,
            Err(e) => Err(e),
        };
        if let Err(e) = queued {
            tracing::error!(
                "cluster: topic {}: entry {index} not queued: {e}",
                self.topic
            );
        }
    }

    /// This leader's channels whose creation committed receive publishes from now on, as
    /// they do in the state from this entry on.
    fn admit(&self, ops: &[ChannelOp]) {
        let Some(t) = self.local.as_ref() else { return };
        for op in ops {
            if let ChannelOp::Create { channel } = op {
                if self.pass.created(channel) {
                    t.set_receiving(channel, true);
                }
            }
        }
    }

    /// The leader's channels created, deleted or paused, on a follower's broker. A channel
    /// created here is emptied: its queue may open on files an earlier run left.
    async fn mirror(&mut self, ops: &[ChannelOp]) {
        for op in ops {
            let done = match op {
                ChannelOp::Create { channel } => {
                    self.known.insert(channel.clone());
                    self.broker
                        .open_channel(&self.topic, channel)
                        .await
                        .map(|ch| ch.empty())
                }
                ChannelOp::Delete { channel } => {
                    self.known.remove(channel);
                    self.broker.delete_channel(&self.topic, channel)
                }
                ChannelOp::Pause {
                    channel: Some(channel),
                    paused,
                } => {
                    if let Some(ch) = self.local.as_ref().and_then(|t| t.channel(channel)) {
                        ch.set_paused(*paused);
                    }
                    Ok(())
                }
                ChannelOp::Pause {
                    channel: None,
                    paused,
                } => self.topic().await.map(|t| t.set_paused(*paused)),
                _ => Ok(()),
            };
            if let Err(e) = done {
                tracing::warn!("cluster: topic {}: {op:?} not followed: {e}", self.topic);
            }
        }
    }

    /// A follower's channels made the state's (at start, after installing a snapshot):
    /// created, deleted and paused as there, empty. Channels made on this node stay.
    async fn sync_channels(&mut self, log: &ReplicatedLog) {
        let wanted: BTreeMap<String, bool> = log.state(|st| {
            st.channels
                .iter()
                .map(|(name, ch)| (name.clone(), ch.paused))
                .collect()
        });
        let mut ops = Vec::new();
        for local in self.local_channels().await {
            if self.known.contains(&local) && !wanted.contains_key(&local) {
                ops.push(ChannelOp::Delete { channel: local });
            }
        }
        for (channel, paused) in wanted {
            ops.push(ChannelOp::Create {
                channel: channel.clone(),
            });
            ops.push(ChannelOp::Pause {
                channel: Some(channel),
                paused,
            });
        }
        self.mirror(&ops).await;
        self.known = log.state(|st| st.channels.keys().cloned().collect());
    }

    /// The broker's channels of the topic.
    async fn local_channels(&mut self) -> BTreeSet<String> {
        match self.topic().await {
            Ok(t) => t.channel_names().into_iter().collect(),
            Err(_) => BTreeSet::new(),
        }
    }

    /// This node no longer leads (or starts): the broker's copy is emptied and not served.
    /// Its channels the state lacks (their creation not committed) count as made here.
    async fn step_down(&mut self, log: &ReplicatedLog) {
        self.pass.follow();
        self.leading = None;
        self.known = log.state(|st| st.channels.keys().cloned().collect());
        match self.topic().await {
            Ok(t) => {
                t.set_serving(false);
                empty(&t);
            }
            Err(e) => tracing::error!("cluster: topic {}: {e}", self.topic),
        }
    }

    /// This node leads and its state is complete: the broker's copy is rebuilt from it.
    async fn take_over(&mut self, log: &ReplicatedLog, term: u64) {
        let copy = log.state_at(copy_of);
        let t = match self.topic().await {
            Ok(t) => t,
            Err(e) => {
                tracing::error!("cluster: topic {}: cannot take over: {e}", self.topic);
                return;
            }
        };
        // Gathering starts before the copy is loaded, so a channel made meanwhile is proposed;
        // what loading itself reports matches the state (no-ops once applied).
        self.pass.lead(Some(Arc::clone(&t)));
        let made_here = self.drop_stale_channels(&t, &copy);
        for channel in &made_here {
            t.set_receiving(channel, false);
        }
        let counts = load(&self.broker, &t, &copy).await;
        for channel in &made_here {
            self.pass.push(Some(channel), ReplicaOp::Created);
        }
        self.leading = Some(Lead {
            since: copy.index,
            term,
        });
        t.set_serving(true);
        self.pass.serve();
        tracing::info!(
            "cluster: topic {}: leading from entry {}: {} channels, {} unfinished messages queued",
            self.topic,
            copy.index,
            copy.channels.len(),
            counts
        );
        if !made_here.is_empty() {
            tracing::info!(
                "cluster: topic {}: channels made here while taking over kept: {}",
                self.topic,
                made_here.into_iter().collect::<Vec<_>>().join(",")
            );
        }
    }

    /// Before loading `copy`: deletes the broker's channels the state had and dropped; returns
    /// those made on this node, which stay (their creation is proposed).
    fn drop_stale_channels(&self, topic: &Topic, copy: &Copy) -> BTreeSet<String> {
        let mut made_here = BTreeSet::new();
        for local in topic.channel_names() {
            if copy.channels.contains_key(&local) {
                continue;
            }
            if !self.known.contains(&local) {
                made_here.insert(local);
                continue;
            }
            if let Err(e) = self.broker.delete_channel(topic.name(), &local) {
                tracing::warn!(
                    "cluster: topic {}: channel {local} not deleted: {e}",
                    self.topic
                );
            }
        }
        made_here
    }
}

/// Drops every message of the broker's copy of a topic, its channels' and its backlog.
fn empty(topic: &Topic) {
    topic.empty();
    for ch in topic.channels() {
        ch.empty();
    }
}

/// The state as the broker needs it (called under the state machine's lock: copies only).
fn copy_of(state: &TopicState, index: Option<u64>) -> Copy {
    let channels = state
        .channels
        .iter()
        .map(|(name, ch)| {
            let messages = state
                .pending_messages(name)
                .unwrap_or_default()
                .into_iter()
                .filter_map(|(m, p)| Some((replica(m, p.deliver_at_ms)?, p.deliver_at_ms)))
                .collect();
            let copy = ChannelCopy {
                paused: ch.paused,
                settings_json: ch.settings_json.clone(),
                messages,
            };
            (name.clone(), copy)
        })
        .collect();
    Copy {
        index: index.unwrap_or(0),
        paused: state.paused,
        settings_json: state.settings_json.clone(),
        channels,
        backlog: state
            .backlog_messages()
            .into_iter()
            .filter_map(|(m, p)| replica(m, p.deliver_at_ms))
            .collect(),
    }
}

/// Rebuilds the broker's copy of `topic` from `copy` (every channel emptied, the state's
/// filled); returns how many messages it queued.
async fn load(broker: &Broker, topic: &Arc<Topic>, copy: &Copy) -> usize {
    empty(topic);
    let name = topic.name().to_string();
    if let Some(json) = &copy.settings_json {
        configure(&name, None, json, |v| topic.configure(v).map(drop));
    }
    let mut queued = 0;
    for (channel, c) in &copy.channels {
        let ch = match broker.open_channel(&name, channel).await {
            Ok(ch) => ch,
            Err(e) => {
                tracing::error!("cluster: topic {name}: channel {channel} not created: {e}");
                continue;
            }
        };
        if let Some(json) = &c.settings_json {
            configure(&name, Some(channel), json, |v| {
                topic.configure_channel(channel, v).map(drop)
            });
        }
        ch.set_paused(c.paused);
        topic.set_receiving(channel, true);
        queued += queue(&name, &ch, &c.messages);
    }
    topic.set_paused(copy.paused);
    if !copy.backlog.is_empty() {
        queued += copy.backlog.len();
        if let Err(e) = put(topic, &copy.backlog).await {
            tracing::error!("cluster: topic {name}: backlog not queued: {e}");
        }
    }
    queued
}

/// Applies replicated settings, logging (not failing on) settings this node refuses.
fn configure(
    topic: &str,
    channel: Option<&str>,
    json: &str,
    apply: impl FnOnce(&serde_json::Value) -> Result<(), BrokerError>,
) {
    let applied = serde_json::from_str(json)
        .map_err(|e| e.to_string())
        .and_then(|v| apply(&v).map_err(|e| e.to_string()));
    if let Err(e) = applied {
        tracing::warn!("cluster: topic {topic} channel {channel:?}: settings not applied: {e}");
    }
}

/// Queues a channel's unfinished messages in order: due ones now, the others at their time.
fn queue(topic: &str, ch: &Channel, messages: &[(ReplicaMessage, Option<u64>)]) -> usize {
    let mut queued = 0;
    let mut ready = Vec::new();
    for (m, due_ms) in messages {
        let Some(msg) = nsqr_broker::Message::new(m.id, m.timestamp_ns, 0, m.body.clone()) else {
            continue;
        };
        queued += 1;
        match due_ms.and_then(due) {
            Some(at) => {
                if let Err(e) = ch.put_deferred([msg], at) {
                    tracing::error!("cluster: topic {topic}: {e}");
                }
            }
            None => ready.push(msg),
        }
    }
    if let Err(e) = ch.put(ready) {
        tracing::error!("cluster: topic {topic} channel {}: {e}", ch.name());
    }
    queued
}

/// The deadline of a Unix-millisecond due time, if still in the future.
fn due(ms: u64) -> Option<Instant> {
    let now_ms = u64::try_from(nsqr_broker::now_unix_nanos() / 1_000_000).unwrap_or(0);
    let left = ms.checked_sub(now_ms).filter(|left| *left > 0)?;
    Some(Instant::now() + std::time::Duration::from_millis(left))
}

/// A message of the state as the broker queues it (None for an id that is not hex, which
/// no leader proposes).
fn replica(m: &StoredMessage, deliver_at_ms: Option<u64>) -> Option<ReplicaMessage> {
    Some(ReplicaMessage {
        id: nsqr_broker::MessageId::from_hex(&m.id.0)?,
        timestamp_ns: m.timestamp_ns,
        deliver_at_ms,
        body: m.body.clone(),
    })
}

fn from_log(m: &Message) -> Option<ReplicaMessage> {
    Some(ReplicaMessage {
        id: nsqr_broker::MessageId::from_hex(&m.id.0)?,
        timestamp_ns: m.timestamp_ns,
        deliver_at_ms: m.deliver_at_ms,
        body: m.body.clone(),
    })
}

/// Queues a committed batch in the broker's topic and waits until it is written.
async fn put(topic: &Topic, batch: &[ReplicaMessage]) -> Result<(), BrokerError> {
    let mut ticket = topic.put_committed(batch)?;
    ticket.ready().await;
    match ticket.try_result() {
        Some(Err(e)) => Err(BrokerError::Disk(e)),
        _ => Ok(()),
    }
}
