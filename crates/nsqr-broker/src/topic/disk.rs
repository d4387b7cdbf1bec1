//! How a topic meets its disk queue: the backlog queue built from the configuration, fanning
//! out what the disk writer reads once the topic has receivers and is not paused (refusing it
//! otherwise, so it is read again later), to a replicated topic's backlog heir alone while it
//! has one, and the shutdown flush of the backlog in memory.

use std::sync::Weak;

use super::*;
use crate::channel::{instant_of, unix_due};
use crate::disk_link::DiskLink;
use crate::disk_writer::{Accepted, AckPolicy, DiskWriter, Done, Final, Outgoing, QueueOwner};
use crate::durability::Durability;

/// The backlog of a topic: memory only for `#ephemeral` topics (dropping beyond
/// `--mem-queue-size`) and without a data path; memory + disk otherwise. In strict mode nothing
/// waits in memory: the backlog is on disk before the publish is acknowledged.
pub(super) fn backlog_queue(cfg: &BrokerConfig, name: &str, ephemeral: bool) -> SpillQueue {
    if ephemeral {
        return SpillQueue::memory(cfg.mem_queue_size, true);
    }
    let Some(dir) = &cfg.data_path else {
        return SpillQueue::memory(cfg.mem_queue_size, false);
    };
    let strict = cfg.durability == Durability::Strict;
    let (writer, opened) = DiskWriter::open(dir, name, cfg, strict, AckPolicy::AfterTicket);
    let link = DiskLink::new(writer, strict, true, cfg.max_disk_bytes, opened);
    SpillQueue::with_disk(if strict { 0 } else { cfg.mem_queue_size }, link)
}

pub(super) fn attach(t: &Arc<Topic>) {
    let st = t.state.lock();
    if let Some(d) = &st.backlog.disk {
        let owner: Weak<dyn QueueOwner> = Arc::downgrade(t) as Weak<dyn QueueOwner>;
        d.writer.set_owner(owner);
    }
}

impl QueueOwner for Topic {
    fn with_queue(&self, f: &mut dyn FnMut(&mut SpillQueue)) {
        let mut st = self.state.lock();
        let drain = !st.receivers.is_empty() && !st.paused && !st.held && !self.is_deleted();
        st.backlog.set_drain(drain);
        f(&mut st.backlog);
    }

    fn report(&self, done: Done) -> Accepted {
        let mut st = self.state.lock();
        let drain = !st.receivers.is_empty() && !st.paused && !st.held && !self.is_deleted();
        let Some(placed) = st.backlog.apply(done, drain) else {
            return Accepted::Refused;
        };
        if placed.is_empty() {
            return Accepted::Taken(Ticket::done());
        }
        let (now_ns, now) = (crate::now_unix_nanos(), Instant::now());
        let mut ticket = Ticket::done();
        let mut batch = Vec::new();
        let mut result = Ok(());
        for (m, due) in placed {
            match due.and_then(|d| instant_of(d, now_ns, now)) {
                Some(at) => match drain_to(&st, vec![m], Some(at)) {
                    Ok(t) => ticket.merge(t),
                    Err(e) => result = Err(e),
                },
                None => batch.push(m),
            }
        }
        if !batch.is_empty() {
            match drain_to(&st, batch, None) {
                Ok(t) => ticket.merge(t),
                Err(e) => result = Err(e),
            }
        }
        if st.backlog.depth() == 0 {
            st.heir = None;
        }
        match result {
            Ok(()) => Accepted::Taken(ticket),
            Err(e) => {
                tracing::error!(
                    "TOPIC({}): backlog could not reach every channel - {e}",
                    self.name
                );
                Accepted::Taken(Ticket::failed(match e {
                    BrokerError::Disk(d) => d,
                    _ => crate::durability::DiskError::Exiting,
                }))
            }
        }
    }
}

/// Fans out what the disk queue read: to the backlog's heir if it has one, else to every
/// receiver.
fn drain_to(
    st: &TopicState,
    msgs: Vec<Message>,
    due: Option<Instant>,
) -> Result<Ticket, BrokerError> {
    match st.heir.as_ref().and_then(|h| st.receivers.get(h)) {
        Some(heir) => fan_out(std::iter::once(heir), msgs, due),
        None => fan_out(st.receivers.values(), msgs, due),
    }
}

impl Topic {
    /// Shutdown (after the channels): write what is still queued for the disk, then the
    /// backlog in memory and the deferred backlog (due times saved beside the queue).
    pub(crate) fn close_queue(&self) {
        let Some((writer, outbox, promises)) = self.state.lock().backlog.begin_close() else {
            return;
        };
        let mut first = Some((outbox, promises));
        writer.close(&mut || {
            let (mut writes, promises) = first.take().unwrap_or_default();
            let mut st = self.state.lock();
            writes.extend(
                st.backlog
                    .drain_mem()
                    .into_iter()
                    .map(|msg| Outgoing { msg, due: None }),
            );
            let mut dues = st.backlog.take_dues();
            for (msg, at) in std::mem::take(&mut st.deferred) {
                let due = unix_due(at);
                dues.push((msg.id.0, due));
                writes.push(Outgoing {
                    msg,
                    due: Some(due),
                });
            }
            let (attrs, _) = st.backlog.take_side_state();
            Final {
                writes,
                promises,
                dues,
                attrs,
                ..Final::default()
            }
        });
    }

    /// The `--sync-timeout` tick for the topic and its channels.
    pub(crate) fn tick_queues(&self) {
        let channels: Vec<Arc<Channel>> = {
            let mut st = self.state.lock();
            st.backlog.tick();
            st.channels.values().cloned().collect()
        };
        for ch in channels {
            ch.tick_queue();
        }
    }

    /// Shutdown of the topic's channels, then of the topic itself.
    pub(crate) fn close_queues(&self) {
        let channels: Vec<Arc<Channel>> = self.state.lock().channels.values().cloned().collect();
        for ch in channels {
            ch.close_queue();
        }
        self.close_queue();
    }
}
