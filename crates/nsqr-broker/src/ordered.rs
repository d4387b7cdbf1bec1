//! Delivery order of an ordered channel: a message is handed out only when every earlier
//! message with the same ordering key is finished; a requeued or timed-out message goes back
//! to the head of its key. Messages without a key form one group of their own, so a channel
//! where nobody sets keys is strictly first in, first out. Keys proceed independently (SQS FIFO
//! message groups): one busy key does not hold up the others.
//!
//! The channel's ready queue (`spill_queue.rs`, memory then disk) stays the one FIFO of
//! arrival; this structure takes messages from its head into per-key groups as consumers ask,
//! at most `lookahead` at a time (so memory stays bounded), and hands out the head of a key
//! that is not busy. A key is busy while one of its messages is in flight or waiting for a
//! requeue delay. When every message in the lookahead belongs to busy keys, nothing is
//! delivered until one of them finishes: a key with more than `lookahead` messages queued ahead
//! of the others can hold them up (documented in `docs/http-queues.md`).

use std::collections::VecDeque;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::message::Message;
use crate::spill_queue::SpillQueue;

/// A message's group: its ordering key, or the group of messages without one.
pub(crate) type Key = Option<Arc<str>>;

/// The group a message belongs to.
pub(crate) fn key_of(m: &Message) -> Key {
    m.attributes().and_then(|a| a.ordering_key.clone())
}

#[derive(Debug, Default)]
struct Group {
    /// Messages of the key taken from the ready queue, in order.
    queue: VecDeque<Message>,
    /// One of its messages is in flight or deferred.
    busy: bool,
    /// Listed in `runnable` (not busy and something queued, when the entry is current).
    listed: bool,
}

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct Ordered {
    groups: FxHashMap<Key, Group>,
    /// Keys whose head may be handed out, oldest first; entries may be stale.
    runnable: VecDeque<Key>,
    /// Messages held in groups.
    held: usize,
    lookahead: usize,
}

impl Ordered {
    /// At most `lookahead` messages (at least 1) are taken ahead from the ready queue.
    pub(crate) fn new(lookahead: usize) -> Ordered {
        Ordered {
            groups: FxHashMap::default(),
            runnable: VecDeque::new(),
            held: 0,
            lookahead: lookahead.max(1),
        }
    }

    pub(crate) fn set_lookahead(&mut self, lookahead: usize) {
        self.lookahead = lookahead.max(1);
    }

    /// Messages held in groups (part of the channel's depth).
    pub(crate) fn held(&self) -> usize {
        self.held
    }

    fn list(&mut self, key: &Key, front: bool) {
        if let Some(g) = self.groups.get_mut(key) {
            if !g.busy && !g.listed && !g.queue.is_empty() {
                g.listed = true;
                if front {
                    self.runnable.push_front(key.clone());
                } else {
                    self.runnable.push_back(key.clone());
                }
            }
        }
    }

    /// The next message that may be handed out, its key marked busy; None when every key in
    /// the lookahead is busy or nothing is queued.
    pub(crate) fn next(&mut self, ready: &mut SpillQueue) -> Option<Message> {
        loop {
            if let Some(key) = self.runnable.pop_front() {
                let Some(g) = self.groups.get_mut(&key) else {
                    continue;
                };
                g.listed = false;
                if g.busy {
                    continue;
                }
                let Some(m) = g.queue.pop_front() else {
                    continue;
                };
                g.busy = true;
                self.held -= 1;
                return Some(m);
            }
            if self.held >= self.lookahead {
                return None;
            }
            let m = ready.pop_front()?;
            let key = key_of(&m);
            self.groups
                .entry(key.clone())
                .or_default()
                .queue
                .push_back(m);
            self.held += 1;
            self.list(&key, false);
        }
    }

    /// The key's message in flight (or deferred) is done with (finished, dead-lettered,
    /// dropped): its next message may go. True if that made a message deliverable.
    pub(crate) fn settled(&mut self, key: &Key) -> bool {
        let Some(g) = self.groups.get_mut(key) else {
            return false;
        };
        g.busy = false;
        if g.queue.is_empty() {
            self.groups.remove(key);
            return false;
        }
        self.list(key, false);
        true
    }

    /// A message of a busy key comes back (requeued, timed out, its consumer left): it is the
    /// key's next message again.
    pub(crate) fn put_back(&mut self, m: Message) {
        let key = key_of(&m);
        let g = self.groups.entry(key.clone()).or_default();
        g.busy = false;
        g.queue.push_front(m);
        self.held += 1;
        self.list(&key, true);
    }

