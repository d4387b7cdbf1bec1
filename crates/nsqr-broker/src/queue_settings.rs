//! Queue settings: per-topic and per-channel settings — how many deliveries a message gets
//! before it becomes a dead letter and where dead letters go, strict order, how long messages
//! live, the in-flight timeout and the memory queue's size.
//!
//! [`QueueSettings`] holds what was set on one topic or channel (every field optional); it is
//! the one serde type behind every place settings travel as JSON: the HTTP `/topic/config`
//! and `/channel/config` bodies, the `[topics.*]` tables of the config file, the `nsqr_config`
//! objects of `nsqd.dat` and `/stats`. Adding a setting is adding one entry to the table of
//! settings below (its doc comment, the `read` function holding its bounds, its type and its
//! default); the macro in `queue_settings/declare.rs` makes it a field of both structs and of
//! their resolution, and the list of known keys is read from serde. What it does is the
//! channel's business, which reads it as a field of [`EffectiveSettings`].
//!
//! A channel runs with its [`EffectiveSettings`]: its own, else its topic's (a topic's settings
//! are its channels' defaults), else the table's defaults. Changes are checked whole: one bad
//! value refuses the change and nothing is applied. With nothing set, nothing here touches the
//! path of a message.

use std::sync::OnceLock;
use std::time::Duration;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::broker_config::BrokerConfig;

#[macro_use]
mod declare;

/// The longest message time to live: a year.
pub const MAX_MESSAGE_TTL: Duration = Duration::from_secs(365 * 24 * 3600);
/// The largest memory queue a setting may ask for.
pub const MAX_MEM_QUEUE_SIZE: usize = i32::MAX as usize;

/// What happens to a message whose time to live passed before it was delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExpiredAction {
    /// It goes to the dead-letter topic (reason `expired`).
    #[default]
    DeadLetter,
    /// It is dropped (counted).
    Drop,
}

impl ExpiredAction {
    /// `dead_letter` or `drop`.
    pub fn as_str(self) -> &'static str {
        match self {
            ExpiredAction::DeadLetter => "dead_letter",
            ExpiredAction::Drop => "drop",
        }
    }
}

queue_settings! {
    defaults(topic, cfg);

    /// Deliveries before a message is dead-lettered (0: no limit).
    #[read = "read::max_attempts"]
    max_attempts: u16 = 0;
    /// Where dead letters go (default: [`default_dead_letter_topic`]); not the topic itself.
    #[read = "read::topic_name"]
    dead_letter_topic: String = default_dead_letter_topic(topic);
    /// Strict order (per ordering key).
    #[read = "read::flag"]
    ordered: bool = false;
    /// How long a message may wait to be delivered (zero: for ever), at most a year.
    #[read = "read::message_ttl", show = "go_duration"]
    message_ttl: Duration = Duration::ZERO;
    /// What happens to an expired message.
    #[read = "read::expired"]
    expired: ExpiredAction = ExpiredAction::default();
    /// The in-flight timeout of consumers that did not ask for their own, from 1ms to
    /// `--max-msg-timeout` (default: `--msg-timeout`).
    #[read = "read::msg_timeout", show = "go_duration"]
    msg_timeout: Duration = cfg.msg_timeout;
    /// Messages kept in memory before spilling to disk.
    #[read = "read::mem_queue_size"]
    mem_queue_size: usize = cfg.mem_queue_size;
    /// Nodes of the cluster that hold the topic's messages: 1 (this node: nsqd's behaviour),
    /// 3 or 5 (a replicated topic, `docs/replication.md`; needs a cluster that large).
    #[read = "read::replicas"]
    replicas: u8 = 1;
}

/// A refused setting: which key and why, for a 400 or a log line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueueSettingsError {
    /// Not an object.
    #[error("settings must be a JSON object")]
    NotAnObject,
    /// A key that is not a setting.
    #[error("unknown setting {0:?} (known: {known})", known = keys().join(", "))]
    UnknownKey(String),
    /// A value out of range or of the wrong type.
    #[error("{key}: {reason}")]
    BadValue {
        /// The setting.
        key: &'static str,
        /// What was wrong.
        reason: String,
    },
}

fn bad(key: &'static str, reason: impl Into<String>) -> QueueSettingsError {
    QueueSettingsError::BadValue {
        key,
        reason: reason.into(),
    }
}

/// The keys a settings object may have, in the order they are shown: the fields of
/// [`QueueSettings`] as serde names them.
pub fn keys() -> &'static [&'static str] {
    static KEYS: OnceLock<&'static [&'static str]> = OnceLock::new();
    KEYS.get_or_init(|| {
        let mut names = FieldNames(&[]);
        // The probe always "fails" once it has seen the field list.
        let _ = QueueSettings::deserialize(&mut names);
        names.0
    })
}

impl QueueSettings {
    /// True when nothing is set.
    pub fn is_empty(&self) -> bool {
        *self == QueueSettings::default()
    }

