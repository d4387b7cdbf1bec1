//! The memory-then-disk queue: a channel's ready queue and a topic's backlog. Messages stay in
//! memory up to `--mem-queue-size` and spill to the queue's disk queue beyond it, behind one
//! small API so `channel.rs` and `topic.rs` need not know which.
//!
//! It lives inside its owner's lock. Memory is a [`RunQueue`] (`run_queue.rs`: runs of
//! publishes and single messages); the disk side ([`DiskLink`], `disk_link.rs`) is only
//! bookkeeping and an outbox: every disk operation runs on the queue's disk writer (`disk_writer.rs`), a blocking
//! thread woken when there is work, never on a reactor thread.
//!
//! - Default mode (nsqd's): a publish goes to memory while there is room and nothing older is
//!   on disk; otherwise to the outbox, which the writer appends to the disk queue, and the
//!   publish's ticket completes when that `write` returned. The writer refills memory from
//!   disk as consumers take messages, so order is kept.
//! - Strict mode: every publish goes to the outbox with a promise; the writer appends the whole
//!   outbox, fsyncs once (group commit), fulfils every promise, and hands the messages to the
//!   owner (they count as read in the disk queue without being read back). A message stays in
//!   the channel's disk queue until it is FIN'd (`ack_window.rs`).
//! - Without a data path, and for `#ephemeral` queues, it is memory only (ephemeral ones drop
//!   beyond `--mem-queue-size`, as nsqd).

use crate::disk_link::DiskLink;
use crate::disk_writer::Outgoing;
use crate::durability::Ticket;
use crate::error::BrokerError;
use crate::message::{Message, Published};
use crate::run_queue::{RunQueue, Span};
use crate::stats::DiskStats;

/// The result of a put.
#[derive(Debug)]
pub struct Put {
    /// Messages taken (memory or disk); an ephemeral queue drops the rest.
    pub accepted: usize,
    pub ticket: Ticket,
}

/// Memory first, then disk: see the module documentation.
#[derive(Debug, Default)]
pub struct SpillQueue {
    mem: RunQueue,
    cap: usize,
    /// Memory only, dropping beyond `cap` (`#ephemeral`).
    bounded: bool,
    pub(crate) disk: Option<Box<DiskLink>>,
}

impl SpillQueue {
    /// A memory-only queue: unbounded, or dropping beyond `cap` when `bounded`.
    pub fn memory(cap: usize, bounded: bool) -> SpillQueue {
        SpillQueue {
            mem: RunQueue::default(),
            cap,
            bounded,
            disk: None,
        }
    }

    pub(crate) fn with_disk(cap: usize, link: DiskLink) -> SpillQueue {
        SpillQueue {
            mem: RunQueue::default(),
            cap,
            bounded: false,
            disk: Some(Box::new(link)),
        }
    }

    /// Whether publishes wait for the disk (`--durability=strict` with a disk queue).
    pub fn is_strict(&self) -> bool {
        self.disk.as_ref().is_some_and(|d| d.strict)
    }

    /// Publish `msgs` (deferred until `due`, Unix ns, when given: only strict queues take
    /// deferred messages; the owner keeps them in memory otherwise). All or nothing: an error
    /// leaves the queue unchanged.
    pub fn put(&mut self, msgs: Vec<Message>, due: Option<i64>) -> Result<Put, BrokerError> {
        let n = msgs.len();
        let Some(d) = self.disk.as_deref_mut() else {
            let take = if self.bounded {
                self.cap.saturating_sub(self.mem.len()).min(n)
            } else {
                n
            };
            self.mem.extend(msgs.into_iter().take(take));
            return Ok(Put {
                accepted: take,
                ticket: Ticket::done(),
            });
        };
        if d.is_closed() {
            return Err(BrokerError::Exiting);
        }
        if d.strict || due.is_some() {
            let ticket = d.enqueue(msgs, due)?;
            return Ok(Put {
                accepted: n,
                ticket,
            });
        }
        let to_mem = if d.behind() {
            0
        } else {
            self.cap.saturating_sub(self.mem.len()).min(n)
        };
        if to_mem == n {
            self.mem.extend(msgs);
            return Ok(Put {
                accepted: n,
                ticket: Ticket::done(),
            });
        }
        let mut msgs = msgs;
        let overflow = msgs.split_off(to_mem);
        d.check_writable()?;
        let ticket = d.enqueue(overflow, None)?;
        self.mem.extend(msgs);
        Ok(Put {
            accepted: n,
            ticket,
        })
    }

