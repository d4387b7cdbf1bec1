//! Messages as the engine holds them. Memory per queued message is a target (a queued 200-byte
//! message may cost at most 240 bytes of RSS) and so is fan-out, so everything a publish shares
//! lives once in its batch: one buffer with all of its bodies (the slice of its connection's
//! read buffer it arrived in, or a copy), the publish time and the first id (the others follow
//! from it). A TCP MPUB's bodies keep their length prefixes and are found by walking them,
//! which queues do with a byte cursor; other multi-message publishes keep a range each.
//!
//! - [`Published`]: a whole publish, attempts 0. Queues hold it as a run (a counted reference
//!   and a cursor), so fanning a 200-message MPUB out to N channels is N reference counts, not
//!   200 x N message copies.
//! - [`Message`] (32 bytes): one message taken out of a run (to deliver, requeue or write to
//!   disk), or read back from disk into a batch of its own.

use std::sync::Arc;

use bytes::Bytes;
use nsq_wire::bodies::PrefixWalk;
use nsq_wire::{Bodies, MessageId};

use crate::attrs::Attributes;

/// What the messages of one publish share.
#[derive(Debug)]
struct Batch {
    /// Unix nanoseconds at publish; never changes (E2E latency is measured from it).
    timestamp: i64,
    data: Bytes,
    /// Each message's id and range, for runs.
    index: Index,
}

impl Batch {
    /// Where its messages are (past the attributes, if any).
    #[inline]
    fn index(&self) -> &Index {
        match &self.index {
            Index::Attributed(a) => &a.index,
            i => i,
        }
    }

    fn attrs(&self) -> Option<&Arc<Attributes>> {
        match &self.index {
            Index::Attributed(a) => Some(&a.attrs),
            _ => None,
        }
    }
}

/// Where the messages of a batch are. A single PUB (the whole buffer, one id) and a TCP MPUB
/// (length-prefixed bodies) need no allocation of their own; an HTTP /mpub has one 8-byte
/// range per message. Ids follow from the first ([`MessageId::nth_after`]).
#[derive(Debug)]
enum Index {
    /// The batch of one message that carries its own id (detached, or built by a test).
    Own,
    /// Records read back from disk (`codec.rs`): each message carries its own id, and its
    /// timestamp is in the record header just before its body.
    Records,
    /// One message, the whole buffer (a PUB).
    Whole(MessageId),
    /// The first id, and start and end per message.
    Many {
        first: MessageId,
        ranges: Box<[(u32, u32)]>,
    },
    /// The first id, and how many bodies, each after its big-endian u32 length.
    Prefixed { first: MessageId, count: u32 },
    /// A batch whose messages carry attributes (`attrs.rs`): boxed, so the batches of plain
    /// publishes stay as small as before.
    Attributed(Box<Attributed>),
}

#[derive(Debug)]
struct Attributed {
    /// Never `Attributed` itself.
    index: Index,
    attrs: Arc<Attributes>,
}

impl Index {
    fn with_attrs(self, attrs: Option<Arc<Attributes>>) -> Index {
        match (attrs, self) {
            (Some(attrs), Index::Attributed(a)) => Index::Attributed(Box::new(Attributed {
                index: a.index,
                attrs,
            })),
            (Some(attrs), index) => Index::Attributed(Box::new(Attributed { index, attrs })),
            (None, index) => index,
        }
    }
}

/// One message as a channel holds it: its id and attempts on this channel, and a reference to
/// the body inside the buffer it was published (or read from disk) in.
#[derive(Debug, Clone)]
pub struct Message {
    /// Its id, the same in every channel.
    pub id: MessageId,
    batch: Arc<Batch>,
    start: u32,
    end: u32,
    /// Deliveries so far on this channel.
    pub attempts: u16,
}

