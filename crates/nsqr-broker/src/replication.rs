//! The engine's side of replicated topics (`docs/replication.md`). The replicated log and its
//! sockets belong to the daemon, never to the engine: a topic whose `replicas` setting is
//! above 1 assigns ids to a publish as usual, then hands the batch to the [`Replicate`] hook
//! the daemon installed ([`crate::BrokerConfig::replication`]) instead of queueing it, and
//! answers with the hook's [`Ticket`], which completes once a majority of the topic's nodes
//! has the batch. On the leader the daemon then gives each committed batch back to
//! [`crate::Topic::put_committed`], which queues it with the ids the leader assigned (a node
//! taking over queues the unfinished messages of its copy of the replicated state likewise).
//!
//! Channel state follows the same way: each change the broker makes to a replicated topic's
//! channels (created, deleted, paused, configured, a message finished, requeued with a delay
//! or dead-lettered) is reported to the hook as a [`ReplicaOp`] as it happens, under the
//! channel's lock, for the daemon to propose in batches. The daemon decides whether this node
//! leads the topic; the engine reports on every node.

use std::fmt;
use std::sync::Arc;

use bytes::Bytes;
use nsq_wire::Bodies;
use tokio::time::Instant;

use crate::channel::{instant_of, unix_due};
use crate::durability::{promise, DiskError, Promise, Ticket};
use crate::error::BrokerError;
use crate::message::Published;

/// One published message as the leader stamped it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaMessage {
    /// NSQ's message id.
    pub id: nsq_wire::MessageId,
    /// Nanoseconds since the Unix epoch.
    pub timestamp_ns: i64,
    /// Milliseconds since the Unix epoch before which it is not delivered (DPUB).
    pub deliver_at_ms: Option<u64>,
    /// The message's body.
    pub body: Bytes,
}

/// A change to a replicated topic's channel (or, where the channel is None, to the topic).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplicaOp {
    /// The channel was created.
    Created,
    /// The channel was deleted.
    Deleted,
    /// Paused (true) or unpaused.
    Paused(bool),
    /// The settings became these (`QueueSettings::to_json`, as text).
    Configured(String),
    /// The channel is done with the message (FIN, a sample-rate skip, an expiry dropped).
    Finished(nsq_wire::MessageId),
    /// The message is due again at this time (milliseconds since the Unix epoch).
    Requeued(nsq_wire::MessageId, u64),
    /// The message left the channel for its dead-letter topic.
    DeadLettered(nsq_wire::MessageId),
}

/// What the daemon provides for replicated topics. Its methods are called with a topic's lock
/// held or on a publisher's path: they must not block or call back into the broker.
pub trait Replicate: Send + Sync {
    /// How many nodes the cluster has (`replicas` may not ask for more).
    fn cluster_size(&self) -> usize;

    /// `topic`'s `replicas` setting became `replicas` (above 1): its replicated log should be
    /// served on this node.
    fn topic_replicated(&self, topic: &str, replicas: u8);

    /// Propose a publish batch of `topic`. The ticket completes once the batch is committed;
    /// an error when this node cannot propose it (not the topic's leader).
    fn publish(&self, topic: &str, batch: Vec<ReplicaMessage>) -> Result<Ticket, BrokerError>;

    /// A change to a channel of `topic` (the topic itself when `channel` is None), in the
    /// order the broker made them. Called under the channel's or the topic's lock.
    fn channel_op(&self, topic: &str, channel: Option<&str>, op: ReplicaOp);

    /// False while this node may not deliver `topic`'s messages: it does not serve the topic
    /// (it does not lead it, or its copy of the replicated state is not loaded yet), or the
    /// channel operations waiting to be proposed are at their cap, which bounds what a lost
    /// leader takes with it. Its channels deliver nothing until the daemon wakes their
    /// consumers ([`crate::Channel::wake_consumers`]). Called under a channel's lock.
    fn may_deliver(&self, topic: &str) -> bool;
}

/// Milliseconds since the Unix epoch of a deadline.
pub(crate) fn unix_ms(at: Instant) -> u64 {
    u64::try_from(unix_due(at) / 1_000_000).unwrap_or(0)
}

/// The installed [`Replicate`] hook.
#[derive(Clone)]
pub struct Replication(pub Arc<dyn Replicate>);

impl fmt::Debug for Replication {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Replication")
            .field("cluster_size", &self.0.cluster_size())
            .finish()
    }
}

/// The completing side of a replicated publish's [`Ticket`].
#[derive(Debug)]
pub struct Commitment(Promise);

impl Commitment {
    /// A ticket pending until [`Commitment::committed`] or [`Commitment::failed`].
    pub fn pending() -> (Commitment, Ticket) {
        let (tx, rx) = promise();
        (Commitment(tx), Ticket::waiting(rx))
    }

    /// The batch is committed: the publish is acknowledged.
    pub fn committed(self) {
        let _ = self.0.send(Ok(()));
    }

    /// The batch was not committed: the publisher gets `reason` after `PUB failed `.
    pub fn failed(self, reason: String) {
        let _ = self.0.send(Err(DiskError::Replication(reason)));
    }

    /// No leader took the batch in time: the publisher gets `reason` after `PUB failed ` (HTTP:
    /// 503 `NOT_LEADER`), as when a node refuses a publish it cannot propose.
    pub fn not_leader(self, reason: String) {
        let _ = self.0.send(Err(DiskError::NotLeader(reason)));
    }
}

/// The messages of stamped publishes, as the replicated log carries them.
pub(crate) fn batch(published: &[Published], due: Option<Instant>) -> Vec<ReplicaMessage> {
    let deliver_at_ms = due.map(unix_ms);
    published
        .iter()
        .flat_map(|p| p.messages(0, p.len()))
        .map(|m| ReplicaMessage {
            id: m.id,
            timestamp_ns: m.timestamp(),
            deliver_at_ms,
            body: m.body_bytes(),
        })
        .collect()
}

/// A deadline for a committed message's due time, if it is still in the future.
pub(crate) fn due(deliver_at_ms: Option<u64>) -> Option<Instant> {
    let due_ns = i64::try_from(deliver_at_ms?.saturating_mul(1_000_000)).unwrap_or(i64::MAX);
    instant_of(due_ns, crate::now_unix_nanos(), Instant::now())
}

/// Consecutive messages of a committed batch that can be queued as one publish: ids that
/// follow each other, one timestamp, one due time.
pub(crate) struct Run {
    pub(crate) published: Published,
    pub(crate) deliver_at_ms: Option<u64>,
    pub(crate) len: usize,
    pub(crate) bytes: usize,
}

/// The runs of a committed batch, in order.
pub(crate) fn runs(batch: &[ReplicaMessage]) -> Vec<Run> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=batch.len() {
        let joins = batch.get(i).is_some_and(|m| {
            let prev = &batch[i - 1];
            m.id == prev.id.nth_after(1)
                && m.timestamp_ns == prev.timestamp_ns
                && m.deliver_at_ms == prev.deliver_at_ms
        });
        if joins {
            continue;
        }
        let run = &batch[start..i];
        if let Some(first) = run.first() {
            if let Ok(bodies) = Bodies::concat(run.iter().map(|m| &m.body[..])) {
                out.push(Run {
                    published: Published::new(&bodies, first.timestamp_ns, first.id),
                    deliver_at_ms: first.deliver_at_ms,
                    len: run.len(),
                    bytes: bodies.total_bytes(),
                });
            }
        }
        start = i;
    }
    out
}
