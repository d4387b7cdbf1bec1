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
//!
//! The groups live in numbered slots (`ordered/slots.rs`), and a message handed out is
//! remembered by id with its slot: a FIN, requeue or timeout finds its key without reading
//! the message, whose memory is cold by then (profiles of 1,000 keys showed those reads and
//! the key hashing as the ordered path's main costs).

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use crate::message::Message;
use crate::spill_queue::SpillQueue;

mod slots;
pub(crate) use slots::Held;
use slots::Slots;

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct Ordered {
    /// The key groups, by slot number (`ordered/slots.rs`).
    slots: Slots,
    /// Slots whose head may be handed out, oldest first; entries may be stale.
    runnable: VecDeque<u32>,
    /// Messages handed out (in flight or deferred), by id: the slot of the key they hold busy.
    /// A FIN finds its key here without reading the message.
    busy: FxHashMap<u64, u32>,
    /// Messages held in groups (part of the channel's depth).
    held: usize,
    lookahead: usize,
}

impl Ordered {
    /// At most `lookahead` messages (at least 1) are taken ahead from the ready queue.
    pub(crate) fn new(lookahead: usize) -> Ordered {
        Ordered {
            slots: Slots::default(),
            runnable: VecDeque::new(),
            busy: FxHashMap::default(),
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

    /// List `slot` as runnable (at the front for a message put back).
    fn list(&mut self, slot: u32, front: bool) {
        let g = self.slots.get(slot);
        if !g.busy && !g.listed && !g.queue.is_empty() {
            g.listed = true;
            if front {
                self.runnable.push_front(slot);
            } else {
                self.runnable.push_back(slot);
            }
        }
    }

    /// `h` of `slot` is handed out: its key is busy until it is settled or put back.
    fn hand_out(&mut self, slot: u32, h: Held) -> Held {
        self.mark_busy(slot, h.msg.id.0);
        h
    }

    fn mark_busy(&mut self, slot: u32, id: u64) {
        self.slots.get(slot).busy = true;
        self.busy.insert(id, slot);
    }

    /// The next message that may be handed out, its key marked busy; None when every key in
    /// the lookahead is busy or nothing is queued.
    pub(crate) fn next(&mut self, ready: &mut SpillQueue) -> Option<Held> {
        loop {
            if let Some(slot) = self.runnable.pop_front() {
                let g = self.slots.get(slot);
                g.listed = false;
                if g.busy {
                    continue;
                }
                let Some(h) = g.queue.pop_front() else {
                    continue;
                };
                self.held -= 1;
                return Some(self.hand_out(slot, h));
            }
            if self.held >= self.lookahead {
                return None;
            }
            let h = Held::new(ready.pop_front()?);
            let slot = self.slots.slot_for_use(&h.msg);
            let g = self.slots.get(slot);
            if !g.busy && g.queue.is_empty() {
                // Nothing else is runnable and its key is free: it goes at once.
                return Some(self.hand_out(slot, h));
            }
            g.queue.push_back(h);
            self.held += 1;
            self.list(slot, false);
        }
    }

    /// The slot `m` holds busy (taken off the busy list), else its key's (made if needed): a
    /// message handed out before order was turned on, or deferred across a restart.
    fn slot_of_returning(&mut self, m: &Message) -> u32 {
        match self.busy.remove(&m.id.0) {
            Some(slot) => slot,
            None => self.slots.slot_for_use(m),
        }
    }

    /// Message `m`, in flight (or deferred), is done with (finished, dead-lettered, dropped):
    /// its key's next message may go. True if that made a message deliverable. A message this
    /// structure did not hand out changes nothing.
    pub(crate) fn settled(&mut self, m: &Message) -> bool {
        let Some(slot) = self.busy.remove(&m.id.0) else {
            return false;
        };
        let g = self.slots.get(slot);
        g.busy = false;
        if g.queue.is_empty() {
            if self.slots.went_idle(slot) {
                let slots = &self.slots;
                self.runnable.retain(|&s| !slots.is_free(s));
            }
            return false;
        }
        self.list(slot, false);
        true
    }

    /// A message of a busy key comes back (requeued, timed out, its consumer left): it is the
    /// key's next message again.
    pub(crate) fn put_back(&mut self, m: Message) {
        let slot = self.slot_of_returning(&m);
        let g = self.slots.get(slot);
        g.busy = false;
        g.queue.push_front(Held::new(m));
        self.held += 1;
        self.list(slot, true);
    }

    /// `m` waits for a delay before it is its key's next message again (a requeue with a
    /// delay): the key stays busy meanwhile.
    pub(crate) fn hold(&mut self, m: &Message) {
        let slot = self.slot_of_returning(m);
        self.mark_busy(slot, m.id.0);
    }

    /// Everything held, for the shutdown flush or turning order off: each key's messages in
    /// order (keys in no particular order). Busy marks go too.
    pub(crate) fn drain(&mut self) -> Vec<Message> {
        let out = self.slots.drain_messages();
        self.clear();
        out
    }

    /// Drop everything held (the channel was emptied); busy marks go too.
    pub(crate) fn clear(&mut self) {
        self.slots.clear();
        self.runnable.clear();
        self.busy.clear();
        self.held = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attrs::Attributes;
    use bytes::Bytes;
    use nsq_wire::MessageId;
    use std::sync::Arc;

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
        let a = o.next(&mut q).expect("first").msg;
        assert_eq!(a.id.0, 1);
        assert!(o.next(&mut q).is_none(), "1 is in flight");
        // requeued: back at the head
        o.put_back(a);
        let a = o.next(&mut q).expect("again").msg;
        assert_eq!(a.id.0, 1);
        assert!(o.settled(&a));
        let b = o.next(&mut q).expect("second").msg;
        assert_eq!(b.id.0, 2);
        assert!(o.settled(&b));
        let c = o.next(&mut q).expect("third").msg;
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
        let first: Vec<Message> = std::iter::from_fn(|| o.next(&mut q).map(|h| h.msg)).collect();
        assert_eq!(ids(&first), [1, 3, 4], "one per key");
        assert_eq!(o.held(), 2);
        o.settled(&first[1]);
        assert_eq!(o.next(&mut q).map(|h| h.msg.id.0), Some(5));
        // a requeue with a delay keeps the key busy
        o.hold(&first[0]);
        assert!(o.next(&mut q).is_none());
        o.put_back(first[0].clone());
        let again = o.next(&mut q).expect("a0 again").msg;
        assert_eq!(again.id.0, 1);
        o.settled(&again);
        assert_eq!(o.next(&mut q).map(|h| h.msg.id.0), Some(2));
    }

    #[test]
    fn idle_groups_are_reused_then_swept() {
        let n = (slots::IDLE_SWEEP * 3) as u64;
        let keys: Vec<String> = (0..n).map(|i| format!("k{i}")).collect();
        let mut q = queue((0..n).map(|i| msg(i, Some(&keys[i as usize]))).collect());
        let mut o = Ordered::new(usize::MAX);
        let mut done = 0;
        while let Some(Held { msg: m, .. }) = o.next(&mut q) {
            o.settled(&m);
            done += 1;
        }
        assert_eq!(done, n);
        assert!(
            o.slots.keys() <= slots::IDLE_SWEEP * 2,
            "{} groups kept",
            o.slots.keys()
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
        let first = o.next(&mut q).expect("first").msg;
        assert_eq!(first.id.0, 1);
        // 2 and 3 fill the lookahead; 4 (another key) is behind them
        assert!(o.next(&mut q).is_none());
        assert_eq!(o.held(), 2);
        o.settled(&first);
        assert_eq!(o.next(&mut q).map(|h| h.msg.id.0), Some(2));
        assert_eq!(o.next(&mut q).map(|h| h.msg.id.0), Some(4));
        let rest = o.drain();
        assert_eq!(ids(&rest), [3]);
    }

    fn keyed(id: u64, attrs: &Arc<Attributes>) -> Message {
        Message::new(MessageId(id), 0, 0, Bytes::from_static(b"x"))
            .expect("small")
            .with_attributes(Some(Arc::clone(attrs)))
    }

    #[test]
    fn one_publish_shares_a_slot_and_equal_keys_meet() {
        let a = Attributes {
            ordering_key: Some(Arc::from("a")),
            ..Attributes::default()
        }
        .into_shared()
        .expect("has a key");
        // 1-2 share attributes (one publish); 3 is another publish of the same key
        let mut q = queue(vec![
            keyed(1, &a),
            keyed(2, &a),
            msg(3, Some("a")),
            msg(4, None),
        ]);
        let mut o = Ordered::new(100);
        let first: Vec<Message> = std::iter::from_fn(|| o.next(&mut q).map(|h| h.msg)).collect();
        assert_eq!(ids(&first), [1, 4]);
        assert_eq!(o.slots.keys(), 1);
        assert!(o.settled(&first[0]));
        assert_eq!(o.next(&mut q).map(|h| h.msg.id.0), Some(2));
        assert!(o.next(&mut q).is_none(), "3 waits for 2");
    }

    #[test]
    fn fin_by_id_after_a_requeue_frees_the_key() {
        let mut q = queue(vec![
            msg(1, Some("a")),
            msg(2, Some("a")),
            msg(3, Some("b")),
        ]);
        let mut o = Ordered::new(100);
        let a1 = o.next(&mut q).expect("a1").msg;
        assert_eq!(o.next(&mut q).map(|h| h.msg.id.0), Some(3));
        // requeued twice, once with a delay, then finished
        o.put_back(a1.clone());
        let again = o.next(&mut q).expect("a1 again").msg;
        assert_eq!(again.id.0, 1);
        o.hold(&again);
        assert!(o.next(&mut q).is_none(), "a is held, b busy");
        o.put_back(again);
        let third = o.next(&mut q).expect("a1 a third time").msg;
        assert_eq!(third.id.0, 1);
        // a message never handed out (or already settled) frees nothing
        assert!(!o.settled(&msg(2, Some("a"))));
        assert!(o.next(&mut q).is_none());
        assert!(o.settled(&third));
        assert!(!o.settled(&third), "settled once");
        assert_eq!(o.next(&mut q).map(|h| h.msg.id.0), Some(2));
        assert!(o.busy.len() == 2, "a2 and b3 in flight");
    }

    #[test]
    fn freed_slots_are_reused_by_new_keys() {
        let n = slots::IDLE_SWEEP as u64 * 3;
        let mut q = queue((0..n).map(|i| msg(i, Some(&format!("k{i}")))).collect());
        let mut o = Ordered::new(usize::MAX);
        while let Some(Held { msg: m, .. }) = o.next(&mut q) {
            o.settled(&m);
        }
        let grown = o.slots.len();
        assert!(
            grown < n as usize / 2,
            "{grown} slots for {n} keys one after another"
        );
        // new keys, two messages each: they take freed slots, and keep their own order
        let more: Vec<Message> = (0..n)
            .flat_map(|i| {
                [
                    msg(n + 2 * i, Some(&format!("n{i}"))),
                    msg(n + 2 * i + 1, Some(&format!("n{i}"))),
                ]
            })
            .collect();
        let mut q = queue(more);
        let mut got = Vec::new();
        while let Some(Held { msg: m, .. }) = o.next(&mut q) {
            got.push(m.id.0);
            o.settled(&m);
        }
        assert_eq!(got.len() as u64, 2 * n);
        assert!(got.windows(2).all(|w| w[0] < w[1]), "each key in order");
        assert!(o.slots.len() <= grown, "freed slots reused");
        assert_eq!(o.held(), 0);
    }

    /// A small lookahead, many keys, FINs and requeues in a scrambled order: every key's
    /// messages come out in order, none twice in flight, and every message comes out.
    #[test]
    fn a_small_lookahead_keeps_order_and_starves_no_key() {
        let (keys, per) = (7u64, 40u64);
        let mut msgs = Vec::new();
        for i in 0..keys * per {
            // runs of 3 per key, keys in turn, key 0 twice as often
            let k = if (i / 3) % 2 == 0 { 0 } else { (i / 6) % keys };
            msgs.push((i, k));
        }
        let key_of: std::collections::HashMap<u64, u64> = msgs.iter().copied().collect();
        let mut q = queue(
            msgs.iter()
                .map(|&(i, k)| msg(i, Some(&format!("k{k}"))))
                .collect(),
        );
        let mut o = Ordered::new(4);
        let (mut out, mut flying, mut rng) = (Vec::new(), Vec::<Message>::new(), 7u64);
        let mut last: std::collections::HashMap<u64, u64> = Default::default();
        while out.len() < msgs.len() {
            while let Some(Held { msg: m, .. }) = o.next(&mut q) {
                let k = key_of[&m.id.0];
                assert!(
                    flying.iter().all(|f| key_of[&f.id.0] != k),
                    "one per key in flight"
                );
                flying.push(m);
            }
            assert!(!flying.is_empty(), "stalled with {} delivered", out.len());
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let m = flying.swap_remove((rng >> 33) as usize % flying.len());
            if (rng >> 20) % 5 == 0 {
                o.put_back(m);
                continue;
            }
            let k = key_of[&m.id.0];
            assert!(
                last.insert(k, m.id.0).is_none_or(|p| p < m.id.0),
                "order of k{k}"
            );
            out.push(m.id.0);
            o.settled(&m);
        }
        assert_eq!(out.len(), msgs.len());
        assert_eq!(o.held(), 0);
    }
}