    /// Settings from a JSON object (every key checked as [`QueueSettings::patch`] does).
    pub fn from_json(v: &Value, limits: &Limits) -> Result<QueueSettings, QueueSettingsError> {
        QueueSettings::default().patch(v, limits)
    }

    /// These settings with the keys of `changes` applied: a value sets the key, `null` unsets
    /// it (back to the inherited value). All or nothing: the first bad key or value is an
    /// error.
    pub fn patch(
        &self,
        changes: &Value,
        limits: &Limits,
    ) -> Result<QueueSettings, QueueSettingsError> {
        let obj = changes.as_object().ok_or(QueueSettingsError::NotAnObject)?;
        let mut p = self.clone();
        for (k, v) in obj {
            p.set(k, v, limits)?;
        }
        Ok(p)
    }

    /// Read what can be read of a stored object (`nsqd.dat`), logging what cannot (a limit
    /// lowered since it was written, a hand edit).
    pub fn from_json_lenient(v: &Value, limits: &Limits, what: &str) -> QueueSettings {
        let mut p = QueueSettings::default();
        let Some(obj) = v.as_object() else {
            tracing::warn!("{what}: settings ignored - not a JSON object");
            return p;
        };
        for (k, v) in obj {
            if let Err(e) = p.set(k, v, limits) {
                tracing::warn!("{what}: setting ignored - {e}");
            }
        }
        p
    }

    fn set(&mut self, key: &str, v: &Value, limits: &Limits) -> Result<(), QueueSettingsError> {
        let Some(&key) = keys().iter().find(|k| **k == key) else {
            return Err(QueueSettingsError::UnknownKey(key.to_string()));
        };
        let mut all = self.as_map();
        if v.is_null() {
            all.remove(key);
        } else {
            let one: QueueSettings =
                serde_json::from_value(Value::Object(Map::from_iter([(key.into(), v.clone())])))
                    .map_err(|e| bad(key, e.to_string()))?;
            one.check(v, limits)?;
            all.extend(one.as_map());
        }
        *self = QueueSettings::from_map(all).map_err(|e| bad(key, e.to_string()))?;
        Ok(())
    }

    /// The checks that depend on the broker and the topic (a single-key `self`, from `v`).
    fn check(&self, v: &Value, limits: &Limits) -> Result<(), QueueSettingsError> {
        if let Some(name) = &self.dead_letter_topic {
            if limits.topic.as_deref() == Some(name.as_str()) {
                return Err(bad("dead_letter_topic", "must not be the topic itself"));
            }
        }
        if let Some(d) = self.msg_timeout {
            if d.is_zero() || d > limits.max_msg_timeout {
                return Err(bad(
                    "msg_timeout",
                    read::msg_timeout_range(limits.max_msg_timeout, v),
                ));
            }
        }
        if let Some(n) = self.replicas.filter(|n| *n > 1) {
            if limits.cluster_size == 0 {
                return Err(bad(
                    "replicas",
                    "a replicated topic needs a cluster (--cluster-node-id, --cluster-address, --cluster-peers, --cluster-secret-file)",
                ));
            }
            if usize::from(n) > limits.cluster_size {
                return Err(bad(
                    "replicas",
                    format!(
                        "{n} replicas need a cluster of at least {n} nodes (--cluster-peers names {})",
                        limits.cluster_size
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The keys that are set, as a JSON object (as `nsqd.dat` keeps them).
    pub fn to_json(&self) -> Value {
        Value::Object(self.as_map())
    }

    fn as_map(&self) -> Map<String, Value> {
        match serde_json::to_value(self) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        }
    }

    fn from_map(m: Map<String, Value>) -> Result<QueueSettings, serde_json::Error> {
        serde_json::from_value(Value::Object(m))
    }

    /// Each key set here, else `parent`'s.
    pub fn or(&self, parent: &QueueSettings) -> QueueSettings {
        let mut all = parent.as_map();
        all.extend(self.as_map());
        // Both sides were read by the same rules, so their union reads back.
        QueueSettings::from_map(all).unwrap_or_else(|_| self.clone())
    }
}

/// What a setting is checked against.
#[derive(Debug, Clone)]
pub struct Limits {
    /// `--max-msg-timeout`.
    pub max_msg_timeout: Duration,
    /// The topic the settings are for (a dead-letter topic may not be it).
    pub topic: Option<String>,
    /// Nodes in the cluster (`replicas` may not be more); 0 without a cluster.
    pub cluster_size: usize,
}

impl Limits {
    /// The limits of a broker, for settings of `topic`.
    pub fn of(cfg: &BrokerConfig, topic: &str) -> Limits {
        Limits {
            max_msg_timeout: cfg.max_msg_timeout,
            topic: Some(topic.to_string()),
            cluster_size: cfg.replication.as_ref().map_or(0, |r| r.0.cluster_size()),
        }
    }
}

fn go_duration<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_str(&nsq_common::duration::format(*d)),
        None => s.serialize_none(),
    }
}

/// How each setting is read, with the reason a bad value is refused.
mod read {
    use super::*;

    fn read<'de, D: Deserializer<'de>, T>(
        d: D,
        f: impl FnOnce(&Value) -> Option<T>,
        expected: impl FnOnce(&Value) -> String,
    ) -> Result<Option<T>, D::Error> {
        let v = Value::deserialize(d)?;
        match f(&v) {
            Some(x) => Ok(Some(x)),
            None => Err(de::Error::custom(expected(&v))),
        }
    }

    pub fn max_attempts<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u16>, D::Error> {
        read(
            d,
            |v| v.as_u64().and_then(|n| u16::try_from(n).ok()),
            |v| format!("expected an integer from 0 (no limit) to 65535, got {v}"),
        )
    }

    pub fn topic_name<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        read(
            d,
            |v| {
                v.as_str()
                    .filter(|s| nsq_wire::names::is_valid_name(s.as_bytes()))
                    .map(str::to_string)
            },
            |v| format!("expected a valid topic name, got {v}"),
        )
    }

    pub fn flag<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
        read(d, Value::as_bool, |v| {
            format!("expected true or false, got {v}")
        })
    }

    pub fn expired<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ExpiredAction>, D::Error> {
        read(
            d,
            |v| match v.as_str() {
                Some("dead_letter") => Some(ExpiredAction::DeadLetter),
                Some("drop") => Some(ExpiredAction::Drop),
                _ => None,
            },
            |v| format!("expected \"dead_letter\" or \"drop\", got {v}"),
        )
    }

    pub fn replicas<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u8>, D::Error> {
        read(
            d,
            |v| match v.as_u64() {
                Some(n @ (1 | 3 | 5)) => Some(n as u8),
                _ => None,
            },
            |v| format!("expected 1, 3 or 5, got {v}"),
        )
    }

    pub fn mem_queue_size<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
        read(
            d,
            |v| {
                v.as_u64()
                    .and_then(|n| usize::try_from(n).ok())
                    .filter(|n| *n <= MAX_MEM_QUEUE_SIZE)
            },
            |v| format!("expected an integer from 0 to {MAX_MEM_QUEUE_SIZE}, got {v}"),
        )
    }

