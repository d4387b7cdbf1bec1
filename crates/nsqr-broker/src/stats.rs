//! Snapshots of the engine's counters, taken on demand: counters are atomics or live under the
//! locks they describe, and nothing samples in the background. How they are shown (nsqd's
//! `/stats` JSON and text, statsd, Prometheus) is the daemon's business, not the engine's; the
//! nsqr-only parts with no nsqd shape to follow ([`DiskStats`], [`DeadLetterStats`]) serialize
//! as they are.

use std::sync::Arc;

use crate::consumer::{Consumer, ConsumerKind};
use crate::queue_settings::QueueSettings;

/// One topic and its channels.
#[derive(Debug, Clone)]
pub struct TopicStats {
    /// The topic's name.
    pub topic_name: String,
    /// Its channels (only the one asked for, when filtered), in name order.
    pub channels: Vec<ChannelStats>,
    /// Its counters.
    pub counts: TopicCounts,
    /// Paused.
    pub paused: bool,
    /// End-to-end latency merged over its channels.
    pub e2e_processing_latency: E2eLatency,
    /// Disk queue anomalies, when there were any.
    pub disk_queue: Option<DiskStats>,
    /// Its settings, when any are set.
    pub settings: Option<QueueSettings>,
}

/// One channel.
#[derive(Debug, Clone)]
pub struct ChannelStats {
    /// The channel's name.
    pub channel_name: String,
    /// Its counters.
    pub counts: ChannelCounts,
    /// Consumers joined.
    pub consumer_count: usize,
    /// Each consumer, when asked for.
    pub consumers: Option<Vec<ConsumerStats>>,
    /// Paused.
    pub paused: bool,
    /// End-to-end latency of finished messages.
    pub e2e_processing_latency: E2eLatency,
    /// Disk queue anomalies, when there were any.
    pub disk_queue: Option<DiskStats>,
    /// Its own settings, when any are set.
    pub settings: Option<QueueSettings>,
    /// Dead letters, when it has settings that make them or has made some.
    pub dead_letters: Option<DeadLetterStats>,
}

/// A topic's counters, in the order nsqd's `/stats` shows them (the daemon's JSON flattens
/// this struct into its own).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct TopicCounts {
    /// Messages waiting in the topic itself (no channel yet, paused, held), memory and disk,
    /// deferred ones included.
    pub depth: i64,
    /// The part of `depth` on disk.
    pub backend_depth: i64,
    /// Messages published to it.
    pub message_count: u64,
    /// Bytes of message bodies published to it.
    pub message_bytes: u64,
}

/// A channel's counters, in the order nsqd's `/stats` shows them.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ChannelCounts {
    /// Messages ready to be delivered, memory and disk.
    pub depth: i64,
    /// The part of `depth` on disk.
    pub backend_depth: i64,
    /// Messages in flight.
    pub in_flight_count: usize,
    /// Messages waiting for their delay.
    pub deferred_count: usize,
    /// Messages that reached the channel.
    pub message_count: u64,
    /// Requeues.
    pub requeue_count: u64,
    /// In-flight timeouts.
    pub timeout_count: u64,
}

/// What a channel sent to its dead-letter topic, by reason, and the expired messages it
/// dropped.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct DeadLetterStats {
    /// Where they go.
    pub topic: String,
    /// Delivered `max_attempts` times.
    pub delivery_limit: u64,
    /// Given up on by a consumer.
    pub rejected: u64,
    /// Expired before delivery.
    pub expired: u64,
    /// Expired and dropped (`"expired": "drop"`).
    pub expired_dropped: u64,
}

impl DeadLetterStats {
    /// Dead letters sent, every reason.
    pub fn total(&self) -> u64 {
        self.delivery_limit + self.rejected + self.expired
    }
}

/// One consumer of a channel.
#[derive(Debug, Clone)]
pub struct ConsumerStats {
    /// Unique within the broker.
    pub id: u64,
    /// Its ready count (RDY).
    pub ready_count: i64,
    /// Messages it holds in flight.
    pub in_flight_count: i64,
    /// Messages delivered to it.
    pub message_count: u64,
    /// Messages it finished.
    pub finish_count: u64,
    /// Messages it requeued.
    pub requeue_count: u64,
    consumer: Arc<Consumer>,
}

impl ConsumerStats {
    pub(crate) fn of(c: &Arc<Consumer>) -> ConsumerStats {
        ConsumerStats {
            id: c.id(),
            ready_count: c.ready_count(),
            in_flight_count: c.in_flight(),
            message_count: c.message_count(),
            finish_count: c.finish_count(),
            requeue_count: c.requeue_count(),
            consumer: Arc::clone(c),
        }
    }

    /// How it reaches the broker.
    pub fn kind(&self) -> ConsumerKind {
        self.consumer.kind()
    }

    /// The peer's address.
    pub fn remote_address(&self) -> &str {
        self.consumer.remote_address()
    }

    /// Unix seconds when it was created.
    pub fn connect_ts(&self) -> i64 {
        self.consumer.connect_ts()
    }

    /// The facts its driver attached ([`ConsumerInfo::details`](crate::ConsumerInfo::details)).
    pub fn details<T: std::any::Any + Send + Sync>(&self) -> Option<&T> {
        self.consumer.details::<T>()
    }
}

/// What the disk queue of a topic or channel met since it was opened: recovery after a crash,
/// corruption, failed writes. Reported only when something is non-zero, so a healthy node's
/// stats are nsqd's. Serialized, the attribute count and the descriptions appear only when set.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct DiskStats {
    /// Data files found corrupt (invalid length, short record) and set aside as `.bad`.
    pub corrupt_files: u64,
    /// Data files the reader expected but did not find.
    pub missing_files: u64,
    /// Records written after the last metadata sync, found intact on open and kept.
    pub recovered_records: u64,
    /// Torn tails (a write cut by a crash) cut off the last data file on open.
    pub torn_tails_truncated: u64,
    /// Times lost or broken metadata was rebuilt from the data files.
    pub metadata_rebuilds: u64,
    /// Records that were not valid messages (bad id) and were skipped.
    pub undecodable_records: u64,
    /// Failed disk writes.
    pub write_errors: u64,
    /// Messages written to disk without their attributes (more than `MAX_SIDE_ATTRS` with
    /// attributes were on disk).
    #[serde(skip_serializing_if = "is_zero")]
    pub attributes_dropped: u64,
    /// The last corruption met, described.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_corruption: Option<String>,
    /// The last failed write, described.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_write_error: Option<String>,
    /// The last failed read, described.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_read_error: Option<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl DiskStats {
    /// True when anything is worth reporting.
    pub fn is_notable(&self) -> bool {
        *self != DiskStats::default()
    }
}

/// nsqd's end-to-end latency result; `percentiles` is None when none are configured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct E2eLatency {
    /// Samples in the window.
    pub count: u64,
    /// The configured quantiles and their values (nanoseconds).
    pub percentiles: Option<Vec<Percentile>>,
}

/// One quantile and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Percentile {
    /// The quantile, e.g. 0.99.
    pub quantile: f64,
    /// Its value in nanoseconds.
    pub value: f64,
}

/// Every topic (or the one asked for), from [`Broker::snapshot`](crate::Broker::snapshot).
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// None when a topic filter named a topic that does not exist.
    pub topics: Option<Vec<TopicStats>>,
}
