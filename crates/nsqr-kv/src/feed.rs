//! The change feed: every change and expiry of a key, as a small self-describing body handed
//! to a [`ChangeFeed`] the daemon installs (nsqrd publishes it to an NSQ topic). The keyspace
//! only knows this trait; it never depends on the broker ("the keyspace publishes through a
//! broker handle, never the other way round").
//!
//! # Body format
//!
//! One JSON object per change, for example
//!
//! ```text
//! {"rev":4294967297,"op":"set","key":"user:1","time":1764000000123,"value":"alice","expires_at":1764000060123}
//! ```
//!
//! - `rev`: the change's revision, a number that only grows, across restarts too (see
//!   `revision.rs`); per key, a later change always has a larger revision, so a consumer drops
//!   an event whose `rev` is not above the last one it applied for that key (redeliveries and
//!   reordering across NSQ connections are harmless). Revisions stay below 2^53, exact in
//!   every JSON parser.
//! - `op`: `set`, `incrby`, `append` (the key's value changed), `expire`, `persist` (its
//!   deadline changed), `del`, `expired`, `evicted` (it is gone), `flush` (every key is gone;
//!   no `key`), and for lists, hashes, sets, sorted sets and streams the command's Redis event
//!   (`lpush`, `hset`, `sadd`, `srem`, `zadd`, `zincr`, `zpopmin`, `zunionstore`, `xadd`,
//!   `xgroup-create`, ...: the full list is in `docs/keyspace.md`).
//! - `key`: the key as a JSON string when it is UTF-8; otherwise `key_base64` (standard
//!   alphabet, padded) instead.
//! - `time`: when the change happened, Unix milliseconds.
//! - `value` (or `value_base64`): the value after the change, only for changes that leave a
//!   string (`set`, `incrby`, `append`, ...), and only when the feed is configured to include
//!   values. Changes to lists, hashes, sets, sorted sets and streams carry no value: a consumer
//!   reads the key when it
//!   needs it.
//! - `expires_at`: the key's deadline (Unix ms) after the change, when it has one.
//!
//! JSON rather than a compact binary layout: NSQ consumers in any language read it without a
//! schema or a library of ours, `nsq_tail` shows it as text, and at ~100 bytes it is small next
//! to what a message costs in NSQ anyway.

use std::future::Future;
use std::pin::Pin;

use base64::Engine;

/// What happened to a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Set,
    Incrby,
    IncrbyFloat,
    Append,
    SetRange,
    SetBit,
    /// RENAME's source (the key is gone).
    RenameFrom,
    /// RENAME's destination (the value and deadline the source had).
    RenameTo,
    /// COPY's destination.
    CopyTo,
    /// MOVE's and SWAPDB's source (the key is gone from its database).
    MoveFrom,
    /// MOVE's and SWAPDB's destination (the value and deadline the source had).
    MoveTo,
    /// RESTORE's key.
    Restore,
    Expire,
    Persist,
    Del,
    Expired,
    Evicted,
    Flush,
    /// LPUSH, LPUSHX, and the push half of LMOVE / RPOPLPUSH.
    Lpush,
    Rpush,
    Lpop,
    Rpop,
    Lset,
    Linsert,
    Lrem,
    Ltrim,
    /// HSET, HSETNX, HMSET.
    Hset,
    Hdel,
    Hincrby,
    Hincrbyfloat,
    Sadd,
    Srem,
    Spop,
    Sinterstore,
    Sunionstore,
    Sdiffstore,
    Xadd,
    Xtrim,
    Xdel,
    XgroupCreate,
    XgroupCreateconsumer,
    XgroupDelconsumer,
    XgroupDestroy,
    XgroupSetid,
    Xsetid,
    /// PFADD and PFMERGE (Redis names both `pfadd`).
    Pfadd,
    /// ZADD (without INCR).
    Zadd,
    /// ZINCRBY, ZADD INCR.
    Zincr,
    Zrem,
    Zrembyscore,
    Zrembyrank,
    Zrembylex,
    Zpopmin,
    Zpopmax,
    Zunionstore,
    Zinterstore,
    Zdiffstore,
    Zrangestore,
    /// GEORADIUS / GEORADIUSBYMEMBER ... STORE / STOREDIST.
    Georadiusstore,
    Geosearchstore,
    /// SORT ... STORE's destination (a list).
    Sortstore,
}

