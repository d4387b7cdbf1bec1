//! A stream's consumer groups: each group's last delivered id and read counter, its pending
//! entries list (PEL: every entry delivered and not yet acknowledged, with its owner, last
//! delivery time and delivery count) and its consumers, each with the ids it owns.
//!
//! The PEL is a `BTreeMap` by id (XPENDING and XAUTOCLAIM walk it in id order from a start);
//! each consumer keeps a `BTreeSet` of its own ids (XREADGROUP's history and XPENDING for one
//! consumer walk those). Every change goes through the mutators below, which journal it (see
//! `stream.rs`).

use std::collections::{BTreeMap, BTreeSet};

use crate::entry::cost_of;
use crate::stream::{Stream, StreamId};
use crate::stream_changes::Change;

/// A group's, a consumer's and a pending entry's fixed costs (estimated).
const GROUP_COST: usize = 96;
const CONSUMER_COST: usize = 64;
const NACK_COST: usize = 64 + 32;

/// An entry delivered to a consumer and not yet acknowledged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nack {
    pub consumer: Box<[u8]>,
    /// Unix ms of the last delivery.
    pub delivered: u64,
    pub count: u64,
}

/// A consumer of a group.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Consumer {
    /// Unix ms of the consumer's last read or claim.
    pub seen: u64,
    pub(crate) pending: BTreeSet<StreamId>,
}

impl Consumer {
    pub fn pending(&self) -> &BTreeSet<StreamId> {
        &self.pending
    }
}

/// A consumer group.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Group {
    pub last_id: StreamId,
    /// Entries read since the stream began, -1 when unknown (Redis's `entries_read`).
    pub entries_read: i64,
    pub(crate) pel: BTreeMap<StreamId, Nack>,
    pub(crate) consumers: BTreeMap<Box<[u8]>, Consumer>,
}

impl Group {
    pub fn pel(&self) -> &BTreeMap<StreamId, Nack> {
        &self.pel
    }

    pub fn consumers(&self) -> impl Iterator<Item = (&[u8], &Consumer)> {
        self.consumers.iter().map(|(n, c)| (&**n, c))
    }

    pub fn consumer(&self, name: &[u8]) -> Option<&Consumer> {
        self.consumers.get(name)
    }
}

impl Stream {
    /// Creates or updates a group's counters (its PEL and consumers stay).
    pub(crate) fn put_group(&mut self, name: &[u8], last_id: StreamId, entries_read: i64) {
        self.note(Change::Group(name, last_id, entries_read));
        let g = match self.groups.get_mut(name) {
            Some(g) => g,
            None => {
                self.bytes += GROUP_COST + cost_of(name.len());
                self.groups.entry(name.into()).or_default()
            }
        };
        g.last_id = last_id;
        g.entries_read = entries_read;
    }

    /// Removes a group; whether it was there.
    pub(crate) fn remove_group(&mut self, name: &[u8]) -> bool {
        let Some(g) = self.groups.remove(name) else {
            return false;
        };
        self.note(Change::GroupGone(name));
        let consumers: usize = g
            .consumers
            .keys()
            .map(|n| CONSUMER_COST + cost_of(n.len()))
            .sum();
        let nacks: usize = g.pel.values().map(|n| NACK_COST + n.consumer.len()).sum();
        self.bytes = self
            .bytes
            .saturating_sub(GROUP_COST + cost_of(name.len()) + consumers + nacks);
        true
    }

    /// Creates a consumer or sets when it was last seen; whether it was created.
    pub(crate) fn put_consumer(&mut self, group: &[u8], name: &[u8], seen: u64) -> bool {
        self.note(Change::Consumer(group, name, seen));
        let Some(g) = self.groups.get_mut(group) else {
            return false;
        };
        match g.consumers.get_mut(name) {
            Some(c) => {
                c.seen = seen;
                false
            }
            None => {
                g.consumers.insert(
                    name.into(),
                    Consumer {
                        seen,
                        pending: BTreeSet::new(),
                    },
                );
                self.bytes += CONSUMER_COST + cost_of(name.len());
                true
            }
        }
    }

    /// Removes a consumer and its pending entries; how many it had (`None`: no such one).
    pub(crate) fn remove_consumer(&mut self, group: &[u8], name: &[u8]) -> Option<usize> {
        let g = self.groups.get_mut(group)?;
        let c = g.consumers.remove(name)?;
        let mut freed = CONSUMER_COST + cost_of(name.len());
        for id in &c.pending {
            if let Some(n) = g.pel.remove(id) {
                freed += NACK_COST + n.consumer.len();
            }
        }
        self.bytes = self.bytes.saturating_sub(freed);
        self.note(Change::ConsumerGone(group, name));
        Some(c.pending.len())
    }

    /// Gives pending entry `id` of `group` to `consumer` (created if missing) with this
    /// delivery time and count.
    pub(crate) fn put_nack(
        &mut self,
        group: &[u8],
        id: StreamId,
        consumer: &[u8],
        delivered: u64,
        count: u64,
    ) {
        self.note(Change::Nack(group, id, consumer, delivered, count));
        let Some(g) = self.groups.get_mut(group) else {
            return;
        };
        let mut added = 0;
        if let Some(old) = g.pel.get(&id) {
            if *old.consumer != *consumer {
                if let Some(c) = g.consumers.get_mut(&old.consumer) {
                    c.pending.remove(&id);
                }
            }
            added -= (NACK_COST + old.consumer.len()) as isize;
        }
        if !g.consumers.contains_key(consumer) {
            added += (CONSUMER_COST + cost_of(consumer.len())) as isize;
        }
        let owner = g.consumers.entry(consumer.into()).or_default();
        owner.pending.insert(id);
        g.pel.insert(
            id,
            Nack {
                consumer: consumer.into(),
                delivered,
                count,
            },
        );
        added += (NACK_COST + consumer.len()) as isize;
        self.bytes = self.bytes.saturating_add_signed(added);
    }

    /// Removes pending entry `id` of `group`; whether it was there.
    pub(crate) fn remove_nack(&mut self, group: &[u8], id: StreamId) -> bool {
        let Some(g) = self.groups.get_mut(group) else {
            return false;
        };
        let Some(n) = g.pel.remove(&id) else {
            return false;
        };
        if let Some(c) = g.consumers.get_mut(&n.consumer) {
            c.pending.remove(&id);
        }
        self.bytes = self.bytes.saturating_sub(NACK_COST + n.consumer.len());
        self.note(Change::NackGone(group, id));
        true
    }
}
