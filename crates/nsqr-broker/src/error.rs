//! The engine's errors. `BrokerError`'s `Display` is the text nsqd puts after `FIN <id> failed `
//! and similar, so a protocol server can pass it on unchanged.

use crate::metadata::MetadataError;

/// Why an operation on topics, channels or messages failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BrokerError {
    /// FIN / REQ / TOUCH of a message that is not in flight (finished, timed out, unknown).
    #[error("ID not in flight")]
    NotInFlight,
    /// FIN / REQ / TOUCH of a message another consumer holds.
    #[error("client does not own message")]
    NotOwner,
    /// An answer by receipt to an earlier delivery of a message that was delivered again
    /// since (its in-flight timeout passed, or it was requeued).
    #[error("stale receipt: the message was delivered again since")]
    Redelivered,
    /// Settings that cannot be applied (`/topic/config`, `/channel/config`).
    #[error("{0}")]
    QueueSettings(#[from] crate::queue_settings::QueueSettingsError),
    /// The broker is shutting down, or the topic or channel was deleted meanwhile.
    #[error("exiting")]
    Exiting,
    /// `--max-channel-consumers` reached.
    #[error("consumers for {topic}:{channel} exceeds limit of {limit}")]
    TooManyConsumers {
        /// The topic.
        topic: String,
        /// The channel.
        channel: String,
        /// The limit.
        limit: usize,
    },
    /// No topic of that name.
    #[error("topic not found")]
    TopicNotFound,
    /// No channel of that name.
    #[error("channel not found")]
    ChannelNotFound,
    /// Not a valid topic or channel name (1-64 of `[.a-zA-Z0-9_-]`, optional `#ephemeral`).
    #[error("invalid name {0:?}")]
    InvalidName(String),
    /// A message body that is empty or larger than `max_msg_size`.
    #[error("invalid message body size {size}")]
    InvalidBodySize {
        /// The body's size in bytes.
        size: usize,
    },
    /// A publish to a replicated topic on a node that does not lead it.
    #[error("not the leader of replicated topic {topic} (leader: {leader})")]
    NotLeader {
        /// The topic.
        topic: String,
        /// The leader as far as this node knows (`node 2 at 10.0.0.2:4250`), or `unknown`.
        leader: String,
    },
    /// A publish option the replicated log does not carry (a time to live, an ordering key),
    /// refused on a replicated topic rather than dropped.
    #[error("replicated topic {topic} does not take {option} yet")]
    NotReplicable {
        /// The topic.
        topic: String,
        /// The option (`ttl or ordering_key`).
        option: &'static str,
    },
    /// The message could not be stored on disk (`--max-disk-bytes`, a failed write).
    #[error("{0}")]
    Disk(#[from] crate::durability::DiskError),
}

/// Why [`Broker::start`](crate::Broker::start) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// `nsqd.dat` could not be read, parsed or written.
    #[error(transparent)]
    Metadata(#[from] MetadataError),
    /// The blocking task that loads the data directory did not finish (it panicked or the
    /// runtime is shutting down).
    #[error("loading the data directory failed - {0}")]
    Load(#[from] tokio::task::JoinError),
}
