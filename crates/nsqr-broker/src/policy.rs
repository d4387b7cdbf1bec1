//! Per-topic and per-channel settings: how many deliveries a message gets before it becomes a
//! dead letter and where dead letters go, strict order, how long messages live, the in-flight
//! timeout and the memory queue's size.
//!
//! A [`Policy`] holds what was set on one topic or channel (every field optional). A channel
//! runs with its [`Effective`] settings: its own, else its topic's (a topic's settings are its
//! channels' defaults), else the broker's. Settings arrive as JSON objects (the HTTP
//! `/topic/config` and `/channel/config` bodies, the config file, `nsqd.dat`) and are checked
//! whole: one bad value refuses the change and nothing is applied. With nothing set, nothing
//! here touches the path of a message.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::broker_config::BrokerConfig;

/// The longest message time to live: a year.
pub const MAX_MESSAGE_TTL: Duration = Duration::from_secs(365 * 24 * 3600);
/// The largest memory queue a setting may ask for.
pub const MAX_MEM_QUEUE_SIZE: usize = i32::MAX as usize;

/// What happens to a message whose time to live passed before it was delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
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

/// Settings of one topic or channel; `None` is "not set here".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// Deliveries before a message is dead-lettered (0: no limit).
    pub max_attempts: Option<u16>,
    /// Where dead letters go (default: [`default_dead_letter_topic`]).
    pub dead_letter_topic: Option<String>,
    /// Strict order (per ordering key).
    pub ordered: Option<bool>,
    /// How long a message may wait to be delivered (zero: for ever).
    pub message_ttl: Option<Duration>,
    /// What happens to an expired message.
    pub expired: Option<ExpiredAction>,
    /// The in-flight timeout of consumers that did not ask for their own.
    pub msg_timeout: Option<Duration>,
    /// Messages kept in memory before spilling to disk.
    pub mem_queue_size: Option<usize>,
}

/// The keys a settings object may have, in the order they are shown.
pub const KEYS: [&str; 7] = [
    "max_attempts",
    "dead_letter_topic",
    "ordered",
    "message_ttl",
    "expired",
    "msg_timeout",
    "mem_queue_size",
];

/// A refused setting: which key and why, for a 400 or a log line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// Not an object.
    #[error("settings must be a JSON object")]
    NotAnObject,
    /// A key that is not a setting.
    #[error("unknown setting {0:?} (known: {known})", known = KEYS.join(", "))]
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

fn bad(key: &'static str, reason: impl Into<String>) -> PolicyError {
    PolicyError::BadValue {
        key,
        reason: reason.into(),
    }
}

impl Policy {
    /// True when nothing is set.
    pub fn is_empty(&self) -> bool {
        *self == Policy::default()
    }

    /// Settings from a JSON object (every key checked as [`Policy::patch`] does).
    pub fn from_json(v: &Value, limits: &Limits) -> Result<Policy, PolicyError> {
        Policy::default().patch(v, limits)
    }

    /// This policy with the keys of `changes` applied: a value sets the key, `null` unsets it
    /// (back to the inherited value). All or nothing: the first bad key or value is an error.
    pub fn patch(&self, changes: &Value, limits: &Limits) -> Result<Policy, PolicyError> {
        let obj = changes.as_object().ok_or(PolicyError::NotAnObject)?;
        let mut p = self.clone();
        for (k, v) in obj {
            p.set(k, v, limits)?;
        }
        Ok(p)
    }