impl Message {
    /// A message with a batch of its own (for tests and callers outside the engine). None if
    /// the body is over 4 GiB, which no NSQ frame can carry.
    pub fn new(id: MessageId, timestamp: i64, attempts: u16, body: Bytes) -> Option<Message> {
        let end = u32::try_from(body.len()).ok()?;
        Some(Message {
            id,
            batch: Arc::new(Batch {
                timestamp,
                data: body,
                index: Index::Own,
            }),
            start: 0,
            end,
            attempts,
        })
    }

    /// The same message with a copy of its body in a batch of its own. For a message that will
    /// wait long (requeued with a delay): it must not keep alive the buffer of its whole
    /// publish, or the read buffer its publisher's bytes arrived in, for that long.
    pub fn detached(&self) -> Message {
        Message {
            id: self.id,
            batch: Arc::new(Batch {
                timestamp: self.timestamp(),
                data: Bytes::copy_from_slice(self.body()),
                index: Index::Own.with_attrs(self.batch.attrs().cloned()),
            }),
            start: 0,
            end: self.end - self.start,
            attempts: self.attempts,
        }
    }

    /// The body.
    pub fn body(&self) -> &[u8] {
        // In range by construction: `Bodies` checks its ranges, `new` covers the whole body.
        self.batch
            .data
            .get(self.start as usize..self.end as usize)
            .unwrap_or_default()
    }

    /// The body as a shared buffer: a reference to the bytes that were published (or read
    /// from disk), never a copy.
    pub fn body_bytes(&self) -> Bytes {
        let (start, end) = (self.start as usize, self.end as usize);
        // In range by construction, as for `body`.
        if start <= end && end <= self.batch.data.len() {
            self.batch.data.slice(start..end)
        } else {
            Bytes::new()
        }
    }

    /// Unix nanoseconds at publish.
    #[inline]
    pub fn timestamp(&self) -> i64 {
        // Records read from disk are never `Attributed` (a message that gets attributes back
        // gets a batch of its own), so the outer index says it.
        match self.batch.index {
            Index::Records => crate::codec::timestamp_before(&self.batch.data, self.start as usize),
            _ => self.batch.timestamp,
        }
    }

    /// Its attributes (expiry, ordering key, dead-letter record), if it has any.
    pub fn attributes(&self) -> Option<&Arc<Attributes>> {
        self.batch.attrs()
    }

    /// Its ordering key, if it has one.
    pub fn ordering_key(&self) -> Option<&str> {
        self.batch.attrs()?.ordering_key.as_deref()
    }

    /// The same message (id, timestamp, attempts, body: the same buffer, not a copy) with
    /// `attrs` instead of its own (a message read back from disk gets them from the side file).
    pub fn with_attributes(&self, attrs: Option<Arc<Attributes>>) -> Message {
        Message {
            id: self.id,
            batch: Arc::new(Batch {
                timestamp: self.timestamp(),
                data: self.body_bytes(),
                index: Index::Own.with_attrs(attrs),
            }),
            start: 0,
            end: self.end - self.start,
            attempts: self.attempts,
        }
    }
}

/// A buffer of records read back from disk in one go, shared by the messages pointing into it
/// (one allocation and one reference count for the lot instead of two allocations each).
#[derive(Debug)]
pub(crate) struct RecordBatch(Arc<Batch>);

impl RecordBatch {
    pub(crate) fn new(data: Bytes) -> RecordBatch {
        RecordBatch(Arc::new(Batch {
            timestamp: 0,
            data,
            index: Index::Records,
        }))
    }

    pub(crate) fn data(&self) -> &[u8] {
        &self.0.data
    }

    /// The message whose record header ends at `body.start` (the codec has checked it) and
    /// whose body is `body`. None if `body` is not in the buffer.
    pub(crate) fn message(
        &self,
        id: MessageId,
        attempts: u16,
        body: std::ops::Range<usize>,
    ) -> Option<Message> {
        self.0.data.get(body.clone())?;
        Some(Message {
            id,
            batch: Arc::clone(&self.0),
            start: u32::try_from(body.start).ok()?,
            end: u32::try_from(body.end).ok()?,
            attempts,
        })
    }
}

