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

/// A message's ordering key (None: the group of messages without one), borrowed from it.
fn key_ref(m: &Message) -> Option<&Arc<str>> {
    m.attributes().and_then(|a| a.ordering_key.as_ref())
}

/// Idle groups (not busy, nothing queued) are kept for reuse (no allocation per message for
/// a key that comes back), and dropped in one sweep once they are this many and more than
/// half of all groups.
const IDLE_SWEEP: usize = 4096;

#[derive(Debug, Default)]
struct Group {
    /// Messages of the key taken from the ready queue, in order.
    queue: VecDeque<Message>,
    /// One of its messages is in flight or deferred.
    busy: bool,
    /// Listed in `runnable` (not busy and something queued, when the entry is current).
    listed: bool,
}

impl Group {
    fn is_idle(&self) -> bool {
        !self.busy && self.queue.is_empty()
    }
}

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct Ordered {
    /// Groups by key (looked up by the key's text: no reference count is touched).
    groups: FxHashMap<Arc<str>, Group>,
    /// The group of messages without a key.
    unkeyed: Group,
    /// Keys whose head may be handed out, oldest first; entries may be stale.
    runnable: VecDeque<Option<Arc<str>>>,
    /// Messages held in groups (part of the channel's depth).
    held: usize,
    lookahead: usize,
    /// Groups in `groups` that are idle.
    idle: usize,
}

impl Ordered {
    /// At most `lookahead` messages (at least 1) are taken ahead from the ready queue.
    pub(crate) fn new(lookahead: usize) -> Ordered {
        Ordered {
            groups: FxHashMap::default(),
            unkeyed: Group::default(),
            runnable: VecDeque::new(),
            held: 0,
            lookahead: lookahead.max(1),
            idle: 0,
        }
    }

    pub(crate) fn set_lookahead(&mut self, lookahead: usize) {
        self.lookahead = lookahead.max(1);
    }

    /// Messages held in groups (part of the channel's depth).
    pub(crate) fn held(&self) -> usize {
        self.held
    }

    fn group(&mut self, key: Option<&str>) -> Option<&mut Group> {
        match key {
            None => Some(&mut self.unkeyed),
            Some(k) => self.groups.get_mut(k),
        }
    }

    /// The group of `key`, made if needed; if it was idle, it is counted as not idle any more
    /// (the caller is about to queue a message in it or make it busy).
    fn group_for_use(&mut self, key: Option<&Arc<str>>) -> &mut Group {
        let Some(k) = key else {
            return &mut self.unkeyed;
        };
        if !self.groups.contains_key(&**k) {
            // A new group counts as idle until it is used, just below.
            self.groups.insert(Arc::clone(k), Group::default());
            self.idle += 1;
        }
        let idle = &mut self.idle;
        match self.groups.get_mut(&**k) {
            Some(g) => {
                if g.is_idle() {
                    *idle -= 1;
                }
                g
            }
            // Inserted just above; never reached.
            None => &mut self.unkeyed,
        }
    }

    /// List the group of `key` as runnable (at the front for a message put back).
    fn list(&mut self, key: Option<&Arc<str>>, front: bool) {
        let Some(g) = self.group(key.map(|k| &**k)) else {
            return;
        };
        if !g.busy && !g.listed && !g.queue.is_empty() {
            g.listed = true;
            let entry = key.cloned();
            if front {
                self.runnable.push_front(entry);
            } else {
                self.runnable.push_back(entry);
            }
        }
    }

    /// The group became idle: count it, and sweep idle groups once there are many.
    fn went_idle(&mut self, keyed: bool) {
        if !keyed {
            return;
        }
        self.idle += 1;
        if self.idle > IDLE_SWEEP && self.idle * 2 > self.groups.len() {
            self.groups.retain(|_, g| !g.is_idle());
            self.idle = 0;
        }
    }

