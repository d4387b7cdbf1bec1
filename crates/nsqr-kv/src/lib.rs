//! nsqr-kv: the keyspace engine of nsqr, with no sockets. String, list, hash, set and sorted set keys with millisecond TTLs
//! that expire when their time comes, `maxmemory` with Redis's eviction policies, keyspace
//! notifications and a pub/sub hub, snapshots, a group-committed append-only log for strict
//! durability, and a change feed of every change and expiry.
//!
//! nsqrd serves it over RESP (`crates/nsqrd/src/resp`); the change feed reaches NSQ through
//! the [`ChangeFeed`] trait the daemon implements, so this crate never depends on the broker.
//!
//! ```text
//! let ks = Keyspace::open(KvConfig::default(), None)?;
//! let mut pending = Pending::default();
//! ks.set(b"k", b"v", SetOptions::default(), None, &mut pending);
//! ks.durable(&mut pending).await?;          // strict mode: on disk before the reply
//! ks.get(b"k", |v| assert_eq!(v, Some(&b"v"[..])));
//! ks.close()?;                              // shutdown snapshot
//! ```

pub mod bitfield;
pub mod bits;
mod blocking;
mod clock;
mod collection;
pub mod config;
mod databases;
pub mod db;
mod double;
pub mod dump;
mod entry;
pub mod error;
mod evict;
mod expiry;
pub mod feed;
pub mod functions;
mod geo;
pub mod geohash;
pub mod glob;
mod hashes;
pub mod hll;
#[doc(hidden)]
pub mod hll_fuzz;
mod keys;
mod keyspace;
mod list_node;
mod lists;
mod log;
pub mod notify;
mod object;
mod pairs;
mod persist;
mod pf;
mod pqsort;
pub mod pubsub;
mod quicklist;
mod rdb_compact;
mod record;
mod rename;
mod revision;
mod sets;
mod shard;
mod snapshot;
mod sort;
mod stream;
mod stream_changes;
mod stream_group;
mod stream_group_ops;
mod stream_ops;
mod streams;
mod strings;
pub mod subscriber;
mod substrings;
#[cfg(test)]
mod test_support;
pub mod tracking;
mod turn;
mod typed;
mod warm;
mod watch;
mod zset;
mod zsets;

pub use blocking::Blocked;
pub use collection::{random_indices, scan_step, Collection, Hash, KeyType, List, Set, Value};
pub use config::{KvConfig, Policy, Settings};
pub use databases::DbStats;
pub use double::parse_double;
pub use error::KvError;
pub use feed::{Change, ChangeFeed, FeedConfig, FeedError, FeedWait, Op};
pub use geo::{geo_search, sort_points, GeoPoint, GeoSort};
pub use keys::{ExpireCondition, Ttl};
pub use keyspace::{Keyspace, KvStats, Pending};
pub use lists::Popped;
pub use notify::{BadEventClass, NotifyFlags};
pub use object::{string_encoding, KeyInfo};
pub use persist::PersistError;
pub use pf::{PfDebug, PfDebugReply};
pub use pubsub::{Hub, Kind};
pub use sets::SetOp;
pub use sort::SortSource;
pub use stream::NODE_ENTRIES as STREAM_NODE_ENTRIES;
pub use stream::{
    field_count, fields, pack_fields, Consumer, Group, Nack, Stream, StreamId, Trim, TrimSpec,
};
pub use stream_group_ops::{AutoClaim, Claim, ClaimOptions, Delivered};
pub use stream_ops::AddId;
pub use streams::{StreamError, StreamOutcome};
pub use strings::{format_float, parse_float, Condition, Expiry, OldValue, SetOptions};
pub use subscriber::{OutputLimit, Subscriber};
pub use turn::{ExclusiveTurn, SharedTurn};
pub use watch::Watch;
pub use zset::{
    format_score, index_ranks, parse_score, parse_score_bound, LexBound, Popped as ZPopped,
    ScoreBound, ZSet,
};
pub use zsets::{Aggregate, ZRangeSpec, ZaddOptions, ZaddReply};
