//! nsqr-broker: the message engine behind nsqrd, with no sockets, embeddable in any tokio
//! program.
//!
//! A [`Broker`] holds topics; every channel of a topic gets every message published to it, and
//! the consumers of one channel share its messages. Messages are delivered at least once:
//! each is in flight with a timeout until its consumer finishes it (FIN), requeues it (REQ)
//! or the timeout gives it to another consumer. This is NSQ's model; nsqrd serves it over
//! NSQ's TCP protocol and HTTP API, and a program can use it directly:
//!
//! ```
//! use std::time::Duration;
//! use nsqr_broker::{Broker, BrokerConfig, SubscribeOptions};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let broker = Broker::start(BrokerConfig::default()).await?;
//! let mut orders = broker
//!     .subscribe("orders", "billing", SubscribeOptions::default().max_in_flight(10))
//!     .await?;
//! let publisher = broker.publisher("orders")?;
//! publisher.publish("order 1")?.wait().await?;
//!
//! let delivery = orders.next().await.expect("a message");
//! assert_eq!(delivery.body().as_ref(), b"order 1");
//! assert_eq!(delivery.attempts(), 1);
//! delivery.fin()?;
//!
//! // A requeued message comes back with its attempt counted.
//! publisher.publish("order 2")?;
//! orders.next().await.expect("a message").req(Duration::ZERO)?;
//! assert_eq!(orders.next().await.expect("again").attempts(), 2);
//! broker.shutdown().await?;
//! # Ok(())
//! # }
//! ```
//!
//! Inside, a publish is a chain of plain calls (`Topic::put` -> `Channel::put` for each
//! channel, one lock per channel per batch -> wake the consumers that are waiting); a
//! consumer takes messages with [`Channel::deliver`]. TCP connections, HTTP consumers and
//! in-process [`Subscription`]s are the same kind of [`Consumer`]. With a data path, queues
//! spill to disk past `mem_queue_size` in nsqd's data-directory format and survive a
//! restart; with [`Durability::Strict`] a publish is acknowledged only once it is fsynced.
//! Topic and channel lifecycle events reach every [`EventListener`] joined with
//! [`Broker::listen`]. See `docs/library.md` in the repository for a tour.

#![warn(missing_docs)]

mod ack_window;
pub mod attrs;
mod attrs_store;
mod block_deque;
mod broker;
mod broker_config;
mod channel;
mod chunk_pool;
mod codec;
mod consumer;
mod dead_letter;
mod deferred_store;
mod disk_link;
mod disk_writer;
mod durability;
mod e2e;
mod error;
mod events;
mod head_store;
mod health;
mod inflight;
mod message;
mod metadata;
mod ordered;
mod publisher;
pub mod queue_settings;
mod registry;
mod replication;
mod run_queue;
mod side_file;
mod spill_queue;
pub mod stats;
mod subscription;
mod timers;
mod topic;

pub use attrs::{Attributes, DeadLetterInfo, DeadLetterReason};
pub use broker::Broker;
pub use broker_config::{defaults, BrokerConfig, DiskFaults};
pub use channel::{Channel, Settle};
pub use consumer::{Consumer, ConsumerInfo, ConsumerKind};
pub use durability::{DiskError, Durability, Ticket};
pub use error::{BrokerError, StartError};
pub use events::{Event, EventListener, Listening, TopicHold};
pub use health::Health;
pub use message::Message;
pub use metadata::MetadataError;
pub use nsq_wire::MessageId;
pub use publisher::Publisher;
pub use queue_settings::{EffectiveSettings, ExpiredAction, QueueSettings, QueueSettingsError};
pub use replication::{Commitment, ReplicaMessage, ReplicaOp, Replicate, Replication};
pub use subscription::{Delivery, SubscribeOptions, Subscription};
pub use topic::{PutOptions, Topic};

/// The nsqd version nsqrd reports on the wire, in /info, /stats and nsqd.dat: clients and
/// tools (nsqadmin, go-nsq) gate features on it, so it names the protocol level implemented.
pub const NSQD_COMPAT_VERSION: &str = nsq_wire::NSQD_VERSION;

/// Unix time in nanoseconds (message timestamps, ids).
pub fn now_unix_nanos() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}
