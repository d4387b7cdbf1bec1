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
use std::ops::Range;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

const VERSION: u8 = 1;
/// Everything but the names: version, three u64, the topic length, the MAC.
const FIXED: usize = 1 + 8 * 3 + 1 + 8;
/// Receipts up to this many bytes (all whose names are within nsqd's 64-byte limit) are
/// built on the stack.
const STACK: usize = FIXED + 2 * 64;

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
        let mut out = Vec::new();
        self.issue_into(&r.topic, &r.channel, r.id, r.delivery, r.consumer, &mut out);
        // Base64 is ASCII.
        String::from_utf8(out).unwrap_or_default()
    }

    /// Append the receipt of a delivery to `out` (what [`Receipts::issue`] returns), without
    /// allocating: SSE and long polls write one per message straight into their answer.
    pub fn issue_into(
        &self,
        topic: &str,
        channel: &str,
        id: u64,
        delivery: u64,
        consumer: u64,
        out: &mut Vec<u8>,
    ) {
        let need = FIXED + topic.len() + channel.len();
        let mut stack = [0u8; STACK];
        let mut heap = Vec::new();
        let raw = if need <= STACK {
            &mut stack[..need]
        } else {
            heap.resize(need, 0);
            &mut heap[..]
        };
        raw[0] = VERSION;
        raw[1..9].copy_from_slice(&consumer.to_be_bytes());
        raw[9..17].copy_from_slice(&id.to_be_bytes());
        raw[17..25].copy_from_slice(&delivery.to_be_bytes());
        // Names are at most 64 bytes.
        raw[25] = topic.len() as u8;
        let names = 26 + topic.len();
        raw[26..names].copy_from_slice(topic.as_bytes());
        raw[names..need - 8].copy_from_slice(channel.as_bytes());
        let mac = self.mac(&raw[..need - 8]);
        raw[need - 8..].copy_from_slice(&mac.to_be_bytes());
        let start = out.len();
        out.resize(start + encoded_len(need), 0);
        let written = URL_SAFE_NO_PAD
            .encode_slice(&raw[..], &mut out[start..])
            .unwrap_or(0);
        out.truncate(start + written);
    }

    /// The delivery a receipt names, if this server issued it.
    #[cfg(test)]
    pub fn read(&self, text: &str) -> Result<Receipt, ReceiptError> {
        let mut buf = Vec::new();
        let r = self.read_into(text, &mut buf)?;
        let text = |v: &[u8]| String::from_utf8(v.to_vec()).map_err(|_| ReceiptError::Malformed);
        Ok(Receipt {
            topic: text(r.topic(&buf))?,
            channel: text(r.channel(&buf))?,
            id: r.id,
            delivery: r.delivery,
            consumer: r.consumer,
        })
    }

    /// Read a receipt as [`Receipts::read`] does (the same answer for every text), its decoded
    /// bytes appended to `buf` (left as it was when the receipt is refused) and its names
    /// returned as places in `buf`: a batch of receipts is read into one buffer, not a few
    /// strings each.
    pub fn read_into(&self, text: &str, buf: &mut Vec<u8>) -> Result<RawReceipt, ReceiptError> {
        let start = buf.len();
        let r = self.read_appended(text, buf, start);
        if r.is_err() {
            buf.truncate(start);
        }
        r
    }

    fn read_appended(
        &self,
        text: &str,
        buf: &mut Vec<u8>,
        start: usize,
    ) -> Result<RawReceipt, ReceiptError> {
        URL_SAFE_NO_PAD
            .decode_vec(text.trim(), buf)
            .map_err(|_| ReceiptError::Malformed)?;
        let b = buf.get(start..).unwrap_or_default();
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
        if std::str::from_utf8(topic).is_err() || std::str::from_utf8(channel).is_err() {
            return Err(ReceiptError::Malformed);
        }
        let topic_at = start + 26;
        Ok(RawReceipt {
            consumer: u64_at(1)?,
            id: u64_at(9)?,
            delivery: u64_at(17)?,
            topic: topic_at..topic_at + tlen,
            channel: topic_at + tlen..start + body.len(),
        })
    }
}

/// A receipt read by [`Receipts::read_into`]: its names are places in the buffer it was read
/// into, both checked to be UTF-8.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawReceipt {
    pub id: u64,
    pub delivery: u64,
    pub consumer: u64,
    topic: Range<usize>,
    channel: Range<usize>,
}

impl RawReceipt {
    /// The topic's bytes in `buf` (the buffer it was read into).
    pub fn topic<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        buf.get(self.topic.clone()).unwrap_or_default()
    }

    /// The channel's bytes in `buf`.
    pub fn channel<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        buf.get(self.channel.clone()).unwrap_or_default()
    }
}

