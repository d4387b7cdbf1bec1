//! A message as the engine holds it: 32 bytes. Memory per queued message is a target (a queued
//! 200-byte message may cost at most 240 bytes of RSS), so the per-message part is kept small
//! and everything a publish shares lives once in its [`Batch`]: the buffer holding all of its
//! bodies (one allocation per MPUB, without length prefixes) and the publish time. A message is
//! its id, its delivery count on this channel, and a counted reference plus a 32-bit range into
//! that batch. Fanning out to N channels copies the 32 bytes, never a body.

use std::sync::Arc;

use bytes::Bytes;
use nsq_wire::{Bodies, MessageId};

/// What the messages of one publish share.
#[derive(Debug)]
struct Batch {
    /// Unix nanoseconds at publish; never changes (E2E latency is measured from it).
    timestamp: i64,
    data: Bytes,
}

#[derive(Debug, Clone)]
pub struct Message {
    pub id: MessageId,
    batch: Arc<Batch>,
    start: u32,
    end: u32,
    /// Deliveries so far on this channel.
    pub attempts: u16,
}

impl Message {
    /// A message with a batch of its own (read back from disk, or built by a test). None if
    /// the body is over 4 GiB, which no NSQ frame can carry.
    pub fn new(id: MessageId, timestamp: i64, attempts: u16, body: Bytes) -> Option<Message> {
        let end = u32::try_from(body.len()).ok()?;
        Some(Message {
            id,
            batch: Arc::new(Batch {
                timestamp,
                data: body,
            }),
            start: 0,
            end,
            attempts,
        })
    }

    /// Append the messages of one publish to `out`, ids from `next_id`, all stamped
    /// `timestamp`.
    pub fn batch(
        bodies: &Bodies,
        timestamp: i64,
        mut next_id: impl FnMut() -> MessageId,
        out: &mut Vec<Message>,
    ) {
        let batch = Arc::new(Batch {
            timestamp,
            data: bodies.data().clone(),
        });
        out.extend(bodies.ranges().map(|(start, end)| Message {
            id: next_id(),
            batch: Arc::clone(&batch),
            start,
            end,
            attempts: 0,
        }));
    }

    pub fn body(&self) -> &[u8] {
        // In range by construction: `Bodies` checks its ranges, `new` covers the whole body.
        self.batch
            .data
            .get(self.start as usize..self.end as usize)
            .unwrap_or_default()
    }

    /// Unix nanoseconds at publish.
    pub fn timestamp(&self) -> i64 {
        self.batch.timestamp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_32_bytes() {
        assert_eq!(std::mem::size_of::<Message>(), 32);
    }

    #[test]
    fn a_batch_shares_one_buffer_and_timestamp() {
        let bodies = Bodies::concat([&b"one"[..], b"two", b"three"]).expect("small");
        let mut id = 0;
        let mut msgs = Vec::new();
        let next = || {
            id += 1;
            MessageId(id)
        };
        Message::batch(&bodies, 42, next, &mut msgs);
        let got: Vec<(u64, &[u8], i64, u16)> = msgs
            .iter()
            .map(|m| (m.id.0, m.body(), m.timestamp(), m.attempts))
            .collect();
        assert_eq!(
            got,
            vec![
                (1, &b"one"[..], 42, 0),
                (2, &b"two"[..], 42, 0),
                (3, &b"three"[..], 42, 0)
            ]
        );
        assert!(Arc::ptr_eq(&msgs[0].batch, &msgs[2].batch));
    }

    #[test]
    fn new_holds_the_whole_body() {
        let m = Message::new(MessageId(7), -1, 3, Bytes::from_static(b"body")).expect("small");
        assert_eq!((m.body(), m.timestamp(), m.attempts), (&b"body"[..], -1, 3));
    }
}