/// All messages of one publish, in order, not yet delivered (attempts 0). Cloning it is one
/// reference count.
#[derive(Debug, Clone)]
pub struct Published(Arc<Batch>);

impl Published {
    /// Stamp `bodies` with `timestamp` and the ids `first`, `first.nth_after(1)`, ... (as
    /// [`nsq_wire::message::IdGenerator::next_n`] hands them out).
    pub fn new(bodies: &Bodies, timestamp: i64, first: MessageId) -> Published {
        Published::with_attributes(bodies, timestamp, first, None)
    }

    /// As [`Published::new`], every message carrying `attrs`.
    pub fn with_attributes(
        bodies: &Bodies,
        timestamp: i64,
        first: MessageId,
        attrs: Option<Arc<Attributes>>,
    ) -> Published {
        let data = bodies.data().clone();
        let whole = bodies.len() == 1 && bodies.ranges().next() == Some((0, data.len() as u32));
        let index = match bodies.prefixed_count() {
            _ if whole => Index::Whole(first),
            Some(count) => Index::Prefixed { first, count },
            None => Index::Many {
                first,
                ranges: bodies.ranges().collect(),
            },
        };
        Published(Arc::new(Batch {
            timestamp,
            data,
            index: index.with_attrs(attrs),
        }))
    }

    /// The attributes its messages share, if any.
    pub fn attributes(&self) -> Option<&Arc<Attributes>> {
        self.0.attrs()
    }