    /// A message waits for a delay before it is its key's next message (a requeue with a
    /// delay): the key stays busy meanwhile.
    pub(crate) fn hold(&mut self, key: &Key) {
        self.groups.entry(key.clone()).or_default().busy = true;
    }

    /// Everything held, for the shutdown flush or turning order off: each key's messages in
    /// order (keys in no particular order).
    pub(crate) fn drain(&mut self) -> Vec<Message> {
        self.runnable.clear();
        self.held = 0;
        let mut out: Vec<Message> = Vec::new();
        for (_, mut g) in self.groups.drain() {
            out.extend(g.queue.drain(..));
        }
        out
    }

    /// Drop everything held (the channel was emptied); busy marks go too.
    pub(crate) fn clear(&mut self) {
        self.groups.clear();
        self.runnable.clear();
        self.held = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attrs::Attributes;
    use bytes::Bytes;
    use nsq_wire::MessageId;

    fn msg(id: u64, key: Option<&str>) -> Message {
        let m = Message::new(MessageId(id), 0, 0, Bytes::from_static(b"x")).expect("small");
        m.with_attributes(
            Attributes {
                ordering_key: key.map(Arc::from),
                ..Attributes::default()
            }
            .into_shared(),
        )
    }

    fn queue(msgs: Vec<Message>) -> SpillQueue {
        let mut q = SpillQueue::memory(usize::MAX, false);
        q.put(msgs, None).expect("memory");
        q
    }

    fn ids(v: &[Message]) -> Vec<u64> {
        v.iter().map(|m| m.id.0).collect()
    }

    #[test]
    fn without_keys_one_at_a_time_in_order() {
        let mut q = queue((1..=3).map(|i| msg(i, None)).collect());
        let mut o = Ordered::new(100);
        let a = o.next(&mut q).expect("first");
        assert_eq!(a.id.0, 1);
        assert!(o.next(&mut q).is_none(), "1 is in flight");
        // requeued: back at the head
        o.put_back(a);
        let a = o.next(&mut q).expect("again");
        assert_eq!(a.id.0, 1);
        assert!(o.settled(&None));
        assert_eq!(o.next(&mut q).map(|m| m.id.0), Some(2));
        assert!(o.settled(&None));
        assert_eq!(o.next(&mut q).map(|m| m.id.0), Some(3));
        assert!(!o.settled(&None));
        assert!(o.next(&mut q).is_none());
        assert_eq!(o.held(), 0);
    }

    #[test]
    fn keys_proceed_independently() {
        let mut q = queue(vec![
            msg(1, Some("a")),
            msg(2, Some("a")),
            msg(3, Some("b")),
            msg(4, Some("c")),
            msg(5, Some("b")),
        ]);
        let mut o = Ordered::new(100);
        let first: Vec<Message> = std::iter::from_fn(|| o.next(&mut q)).collect();
        assert_eq!(ids(&first), [1, 3, 4], "one per key");
        assert_eq!(o.held(), 2);
        o.settled(&Some("b".into()));
        assert_eq!(o.next(&mut q).map(|m| m.id.0), Some(5));
        // a requeue with a delay keeps the key busy
        o.hold(&Some("a".into()));
        assert!(o.next(&mut q).is_none());
        o.put_back(first[0].clone());
        assert_eq!(o.next(&mut q).map(|m| m.id.0), Some(1));
        o.settled(&Some("a".into()));
        assert_eq!(o.next(&mut q).map(|m| m.id.0), Some(2));
    }

    #[test]
    fn lookahead_bounds_what_is_held() {
        let mut msgs = vec![
            msg(1, Some("hot")),
            msg(2, Some("hot")),
            msg(3, Some("hot")),
        ];
        msgs.push(msg(4, Some("cold")));
        let mut q = queue(msgs);
        let mut o = Ordered::new(2);
        assert_eq!(o.next(&mut q).map(|m| m.id.0), Some(1));
        // 2 and 3 fill the lookahead; 4 (another key) is behind them
        assert!(o.next(&mut q).is_none());
        assert_eq!(o.held(), 2);
        o.settled(&Some("hot".into()));
        assert_eq!(o.next(&mut q).map(|m| m.id.0), Some(2));
        assert_eq!(o.next(&mut q).map(|m| m.id.0), Some(4));
        let rest = o.drain();
        assert_eq!(ids(&rest), [3]);
    }
}
