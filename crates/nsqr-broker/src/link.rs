//! The owner's side of a disk queue: what is on its way to disk (the outbox and its promises),
//! what the disk holds unread, and what the disk writer should do next. All of it lives inside
//! the owner's lock, so a publish decides "memory or disk" against a consistent picture, and
//! the writer's report (accounting + the messages it read) is applied in one critical section.
//!
//! Nothing here does IO. The writer (`disk_writer.rs`) takes a [`Work`] with [`DiskLink::take_work`]
//! and hands back a [`Done`] to [`DiskLink::apply`].

use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::ack_window::AckWindow;
use crate::disk_writer::{record_len, DiskWriter, Done, Outgoing, Work};
use crate::durability::{promise, DiskError, Promise, Ticket};
use crate::error::BrokerError;
use crate::message::Message;
use crate::stats::DiskStats;

/// Records a topic's writer reads per pass to fan out.
const TOPIC_CHUNK: usize = 1024;
/// A starved consumer with a tiny (or zero) `--mem-queue-size` still gets this many at once.
const READ_AHEAD: usize = 256;
/// Records read per pass at most (the owner's lock is held while they are placed).
const MAX_LOAD: usize = 4096;
/// Finished records that make a strict channel wake its writer to acknowledge them.
const ACK_KICK: usize = 1024;

#[derive(Debug)]
pub(crate) struct DiskLink {
    pub writer: Arc<DiskWriter>,
    pub strict: bool,
    /// A topic's queue: records read are fanned out, never kept at write time.
    topic: bool,
    max_disk_bytes: u64,
    outbox: Vec<Outgoing>,
    outbox_bytes: u64,
    promises: Vec<Promise>,
    in_transit: usize,
    in_transit_bytes: u64,
    /// Unread records on disk, as of the writer's last report.
    unread: u64,
    /// Bytes of the data files, as of the writer's last report.
    bytes: u64,
    scheduled: bool,
    /// A consumer found memory empty while records wait on disk.
    starved: bool,
    drain: bool,
    /// The last write failed (cleared by the next successful one).
    failed: Option<String>,
    retry: bool,
    /// Reading failed (or its records could not be passed on): wait for the next tick.
    read_backoff: bool,
    epoch: u64,
    empty_requested: bool,
    sync_requested: bool,
    needs_sync: bool,
    pub closed: bool,
    window: Option<AckWindow>,
    /// Due times (Unix ns) of deferred messages that are on disk.
    pub dues: FxHashMap<u64, i64>,
    stats: DiskStats,
}

/// What a freshly opened disk queue holds.
#[derive(Debug, Default)]
pub(crate) struct Opened {
    pub unread: u64,
    pub bytes: u64,
    pub dues: FxHashMap<u64, i64>,
    pub stats: DiskStats,
}

impl DiskLink {
    pub fn new(
        writer: Arc<DiskWriter>,
        strict: bool,
        topic: bool,
        max_disk_bytes: u64,
        opened: Opened,
    ) -> DiskLink {
        DiskLink {
            window: (strict && !topic).then(AckWindow::default),
            writer,
            strict,
            topic,
            max_disk_bytes,
            outbox: Vec::new(),
            outbox_bytes: 0,
            promises: Vec::new(),
            in_transit: 0,
            in_transit_bytes: 0,
            unread: opened.unread,
            bytes: opened.bytes,
            scheduled: false,
            starved: false,
            drain: false,
            failed: None,
            retry: false,
            read_backoff: false,
            epoch: 0,
            empty_requested: false,
            sync_requested: false,
            needs_sync: false,
            closed: false,
            dues: opened.dues,
            stats: opened.stats,
        }
    }

    /// Anything older than a new message is on disk or on its way there.
    pub fn behind(&self) -> bool {
        self.unread > 0 || self.in_transit > 0 || !self.outbox.is_empty()
    }

    pub fn backend_depth(&self) -> i64 {
        (self.unread + self.in_transit as u64 + self.outbox.len() as u64) as i64
    }

    pub fn stats(&self) -> Option<DiskStats> {
        let mut s = self.stats.clone();
        s.last_write_error = self.failed.clone();
        s.is_notable().then_some(s)
    }

