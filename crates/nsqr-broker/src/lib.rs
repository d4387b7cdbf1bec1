//! nsqr-broker: the message engine behind nsqrd, with no sockets.
//!
//! A publish is a chain of plain calls: `Broker::topic` -> `Topic::put` -> `Channel::put` for
//! each channel (one lock per channel per batch) -> wake the consumers that are waiting. A
//! consumer's connection pulls with `Channel::deliver`. Time-based work (in-flight timeouts,
//! deferred messages) is driven by one timer task per channel that sleeps until the next
//! deadline. Keeping this free of IO lets the daemon, tests and in-process users share it.

mod ack_window;
pub mod block_deque;
pub mod channel;
mod chunk_pool;
pub mod client;
mod codec;
pub mod config;
mod deferred_store;
mod disk_writer;
pub mod durability;
pub mod e2e;
pub mod error;
pub mod events;
pub mod health;
pub mod inflight;
mod link;
pub mod message;
pub mod metadata;
pub mod registry;
mod run_queue;
pub mod spill_queue;
pub mod stats;
pub mod topic;

pub use channel::Channel;
pub use client::{Client, ClientMeta, ClientState};
pub use config::BrokerConfig;
pub use durability::{DiskError, Durability, Ticket};
pub use error::BrokerError;
pub use events::{Event, EventSink, TopicStart};
pub use message::{Message, Published};
pub use registry::Broker;
pub use topic::Topic;

/// The nsqd version nsqrd reports on the wire, in /info, /stats and nsqd.dat: clients and
/// tools (nsqadmin, go-nsq) gate features on it, so it names the protocol level implemented.
pub const NSQD_COMPAT_VERSION: &str = "1.3.0";

/// Unix time in nanoseconds (message timestamps, ids).
pub fn now_unix_nanos() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}