    /// Publish all of `p`, as [`SpillQueue::put`] does, but kept in memory as one run: no
    /// per-message work unless it goes to disk.
    pub fn put_published(&mut self, p: &Published, due: Option<i64>) -> Result<Put, BrokerError> {
        self.put_run(p, 0..p.len(), due)
    }

    /// Messages `range` of `p`, as [`SpillQueue::put_published`] does with all of them.
    pub fn put_run(
        &mut self,
        p: &Published,
        range: std::ops::Range<usize>,
        due: Option<i64>,
    ) -> Result<Put, BrokerError> {
        let (start, end) = (range.start.min(p.len()), range.end.min(p.len()));
        let n = end.saturating_sub(start);
        let (to_mem, ticket) = match self.disk.as_deref_mut() {
            None if self.bounded => (self.cap.saturating_sub(self.mem.len()).min(n), None),
            None => (n, None),
            Some(d) if d.is_closed() => return Err(BrokerError::Exiting),
            Some(d) if d.strict || due.is_some() => {
                return self.put(p.messages(start, end).collect(), due)
            }
            Some(d) => {
                let to_mem = if d.behind() {
                    0
                } else {
                    self.cap.saturating_sub(self.mem.len()).min(n)
                };
                if to_mem < n {
                    d.check_writable()?;
                    let t = d.enqueue(p.messages(start + to_mem, end).collect(), None)?;
                    (to_mem, Some(t))
                } else {
                    (to_mem, None)
                }
            }
        };
        self.mem.push_run(p, start..start + to_mem);
        Ok(Put {
            accepted: if self.disk.is_some() { n } else { to_mem },
            ticket: ticket.unwrap_or_else(Ticket::done),
        })
    }

    pub fn push_back(&mut self, m: Message) {
        self.mem.push_back(m);
    }

    pub fn push_front(&mut self, m: Message) {
        self.mem.push_front(m);
    }

    /// The next message in memory; refills from disk below the low-water mark.
    pub fn pop_front(&mut self) -> Option<Message> {
        let m = self.mem.pop_front();
        if let Some(d) = self.disk.as_deref_mut() {
            d.after_pop(m.is_none(), self.mem.len(), self.cap);
        }
        m
    }

    /// Messages in memory.
    pub fn len(&self) -> usize {
        self.mem.len()
    }

    pub fn is_empty(&self) -> bool {
        self.mem.is_empty()
    }

    /// Take everything in memory (the shutdown flush).
    pub fn drain_mem(&mut self) -> Vec<Message> {
        self.mem.drain()
    }

    /// Take everything in memory, runs whole (a topic handing its backlog to its channels).
    pub fn drain_mem_spans(&mut self) -> Vec<Span> {
        self.mem.drain_spans()
    }

    /// Memory plus disk: the `depth` of `/stats`.
    pub fn depth(&self) -> i64 {
        self.mem.len() as i64 + self.backend_depth()
    }

    /// Deferred messages read back from disk after a restart are deferred again only when they
    /// are read; until then those whose time has not come (at `now_unix_ns`) are counted
    /// here, so that `/stats` shows them as deferred from the start.
    pub(crate) fn deferred_on_disk(&self, now_unix_ns: i64) -> usize {
        self.disk.as_ref().map_or(0, |d| {
            d.dues.values().filter(|&&due| due > now_unix_ns).count()
        })
    }

    /// Messages on disk or on their way there (`backend_depth`).
    pub fn backend_depth(&self) -> i64 {
        self.disk.as_ref().map_or(0, |d| d.backend_depth())
    }

    /// Anomalies of the disk queue worth showing in `/stats` (None when there are none).
    pub fn disk_stats(&self) -> Option<DiskStats> {
        self.disk.as_ref().and_then(|d| d.stats())
    }

    /// A message of this channel is done (FIN, or dropped by sampling): in strict mode its
    /// disk record may be acknowledged once everything before it is done too.
    pub fn finished(&mut self, id: u64) {
        if let Some(d) = self.disk.as_deref_mut() {
            d.finished(id);
        }
    }

    /// Drop everything: memory, outbox and the disk queue's files.
    pub fn empty(&mut self) {
        self.mem.clear();
        if let Some(d) = self.disk.as_deref_mut() {
            d.request_empty();
        }
    }

