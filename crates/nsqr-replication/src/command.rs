//! What one log entry of a topic group carries: a whole batch (a publish batch, or the channel
//! operations of one pass), never one message, so the cost of consensus is paid per batch.
//!
//! These are serde types: the log store and the transport encode them with postcard (a publish
//! batch's messages as one byte string, `batch.rs`), and the broker that proposes them decodes
//! nothing itself.

use std::sync::Arc;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::types::NodeId;

/// NSQ's 16-byte message id, as the broker assigned it on the leader.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct MessageId(pub [u8; 16]);

/// One published message, as the leader's broker accepted it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub id: MessageId,
    /// Nanoseconds since the Unix epoch, the message's NSQ timestamp.
    pub timestamp_ns: i64,
    /// Milliseconds since the Unix epoch before which it is not delivered (DPUB), if deferred.
    /// An absolute time, so a node taking over keeps the due time.
    pub deliver_at_ms: Option<u64>,
    pub body: Bytes,
}

/// A change to a channel (or, where the channel is `None`, to the topic).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ChannelOp {
    Create {
        channel: String,
    },
    Delete {
        channel: String,
    },
    /// Pause or unpause a channel, or the topic when `channel` is `None`.
    Pause {
        channel: Option<String>,
        paused: bool,
    },
    /// A channel's (or the topic's) queue settings, as the broker's JSON text: this crate
    /// stores and replicates them, the broker checks and applies them.
    Configure {
        channel: Option<String>,
        settings_json: String,
    },
    /// Messages finished (FIN, or a sample-rate discard) on a channel.
    Finish {
        channel: String,
        ids: Vec<MessageId>,
    },
    /// Messages requeued (REQ, a timeout) with the absolute time they are due again.
    Requeue {
        channel: String,
        requeued: Vec<(MessageId, u64)>,
    },
    /// Messages a channel moved to its dead-letter topic: gone from the channel. The dead-letter
    /// topic's publish is a proposal of its own group, committed before this one.
    DeadLetter {
        channel: String,
        ids: Vec<MessageId>,
    },
}

/// Which pass of channel operations an entry carries. A leader proposes its passes one at a
/// time, and proposes a pass again under the same identity when its proposal goes unanswered;
/// the state applies a pass once (`state.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PassId {
    /// The node that proposed it.
    pub node: NodeId,
    /// Drawn at random when the node started gathering passes for the group: a restarted
    /// node, which may lead again in the same term, never repeats an earlier run's identity.
    pub run: u64,
    /// The pass's number in that run.
    pub seq: u64,
}

/// The payload of one normal log entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Command {
    /// A publish batch: a PUB, an MPUB, or a group-commit pass of many publishers. Shared, so
    /// the copies openraft takes of an entry (one per follower, one to apply) share it; encoded
    /// as one byte string (`batch.rs`).
    Publish(#[serde(with = "crate::batch")] Arc<[Message]>),
    /// Channel operations in the order they happened, without a pass identity: applied each
    /// time they are committed. What a log written before passes had identities holds.
    Channels(Vec<ChannelOp>),
    /// The channel operations collected during one pass, in the order they happened: applied
    /// once however many times the pass is committed. (After `Channels`: an entry's variant is
    /// its index in the encoding, so logs written before keep their meaning.)
    Pass { id: PassId, ops: Vec<ChannelOp> },
}

impl Command {
    /// How many messages or operations the entry carries.
    pub fn len(&self) -> usize {
        match self {
            Command::Publish(messages) => messages.len(),
            Command::Channels(ops) | Command::Pass { ops, .. } => ops.len(),
        }
    }

    /// The channel operations the entry carries, if it is a pass of them.
    pub fn channel_ops(&self) -> Option<&[ChannelOp]> {
        match self {
            Command::Publish(_) => None,
            Command::Channels(ops) | Command::Pass { ops, .. } => Some(ops),
        }
    }

    /// True for an entry that carries nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What applying an entry answers to its proposer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    /// The log index of the entry.
    pub index: u64,
}
