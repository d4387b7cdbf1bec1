//! In-flight and deferred messages of one channel.
//!
//! In flight: a hash map by id (FIN/REQ/TOUCH are O(1) lookups of a u64) plus the deadlines in
//! delivery order. With one msg_timeout per channel, deadlines arrive in non-decreasing order,
//! so they go into a ring (`VecDeque`) and the earliest is always at its front: O(1) to add,
//! nothing to do on FIN (the entry goes stale and is dropped when it reaches the front, or by a
//! compaction once stale entries outnumber live ones). A deadline that would break the order
//! (a client with a shorter msg_timeout, a TOUCH capped by max-msg-timeout) goes to a small
//! ordered set instead. An entry is live iff the map still holds its id with that deadline.
//! Deferred: an ordered map by (due time, sequence).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use rustc_hash::FxHashMap;
use tokio::time::Instant;

use crate::error::BrokerError;
use crate::message::Message;

#[derive(Debug)]
pub struct InFlight {
    pub msg: Message,
    pub consumer_id: u64,
    pub deadline: Instant,
    pub delivered_at: Instant,
    /// The channel's number for this delivery: a receipt names it, so a receipt from an
    /// earlier delivery of the same message is refused.
    pub delivery: u64,
}

#[derive(Debug, Default)]
pub struct InFlightTable {
    map: FxHashMap<u64, InFlight>,
    /// (deadline, id), deadlines non-decreasing front to back; may hold stale entries.
    ring: VecDeque<(Instant, u64)>,
    /// Deadlines that did not fit the ring's order; may hold stale entries.
    irregular: BTreeSet<(Instant, u64)>,
}

impl InFlightTable {
    pub fn len(&self) -> usize {
        self.map.len()
    }

    fn is_live(&self, deadline: Instant, id: u64) -> bool {
        self.map.get(&id).is_some_and(|f| f.deadline == deadline)
    }

    fn index_deadline(&mut self, deadline: Instant, id: u64) {
        match self.ring.back() {
            Some(&(last, _)) if deadline < last => {
                self.irregular.insert((deadline, id));
            }
            _ => self.ring.push_back((deadline, id)),
        }
    }

    pub fn insert(&mut self, f: InFlight) {
        let (id, deadline) = (f.msg.id.0, f.deadline);
        self.map.insert(id, f);
        self.index_deadline(deadline, id);
    }

    /// Drop stale entries at the front of the ring, and compact it when stale entries
    /// dominate (FINs out of delivery order leave them in the middle).
    fn trim(&mut self) {
        while let Some(&(d, id)) = self.ring.front() {
            if self.is_live(d, id) {
                break;
            }
            self.ring.pop_front();
        }
        self.compact_if_mostly_stale();
    }

    /// Amortised O(1): a full pass only once stale entries outnumber live ones.
    fn compact_if_mostly_stale(&mut self) {
        if self.ring.len() > 2 * self.map.len() + 1024 {
            let map = &self.map;
            self.ring
                .retain(|&(d, id)| map.get(&id).is_some_and(|f| f.deadline == d));
        }
    }

    /// Remove a message the consumer owns (the FIN path: one lookup, nothing else).
    pub fn take(&mut self, consumer_id: u64, id: u64) -> Result<InFlight, BrokerError> {
        // Not `ok_or`: the error would be built (and dropped) on every call.
        let Some(f) = self.map.remove(&id) else {
            return Err(BrokerError::NotInFlight);
        };
        if f.consumer_id != consumer_id {
            self.map.insert(id, f);
            return Err(BrokerError::NotOwner);
        }
        self.taken(id);
        Ok(f)
    }

    /// Remove the message if it is in flight as delivery number `delivery`.
    pub fn take_delivery(&mut self, id: u64, delivery: u64) -> Result<InFlight, BrokerError> {
        // Not `ok_or`: the error would be built (and dropped) on every call.
        let Some(f) = self.map.remove(&id) else {
            return Err(BrokerError::NotInFlight);
        };
        if f.delivery != delivery {
            self.map.insert(id, f);
            return Err(BrokerError::Redelivered);
        }
        self.taken(id);
        Ok(f)
    }

    /// `id` left the map: drop its deadline entry if it is the ring's front.
    #[inline]
    fn taken(&mut self, id: u64) {
        // FINs mostly come in delivery order: the finished entry is usually the ring's front.
        if self.ring.front().is_some_and(|&(_, front)| front == id) {
            self.ring.pop_front();
        }
        self.compact_if_mostly_stale();
    }