    /// The owner is deleted: drop everything. The caller removes the files with the returned
    /// writer's `delete_now` once it has released its lock.
    pub(crate) fn delete(&mut self) -> Option<std::sync::Arc<crate::disk_writer::DiskWriter>> {
        self.mem.clear();
        let d = self.disk.as_deref_mut()?;
        d.request_delete();
        Some(std::sync::Arc::clone(&d.writer))
    }

    /// The `--sync-timeout` tick: sync if anything changed, retry failed writes, push pending
    /// acknowledgements.
    pub fn tick(&mut self) {
        if let Some(d) = self.disk.as_deref_mut() {
            d.tick();
        }
    }

    /// The disk writer asks for work (under the owner's lock); `linger`: see
    /// `DiskLink::next_work`.
    pub(crate) fn next_work(&mut self, linger: bool) -> crate::disk_link::Next {
        let mem_len = self.mem.len();
        let cap = self.cap;
        match self.disk.as_deref_mut() {
            Some(d) => d.next_work(mem_len, cap, linger),
            None => crate::disk_link::Next::Stop,
        }
    }

    /// The disk writer reports a pass; returns the messages to place (in log order, with
    /// their due time if deferred), or None if the owner refused them (`accept` false: they
    /// will be read again).
    pub(crate) fn apply(
        &mut self,
        done: crate::disk_writer::Done,
        accept: bool,
    ) -> Option<Vec<(Message, Option<i64>)>> {
        match self.disk.as_deref_mut() {
            Some(d) => d.apply(done, accept),
            None => Some(Vec::new()),
        }
    }

    /// Shutdown: stop taking puts; what is still queued for the disk, in order. The caller
    /// adds memory, in-flight and deferred messages and hands everything to the writer.
    pub(crate) fn begin_close(
        &mut self,
    ) -> Option<(
        std::sync::Arc<crate::disk_writer::DiskWriter>,
        Vec<Outgoing>,
        Vec<crate::durability::Promise>,
    )> {
        let d = self.disk.as_deref_mut()?;
        let (outbox, promises) = d.close();
        Some((std::sync::Arc::clone(&d.writer), outbox, promises))
    }

    /// Change the memory bound (a `mem_queue_size` setting); what is in memory stays.
    pub fn set_cap(&mut self, cap: usize) {
        self.cap = cap;
    }

    /// Shutdown: attributes of messages on disk and copies of head messages to skip
    /// (`disk_link.rs`), for the side files.
    pub(crate) fn take_side_state(
        &mut self,
    ) -> (crate::attrs_store::AttrMap, crate::head_store::SkipMap) {
        self.disk
            .as_deref_mut()
            .map(|d| d.take_side_state())
            .unwrap_or_default()
    }

    /// Due times of deferred messages still on disk (for the deferred file at shutdown).
    pub(crate) fn take_dues(&mut self) -> Vec<(u64, i64)> {
        self.disk
            .as_deref_mut()
            .map(|d| d.dues.drain().collect())
            .unwrap_or_default()
    }

    /// Topic: whether loaded records may be fanned out now.
    pub(crate) fn set_drain(&mut self, on: bool) {
        if let Some(d) = self.disk.as_deref_mut() {
            d.set_drain(on);
        }
    }

    /// The writer could not get loaded records through (their writes failed): they were
    /// rewound and will be read again after the next tick.
    pub(crate) fn rewound(&mut self, n: usize) {
        if let Some(d) = self.disk.as_deref_mut() {
            d.rewound(n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use nsq_wire::MessageId;

    fn m(i: u64) -> Message {
        Message::new(MessageId(i), 0, 0, Bytes::from_static(b"x")).expect("small")
    }

    #[test]
    fn memory_queues() {
        let mut q = SpillQueue::memory(2, true);
        let p = q.put(vec![m(1), m(2), m(3)], None).expect("put");
        assert_eq!((p.accepted, q.len(), q.depth()), (2, 2, 2));
        assert!(p.ticket.is_done());
        let mut q = SpillQueue::memory(2, false);
        let _ = q.put(vec![m(1), m(2), m(3)], None).expect("put");
        assert_eq!(q.pop_front().map(|m| m.id.0), Some(1));
        assert_eq!((q.len(), q.backend_depth()), (2, 0));
    }
}
