//! The commands that change a stream's consumer groups: XGROUP's subcommands, XREADGROUP,
//! XACK, XCLAIM and XAUTOCLAIM, with Redis 7.0's rules (who owns a pending entry, delivery
//! times and counts, the group's read counter). Each runs inside
//! [`Keyspace::write_stream`](crate::Keyspace::write_stream) and returns its events; the
//! caller has checked that the key and the group exist where Redis requires them.

use crate::feed::Op;
use crate::stream::{Stream, StreamId};
use crate::streams::StreamError;

/// An entry a group read or a claim gives out: its id, and its fields (`None`: the entry was
/// deleted, or JUSTID asked for ids only).
pub type Delivered = (StreamId, Option<Box<[u8]>>);

/// XCLAIM's options.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClaimOptions {
    pub min_idle: u64,
    /// The delivery time to set (Unix ms, from IDLE or TIME); now when absent or bogus.
    pub delivered: Option<i64>,
    pub retry_count: Option<u64>,
    pub force: bool,
    pub just_id: bool,
    pub last_id: Option<StreamId>,
}

/// XAUTOCLAIM's arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AutoClaim {
    /// The first pending id looked at.
    pub start: StreamId,
    pub min_idle: u64,
    /// Entries claimed (or found deleted) at most; `count * 10` looked at at most.
    pub count: usize,
    pub just_id: bool,
}

/// XAUTOCLAIM's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Claim {
    /// Where the next call starts (0-0: the PEL was walked to its end).
    pub next: StreamId,
    pub claimed: Vec<Delivered>,
    /// Pending entries whose stream entry was gone: removed from the PEL.
    pub deleted: Vec<StreamId>,
}

impl Stream {
    /// The checks of XGROUP's subcommands: the key exists, and the group for those that need it.
    pub fn check_group(
        &self,
        key: &[u8],
        group: &[u8],
        needs_group: bool,
    ) -> Result<(), StreamError> {
        if !self.exists {
            return Err(StreamError::GroupNeedsKey);
        }
        if needs_group && !self.groups.contains_key(group) {
            return Err(StreamError::no_group_named(key, group));
        }
        Ok(())
    }

    /// XGROUP CREATE (`id` `None`: `$`, the last id).
    pub fn create_group(
        &mut self,
        name: &[u8],
        id: Option<StreamId>,
        entries_read: i64,
    ) -> Result<Vec<Op>, StreamError> {
        if self.groups.contains_key(name) {
            return Err(StreamError::BusyGroup);
        }
        self.materialize();
        let id = id.unwrap_or(self.last_id);
        self.put_group(name, id, entries_read);
        Ok(vec![Op::XgroupCreate])
    }

    /// XGROUP SETID (`id` `None`: `$`).
    pub fn set_group_id(
        &mut self,
        name: &[u8],
        id: Option<StreamId>,
        entries_read: i64,
    ) -> Vec<Op> {
        let id = id.unwrap_or(self.last_id);
        self.put_group(name, id, entries_read);
        vec![Op::XgroupSetid]
    }

    /// XGROUP DESTROY: whether the group was there.
    pub fn destroy_group(&mut self, name: &[u8]) -> (bool, Vec<Op>) {
        let gone = self.remove_group(name);
        (
            gone,
            if gone {
                vec![Op::XgroupDestroy]
            } else {
                Vec::new()
            },
        )
    }

    /// XGROUP CREATECONSUMER: whether it was created.
    pub fn create_consumer(&mut self, group: &[u8], name: &[u8], now: u64) -> (bool, Vec<Op>) {
        if self
            .group(group)
            .is_some_and(|g| g.consumer(name).is_some())
        {
            return (false, Vec::new());
        }
        self.put_consumer(group, name, now);
        (true, vec![Op::XgroupCreateconsumer])
    }

    /// XGROUP DELCONSUMER: how many entries the consumer had pending.
    pub fn delete_consumer(&mut self, group: &[u8], name: &[u8]) -> (usize, Vec<Op>) {
        match self.remove_consumer(group, name) {
            Some(n) => (n, vec![Op::XgroupDelconsumer]),
            None => (0, Vec::new()),
        }
    }

    /// Looks `name` up in `group` as a reader or claimer does (created if missing, its seen
    /// time refreshed); the event if created.
    fn seen(&mut self, group: &[u8], name: &[u8], now: u64, ops: &mut Vec<Op>) {
        if self.put_consumer(group, name, now) {
            ops.push(Op::XgroupCreateconsumer);
        }
    }