    /// Move a message's deadline (TOUCH).
    pub fn set_deadline(
        &mut self,
        consumer_id: u64,
        id: u64,
        deadline: impl FnOnce(&InFlight) -> Instant,
    ) -> Result<(), BrokerError> {
        self.set_deadline_if(id, deadline, |f| {
            if f.consumer_id == consumer_id {
                Ok(())
            } else {
                Err(BrokerError::NotOwner)
            }
        })
    }

    /// Move the deadline of delivery number `delivery` of a message (a TOUCH by receipt).
    pub fn set_deadline_of_delivery(
        &mut self,
        id: u64,
        delivery: u64,
        deadline: impl FnOnce(&InFlight) -> Instant,
    ) -> Result<(), BrokerError> {
        self.set_deadline_if(id, deadline, |f| same_delivery(f, delivery))
    }

    /// The entry of a message in flight, if any.
    pub fn get(&self, id: u64) -> Option<&InFlight> {
        self.map.get(&id)
    }

    fn set_deadline_if(
        &mut self,
        id: u64,
        deadline: impl FnOnce(&InFlight) -> Instant,
        check: impl FnOnce(&InFlight) -> Result<(), BrokerError>,
    ) -> Result<(), BrokerError> {
        // Not `ok_or`: the error would be built (and dropped) on every call.
        let Some(f) = self.map.get_mut(&id) else {
            return Err(BrokerError::NotInFlight);
        };
        check(f)?;
        let new = deadline(f);
        f.deadline = new;
        self.index_deadline(new, id);
        self.trim();
        Ok(())
    }

    pub fn next_deadline(&mut self) -> Option<Instant> {
        self.trim();
        while let Some(&(d, id)) = self.irregular.first() {
            if self.is_live(d, id) {
                break;
            }
            self.irregular.pop_first();
        }
        let ring = self.ring.front().map(|&(d, _)| d);
        let irregular = self.irregular.first().map(|&(d, _)| d);
        match (ring, irregular) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Remove and return every message whose deadline is at or before `now`.
    pub fn pop_expired(&mut self, now: Instant) -> Vec<InFlight> {
        let mut out = Vec::new();
        while let Some(&(d, id)) = self.ring.front() {
            if d > now {
                break;
            }
            self.ring.pop_front();
            if self.is_live(d, id) {
                out.extend(self.map.remove(&id));
            }
        }
        while let Some(&(d, id)) = self.irregular.first() {
            if d > now {
                break;
            }
            self.irregular.pop_first();
            if self.is_live(d, id) {
                out.extend(self.map.remove(&id));
            }
        }
        out
    }

    /// Remove every message owned by `consumer_id`, oldest delivery first.
    pub fn take_consumer(&mut self, consumer_id: u64) -> Vec<InFlight> {
        let ids: Vec<u64> = self
            .map
            .iter()
            .filter(|(_, f)| f.consumer_id == consumer_id)
            .map(|(id, _)| *id)
            .collect();
        let mut out: Vec<InFlight> = ids
            .into_iter()
            .filter_map(|id| self.map.remove(&id))
            .collect();
        out.sort_by_key(|f| (f.delivered_at, f.msg.id.0));
        self.trim();
        out
    }

    pub fn drain(&mut self) -> Vec<InFlight> {
        self.ring.clear();
        self.irregular.clear();
        self.map.drain().map(|(_, f)| f).collect()
    }
}

fn same_delivery(f: &InFlight, delivery: u64) -> Result<(), BrokerError> {
    if f.delivery == delivery {
        Ok(())
    } else {
        Err(BrokerError::Redelivered)
    }
}

#[derive(Debug, Default)]
pub struct DeferredQueue {
    by_due: BTreeMap<(Instant, u64), Message>,
    seq: u64,
}

impl DeferredQueue {
    pub fn len(&self) -> usize {
        self.by_due.len()
    }

    pub fn push(&mut self, due: Instant, msg: Message) {
        self.seq += 1;
        self.by_due.insert((due, self.seq), msg);
    }

    pub fn next_due(&self) -> Option<Instant> {
        self.by_due.first_key_value().map(|((d, _), _)| *d)
    }

    /// Remove and return the messages due at or before `now`, in due order.
    pub fn pop_due(&mut self, now: Instant) -> Vec<Message> {
        let mut out = Vec::new();
        while let Some(entry) = self.by_due.first_entry() {
            if entry.key().0 > now {
                break;
            }
            out.push(entry.remove());
        }
        out
    }

