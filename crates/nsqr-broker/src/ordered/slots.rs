//! The key groups of an ordered channel, kept in numbered slots.
//!
//! Every step of an ordered channel touches a key's group: a message taken from the ready
//! queue joins it, a delivery makes it busy, a FIN frees it. Finding the group by hashing the
//! key's text each time means following the message to its attributes and its key (cold
//! memory by the time a FIN comes) and hashing and comparing the text. Here a group lives in
//! a `Vec` under a slot number, found by key only when a message is taken from the ready
//! queue, and even then only once per publish: the messages of one `/mpub` share one
//! attributes value, so the slot of the last one looked up is reused while the attributes are
//! the same. Everything after that (runnable list, messages in flight) names the slot.
//!
//! Slot 0 is the group of messages without a key. Idle groups (not busy, nothing queued) keep
//! their slot for a key that comes back, and are freed in one sweep once they are many; a
//! freed slot is reused by the next new key.

use std::collections::VecDeque;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::attrs::Attributes;
use crate::message::Message;

/// The slot of messages without an ordering key.
pub(super) const UNKEYED: u32 = 0;

/// Idle groups are freed in one sweep once they are this many and more than half of all.
pub(super) const IDLE_SWEEP: usize = 4096;

/// A message held in its key's group, with its expiry noted when it was taken from the ready
/// queue: by the time it is handed out its attributes are cold memory, and the expiry check
/// needs nothing else from them.
#[derive(Debug)]
pub(crate) struct Held {
    pub(crate) msg: Message,
    /// Unix nanoseconds after which it is never delivered (0: never), from its attributes.
    pub(crate) expires_at: i64,
}

impl Held {
    pub(crate) fn new(msg: Message) -> Held {
        let expires_at = msg.attributes().map_or(0, |a| a.expires_at);
        Held { msg, expires_at }
    }
}

#[derive(Debug, Default)]
pub(super) struct Group {
    /// Its key (None: the unkeyed group, or a free slot).
    key: Option<Arc<str>>,
    /// Messages of the key taken from the ready queue, in order.
    pub(super) queue: VecDeque<Held>,
    /// One of its messages is in flight or deferred.
    pub(super) busy: bool,
    /// Listed in the runnable list (not busy and something queued, when the entry is current).
    pub(super) listed: bool,
}

impl Group {
    pub(super) fn is_idle(&self) -> bool {
        !self.busy && self.queue.is_empty()
    }
}

/// See the module documentation.
#[derive(Debug)]
pub(super) struct Slots {
    groups: Vec<Group>,
    by_key: FxHashMap<Arc<str>, u32>,
    /// Freed slots, reused before the `Vec` grows.
    free: Vec<u32>,
    /// Keyed groups that are idle.
    idle: usize,
    /// The attributes last looked up and their slot (kept alive here, so the pointer cannot
    /// be reused by other attributes while it is compared).
    last: Option<(Arc<Attributes>, u32)>,
}

impl Default for Slots {
    fn default() -> Slots {
        Slots {
            groups: vec![Group::default()],
            by_key: FxHashMap::default(),
            free: Vec::new(),
            idle: 0,
            last: None,
        }
    }
}

impl Slots {
    /// The group in `slot` (a number this table handed out).
    #[inline]
    pub(super) fn get(&mut self, slot: u32) -> &mut Group {
        // Slots are only ever numbers this table made; the unkeyed group is the fallback.
        let i = if (slot as usize) < self.groups.len() {
            slot as usize
        } else {
            0
        };
        &mut self.groups[i]
    }

    /// Slots made so far (in use, idle or free).
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.groups.len()
    }

    /// Keyed groups in use or idle (not free).
    #[cfg(test)]
    pub(super) fn keys(&self) -> usize {
        self.by_key.len()
    }

    /// The slot of `m`'s key, made if needed; if its group was idle it no longer counts as
    /// idle (the caller is about to queue a message in it or make it busy).
    #[inline]
    pub(super) fn slot_for_use(&mut self, m: &Message) -> u32 {
        let slot = self.slot_of(m);
        if slot != UNKEYED && self.get(slot).is_idle() {
            self.idle = self.idle.saturating_sub(1);
        }
        slot
    }

    fn slot_of(&mut self, m: &Message) -> u32 {
        let Some(attrs) = m.attributes() else {
            return UNKEYED;
        };
        if let Some((last, slot)) = &self.last {
            if Arc::ptr_eq(last, attrs) {
                return *slot;
            }
        }
        let slot = match &attrs.ordering_key {
            None => UNKEYED,
            Some(k) => match self.by_key.get(&**k) {
                Some(&s) => s,
                None => self.make(k),
            },
        };
        self.last = Some((Arc::clone(attrs), slot));
        slot
    }

    /// A slot for a new key; its group starts idle (counted as such).
    fn make(&mut self, key: &Arc<str>) -> u32 {
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.groups.push(Group::default());
                (self.groups.len() - 1) as u32
            }
        };
        self.get(slot).key = Some(Arc::clone(key));
        self.by_key.insert(Arc::clone(key), slot);
        self.idle += 1;
        slot
    }

    /// The group in `slot` became idle: count it, and free idle groups once there are many.
    /// True if a sweep freed slots (entries naming them elsewhere are stale now).
    pub(super) fn went_idle(&mut self, slot: u32) -> bool {
        if slot == UNKEYED {
            return false;
        }
        self.idle += 1;
        if self.idle > IDLE_SWEEP && self.idle * 2 > self.by_key.len() {
            self.sweep();
            return true;
        }
        false
    }

    fn sweep(&mut self) {
        self.last = None;
        for (i, g) in self.groups.iter_mut().enumerate().skip(1) {
            if g.is_idle() {
                if let Some(k) = g.key.take() {
                    self.by_key.remove(&k);
                    self.free.push(i as u32);
                }
                g.listed = false;
            }
        }
        self.idle = 0;
    }

    /// True if `slot` holds no group (freed by a sweep).
    pub(super) fn is_free(&self, slot: u32) -> bool {
        slot != UNKEYED
            && self
                .groups
                .get(slot as usize)
                .is_none_or(|g| g.key.is_none())
    }

    /// Every queued message, each key's in order (keys in slot order); groups stay.
    pub(super) fn drain_messages(&mut self) -> Vec<Message> {
        let mut out = Vec::new();
        for g in &mut self.groups {
            out.extend(g.queue.drain(..).map(|h| h.msg));
            g.listed = false;
        }
        out
    }

    /// Forget every group.
    pub(super) fn clear(&mut self) {
        *self = Slots::default();
    }
}