    /// Read what can be read of a stored object (`nsqd.dat`), logging what cannot (a limit
    /// lowered since it was written, a hand edit).
    pub fn from_json_lenient(v: &Value, limits: &Limits, what: &str) -> Policy {
        let mut p = Policy::default();
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

    fn set(&mut self, key: &str, v: &Value, limits: &Limits) -> Result<(), PolicyError> {
        let Some(&key) = KEYS.iter().find(|k| **k == key) else {
            return Err(PolicyError::UnknownKey(key.to_string()));
        };
        let null = v.is_null();
        match key {
            "max_attempts" => {
                self.max_attempts = if null {
                    None
                } else {
                    Some(
                        v.as_u64()
                            .and_then(|n| u16::try_from(n).ok())
                            .ok_or_else(|| {
                                bad(
                                    key,
                                    format!(
                                        "expected an integer from 0 (no limit) to 65535, got {v}"
                                    ),
                                )
                            })?,
                    )
                }
            }
            "dead_letter_topic" => {
                self.dead_letter_topic = if null {
                    None
                } else {
                    let name = v
                        .as_str()
                        .filter(|s| nsq_wire::names::is_valid_name(s.as_bytes()))
                        .ok_or_else(|| bad(key, format!("expected a valid topic name, got {v}")))?;
                    if limits.topic.as_deref() == Some(name) {
                        return Err(bad(key, "must not be the topic itself"));
                    }
                    Some(name.to_string())
                }
            }
            "ordered" => {
                self.ordered = if null {
                    None
                } else {
                    Some(
                        v.as_bool()
                            .ok_or_else(|| bad(key, format!("expected true or false, got {v}")))?,
                    )
                }
            }
            "message_ttl" => {
                self.message_ttl = if null {
                    None
                } else {
                    let d = duration(key, v)?;
                    if d > MAX_MESSAGE_TTL {
                        return Err(bad(key, format!("at most 8760h (a year), got {v}")));
                    }
                    Some(d)
                }
            }
            "expired" => {
                self.expired = if null {
                    None
                } else {
                    Some(match v.as_str() {
                        Some("dead_letter") => ExpiredAction::DeadLetter,
                        Some("drop") => ExpiredAction::Drop,
                        _ => {
                            return Err(bad(
                                key,
                                format!("expected \"dead_letter\" or \"drop\", got {v}"),
                            ))
                        }
                    })
                }
            }
            "msg_timeout" => {
                self.msg_timeout = if null {
                    None
                } else {
                    let d = duration(key, v)?;
                    if d.is_zero() || d > limits.max_msg_timeout {
                        return Err(bad(
                            key,
                            format!(
                                "expected a duration from 1ms to --max-msg-timeout ({}), got {v}",
                                nsq_common::duration::format(limits.max_msg_timeout)
                            ),
                        ));
                    }
                    Some(d)
                }
            }
            "mem_queue_size" => {
                self.mem_queue_size = if null {
                    None
                } else {
                    Some(
                        v.as_u64()
                            .and_then(|n| usize::try_from(n).ok())
                            .filter(|n| *n <= MAX_MEM_QUEUE_SIZE)
                            .ok_or_else(|| {
                                bad(
                                    key,
                                    format!("expected an integer from 0 to {MAX_MEM_QUEUE_SIZE}, got {v}"),
                                )
                            })?,
                    )
                }
            }
            other => return Err(PolicyError::UnknownKey(other.to_string())),
        }
        Ok(())
    }

    /// The keys that are set, as JSON (durations as Go text), in [`KEYS`] order.
    pub fn to_json(&self) -> Settings {
        let dur = |d: Duration| Value::from(nsq_common::duration::format(d));
        let entries = [
            self.max_attempts.map(Value::from),
            self.dead_letter_topic.clone().map(Value::from),
            self.ordered.map(Value::from),
            self.message_ttl.map(dur),
            self.expired.map(|v| Value::from(v.as_str())),
            self.msg_timeout.map(dur),
            self.mem_queue_size.map(Value::from),
        ];
        Settings(
            KEYS.iter()
                .zip(entries)
                .filter_map(|(k, v)| Some((*k, v?)))
                .collect(),
        )
    }

    /// Each key set here, else `parent`'s.
    pub fn or(&self, parent: &Policy) -> Policy {
        Policy {
            max_attempts: self.max_attempts.or(parent.max_attempts),
            dead_letter_topic: self
                .dead_letter_topic
                .clone()
                .or_else(|| parent.dead_letter_topic.clone()),
            ordered: self.ordered.or(parent.ordered),
            message_ttl: self.message_ttl.or(parent.message_ttl),
            expired: self.expired.or(parent.expired),
            msg_timeout: self.msg_timeout.or(parent.msg_timeout),
            mem_queue_size: self.mem_queue_size.or(parent.mem_queue_size),
        }
    }
}

/// What a setting is checked against.
#[derive(Debug, Clone)]
pub struct Limits {
    /// `--max-msg-timeout`.
    pub max_msg_timeout: Duration,
    /// The topic the settings are for (a dead-letter topic may not be it).
    pub topic: Option<String>,
}

impl Limits {
    /// The limits of a broker, for settings of `topic`.
    pub fn of(cfg: &BrokerConfig, topic: &str) -> Limits {
        Limits {
            max_msg_timeout: cfg.max_msg_timeout,
            topic: Some(topic.to_string()),
        }
    }
}

/// A duration as Go text (`"90s"`, `"1h"`) or integer milliseconds (as the config file
/// takes them).
fn duration(key: &'static str, v: &Value) -> Result<Duration, PolicyError> {
    let wrong = || {
        bad(
            key,
            format!("expected a duration (\"90s\", \"1h\") or integer milliseconds, got {v}"),
        )
    };
    match v {
        Value::String(s) => nsq_common::duration::parse(s).map_err(|_| wrong()),
        Value::Number(n) => n.as_u64().map(Duration::from_millis).ok_or_else(wrong),
        _ => Err(wrong()),
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

/// The settings a channel runs with (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effective {
    /// 0: no limit.
    pub max_attempts: u16,
    /// Where its dead letters go.
    pub dead_letter_topic: String,
    /// Strict order (per ordering key).
    pub ordered: bool,
    /// None: messages live until delivered (unless published with a TTL).
    pub message_ttl: Option<Duration>,
    /// What happens to an expired message.
    pub expired: ExpiredAction,
    /// For consumers that did not ask for their own timeout (None: the broker's default).
    pub msg_timeout: Option<Duration>,
    /// The memory queue's bound.
    pub mem_queue_size: usize,
}

impl Effective {
    /// `own`, else `topic_policy`, else the broker's defaults, for a channel of `topic`.
    pub fn resolve(
        topic: &str,
        own: &Policy,
        topic_policy: &Policy,
        cfg: &BrokerConfig,
    ) -> Effective {
        let p = own.or(topic_policy);
        Effective {
            max_attempts: p.max_attempts.unwrap_or(0),
            dead_letter_topic: p
                .dead_letter_topic
                .unwrap_or_else(|| default_dead_letter_topic(topic)),
            ordered: p.ordered.unwrap_or(false),
            message_ttl: p.message_ttl.filter(|d| !d.is_zero()),
            expired: p.expired.unwrap_or_default(),
            msg_timeout: p.msg_timeout,
            mem_queue_size: p.mem_queue_size.unwrap_or(cfg.mem_queue_size),
        }
    }

    /// True when a message's path must look at it: a delivery limit, a time to live, order.
    pub fn checks_messages(&self) -> bool {
        self.max_attempts > 0 || self.message_ttl.is_some() || self.ordered
    }

    /// Every setting with its value, in [`KEYS`] order (the answer to `GET /channel/config`);
    /// `default_timeout` is the broker's `--msg-timeout`.
    pub fn to_json(&self, default_timeout: Duration) -> Settings {
        let dur = |d: Duration| Value::from(nsq_common::duration::format(d));
        let values = [
            Value::from(self.max_attempts),
            Value::from(self.dead_letter_topic.clone()),
            Value::from(self.ordered),
            dur(self.message_ttl.unwrap_or_default()),
            Value::from(self.expired.as_str()),
            dur(self.msg_timeout.unwrap_or(default_timeout)),
            Value::from(self.mem_queue_size),
        ];
        Settings(KEYS.iter().copied().zip(values).collect())
    }
}

/// Settings as a JSON object whose keys keep [`KEYS`] order when serialized (a
/// `serde_json::Map` would sort them).
#[derive(Debug, Clone, PartialEq)]
pub struct Settings(pub Vec<(&'static str, Value)>);

impl Settings {
    /// True when no key is present.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// As a `serde_json::Value` (key order not kept).
    pub fn into_value(self) -> Value {
        Value::Object(
            self.0
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect::<Map<String, Value>>(),
        )
    }
}

impl serde::Serialize for Settings {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn limits() -> Limits {
        Limits {
            max_msg_timeout: Duration::from_secs(900),
            topic: Some("t".into()),
        }
    }

    #[test]
    fn patch_sets_unsets_and_round_trips() {
        let p = Policy::from_json(
            &json!({"max_attempts": 5, "dead_letter_topic": "t.dlq", "ordered": true,
                    "message_ttl": "1h", "expired": "drop", "msg_timeout": 1500,
                    "mem_queue_size": 0}),
            &limits(),
        )
        .expect("valid");
        assert_eq!(p.max_attempts, Some(5));
        assert_eq!(p.message_ttl, Some(Duration::from_secs(3600)));
        assert_eq!(p.msg_timeout, Some(Duration::from_millis(1500)));
        assert_eq!(p.mem_queue_size, Some(0));
        let j = p.to_json().into_value();
        assert_eq!(
            j,
            json!({"max_attempts": 5, "dead_letter_topic": "t.dlq", "ordered": true,
                   "message_ttl": "1h0m0s", "expired": "drop", "msg_timeout": "1.5s",
                   "mem_queue_size": 0})
        );
        assert_eq!(Policy::from_json(&j, &limits()).expect("again"), p);
        let q = p
            .patch(&json!({"ordered": null, "max_attempts": 2}), &limits())
            .expect("patch");
        assert_eq!((q.ordered, q.max_attempts), (None, Some(2)));
        assert!(Policy::from_json(&json!({}), &limits())
            .expect("empty")
            .is_empty());
    }

    #[test]
    fn bad_values_change_nothing() {
        let p = Policy {
            max_attempts: Some(3),
            ..Policy::default()
        };
        for bad in [
            json!({"max_attempts": -1}),
            json!({"max_attempts": 65536}),
            json!({"max_attempts": "5"}),
            json!({"max_attempts": 1.5}),
            json!({"dead_letter_topic": "no spaces"}),
            json!({"dead_letter_topic": "t"}),
            json!({"dead_letter_topic": 5}),
            json!({"ordered": "yes"}),
            json!({"message_ttl": "-1s"}),
            json!({"message_ttl": "soon"}),
            json!({"message_ttl": "8761h"}),
            json!({"expired": "keep"}),
            json!({"msg_timeout": "0s"}),
            json!({"msg_timeout": "16m"}),
            json!({"mem_queue_size": -5}),
            json!({"mem_queue_size": 1e12}),
            json!({"bogus": 1}),
            json!({"max_attempts": 4, "bogus": 1}),
            json!([1]),
            json!("x"),
        ] {
            assert!(p.patch(&bad, &limits()).is_err(), "{bad}");
        }
        let e = p
            .patch(&json!({"max_attempts": "x"}), &limits())
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "max_attempts: expected an integer from 0 (no limit) to 65535, got \"x\""
        );
    }

    #[test]
    fn effective_settings_inherit() {
        let cfg = BrokerConfig::default();
        let topic = Policy {
            max_attempts: Some(5),
            message_ttl: Some(Duration::from_secs(60)),
            ..Policy::default()
        };
        let own = Policy {
            max_attempts: Some(2),
            ..Policy::default()
        };
        let e = Effective::resolve("orders", &own, &topic, &cfg);
        assert_eq!(e.max_attempts, 2);
        assert_eq!(e.message_ttl, Some(Duration::from_secs(60)));
        assert_eq!(e.dead_letter_topic, "orders.dead");
        assert_eq!(e.mem_queue_size, cfg.mem_queue_size);
        assert!(e.checks_messages());
        let plain = Effective::resolve("t", &Policy::default(), &Policy::default(), &cfg);
        assert!(!plain.checks_messages());
        assert_eq!(
            plain.to_json(cfg.msg_timeout).into_value()["msg_timeout"],
            json!("1m0s")
        );
        assert_eq!(
            serde_json::to_string(&e.to_json(cfg.msg_timeout)).expect("json"),
            r#"{"max_attempts":2,"dead_letter_topic":"orders.dead","ordered":false,"message_ttl":"1m0s","expired":"dead_letter","msg_timeout":"1m0s","mem_queue_size":10000}"#
        );
    }

    #[test]
    fn default_dead_letter_names_stay_valid() {
        assert_eq!(default_dead_letter_topic("a"), "a.dead");
        assert_eq!(default_dead_letter_topic("a#ephemeral"), "a.dead#ephemeral");
        let long = "x".repeat(64);
        let d = default_dead_letter_topic(&long);
        assert!(d.len() <= 64 && d.ends_with(".dead"), "{d}");
        let long_eph = format!("{}#ephemeral", "y".repeat(54));
        let d = default_dead_letter_topic(&long_eph);
        assert!(nsq_wire::names::is_valid_name(d.as_bytes()), "{d}");
    }
}
