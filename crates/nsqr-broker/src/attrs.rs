//! What a message may carry beyond nsqd's four fields (id, timestamp, attempts, body): an
//! expiry time, an ordering key, and, for a dead letter, where it came from and why.
//!
//! nsqd's wire frame and disk record have no room for them, and neither may change, so they
//! live beside the message: once per publish in memory (every message of an HTTP `/mpub` shares
//! one [`Attributes`]), and in a side file next to a disk queue for the messages it holds
//! (`attrs_store.rs`). A message without attributes costs nothing more than before.

use std::sync::Arc;

use nsq_wire::MessageId;
use serde::{Deserialize, Serialize};

/// The longest ordering key, in bytes (SQS allows 128 characters for a message group id).
pub const MAX_ORDERING_KEY_LEN: usize = 256;

/// A message's attributes; see the module documentation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attributes {
    /// Unix nanoseconds after which it is never delivered (0: never expires).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub expires_at: i64,
    /// Messages with the same key are delivered in order on an ordered channel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ordering_key: Option<Arc<str>>,
    /// Set on a message in a dead-letter topic: why it is there and where it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dead_letter: Option<DeadLetterInfo>,
}

fn is_zero(v: &i64) -> bool {
    *v == 0
}

impl Attributes {
    /// None when nothing is set (the message needs no attributes).
    pub fn into_shared(self) -> Option<Arc<Attributes>> {
        (self != Attributes::default()).then(|| Arc::new(self))
    }

    /// True once `now_ns` is past its expiry time.
    pub fn is_expired(&self, now_ns: i64) -> bool {
        self.expires_at != 0 && now_ns >= self.expires_at
    }
}

/// Why a message was dead-lettered (RabbitMQ's words, which users know).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeadLetterReason {
    /// It was delivered `max_attempts` times and not finished.
    DeliveryLimit,
    /// A consumer gave up on it (HTTP `/message/term`).
    Rejected,
    /// Its time to live passed before it was delivered.
    Expired,
}

impl DeadLetterReason {
    /// Every reason, in the order `/stats` and `/metrics` list them.
    pub const ALL: [DeadLetterReason; 3] = [
        DeadLetterReason::DeliveryLimit,
        DeadLetterReason::Rejected,
        DeadLetterReason::Expired,
    ];

    /// `delivery_limit`, `rejected`, `expired`.
    pub fn as_str(self) -> &'static str {
        match self {
            DeadLetterReason::DeliveryLimit => "delivery_limit",
            DeadLetterReason::Rejected => "rejected",
            DeadLetterReason::Expired => "expired",
        }
    }

    pub(crate) fn index(self) -> usize {
        match self {
            DeadLetterReason::DeliveryLimit => 0,
            DeadLetterReason::Rejected => 1,
            DeadLetterReason::Expired => 2,
        }
    }
}

impl std::fmt::Display for DeadLetterReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a dead letter came from, and why: kept with it in the dead-letter topic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeadLetterInfo {
    /// Why it left its channel.
    pub reason: DeadLetterReason,
    /// The topic it was published to.
    pub topic: Arc<str>,
    /// The channel it left.
    pub channel: Arc<str>,
    /// Its id there (it has a new one in the dead-letter topic).
    #[serde(with = "hex_id")]
    pub id: MessageId,
    /// How many times it had been delivered on that channel.
    pub attempts: u16,
    /// Unix nanoseconds when it was first published.
    pub timestamp: i64,
    /// Unix nanoseconds when it was dead-lettered.
    pub at: i64,
}

/// A message id as its 16 hex digits, as the wire shows it.
mod hex_id {
    use nsq_wire::MessageId;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(id: &MessageId, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(std::str::from_utf8(&id.to_hex()).unwrap_or("0000000000000000"))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<MessageId, D::Error> {
        let s = String::deserialize(d)?;
        MessageId::from_hex(s.as_bytes())
            .ok_or_else(|| serde::de::Error::custom("a message id is 16 hex digits"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_attributes_are_none() {
        assert!(Attributes::default().into_shared().is_none());
        let a = Attributes {
            expires_at: 5,
            ..Attributes::default()
        };
        assert!(a.is_expired(5) && !a.is_expired(4));
        assert!(!Attributes::default().is_expired(i64::MAX));
    }

    #[test]
    fn json_shape() {
        let a = Attributes {
            expires_at: 0,
            ordering_key: Some("k".into()),
            dead_letter: Some(DeadLetterInfo {
                reason: DeadLetterReason::DeliveryLimit,
                topic: "t".into(),
                channel: "c".into(),
                id: MessageId(0xab),
                attempts: 3,
                timestamp: 1,
                at: 2,
            }),
        };
        let j = serde_json::to_string(&a).expect("json");
        assert_eq!(
            j,
            r#"{"ordering_key":"k","dead_letter":{"reason":"delivery_limit","topic":"t","channel":"c","id":"00000000000000ab","attempts":3,"timestamp":1,"at":2}}"#
        );
        assert_eq!(serde_json::from_str::<Attributes>(&j).expect("back"), a);
    }
}
