//! In-flight and deferred messages of one channel.
//!
//! In flight: a hash map by id (FIN/REQ/TOUCH are O(1) lookups of a u64) plus an ordered set of
//! (deadline, id) so the channel's timer finds expired messages without scanning. Deferred: an
//! ordered map by (due time, sequence).

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::FxHashMap;
use tokio::time::Instant;

use crate::error::BrokerError;
use crate::message::Message;

#[derive(Debug)]
pub struct InFlight {
    pub msg: Message,
    pub client_id: u64,
    pub deadline: Instant,
    pub delivered_at: Instant,
}

#[derive(Debug, Default)]
pub struct InFlightTable {
    map: FxHashMap<u64, InFlight>,
    by_deadline: BTreeSet<(Instant, u64)>,
}

impl InFlightTable {
    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn insert(&mut self, f: InFlight) {
        let id = f.msg.id.0;
        self.by_deadline.insert((f.deadline, id));
        if let Some(old) = self.map.insert(id, f) {
            self.by_deadline.remove(&(old.deadline, id));
        }
    }

    /// Remove a message the client owns.
    pub fn take(&mut self, client_id: u64, id: u64) -> Result<InFlight, BrokerError> {
        let f = self.map.get(&id).ok_or(BrokerError::NotInFlight)?;
        if f.client_id != client_id {
            return Err(BrokerError::NotOwner);
        }
        let f = self.map.remove(&id).ok_or(BrokerError::NotInFlight)?;
        self.by_deadline.remove(&(f.deadline, id));
        Ok(f)
    }

    /// Move a message's deadline (TOUCH).
    pub fn set_deadline(
        &mut self,
        client_id: u64,
        id: u64,
        deadline: impl FnOnce(&InFlight) -> Instant,
    ) -> Result<(), BrokerError> {
        let f = self.map.get_mut(&id).ok_or(BrokerError::NotInFlight)?;
        if f.client_id != client_id {
            return Err(BrokerError::NotOwner);
        }
        let new = deadline(f);
        self.by_deadline.remove(&(f.deadline, id));
        f.deadline = new;
        self.by_deadline.insert((new, id));
        Ok(())
    }

    pub fn next_deadline(&self) -> Option<Instant> {
        self.by_deadline.first().map(|(d, _)| *d)
    }

    /// Remove and return every message whose deadline is at or before `now`.
    pub fn pop_expired(&mut self, now: Instant) -> Vec<InFlight> {
        let mut out = Vec::new();
        while let Some(&(d, id)) = self.by_deadline.first() {
            if d > now {
                break;
            }
            self.by_deadline.pop_first();
            if let Some(f) = self.map.remove(&id) {
                out.push(f);
            }
        }
        out
    }

    /// Remove every message owned by `client_id`, oldest delivery first.
    pub fn take_client(&mut self, client_id: u64) -> Vec<InFlight> {
        let ids: Vec<u64> = self
            .map
            .iter()
            .filter(|(_, f)| f.client_id == client_id)
            .map(|(id, _)| *id)
            .collect();
        let mut out: Vec<InFlight> = ids
            .into_iter()
            .filter_map(|id| self.map.remove(&id))
            .collect();
        for f in &out {
            self.by_deadline.remove(&(f.deadline, f.msg.id.0));
        }
        out.sort_by_key(|f| (f.delivered_at, f.msg.id.0));
        out
    }

    pub fn drain(&mut self) -> Vec<InFlight> {
        self.by_deadline.clear();
        self.map.drain().map(|(_, f)| f).collect()
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

    pub fn is_empty(&self) -> bool {
        self.by_due.is_empty()
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
        Message {
            id: MessageId(id),
            timestamp: 0,
            attempts: 1,
            body: Bytes::from_static(b"x"),
        }
    }

    #[test]
    fn in_flight_take_touch_expire() {
        let now = Instant::now();
        let mut t = InFlightTable::default();
        for id in 1..=3 {
            t.insert(InFlight {
                msg: msg(id),
                client_id: 7,
                deadline: now + Duration::from_secs(id),
                delivered_at: now,
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
        assert_eq!(t.take_client(7).len(), 1);
        assert!(t.is_empty());
        assert_eq!(t.next_deadline(), None);
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