impl Op {
    pub fn name(self) -> &'static str {
        match self {
            Op::Set => "set",
            Op::Incrby => "incrby",
            Op::IncrbyFloat => "incrbyfloat",
            Op::Append => "append",
            Op::SetRange => "setrange",
            Op::SetBit => "setbit",
            Op::RenameFrom => "rename_from",
            Op::RenameTo => "rename_to",
            Op::CopyTo => "copy_to",
            Op::MoveFrom => "move_from",
            Op::MoveTo => "move_to",
            Op::Restore => "restore",
            Op::Expire => "expire",
            Op::Persist => "persist",
            Op::Del => "del",
            Op::Expired => "expired",
            Op::Evicted => "evicted",
            Op::Flush => "flush",
            Op::Lpush => "lpush",
            Op::Rpush => "rpush",
            Op::Lpop => "lpop",
            Op::Rpop => "rpop",
            Op::Lset => "lset",
            Op::Linsert => "linsert",
            Op::Lrem => "lrem",
            Op::Ltrim => "ltrim",
            Op::Hset => "hset",
            Op::Hdel => "hdel",
            Op::Hincrby => "hincrby",
            Op::Hincrbyfloat => "hincrbyfloat",
            Op::Sadd => "sadd",
            Op::Srem => "srem",
            Op::Spop => "spop",
            Op::Sinterstore => "sinterstore",
            Op::Sunionstore => "sunionstore",
            Op::Sdiffstore => "sdiffstore",
            Op::Xadd => "xadd",
            Op::Xtrim => "xtrim",
            Op::Xdel => "xdel",
            Op::XgroupCreate => "xgroup-create",
            Op::XgroupCreateconsumer => "xgroup-createconsumer",
            Op::XgroupDelconsumer => "xgroup-delconsumer",
            Op::XgroupDestroy => "xgroup-destroy",
            Op::XgroupSetid => "xgroup-setid",
            Op::Xsetid => "xsetid",
            Op::Pfadd => "pfadd",
            Op::Zadd => "zadd",
            Op::Zincr => "zincr",
            Op::Zrem => "zrem",
            Op::Zrembyscore => "zrembyscore",
            Op::Zrembyrank => "zrembyrank",
            Op::Zrembylex => "zrembylex",
            Op::Zpopmin => "zpopmin",
            Op::Zpopmax => "zpopmax",
            Op::Zunionstore => "zunionstore",
            Op::Zinterstore => "zinterstore",
            Op::Zdiffstore => "zdiffstore",
            Op::Zrangestore => "zrangestore",
            Op::Georadiusstore => "georadiusstore",
            Op::Geosearchstore => "geosearchstore",
            Op::Sortstore => "sortstore",
        }
    }

    /// Whether the change gives the key a new string value (RENAME, COPY and RESTORE may
    /// also carry a collection: the change then has no `value`).
    pub fn has_value(self) -> bool {
        matches!(
            self,
            Op::Set
                | Op::Incrby
                | Op::IncrbyFloat
                | Op::Append
                | Op::SetRange
                | Op::SetBit
                | Op::Pfadd
                | Op::RenameTo
                | Op::CopyTo
                | Op::MoveTo
                | Op::Restore
        )
    }

    /// Whether the key is gone after the change.
    pub fn removes(self) -> bool {
        matches!(
            self,
            Op::Del | Op::Expired | Op::Evicted | Op::RenameFrom | Op::MoveFrom
        )
    }
}

/// One change, as the keyspace describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Change<'a> {
    pub op: Op,
    /// The key's database (`db.rs`); the body names it only when it is not 0.
    pub db: u8,
    /// Empty for `Flush`.
    pub key: &'a [u8],
    /// The value after the change (for ops that set one).
    pub value: Option<&'a [u8]>,
    /// The key's deadline after the change.
    pub deadline: Option<u64>,
    pub rev: u64,
    /// Unix milliseconds.
    pub time_ms: u64,
}

/// Which changes go to the feed, and what they carry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FeedConfig {
    /// Only keys starting with one of these (all keys if empty). `flush` always goes.
    pub prefixes: Vec<Vec<u8>>,
    /// Whether bodies carry the value.
    pub include_value: bool,
}

impl FeedConfig {
    pub fn wants(&self, op: Op, key: &[u8]) -> bool {
        op == Op::Flush
            || self.prefixes.is_empty()
            || self.prefixes.iter().any(|p| key.starts_with(p))
    }
}