    /// XREADGROUP on one stream: with `history` the consumer's own pending entries after
    /// that id, else (`>`) entries never delivered to the group; at most `count` (0: all).
    /// `None` when `>` finds nothing new (the stream is left out of the reply).
    pub fn read_group(
        &mut self,
        group: &[u8],
        consumer: &[u8],
        history: Option<StreamId>,
        count: usize,
        no_ack: bool,
        now: u64,
    ) -> (Option<Vec<Delivered>>, Vec<Op>) {
        let mut ops = Vec::new();
        let limit = if count == 0 { usize::MAX } else { count };
        let Some(g) = self.group(group) else {
            return (None, ops);
        };
        if let Some(after) = history {
            self.seen(group, consumer, now, &mut ops);
            let Some(g) = self.group(group) else {
                return (None, ops);
            };
            let Some(start) = after.next() else {
                return (Some(Vec::new()), ops);
            };
            let owned: Vec<StreamId> = g
                .consumer(consumer)
                .map(|c| c.pending.range(start..).take(limit).copied().collect())
                .unwrap_or_default();
            let mut out = Vec::with_capacity(owned.len());
            for id in owned {
                let fields = self.get(id).map(Box::from);
                if fields.is_some() {
                    if let Some(n) = self.group(group).and_then(|g| g.pel.get(&id)) {
                        let count = n.count.saturating_add(1);
                        self.put_nack(group, id, consumer, now, count);
                    }
                }
                out.push((id, fields));
            }
            return (Some(out), ops);
        }
        let last = g.last_id;
        if self.last().is_none_or(|(top, _)| top <= last) {
            return (None, ops);
        }
        let Some(start) = last.next() else {
            return (None, ops);
        };
        self.seen(group, consumer, now, &mut ops);
        let fresh: Vec<Delivered> = self
            .range(start, StreamId::MAX, false)
            .take(limit)
            .map(|(id, f)| (id, Some(Box::from(f))))
            .collect();
        for (id, _) in &fresh {
            self.advance_group(group, *id);
            if !no_ack {
                self.put_nack(group, *id, consumer, now, 1);
            }
        }
        (Some(fresh), ops)
    }

    /// Moves a group's last id to `id`, keeping its read counter as Redis does.
    fn advance_group(&mut self, group: &[u8], id: StreamId) {
        let Some(g) = self.group(group) else {
            return;
        };
        if id <= g.last_id {
            return;
        }
        let read = if g.entries_read >= 0 && !self.has_tombstones_from(id) {
            g.entries_read.saturating_add(1)
        } else if self.entries_added > 0 {
            self.estimate_read(id).map_or(-1, |n| n as i64)
        } else {
            g.entries_read
        };
        self.put_group(group, id, read);
    }

    /// XACK: how many of `ids` were pending in `group`.
    pub fn ack(&mut self, group: &[u8], ids: &[StreamId]) -> u64 {
        ids.iter()
            .filter(|&&id| self.remove_nack(group, id))
            .count() as u64
    }

    /// XCLAIM: gives `consumer` the pending entries of `ids` idle long enough.
    pub fn claim(
        &mut self,
        group: &[u8],
        consumer: &[u8],
        ids: &[StreamId],
        o: ClaimOptions,
        now: u64,
    ) -> (Vec<Delivered>, Vec<Op>) {
        let mut ops = Vec::new();
        if let (Some(last), Some(g)) = (o.last_id, self.group(group)) {
            if last > g.last_id {
                let read = g.entries_read;
                self.put_group(group, last, read);
            }
        }
        let delivered = match o.delivered {
            Some(t) if t >= 0 && (t as u64) <= now => t as u64,
            _ => now,
        };
        let mut out = Vec::new();
        let mut known = false;
        for &id in ids {
            let nack = self.group(group).and_then(|g| g.pel.get(&id)).cloned();
            let Some(fields) = self.get(id).map(Box::from) else {
                if nack.is_some() {
                    self.remove_nack(group, id);
                }
                continue;
            };
            let count = match &nack {
                Some(n) if o.min_idle > 0 && now.saturating_sub(n.delivered) < o.min_idle => {
                    continue
                }
                Some(n) => n.count,
                None if o.force => 1,
                None => continue,
            };
            if !known {
                self.seen(group, consumer, now, &mut ops);
                known = true;
            }
            let count = match o.retry_count {
                Some(c) => c,
                None if o.just_id => count,
                None => count.saturating_add(1),
            };
            self.put_nack(group, id, consumer, delivered, count);
            out.push((id, (!o.just_id).then_some(fields)));
        }
        (out, ops)
    }

