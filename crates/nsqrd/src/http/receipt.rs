//! Receipts: what an HTTP consumer gets with each delivery and answers with
//! (`/message/fin|req|touch|term`).
//!
//! A receipt names one delivery, not just a message: the topic and channel, the message id,
//! the channel's number for this delivery (a message delivered again after a timeout gets a new
//! one, so an answer to the earlier delivery is refused) and the consumer it was handed to (so
//! a consumer that has nothing left in flight can leave). A 64-bit keyed hash (SipHash, with a
//! key drawn when the server starts) covers all of it, so a receipt cannot be made up or
//! mistyped into another valid one; receipts do not survive a restart (the deliveries they
//! name do not either). Encoded as unpadded base64url, safe in a query string:
//! `[version 1][consumer u64][id u64][delivery u64][topic length u8][topic][channel][mac u64]`.

use std::hash::BuildHasher;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

const VERSION: u8 = 1;
/// Everything but the names: version, three u64, the topic length, the MAC.
const FIXED: usize = 1 + 8 * 3 + 1 + 8;

/// One delivery, as a receipt names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt {
    pub topic: String,
    pub channel: String,
    pub id: u64,
    pub delivery: u64,
    pub consumer: u64,
}

/// Why a receipt was refused before its delivery was looked up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ReceiptError {
    #[error("not a receipt")]
    Malformed,
    #[error("not a receipt this server issued")]
    Forged,
}

/// The server's receipt key (one per process).
pub struct Receipts {
    key: std::collections::hash_map::RandomState,
}

impl Default for Receipts {
    fn default() -> Self {
        Receipts {
            key: std::collections::hash_map::RandomState::new(),
        }
    }
}

impl Receipts {
    fn mac(&self, bytes: &[u8]) -> u64 {
        self.key.hash_one(bytes)
    }

    /// The receipt of a delivery.
    pub fn issue(&self, r: &Receipt) -> String {
        let mut b = Vec::with_capacity(FIXED + r.topic.len() + r.channel.len());
        b.push(VERSION);
        b.extend_from_slice(&r.consumer.to_be_bytes());
        b.extend_from_slice(&r.id.to_be_bytes());
        b.extend_from_slice(&r.delivery.to_be_bytes());
        // Names are at most 64 bytes.
        b.push(r.topic.len() as u8);
        b.extend_from_slice(r.topic.as_bytes());
        b.extend_from_slice(r.channel.as_bytes());
        let mac = self.mac(&b);
        b.extend_from_slice(&mac.to_be_bytes());
        URL_SAFE_NO_PAD.encode(b)
    }

    /// The delivery a receipt names, if this server issued it.
    pub fn read(&self, text: &str) -> Result<Receipt, ReceiptError> {
        let b = URL_SAFE_NO_PAD
            .decode(text.trim())
            .map_err(|_| ReceiptError::Malformed)?;
        if b.len() < FIXED + 2 || b[0] != VERSION {
            return Err(ReceiptError::Malformed);
        }
        let (body, mac) = b.split_at(b.len() - 8);
        let mac = u64::from_be_bytes(mac.try_into().map_err(|_| ReceiptError::Malformed)?);
        if self.mac(body) != mac {
            return Err(ReceiptError::Forged);
        }
        let u64_at = |i: usize| -> Result<u64, ReceiptError> {
            body.get(i..i + 8)
                .and_then(|s| s.try_into().ok())
                .map(u64::from_be_bytes)
                .ok_or(ReceiptError::Malformed)
        };
        let tlen = usize::from(body[25]);
        let names = body.get(26..).ok_or(ReceiptError::Malformed)?;
        let (topic, channel) = (
            names.get(..tlen).ok_or(ReceiptError::Malformed)?,
            names.get(tlen..).ok_or(ReceiptError::Malformed)?,
        );
        let text = |v: &[u8]| String::from_utf8(v.to_vec()).map_err(|_| ReceiptError::Malformed);
        Ok(Receipt {
            consumer: u64_at(1)?,
            id: u64_at(9)?,
            delivery: u64_at(17)?,
            topic: text(topic)?,
            channel: text(channel)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Receipt {
        Receipt {
            topic: "orders#ephemeral".into(),
            channel: "billing".into(),
            id: 0x1234,
            delivery: 7,
            consumer: 3,
        }
    }

    #[test]
    fn round_trip_and_url_safe() {
        let k = Receipts::default();
        let text = k.issue(&sample());
        assert!(text
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_'));
        assert_eq!(k.read(&text), Ok(sample()));
    }

    #[test]
    fn another_server_or_a_typo_is_refused() {
        let k = Receipts::default();
        let text = k.issue(&sample());
        assert_eq!(Receipts::default().read(&text), Err(ReceiptError::Forged));
        let mut b = URL_SAFE_NO_PAD.decode(&text).expect("b64");
        b[12] ^= 1; // another message id
        assert_eq!(
            k.read(&URL_SAFE_NO_PAD.encode(&b)),
            Err(ReceiptError::Forged)
        );
        for bad in ["", "!!", "AAAA", &text[..text.len() - 2]] {
            assert!(k.read(bad).is_err(), "{bad:?}");
        }
    }
}