    /// Default mode: an overflow is refused while the disk is failing (what was accepted
    /// before stays queued and is retried).
    pub fn check_writable(&self) -> Result<(), BrokerError> {
        match &self.failed {
            Some(reason) if !self.strict => Err(BrokerError::Disk(DiskError::Unavailable {
                queue: self.writer.name.clone(),
                reason: reason.clone(),
            })),
            _ => Ok(()),
        }
    }

    /// Queue `msgs` for the writer. The returned ticket completes when the writer's `write`
    /// of them returned (default mode: the kernel has them, so a killed process keeps them)
    /// or, in strict mode, when they are fsynced. Refused beyond `--max-disk-bytes`.
    pub fn enqueue(&mut self, msgs: Vec<Message>, due: Option<i64>) -> Result<Ticket, BrokerError> {
        let needed: u64 = msgs.iter().map(|m| record_len(m.body().len())).sum();
        if self.max_disk_bytes > 0 {
            let used = self.bytes + self.outbox_bytes + self.in_transit_bytes;
            if used + needed > self.max_disk_bytes {
                return Err(BrokerError::Disk(DiskError::Full {
                    queue: self.writer.name.clone(),
                    max_bytes: self.max_disk_bytes,
                    used_bytes: used,
                }));
            }
        }
        if let Some(due) = due {
            for m in &msgs {
                self.dues.insert(m.id.0, due);
            }
        }
        self.outbox_bytes += needed;
        self.outbox
            .extend(msgs.into_iter().map(|msg| Outgoing { msg, due }));
        let (p, c) = promise();
        self.promises.push(p);
        if self.failed.is_none() || self.strict {
            self.kick();
        }
        Ok(Ticket::waiting(c))
    }

    /// Start the writer unless it is running.
    pub fn kick(&mut self) {
        if !self.scheduled && !self.closed {
            self.scheduled = true;
            self.writer.spawn();
        }
    }

    pub fn after_pop(&mut self, was_empty: bool, len: usize, cap: usize) {
        if was_empty {
            // Even with nothing on disk yet: what lands there next (a topic handing on its
            // backlog to a new channel with --mem-queue-size=0) must be read for this consumer.
            self.starved = true;
        }
        if self.read_backoff || !self.behind() {
            return;
        }
        if self.starved || len + (cap / 4).max(1) <= cap {
            self.kick();
        }
    }

    pub fn finished(&mut self, id: u64) {
        if let Some(w) = self.window.as_mut() {
            w.finish(id);
            if w.ready() >= ACK_KICK {
                self.kick();
            }
        }
    }

    pub fn request_empty(&mut self) {
        self.epoch += 1;
        self.empty_requested = true;
        self.drop_queued();
        self.unread = 0;
        self.dues.clear();
        self.starved = false;
        if let Some(w) = self.window.as_mut() {
            w.reset(0);
        }
        self.kick();
    }

    /// No more puts or passes; the owner removes the files (`DiskWriter::delete_now`).
    pub fn request_delete(&mut self) {
        self.epoch += 1;
        self.closed = true;
        self.drop_queued();
        self.unread = 0;
        self.dues.clear();
    }

    /// Messages not yet written are dropped (emptied or deleted): their publishers are done.
    fn drop_queued(&mut self) {
        self.outbox.clear();
        self.outbox_bytes = 0;
        for p in self.promises.drain(..) {
            let _ = p.send(Ok(()));
        }
    }

    pub fn tick(&mut self) {
        let acks = self.window.as_ref().is_some_and(|w| w.ready() > 0);
        if self.failed.is_some() {
            if self.outbox.is_empty() {
                // Nothing waits to be retried (a channel kept it in memory): let the next
                // overflow try the disk again.
                self.failed = None;
            } else {
                self.retry = true;
            }
        }
        self.read_backoff = false;
        if self.needs_sync {
            self.sync_requested = true;
        }
        if acks || self.sync_requested || self.retry || (self.behind() && self.drain) {
            self.kick();
        }
    }

    pub fn set_drain(&mut self, on: bool) {
        self.drain = on;
        if on && self.behind() && !self.read_backoff {
            self.kick();
        }
    }

    pub fn rewound(&mut self, n: usize) {
        self.unread += n as u64;
        self.read_backoff = true;
    }

    /// Shutdown: no more puts or writer passes; returns what was still queued.
    pub fn close(&mut self) -> (Vec<Outgoing>, Vec<Promise>) {
        self.closed = true;
        self.outbox_bytes = 0;
        (
            std::mem::take(&mut self.outbox),
            std::mem::take(&mut self.promises),
        )
    }