/// Unpadded base64's length for `n` bytes.
fn encoded_len(n: usize) -> usize {
    (n * 4).div_ceil(3)
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

    /// A plain receipt codec (a `Vec` and `String`s per receipt): the oracle `issue_into` /
    /// `read_into`, which write into and read from shared buffers, are held to.
    mod plain_codec {
        use super::super::*;

        pub fn issue(k: &Receipts, r: &Receipt) -> String {
            let mut b = Vec::new();
            b.push(VERSION);
            b.extend_from_slice(&r.consumer.to_be_bytes());
            b.extend_from_slice(&r.id.to_be_bytes());
            b.extend_from_slice(&r.delivery.to_be_bytes());
            b.push(r.topic.len() as u8);
            b.extend_from_slice(r.topic.as_bytes());
            b.extend_from_slice(r.channel.as_bytes());
            let mac = k.mac(&b);
            b.extend_from_slice(&mac.to_be_bytes());
            URL_SAFE_NO_PAD.encode(b)
        }

        pub fn read(k: &Receipts, text: &str) -> Result<Receipt, ReceiptError> {
            let b = URL_SAFE_NO_PAD
                .decode(text.trim())
                .map_err(|_| ReceiptError::Malformed)?;
            if b.len() < FIXED + 2 || b[0] != VERSION {
                return Err(ReceiptError::Malformed);
            }
            let (body, mac) = b.split_at(b.len() - 8);
            let mac = u64::from_be_bytes(mac.try_into().map_err(|_| ReceiptError::Malformed)?);
            if k.mac(body) != mac {
                return Err(ReceiptError::Forged);
            }
            let u64_at = |i: usize| u64::from_be_bytes(body[i..i + 8].try_into().unwrap());
            let tlen = usize::from(body[25]);
            let names = &body[26..];
            let (topic, channel) = (
                names.get(..tlen).ok_or(ReceiptError::Malformed)?,
                names.get(tlen..).ok_or(ReceiptError::Malformed)?,
            );
            let text =
                |v: &[u8]| String::from_utf8(v.to_vec()).map_err(|_| ReceiptError::Malformed);
            Ok(Receipt {
                consumer: u64_at(1),
                id: u64_at(9),
                delivery: u64_at(17),
                topic: text(topic)?,
                channel: text(channel)?,
            })
        }
    }

    /// A receipt of `raw` whose MAC is right for whatever bytes it carries.
    fn signed(k: &Receipts, raw: &[u8]) -> String {
        let mut b = raw.to_vec();
        let mac = k.mac(&b);
        b.extend_from_slice(&mac.to_be_bytes());
        URL_SAFE_NO_PAD.encode(b)
    }

    #[test]
    fn issue_into_and_read_into_agree_with_the_plain_codec() {
        let k = Receipts::default();
        let long = "x".repeat(200);
        let mut texts = Vec::new();
        for (topic, channel) in [
            ("orders#ephemeral", "billing"),
            ("t", "c"),
            (&"a".repeat(64)[..], &"b".repeat(64)[..]),
            (&long[..], "c"), // beyond STACK: built on the heap
            ("\u{e9}t", "\u{e9}"),
        ] {
            let r = Receipt {
                topic: topic.into(),
                channel: channel.into(),
                id: u64::MAX,
                delivery: 1 << 40,
                consumer: 9,
            };
            let text = k.issue(&r);
            assert_eq!(text, plain_codec::issue(&k, &r));
            let mut appended = b"prefix".to_vec();
            k.issue_into(topic, channel, r.id, r.delivery, r.consumer, &mut appended);
            assert_eq!(&appended[6..], text.as_bytes());
            texts.push(text);
        }
        // Refused ones: garbage, too short, another version, another key, a flipped bit,
        // a topic length past the end, names that are not UTF-8 (one split inside a
        // character), padding and surrounding spaces.
        let good = texts[0].clone();
        let mut flipped = URL_SAFE_NO_PAD.decode(&good).unwrap();
        flipped[12] ^= 1;
        let mut v2 = URL_SAFE_NO_PAD.decode(&good).unwrap();
        v2[0] = 2;
        let mut head = vec![VERSION];
        head.extend_from_slice(&[0; 24]);
        let with = |tlen: u8, names: &[u8]| {
            let mut b = head.clone();
            b.push(tlen);
            b.extend_from_slice(names);
            b
        };
        texts.extend([
            String::new(),
            "!!".into(),
            "AAAA".into(),
            good[..good.len() - 2].to_string(),
            format!("  {good}\t"),
            format!("{good}="),
            URL_SAFE_NO_PAD.encode(&flipped),
            URL_SAFE_NO_PAD.encode(&v2),
            Receipts::default().issue(&sample()),
            signed(&k, &with(9, b"ab")),
            signed(&k, &with(2, b"ab")),
            signed(&k, &with(1, b"ab")),
            signed(&k, &with(1, b"\xc3\xa9")),
            signed(&k, &with(0, b"\xc3\xa9")),
            signed(&k, &with(1, b"a\xff")),
            signed(&k, &with(1, b"\xffa")),
        ]);
        for text in &texts {
            let mut buf = b"earlier".to_vec();
            let got = k.read_into(text, &mut buf).map(|r| {
                let s = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
                Receipt {
                    topic: s(r.topic(&buf)),
                    channel: s(r.channel(&buf)),
                    id: r.id,
                    delivery: r.delivery,
                    consumer: r.consumer,
                }
            });
            assert_eq!(got, plain_codec::read(&k, text), "{text:?}");
            assert_eq!(k.read(text), got, "{text:?}");
            if got.is_err() {
                assert_eq!(buf, b"earlier", "{text:?}");
            }
        }
    }
}