    /// A duration as Go text (`"90s"`, `"1h"`) or integer milliseconds.
    fn duration(v: &Value) -> Result<Duration, String> {
        let parsed = match v {
            Value::String(s) => nsq_common::duration::parse(s).ok(),
            Value::Number(n) => n.as_u64().map(Duration::from_millis),
            _ => None,
        };
        parsed.ok_or_else(|| {
            format!("expected a duration (\"90s\", \"1h\") or integer milliseconds, got {v}")
        })
    }

    fn checked_duration<'de, D: Deserializer<'de>>(
        d: D,
        check: impl FnOnce(Duration, &Value) -> Result<(), String>,
    ) -> Result<Option<Duration>, D::Error> {
        let v = Value::deserialize(d)?;
        let d = duration(&v).map_err(de::Error::custom)?;
        check(d, &v).map_err(de::Error::custom)?;
        Ok(Some(d))
    }

    pub fn message_ttl<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        checked_duration(d, |d, v| {
            if d > MAX_MESSAGE_TTL {
                Err(format!("at most 8760h (a year), got {v}"))
            } else {
                Ok(())
            }
        })
    }

    /// Its range names `--max-msg-timeout`, so `QueueSettings::check` checks it.
    pub fn msg_timeout<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        checked_duration(d, |_, _| Ok(()))
    }

    pub fn msg_timeout_range(max: Duration, v: &Value) -> String {
        format!(
            "expected a duration from 1ms to --max-msg-timeout ({}), got {v}",
            nsq_common::duration::format(max)
        )
    }
}

/// A deserializer that only records the field names of the struct asked of it (the probe
/// behind [`keys`]).
struct FieldNames(&'static [&'static str]);

impl<'de> Deserializer<'de> for &mut FieldNames {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("only field names are probed"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Self::Error> {
        self.0 = fields;
        Err(de::Error::custom("only field names are probed"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// The dead-letter topic of `topic` when none is set: `<topic>.dead` (`<name>.dead#ephemeral`
/// for an ephemeral topic), the name cut so the whole stays within 64 characters.
pub fn default_dead_letter_topic(topic: &str) -> String {
    const SUFFIX: &str = ".dead";
    const EPH: &str = "#ephemeral";
    let (base, eph) = match topic.strip_suffix(EPH) {
        Some(b) => (b, EPH),
        None => (topic, ""),
    };
    let room = 64 - SUFFIX.len() - eph.len();
    // Names are ASCII, so any byte index is a character boundary.
    let base = &base[..base.len().min(room)];
    format!("{base}{SUFFIX}{eph}")
}

impl EffectiveSettings {
    /// True when a message's path must look at it: a delivery limit, a time to live, order.
    pub fn checks_messages(&self) -> bool {
        self.max_attempts > 0 || !self.message_ttl.is_zero() || self.ordered
    }
}

#[cfg(test)]
mod tests;