    /// The next pass for the writer, or None (and the writer stops) when there is nothing to do.
    pub fn take_work(&mut self, mem_len: usize, cap: usize) -> Option<Work> {
        if self.closed {
            self.scheduled = false;
            return None;
        }
        let mut w = Work {
            epoch: self.epoch,
            ..Work::default()
        };
        w.empty = std::mem::take(&mut self.empty_requested);
        if !self.outbox.is_empty() && (self.failed.is_none() || self.strict || self.retry) {
            self.retry = false;
            w.writes = std::mem::take(&mut self.outbox);
            w.promises = std::mem::take(&mut self.promises);
            self.in_transit = w.writes.len();
            self.in_transit_bytes = std::mem::take(&mut self.outbox_bytes);
            if self.unread == 0 && !self.topic {
                w.consume = w.writes.len().min(cap.saturating_sub(mem_len));
                if self.strict && self.starved {
                    w.consume = w.consume.max(w.writes.len().min(READ_AHEAD));
                }
            }
        }
        w.acks = self.window.as_mut().map_or(0, AckWindow::take_ready);
        let backlog = self.unread > 0 || w.writes.len() > w.consume;
        if backlog && !self.read_backoff {
            w.load = if self.topic {
                if self.drain {
                    TOPIC_CHUNK
                } else {
                    0
                }
            } else {
                let target = if self.starved {
                    cap.max(READ_AHEAD)
                } else {
                    cap
                };
                target.saturating_sub(mem_len + w.consume).min(MAX_LOAD)
            };
        }
        w.sync = std::mem::take(&mut self.sync_requested);
        if !w.empty && w.writes.is_empty() && w.acks == 0 && w.load == 0 && !w.sync {
            self.scheduled = false;
            return None;
        }
        Some(w)
    }

    /// Apply a pass's report; see `SpillQueue::apply`.
    pub fn apply(&mut self, done: Done, accept: bool) -> Option<Vec<(Message, Option<i64>)>> {
        let mut retry_mem = Vec::new();
        self.in_transit = 0;
        self.in_transit_bytes = 0;
        if done.epoch != self.epoch {
            // Emptied or deleted since the pass began: what it read is gone.
            return Some(Vec::new());
        }
        if let Some(e) = &done.write_error {
            let reason = e.to_string();
            self.stats.write_errors += 1;
            self.failed = Some(reason);
            if !self.strict && self.topic && !done.retry.is_empty() {
                // Accepted already: keep them, in order, for the next attempt.
                let mut retry = done.retry;
                self.outbox_bytes += retry
                    .iter()
                    .map(|o| record_len(o.msg.body().len()))
                    .sum::<u64>();
                retry.append(&mut self.outbox);
                self.outbox = retry;
            } else if !self.strict {
                // A channel keeps them in memory (past --mem-queue-size): consumers get them
                // and nothing acknowledged is lost; new overflow is refused until the disk
                // works again.
                retry_mem = done.retry;
            }
        } else if done.wrote && self.failed.take().is_some() {
            tracing::info!("DISKQUEUE({}): writes succeed again", self.writer.name);
        }
        if let Some(e) = &done.read_error {
            self.read_backoff = true;
            self.stats.last_read_error = Some(e.clone());
        }
        self.unread = done.state.unread;
        self.bytes = done.state.bytes;
        self.needs_sync = done.state.needs_sync;
        self.stats.absorb(&done.state);
        if done.loaded > 0 {
            self.starved = false;
        }
        if !accept && done.loaded > 0 {
            self.unread += done.loaded as u64;
            return None;
        }
        let mut out = Vec::with_capacity(done.records.len() + retry_mem.len());
        out.extend(retry_mem.into_iter().map(|o| (o.msg, o.due)));
        for (i, rec) in done.records.into_iter().enumerate() {
            let seq = done.first_seq + i as u64;
            let Some(o) = rec else {
                if let Some(w) = self.window.as_mut() {
                    w.skip(seq);
                }
                continue;
            };
            let id = o.msg.id.0;
            if let Some(w) = self.window.as_mut() {
                if !w.track(seq, id) {
                    continue;
                }
            }
            let stored = self.dues.remove(&id);
            out.push((o.msg, o.due.or(stored)));
        }
        Some(out)
    }
}
