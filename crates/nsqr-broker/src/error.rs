//! Engine errors; their `Display` is the text nsqd puts after `FIN <id> failed ` and similar.

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BrokerError {
    #[error("ID not in flight")]
    NotInFlight,
    #[error("client does not own message")]
    NotOwner,
    #[error("exiting")]
    Exiting,
    #[error("consumers for {topic}:{channel} exceeds limit of {limit}")]
    TooManyConsumers {
        topic: String,
        channel: String,
        limit: usize,
    },
    #[error("topic not found")]
    TopicNotFound,
    #[error("channel not found")]
    ChannelNotFound,
    /// The message could not be stored on disk (`--max-disk-bytes`, a failed write).
    #[error("{0}")]
    Disk(#[from] crate::durability::DiskError),
}