/// Why a change could not be handed to the feed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FeedError(pub String);

/// Resolves when a published change is durable (strict mode).
pub type FeedWait = Pin<Box<dyn Future<Output = Result<(), FeedError>> + Send>>;

/// Where the change feed goes. `publish` is called under the key's shard lock, in revision
/// order for each key: it must not block or call back into the keyspace. It returns `None`
/// when nothing needs waiting for, or a future that resolves once the change is durable; in
/// strict mode the client's reply waits for it.
pub trait ChangeFeed: Send + Sync + 'static {
    fn publish(&self, body: Vec<u8>) -> Result<Option<FeedWait>, FeedError>;
}

fn json_bytes(out: &mut Vec<u8>, name: &str, data: &[u8]) {
    match std::str::from_utf8(data) {
        Ok(s) => {
            out.extend_from_slice(b",\"");
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b"\":");
            // Writing a &str into a Vec cannot fail.
            let _ = serde_json::to_writer(&mut *out, s);
        }
        Err(_) => {
            out.extend_from_slice(b",\"");
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b"_base64\":\"");
            out.extend_from_slice(
                base64::engine::general_purpose::STANDARD
                    .encode(data)
                    .as_bytes(),
            );
            out.push(b'"');
        }
    }
}

fn json_number(out: &mut Vec<u8>, name: &str, n: u64) {
    out.extend_from_slice(b",\"");
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\":");
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

impl Change<'_> {
    /// The body published for this change (see the module docs).
    pub fn to_json(&self, include_value: bool) -> Vec<u8> {
        let mut out = Vec::with_capacity(96 + self.key.len());
        out.extend_from_slice(b"{\"rev\":");
        out.extend_from_slice(itoa::Buffer::new().format(self.rev).as_bytes());
        out.extend_from_slice(b",\"op\":\"");
        out.extend_from_slice(self.op.name().as_bytes());
        out.push(b'"');
        if self.op != Op::Flush {
            json_bytes(&mut out, "key", self.key);
        }
        if self.db != 0 {
            json_number(&mut out, "db", u64::from(self.db));
        }
        json_number(&mut out, "time", self.time_ms);
        if let (true, Some(v)) = (include_value, self.value) {
            json_bytes(&mut out, "value", v);
        }
        if let Some(d) = self.deadline {
            json_number(&mut out, "expires_at", d);
        }
        out.push(b'}');
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(op: Op, key: &'static [u8], value: Option<&'static [u8]>) -> Change<'static> {
        Change {
            op,
            db: 0,
            key,
            value,
            deadline: None,
            rev: 7,
            time_ms: 1_764_000_000_123,
        }
    }

    fn json(c: &Change, v: bool) -> serde_json::Value {
        serde_json::from_slice(&c.to_json(v)).unwrap()
    }

    #[test]
    fn bodies_are_json_with_the_documented_fields() {
        let mut c = change(Op::Set, b"user:1", Some(b"al\"ice"));
        c.deadline = Some(1_764_000_060_123);
        assert_eq!(
            String::from_utf8(c.to_json(true)).unwrap(),
            r#"{"rev":7,"op":"set","key":"user:1","time":1764000000123,"value":"al\"ice","expires_at":1764000060123}"#
        );
        assert_eq!(json(&c, false).get("value"), None);
        let f = json(&change(Op::Flush, b"", None), true);
        assert_eq!((f["op"].as_str(), f.get("key")), (Some("flush"), None));
    }

    #[test]
    fn binary_keys_and_values_are_base64() {
        let c = change(Op::Set, b"\xff\x00", Some(b"\xfe"));
        let j = json(&c, true);
        assert_eq!(j["key_base64"], "/wA=");
        assert_eq!(j["value_base64"], "/g==");
        assert_eq!(j.get("key"), None);
    }

    #[test]
    fn prefixes_filter_keys_but_not_flush() {
        let cfg = FeedConfig {
            prefixes: vec![b"user:".to_vec(), b"session:".to_vec()],
            include_value: false,
        };
        assert!(cfg.wants(Op::Set, b"user:1") && cfg.wants(Op::Del, b"session:x"));
        assert!(!cfg.wants(Op::Set, b"cache:1"));
        assert!(cfg.wants(Op::Flush, b""));
        assert!(FeedConfig::default().wants(Op::Expired, b"anything"));
    }
}
