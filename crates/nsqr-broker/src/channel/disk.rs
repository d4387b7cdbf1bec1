//! How a channel meets its disk queue: building the ready queue (`spill_queue.rs`) from the
//! configuration, placing what the disk writer read (ready or, for deferred messages, back
//! in the deferred queue with their remaining delay), and the shutdown flush of memory,
//! in-flight and deferred messages in nsqd's order.

use std::sync::{Arc, Weak};

use super::*;
use crate::disk_writer::{Accepted, AckPolicy, DiskWriter, Done, Final, Outgoing, QueueOwner};
use crate::durability::Durability;
use crate::link::DiskLink;

/// The ready queue for a channel: memory only for `#ephemeral` channels (dropping beyond
/// `--mem-queue-size`) and without a data path; memory + disk otherwise.
pub(super) fn ready_queue(
    cfg: &BrokerConfig,
    topic: &str,
    name: &str,
    ephemeral: bool,
) -> SpillQueue {
    if ephemeral {
        return SpillQueue::memory(cfg.mem_queue_size, true);
    }
    let Some(dir) = &cfg.data_path else {
        return SpillQueue::memory(cfg.mem_queue_size, false);
    };
    let strict = cfg.durability == Durability::Strict;
    let policy = if strict {
        AckPolicy::OnFinish
    } else {
        AckPolicy::OnAccept
    };
    let (writer, opened) = DiskWriter::open(dir, &format!("{topic}:{name}"), cfg, strict, policy);
    let link = DiskLink::new(writer, strict, false, cfg.max_disk_bytes, opened);
    SpillQueue::with_disk(cfg.mem_queue_size, link)
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
            let (mut writes, promises) = first.take().unwrap_or_default();
            let mut st = self.state.lock();
            writes.extend(
                st.ready
                    .drain_mem()
                    .into_iter()
                    .map(|msg| Outgoing { msg, due: None }),
            );
            let mut in_flight: Vec<Message> =
                st.in_flight.drain().into_iter().map(|f| f.msg).collect();
            in_flight.sort_by_key(|m| m.id.0);
            writes.extend(in_flight.into_iter().map(|msg| Outgoing { msg, due: None }));
            let mut dues = st.ready.take_dues();
            for (at, msg) in st.deferred.drain_with_due() {
                let due = unix_due(at);
                dues.push((msg.id.0, due));
                writes.push(Outgoing {
                    msg,
                    due: Some(due),
                });
            }
            Final {
                writes,
                promises,
                dues,
            }
        });
    }

    /// The `--sync-timeout` tick.
    pub(crate) fn tick_queue(&self) {
        self.state.lock().ready.tick();
    }
}