    /// XAUTOCLAIM: claims for `consumer` up to `count` pending entries from `start` idle for
    /// `min_idle` ms at least, looking at `count * 10` entries at most.
    pub fn auto_claim(
        &mut self,
        group: &[u8],
        consumer: &[u8],
        args: AutoClaim,
        now: u64,
    ) -> (Claim, Vec<Op>) {
        let AutoClaim {
            start,
            min_idle,
            count,
            just_id,
        } = args;
        let mut ops = Vec::new();
        let mut claim = Claim::default();
        let attempts = count.saturating_mul(10);
        let ids: Vec<StreamId> = self
            .group(group)
            .map(|g| {
                g.pel
                    .range(start..)
                    .map(|(id, _)| *id)
                    .take(attempts.saturating_add(1))
                    .collect()
            })
            .unwrap_or_default();
        let (mut left, mut tries, mut known) = (count, 0, false);
        for &id in &ids {
            if tries == attempts || left == 0 {
                claim.next = id;
                break;
            }
            tries += 1;
            let Some(n) = self.group(group).and_then(|g| g.pel.get(&id)).cloned() else {
                continue;
            };
            let Some(fields) = self.get(id).map(Box::from) else {
                self.remove_nack(group, id);
                claim.deleted.push(id);
                left -= 1;
                continue;
            };
            if min_idle > 0 && now.saturating_sub(n.delivered) < min_idle {
                continue;
            }
            if !known {
                self.seen(group, consumer, now, &mut ops);
                known = true;
            }
            let count = if just_id {
                n.count
            } else {
                n.count.saturating_add(1)
            };
            self.put_nack(group, id, consumer, now, count);
            claim.claimed.push((id, (!just_id).then_some(fields)));
            left -= 1;
        }
        (claim, ops)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::Fields;

    fn stream(n: u64) -> Stream {
        let mut s = Stream::default();
        s.materialize();
        for i in 1..=n {
            s.append(StreamId::new(i, 0), Fields::args(&[b"f", b"v"]));
        }
        s
    }

    #[test]
    fn a_group_reads_acks_and_counts() {
        let mut s = stream(3);
        assert_eq!(
            s.create_group(b"g", Some(StreamId::ZERO), -1),
            Ok(vec![Op::XgroupCreate])
        );
        assert_eq!(s.create_group(b"g", None, -1), Err(StreamError::BusyGroup));
        let (got, ops) = s.read_group(b"g", b"alice", None, 2, false, 100);
        assert_eq!(got.unwrap().len(), 2);
        assert_eq!(ops, vec![Op::XgroupCreateconsumer]);
        let g = s.group(b"g").unwrap();
        assert_eq!(
            (g.last_id, g.entries_read, g.pel().len()),
            (StreamId::new(2, 0), 2, 2)
        );
        assert_eq!(s.lag(s.group(b"g").unwrap()), Some(1));
        // History: the consumer's own pending entries, counted as delivered again.
        let (hist, _) = s.read_group(b"g", b"alice", Some(StreamId::ZERO), 0, false, 200);
        assert_eq!(hist.unwrap().len(), 2);
        assert_eq!(s.group(b"g").unwrap().pel()[&StreamId::new(1, 0)].count, 2);
        s.delete(StreamId::new(1, 0));
        let (hist, _) = s.read_group(b"g", b"alice", Some(StreamId::ZERO), 0, false, 300);
        assert_eq!(hist.unwrap()[0], (StreamId::new(1, 0), None));
        assert_eq!(s.ack(b"g", &[StreamId::new(2, 0), StreamId::new(9, 0)]), 1);
        let (rest, _) = s.read_group(b"g", b"bob", None, 0, true, 300);
        assert_eq!(rest.unwrap().len(), 1);
        assert_eq!(s.read_group(b"g", b"bob", None, 0, false, 300).0, None);
        assert_eq!(s.delete_consumer(b"g", b"alice").0, 1);
        assert!(s.destroy_group(b"g").0);
    }

    #[test]
    fn claims_move_ownership() {
        let mut s = stream(4);
        s.create_group(b"g", Some(StreamId::ZERO), -1).unwrap();
        s.read_group(b"g", b"alice", None, 0, false, 1_000);
        s.delete(StreamId::new(2, 0));
        let o = ClaimOptions {
            min_idle: 500,
            ..ClaimOptions::default()
        };
        let ids = [
            StreamId::new(1, 0),
            StreamId::new(2, 0),
            StreamId::new(9, 0),
        ];
        let (got, _) = s.claim(b"g", b"bob", &ids, o, 1_200);
        assert!(got.is_empty());
        let (got, ops) = s.claim(b"g", b"bob", &ids, o, 2_000);
        assert_eq!(got.len(), 1);
        assert_eq!(ops, vec![Op::XgroupCreateconsumer]);
        let g = s.group(b"g").unwrap();
        assert_eq!(g.pel()[&StreamId::new(1, 0)].count, 2);
        assert!(!g.pel().contains_key(&StreamId::new(2, 0)));
        let args = |start, count, just_id| AutoClaim {
            start,
            min_idle: 0,
            count,
            just_id,
        };
        let (c, _) = s.auto_claim(b"g", b"carol", args(StreamId::ZERO, 1, true), 3_000);
        assert_eq!(c.claimed, vec![(StreamId::new(1, 0), None)]);
        assert_eq!(c.next, StreamId::new(3, 0));
        s.delete(StreamId::new(3, 0));
        let (c, _) = s.auto_claim(b"g", b"carol", args(c.next, 10, false), 3_000);
        assert_eq!(c.deleted, vec![StreamId::new(3, 0)]);
        assert_eq!(c.claimed.len(), 1);
        assert_eq!(c.next, StreamId::ZERO);
    }
}