    pub fn drain(&mut self) -> Vec<Message> {
        std::mem::take(&mut self.by_due).into_values().collect()
    }

    /// Remove everything, with due times, in due order (shutdown keeps the delays).
    pub fn drain_with_due(&mut self) -> Vec<(Instant, Message)> {
        std::mem::take(&mut self.by_due)
            .into_iter()
            .map(|((due, _), m)| (due, m))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use nsq_wire::MessageId;
    use std::time::Duration;

    fn msg(id: u64) -> Message {
        Message::new(MessageId(id), 0, 1, Bytes::from_static(b"x")).expect("small")
    }

    #[test]
    fn in_flight_take_touch_expire() {
        let now = Instant::now();
        let mut t = InFlightTable::default();
        for id in 1..=3 {
            t.insert(InFlight {
                msg: msg(id),
                consumer_id: 7,
                deadline: now + Duration::from_secs(id),
                delivered_at: now,
                delivery: id,
            });
        }
        assert_eq!(t.take(8, 1).err(), Some(BrokerError::NotOwner));
        assert!(t.take(7, 1).is_ok());
        assert_eq!(t.take(7, 1).err(), Some(BrokerError::NotInFlight));
        t.set_deadline(7, 2, |_| now + Duration::from_secs(10))
            .expect("touch");
        assert_eq!(t.next_deadline(), Some(now + Duration::from_secs(3)));
        let exp = t.pop_expired(now + Duration::from_secs(5));
        assert_eq!(exp.len(), 1);
        assert_eq!(exp[0].msg.id.0, 3);
        assert_eq!(t.len(), 1);
        assert_eq!(t.take_consumer(7).len(), 1);
        assert_eq!(t.len(), 0);
        assert_eq!(t.next_deadline(), None);
    }

    #[test]
    fn out_of_order_deadlines_and_stale_entries() {
        let now = Instant::now();
        let mut t = InFlightTable::default();
        let at = |s: u64| now + Duration::from_secs(s);
        for (id, secs) in [(1, 10), (2, 20), (3, 5), (4, 30)] {
            t.insert(InFlight {
                msg: msg(id),
                consumer_id: 1,
                deadline: at(secs),
                delivered_at: now,
                delivery: id,
            });
        }
        // 3 went to the irregular set; the earliest deadline is still found.
        assert_eq!(t.next_deadline(), Some(at(5)));
        t.take(1, 3).expect("fin 3");
        t.take(1, 1).expect("fin 1");
        assert_eq!(t.next_deadline(), Some(at(20)));
        // TOUCH moves 2 later: its old ring entry is stale and must not expire it.
        t.set_deadline(1, 2, |_| at(40)).expect("touch");
        let ids: Vec<u64> = t.pop_expired(at(35)).iter().map(|f| f.msg.id.0).collect();
        assert_eq!(ids, vec![4]);
        assert_eq!(t.next_deadline(), Some(at(40)));
        assert_eq!(t.pop_expired(at(40)).len(), 1);
        assert_eq!(t.len(), 0);
    }

    #[test]
    fn finished_entries_do_not_accumulate() {
        let now = Instant::now();
        let mut t = InFlightTable::default();
        for id in 0..100_000u64 {
            t.insert(InFlight {
                msg: msg(id),
                consumer_id: 1,
                deadline: now + Duration::from_nanos(id),
                delivered_at: now,
                delivery: id,
            });
            // finish out of order: every other message one step late
            if id % 2 == 1 {
                t.take(1, id).expect("fin");
                t.take(1, id - 1).expect("fin");
            }
        }
        assert_eq!(t.len(), 0);
        assert!(
            t.ring.len() <= 1024 + 2,
            "ring kept {} stale entries",
            t.ring.len()
        );
    }

    #[test]
    fn deferred_in_due_order() {
        let now = Instant::now();
        let mut d = DeferredQueue::default();
        d.push(now + Duration::from_secs(2), msg(2));
        d.push(now + Duration::from_secs(1), msg(1));
        d.push(now + Duration::from_secs(1), msg(3));
        assert_eq!(d.next_due(), Some(now + Duration::from_secs(1)));
        let ids: Vec<u64> = d
            .pop_due(now + Duration::from_secs(1))
            .iter()
            .map(|m| m.id.0)
            .collect();
        assert_eq!(ids, vec![1, 3]);
        assert_eq!(d.len(), 1);
    }
}