    /// The next message that may be handed out, its key marked busy; None when every key in
    /// the lookahead is busy or nothing is queued.
    pub(crate) fn next(&mut self, ready: &mut SpillQueue) -> Option<Message> {
        loop {
            if let Some(key) = self.runnable.pop_front() {
                let Some(g) = self.group(key.as_deref()) else {
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
            let g = self.group_for_use(key_ref(&m));
            if !g.busy && g.queue.is_empty() {
                // Nothing else is runnable and its key is free: it goes at once.
                g.busy = true;
                return Some(m);
            }
            let key = key_ref(&m).cloned();
            g.queue.push_back(m);
            self.held += 1;
            self.list(key.as_ref(), false);
        }
    }

    /// The key of `m`, whose message in flight (or deferred) is done with (finished,
    /// dead-lettered, dropped): its next message may go. True if that made a message
    /// deliverable.
    pub(crate) fn settled(&mut self, m: &Message) -> bool {
        let key = key_ref(m);
        let Some(g) = self.group(key.map(|k| &**k)) else {
            return false;
        };
        let was_busy = std::mem::replace(&mut g.busy, false);
        if g.queue.is_empty() {
            if was_busy {
                self.went_idle(key.is_some());
            }
            return false;
        }
        let key = key.cloned();
        self.list(key.as_ref(), false);
        true
    }

    /// A message of a busy key comes back (requeued, timed out, its consumer left): it is the
    /// key's next message again.
    pub(crate) fn put_back(&mut self, m: Message) {
        let key = key_ref(&m).cloned();
        let g = self.group_for_use(key.as_ref());
        g.busy = false;
        g.queue.push_front(m);
        self.held += 1;
        self.list(key.as_ref(), true);
    }

    /// `m` waits for a delay before it is its key's next message again (a requeue with a
    /// delay): the key stays busy meanwhile.
    pub(crate) fn hold(&mut self, m: &Message) {
        self.group_for_use(key_ref(m)).busy = true;
    }

    /// Everything held, for the shutdown flush or turning order off: each key's messages in
    /// order (keys in no particular order).
    pub(crate) fn drain(&mut self) -> Vec<Message> {
        self.runnable.clear();
        self.held = 0;
        self.idle = 0;
        let mut out: Vec<Message> = self.unkeyed.queue.drain(..).collect();
        for (_, mut g) in self.groups.drain() {
            out.extend(g.queue.drain(..));
        }
        out
    }

    /// Drop everything held (the channel was emptied); busy marks go too.
    pub(crate) fn clear(&mut self) {
        self.groups.clear();
        self.unkeyed = Group::default();
        self.runnable.clear();
        self.held = 0;
        self.idle = 0;
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
        assert!(o.settled(&a));
        let b = o.next(&mut q).expect("second");
        assert_eq!(b.id.0, 2);
        assert!(o.settled(&b));
        let c = o.next(&mut q).expect("third");
        assert_eq!(c.id.0, 3);
        assert!(!o.settled(&c));
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
        o.settled(&first[1]);
        assert_eq!(o.next(&mut q).map(|m| m.id.0), Some(5));
        // a requeue with a delay keeps the key busy
        o.hold(&first[0]);
        assert!(o.next(&mut q).is_none());
        o.put_back(first[0].clone());
        let again = o.next(&mut q).expect("a0 again");
        assert_eq!(again.id.0, 1);
        o.settled(&again);
        assert_eq!(o.next(&mut q).map(|m| m.id.0), Some(2));
    }

    #[test]
    fn idle_groups_are_reused_then_swept() {
        let n = (IDLE_SWEEP * 3) as u64;
        let keys: Vec<String> = (0..n).map(|i| format!("k{i}")).collect();
        let mut q = queue((0..n).map(|i| msg(i, Some(&keys[i as usize]))).collect());
        let mut o = Ordered::new(usize::MAX);
        let mut done = 0;
        while let Some(m) = o.next(&mut q) {
            o.settled(&m);
            done += 1;
        }
        assert_eq!(done, n);
        assert!(
            o.groups.len() <= IDLE_SWEEP * 2,
            "{} groups kept",
            o.groups.len()
        );
        assert_eq!(o.held(), 0);
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
        let first = o.next(&mut q).expect("first");
        assert_eq!(first.id.0, 1);
        // 2 and 3 fill the lookahead; 4 (another key) is behind them
        assert!(o.next(&mut q).is_none());
        assert_eq!(o.held(), 2);
        o.settled(&first);
        assert_eq!(o.next(&mut q).map(|m| m.id.0), Some(2));
        assert_eq!(o.next(&mut q).map(|m| m.id.0), Some(4));
        let rest = o.drain();
        assert_eq!(ids(&rest), [3]);
    }
}
