//! How a channel meets its disk queue: building the ready queue (`spill_queue.rs`) from the
//! configuration, placing what the disk writer read (ready or, for deferred messages, back
//! in the deferred queue with their remaining delay), and the shutdown flush of memory,
//! in-flight and deferred messages in nsqd's order.

use std::sync::{Arc, Weak};

use super::*;
use crate::disk_link::DiskLink;
use crate::disk_writer::{Accepted, AckPolicy, DiskWriter, Done, Final, Outgoing, QueueOwner};
use crate::durability::Durability;
use crate::queue_settings::EffectiveSettings;

/// The ready queue for a channel: memory only for `#ephemeral` channels (dropping beyond its
/// memory bound) and without a data path; memory + disk otherwise. Also returns the messages
/// an ordered channel kept for the head of its queue at the last shutdown (`head_store.rs`).
pub(super) fn ready_queue(
    cfg: &BrokerConfig,
    topic: &str,
    name: &str,
    ephemeral: bool,
    eff: &EffectiveSettings,
) -> (SpillQueue, Vec<(Message, Option<i64>)>) {
    let cap = eff.mem_queue_size;
    if ephemeral {
        return (SpillQueue::memory(cap, true), Vec::new());
    }
    let Some(dir) = &cfg.data_path else {
        return (SpillQueue::memory(cap, false), Vec::new());
    };
    let strict = cfg.durability == Durability::Strict;
    let policy = if strict {
        AckPolicy::OnFinish
    } else {
        AckPolicy::OnAccept
    };
    let (writer, mut opened) =
        DiskWriter::open(dir, &format!("{topic}:{name}"), cfg, strict, policy);
    // Head messages get their attributes back (their copies in the queue are skipped).
    let head = std::mem::take(&mut opened.head.msgs)
        .into_iter()
        .map(|(m, due)| match opened.attrs.remove(&m.id.0) {
            Some(a) => (m.with_attributes(Some(a)), due),
            None => (m, due),
        })
        .collect();
    let link = DiskLink::new(writer, strict, false, cfg.max_disk_bytes, opened);
    (SpillQueue::with_disk(cap, link), head)
}

/// Let the disk writer reach the channel.
pub(super) fn attach(ch: &Arc<Channel>) {
    let st = ch.state.lock();
    if let Some(d) = &st.ready.disk {
        let owner: Weak<dyn QueueOwner> = Arc::downgrade(ch) as Weak<dyn QueueOwner>;
        d.writer.set_owner(owner);
    }
}

/// A deadline as Unix nanoseconds.
pub(crate) fn unix_due(due: Instant) -> i64 {
    let left = due.saturating_duration_since(Instant::now());
    crate::now_unix_nanos().saturating_add(i64::try_from(left.as_nanos()).unwrap_or(i64::MAX))
}

/// A Unix-nanosecond due time as a deadline, if still in the future.
pub(crate) fn instant_of(due_ns: i64, now_ns: i64, now: Instant) -> Option<Instant> {
    (due_ns > now_ns).then(|| now + Duration::from_nanos(due_ns.abs_diff(now_ns)))
}

impl QueueOwner for Channel {
    fn with_queue(&self, f: &mut dyn FnMut(&mut SpillQueue)) {
        f(&mut self.state.lock().ready);
    }

    fn report(&self, done: Done) -> Accepted {
        let mut st = self.state.lock();
        let Some(placed) = st.ready.apply(done, true) else {
            return Accepted::Refused;
        };
        if self.is_deleted() {
            return Accepted::Taken(Ticket::done());
        }
        let (now_ns, now) = (crate::now_unix_nanos(), Instant::now());
        let mut ready = 0;
        let mut earliest: Option<Instant> = None;
        if placed.iter().any(|(m, _)| m.attributes().is_some()) {
            self.arrived(&mut st, true);
        }
        for (m, due) in placed {
            match due.and_then(|d| instant_of(d, now_ns, now)) {
                Some(at) => {
                    st.deferred.push(at, m);
                    earliest = Some(earliest.map_or(at, |e| e.min(at)));
                }
                None => {
                    st.ready.push_back(m);
                    ready += 1;
                }
            }
        }
        if let Some(at) = earliest {
            self.schedule(&mut st, at);
        }
        st.wake_waiting(ready);
        Accepted::Taken(Ticket::done())
    }
}

impl Channel {
    /// Shutdown: write what is still queued for the disk, then the messages in memory, in
    /// flight (attempts kept) and deferred (their due times saved beside the queue), and close
    /// the disk queue. Consumers are gone by now.
    pub(crate) fn close_queue(&self) {
        let Some((writer, outbox, promises)) = self.state.lock().ready.begin_close() else {
            return;
        };
        let mut first = Some((outbox, promises));
        writer.close(&mut || {
            let (writes, promises) = first.take().unwrap_or_default();
            let mut st = self.state.lock();
            let (attrs, skip) = st.ready.take_side_state();
            let mut fin = Final {
                writes,
                promises,
                dues: st.ready.take_dues(),
                attrs,
                skip,
                ..Final::default()
            };
            if st.ordered.is_some() {
                Self::flush_ordered(&mut st, &mut fin);
            } else {
                Self::flush_plain(&mut st, &mut fin);
            }
            fin
        });
    }

    /// nsqd's order: memory, in flight (attempts kept), deferred (due times kept).
    fn flush_plain(st: &mut ChannelState, fin: &mut Final) {
        fin.writes.extend(
            st.ready
                .drain_mem()
                .into_iter()
                .map(|msg| Outgoing { msg, due: None }),
        );
        fin.writes.extend(
            Self::drain_in_flight(st)
                .into_iter()
                .map(|msg| Outgoing { msg, due: None }),
        );
        for (at, msg) in st.deferred.drain_with_due() {
            let due = unix_due(at);
            fin.dues.push((msg.id.0, due));
            fin.writes.push(Outgoing {
                msg,
                due: Some(due),
            });
        }
    }

    /// An ordered channel: oldest first (in flight and deferred, each the head of its key;
    /// the keys' queues; memory), to the queue and to the head file.
    fn flush_ordered(st: &mut ChannelState, fin: &mut Final) {
        let mut head: Vec<Outgoing> = Self::drain_in_flight(st)
            .into_iter()
            .map(|msg| Outgoing { msg, due: None })
            .collect();
        for (at, msg) in st.deferred.drain_with_due() {
            let due = unix_due(at);
            fin.dues.push((msg.id.0, due));
            head.push(Outgoing {
                msg,
                due: Some(due),
            });
        }
        if let Some(o) = st.ordered.as_mut() {
            head.extend(o.drain().into_iter().map(|msg| Outgoing { msg, due: None }));
        }
        head.extend(
            st.ready
                .drain_mem()
                .into_iter()
                .map(|msg| Outgoing { msg, due: None }),
        );
        fin.writes.extend(head.iter().cloned());
        fin.head = head;
    }

    /// Every message in flight, in id order.
    fn drain_in_flight(st: &mut ChannelState) -> Vec<Message> {
        let mut in_flight: Vec<Message> = st.in_flight.drain().into_iter().map(|f| f.msg).collect();
        in_flight.sort_by_key(|m| m.id.0);
        in_flight
    }

    /// The `--sync-timeout` tick.
    pub(crate) fn tick_queue(&self) {
        self.state.lock().ready.tick();
    }
}