    pub fn len(&self) -> usize {
        match self.0.index() {
            Index::Own | Index::Records | Index::Whole(_) | Index::Attributed(_) => 1,
            Index::Many { ranges, .. } => ranges.len(),
            Index::Prefixed { count, .. } => *count as usize,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Where message `i` is found, for [`Published::message_at`]: a byte offset into a
    /// length-prefixed batch (found by walking, O(i)), 0 for the others.
    pub fn cursor(&self, i: usize) -> u32 {
        match self.0.index() {
            Index::Prefixed { count, .. } => {
                let mut walk = PrefixWalk::new(&self.0.data, 0, *count);
                for _ in 0..i.min(*count as usize) {
                    walk.next();
                }
                // The buffer of a `Bodies` is at most u32::MAX bytes.
                walk.offset() as u32
            }
            _ => 0,
        }
    }

    /// Message `i`, whose cursor is `at` ([`Published::cursor`] of `i`), and the cursor of
    /// message `i + 1`; None past the end.
    pub fn message_at(&self, i: usize, at: u32) -> Option<(Message, u32)> {
        // The plain arms are `locate`'s, written out here so a plain batch pays nothing for
        // the attributed case (one more arm of the same jump table, handled out of line).
        let (id, start, end, next) = match &self.0.index {
            // The buffer of a `Bodies` is at most u32::MAX bytes.
            Index::Whole(id) if i == 0 => (*id, 0, self.0.data.len() as u32, 0),
            Index::Own | Index::Records | Index::Whole(_) => return None,
            Index::Many { first, ranges } => {
                let (start, end) = *ranges.get(i)?;
                prefetch_next_bodies(&self.0.data, ranges, i);
                (first.nth_after(i as u64), start, end, 0)
            }
            Index::Prefixed { first, count } => {
                let left = count.checked_sub(u32::try_from(i).ok()?)?;
                let mut walk = PrefixWalk::new(&self.0.data, at as usize, left);
                let (start, end) = walk.next()?;
                let next = walk.offset();
                prefetch_ahead(&self.0.data, at as usize, next);
                (first.nth_after(i as u64), start, end, next as u32)
            }
            Index::Attributed(a) => locate_attributed(&a.index, &self.0.data, i, at)?,
        };
        let m = Message {
            id,
            batch: Arc::clone(&self.0),
            start,
            end,
            attempts: 0,
        };
        Some((m, next))
    }

    /// Message `i`, or None past the end (O(i) for a TCP MPUB: queues use a cursor instead).
    pub fn message(&self, i: usize) -> Option<Message> {
        self.message_at(i, self.cursor(i)).map(|(m, _)| m)
    }

    /// Messages `from..to` (clamped to the publish).
    pub fn messages(&self, from: usize, to: usize) -> impl Iterator<Item = Message> + '_ {
        let mut at = self.cursor(from);
        (from..to.min(self.len())).map_while(move |i| {
            let (m, next) = self.message_at(i, at)?;
            at = next;
            Some(m)
        })
    }
}

/// Where message `i` of a batch with `index` and `data` is, given its cursor `at`: its id,
/// start, end and the next message's cursor (None past the end, or for an `Attributed` index,
/// which the caller unwraps first). [`Published::message_at`] has the same arms inline.
#[inline(always)]
fn locate(index: &Index, data: &Bytes, i: usize, at: u32) -> Option<(MessageId, u32, u32, u32)> {
    Some(match index {
        // The buffer of a `Bodies` is at most u32::MAX bytes.
        Index::Whole(id) if i == 0 => (*id, 0, data.len() as u32, 0),
        Index::Own | Index::Records | Index::Whole(_) | Index::Attributed(_) => return None,
        Index::Many { first, ranges } => {
            let (start, end) = *ranges.get(i)?;
            prefetch_next_bodies(data, ranges, i);
            (first.nth_after(i as u64), start, end, 0)
        }
        Index::Prefixed { first, count } => {
            let left = count.checked_sub(u32::try_from(i).ok()?)?;
            let mut walk = PrefixWalk::new(data, at as usize, left);
            let (start, end) = walk.next()?;
            let next = walk.offset();
            prefetch_ahead(data, at as usize, next);
            (first.nth_after(i as u64), start, end, next as u32)
        }
    })
}

/// [`locate`] for the inner index of an attributed batch (kept out of line).
#[cold]
#[inline(never)]
fn locate_attributed(
    index: &Index,
    data: &Bytes,
    i: usize,
    at: u32,
) -> Option<(MessageId, u32, u32, u32)> {
    locate(index, data, i, at)
}

/// How far ahead of the message being taken a length-prefixed batch is prefetched.
const PREFETCH_AHEAD: usize = 1024;

/// Ask the CPU to load the bytes up to `PREFETCH_AHEAD` past `next` that the previous call
/// (which took the message at `at`) did not already ask for. Taking a message reads its length
/// first, and each length's place depends on the one before, so without this every message of
/// a cold backlog waits for its own cache miss: consuming a 14M-message backlog cost 0.52 µs
/// of server CPU per message against 0.40 with a range index; with the prefetch 0.42 against
/// 0.42 (`nsqr-bench compare`, benchmarks.md).
fn prefetch_ahead(data: &[u8], at: usize, next: usize) {
    let from = (at + PREFETCH_AHEAD).max(next);
    let to = (next + PREFETCH_AHEAD).min(data.len());
    let mut line = from & !63;
    while line < to {
        prefetch(data, line);
        line += 64;
    }
}

/// How many messages ahead of the one being taken the bodies of a range-indexed batch are
/// prefetched: enough lead for a miss to complete while the consumer handles those before it.
const BODIES_AHEAD: usize = 4;

/// Ask the CPU to load the first two cache lines of the body [`BODIES_AHEAD`] messages after
/// message `i` of a batch with `ranges` (when taking the first, of all of those up to it).
/// Bodies that lie apart (requests of kilobytes each, on pages of their own) are each a
/// cache and TLB miss for a consumer that reads their first bytes after the sender ran far
/// ahead; with the hint the misses overlap the work on earlier messages (in-process
/// request-reply at 1 KB went from 3.3-3.5M to 5.1-6.4M requests/s, benchmarks.md).
fn prefetch_next_bodies(data: &[u8], ranges: &[(u32, u32)], i: usize) {
    let from = if i == 0 { 1 } else { i + BODIES_AHEAD };
    for &(start, _) in ranges.iter().skip(from).take(i + BODIES_AHEAD + 1 - from) {
        prefetch(data, start as usize);
        prefetch(data, start as usize + 64);
    }
}

/// A cache hint for `data[i]` (when in bounds); nothing on other architectures.
#[inline(always)]
fn prefetch(data: &[u8], i: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(b) = data.get(i) {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        #[allow(unsafe_code)]
        // SAFETY: a prefetch only hints the cache: it neither reads nor writes memory as far as
        // the program can tell and never faults; the address is of a live byte of `data`. SSE,
        // which the intrinsic needs, is part of the x86_64 baseline.
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(b).cast::<i8>())
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (data, i);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_32_bytes() {
        assert_eq!(std::mem::size_of::<Message>(), 32);
    }

    #[test]
    fn a_publish_shares_one_buffer_and_timestamp() {
        let bodies = Bodies::concat([&b"one"[..], b"two", b"three"]).expect("small");
        let p = Published::new(&bodies, 42, MessageId(1));
        assert_eq!(p.len(), 3);
        let msgs: Vec<Message> = p.messages(0, 10).collect();
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
        assert_eq!(p.messages(1, 2).map(|m| m.id.0).collect::<Vec<_>>(), [2]);
        let d = msgs[1].detached();
        assert_eq!(
            (d.id, d.body(), d.timestamp(), d.attempts),
            (msgs[1].id, &b"two"[..], 42, 0)
        );
        assert!(!Arc::ptr_eq(&d.batch, &msgs[1].batch), "a batch of its own");
        assert_eq!(d.batch.data.len(), 3, "only its own body");
        assert!(p.message(3).is_none());
    }

    #[test]
    fn bodies_far_apart_are_taken_in_order_past_the_prefetch_window() {
        // 20 bodies of 9000 bytes with gaps, the last ones short of the prefetch window and
        // the last body shorter than the two lines prefetched.
        let mut data = Vec::new();
        let mut ranges = Vec::new();
        for i in 0..20u8 {
            let start = data.len();
            let len = if i == 19 { 3 } else { 9000 };
            data.extend(std::iter::repeat_n(i, len));
            ranges.push(start..data.len());
            data.extend([0xff; 100]);
        }
        let bodies =
            Bodies::from_ranges(Bytes::from(data), ranges.iter().cloned()).expect("in range");
        let p = Published::new(&bodies, 1, MessageId(1));
        let got: Vec<(u8, usize)> = p
            .messages(0, 20)
            .map(|m| (m.body()[0], m.body().len()))
            .collect();
        let want: Vec<(u8, usize)> = (0..20u8)
            .map(|i| (i, if i == 19 { 3 } else { 9000 }))
            .collect();
        assert_eq!(got, want);
        prefetch_next_bodies(&[0; 10], &[(0, 1), (5, 10)], 0);
    }

    #[test]
    fn a_single_message_publish_needs_no_index() {
        let one = Bodies::one(Bytes::from_static(b"pub")).expect("small");
        let p = Published::new(&one, 5, MessageId(9));
        assert!(matches!(p.0.index, Index::Whole(MessageId(9))));
        let m = p.message(0).expect("one");
        assert_eq!((m.id.0, m.body(), m.timestamp()), (9, &b"pub"[..], 5));
        assert!(p.message(1).is_none());
        // One message that is only part of its buffer (an HTTP /mpub line) keeps its range.
        let line = Bodies::from_ranges(Bytes::from_static(b"line\n"), std::iter::once(0..4))
            .expect("in range");
        let p = Published::new(&line, 5, MessageId(10));
        assert!(matches!(p.0.index, Index::Many { .. }));
        assert_eq!(
            p.message(0).map(|m| m.body().to_vec()),
            Some(b"line".to_vec())
        );
    }

    #[test]
    fn an_mpub_is_walked_by_its_length_prefixes() {
        let mut wire = Vec::new();
        for b in [&b"one"[..], b"", b"three"] {
            wire.extend_from_slice(&(b.len() as u32).to_be_bytes());
            wire.extend_from_slice(b);
        }
        let bodies = Bodies::prefixed(Bytes::from(wire)).expect("well formed");
        let p = Published::new(&bodies, 7, MessageId(20));
        assert!(matches!(p.0.index, Index::Prefixed { count: 3, .. }));
        let all: Vec<(u64, Vec<u8>)> = p
            .messages(0, 9)
            .map(|m| (m.id.0, m.body().to_vec()))
            .collect();
        assert_eq!(
            all,
            [(20, b"one".to_vec()), (21, vec![]), (22, b"three".to_vec())]
        );
        // The cursor walk and the direct walk agree, from anywhere.
        let (m, next) = p.message_at(1, p.cursor(1)).expect("second");
        assert_eq!((m.id.0, next), (21, p.cursor(2)));
        assert_eq!(p.cursor(2), 11);
        assert_eq!(
            p.messages(2, 3)
                .map(|m| m.body().to_vec())
                .collect::<Vec<_>>(),
            [b"three".to_vec()]
        );
        assert!(p.message(3).is_none());
        assert!(p.message_at(3, p.cursor(3)).is_none());
    }

    #[test]
    fn taking_messages_of_a_large_prefixed_batch_prefetches_within_it() {
        // 3000 bodies of 1..=700 bytes: the prefetch window runs past the end of the buffer
        // near the last messages and spans many lines per message for the large ones.
        let mut wire = Vec::new();
        let sizes: Vec<usize> = (0..3000).map(|i| 1 + (i * 37) % 700).collect();
        for (i, &n) in sizes.iter().enumerate() {
            wire.extend_from_slice(&(n as u32).to_be_bytes());
            wire.extend(std::iter::repeat_n((i % 256) as u8, n));
        }
        let bodies = Bodies::prefixed(Bytes::from(wire)).expect("well formed");
        let p = Published::new(&bodies, 0, MessageId(1));
        let mut at = p.cursor(0);
        for (i, &n) in sizes.iter().enumerate() {
            let (m, next) = p.message_at(i, at).expect("in the batch");
            assert_eq!(m.body().len(), n);
            assert!(m.body().iter().all(|&b| b == (i % 256) as u8));
            at = next;
        }
        assert!(p.message_at(sizes.len(), at).is_none());
        prefetch_ahead(&[1, 2, 3], 0, 3);
        prefetch(&[], 0);
    }

    #[test]
    fn attributes_cost_plain_batches_nothing_and_travel_with_their_messages() {
        // The attributes live behind a box inside the index: no bigger than before.
        assert_eq!(std::mem::size_of::<Index>(), 32);
        let attrs = Attributes {
            expires_at: 9,
            ordering_key: Some("k".into()),
            dead_letter: None,
        }
        .into_shared();
        let bodies = Bodies::concat([&b"a"[..], b"b"]).expect("small");
        let p = Published::with_attributes(&bodies, 1, MessageId(5), attrs.clone());
        let msgs: Vec<Message> = p.messages(0, 2).collect();
        assert_eq!(msgs[1].body(), b"b");
        assert_eq!(msgs[1].ordering_key(), Some("k"));
        assert_eq!(msgs[0].detached().attributes(), attrs.as_ref());
        let plain = Message::new(MessageId(1), 3, 2, Bytes::from_static(b"x")).expect("small");
        assert!(plain.attributes().is_none());
        let with = plain.with_attributes(attrs.clone());
        assert_eq!(
            (with.id, with.timestamp(), with.attempts, with.body()),
            (MessageId(1), 3, 2, &b"x"[..])
        );
        assert_eq!(with.attributes(), attrs.as_ref());
    }

    #[test]
    fn new_holds_the_whole_body() {
        let m = Message::new(MessageId(7), -1, 3, Bytes::from_static(b"body")).expect("small");
        assert_eq!((m.body(), m.timestamp(), m.attempts), (&b"body"[..], -1, 3));
    }
}
