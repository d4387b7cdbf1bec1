//! The owner's side of a disk queue: what is on its way to disk (the outbox and its promises),
//! what the disk holds unread, and what the disk writer should do next. All of it lives inside
//! the owner's lock, so a publish decides "memory or disk" against a consistent picture, and
//! the writer's report (accounting + the messages it read) is applied in one critical section.
//!
//! Nothing here does IO. The writer (`disk_writer.rs`) takes a [`Work`] with
//! [`DiskLink::next_work`] and hands back a [`Done`] to [`DiskLink::apply`].
//!
//! # States
//!
//! Besides counts (the [`Outbox`], what is in transit, what the disk holds unread), the link is
//! a few small state machines, one field each:
//!
//! - [`Run`], the writer. `Idle -> Running` when work appears ([`DiskLink::kick`] spawns the
//!   writer); `Running -> Idle` when [`DiskLink::next_work`] finds nothing to do (the writer
//!   stops), unless the writer lingers (default mode, just after a write: it stays `Running`,
//!   so publishes meanwhile queue without starting another, and asks again shortly); `Idle | Running -> Closed` at shutdown ([`DiskLink::close`]) or when the owner is
//!   deleted ([`DiskLink::request_delete`]). `Closed` is final.
//! - [`Writes`], the disk's health for writes. `Ok | Retry -> Failed` when a pass reports a
//!   write error; `Failed -> Ok` when a pass writes successfully; on the `--sync-timeout` tick,
//!   `Failed -> Retry` if messages wait in the outbox and `Failed | Retry -> Ok` if none do (a
//!   channel kept them in memory: the next overflow may try the disk again); `Retry -> Failed`
//!   when a pass takes the outbox to try again (its report then decides).
//! - [`Reads`]. `Open -> BackedOff` when a read fails or what was read could not be passed on
//!   ([`DiskLink::rewound`]); `BackedOff -> Open` on the tick.
//! - `starved`: a consumer found memory empty. Set by [`DiskLink::after_pop`] (whatever the
//!   disk holds: what lands there next is for that consumer), cleared by a pass that loaded
//!   records, or by emptying.
//! - `drain` (topics): the topic has channels and is neither paused nor held, so what the
//!   writer reads may be fanned out.
//! - [`Orders`]: one-shot orders for the next pass (empty the queue, sync), taken by
//!   `next_work`.
//!
//! # What a pass does
//!
//! | when | the writer (as `next_work` plans it) |
//! |---|---|
//! | `Run::Closed` | nothing: it stops |
//! | outbox not empty; strict, or `Writes::Ok` / `Retry` | appends the outbox; the promises settle after the `write` (default) or the fsync (strict) |
//! | outbox not empty; default mode, `Writes::Failed` | leaves it for the tick's `Retry`; new overflow is refused meanwhile ([`DiskLink::check_writable`]) |
//! | `Reads::Open`, records unread | a channel reads up to `--mem-queue-size` (at least `READ_AHEAD` when starved) less what memory holds, a topic `TOPIC_CHUNK` while `drain` |
//! | finished records (strict channels) | acknowledges them |
//! | `Orders` | empties, syncs |
//! | none of these | nothing: `Running -> Idle`, it stops |
//!
//! # Invariants
//!
//! 1. At most one writer runs: it is spawned only on `Idle -> Running`, and it leaves `Running`
//!    only in `next_work`, under the owner's lock, so work added meanwhile is either taken by
//!    that call or kicks a new writer.
//! 2. [`DiskLink::behind`] is exact: a default-mode publish goes to memory only when nothing
//!    older is unread on disk, in transit or in the outbox, so order is kept.
//! 3. Every promise settles exactly once: after the write (and fsync, in strict mode) that took
//!    it, `Ok` when its messages are dropped (emptied, deleted: nothing is left to deliver), or
//!    by the final write at shutdown. A promise enters the outbox with a kick, or (default
//!    mode, `Writes::Failed`) waits for the tick's `Retry`.
//! 4. `Closed` takes no puts (the queue refuses them) and starts no writer.
//! 5. Something is in transit only between a `next_work` that took writes and the `apply` of
//!    that pass, or until the queue is emptied (the next pass removes what it wrote).
//! 6. Emptying or deleting bumps `epoch`; a report from an older epoch is dropped, since what it
//!    read is gone.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::ack_window::AckWindow;
use crate::attrs_store::AttrMap;
use crate::disk_writer::{record_len, DiskWriter, Done, Outgoing, Work};
use crate::durability::{promise, DiskError, Promise, Ticket};
use crate::error::BrokerError;
use crate::head_store::{Head, SkipMap};
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
/// The most messages on disk whose attributes (`attrs.rs`) a queue keeps beside it in memory;
/// beyond, further messages are written without them (counted: memory stays bounded).
pub(crate) const MAX_SIDE_ATTRS: usize = 1_000_000;

/// What the writer does next (`DiskLink::next_work`).
#[derive(Debug)]
pub(crate) enum Next {
    /// A pass.
    Work(Work),
    /// Nothing now; the writer stays `Running` and asks again after a short sleep.
    Linger,
    /// Nothing to do (`Idle`) or closed: the writer stops.
    Stop,
}

/// Whether the disk writer runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Run {
    /// No writer; the next work spawns one.
    Idle,
    /// A writer is spawned or running its passes.
    Running,
    /// Shut down or deleted: no puts, no writer, ever again.
    Closed,
}

/// The disk's health for writes, as the last pass found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Writes {
    Ok,
    /// The last write failed (the error). Default mode: overflow is refused and the outbox
    /// waits for the tick.
    Failed(DiskError),
    /// The tick after a failure, with messages in the outbox: the next pass writes them.
    Retry(DiskError),
}

impl Writes {
    fn failure(&self) -> Option<&DiskError> {
        match self {
            Writes::Ok => None,
            Writes::Failed(r) | Writes::Retry(r) => Some(r),
        }
    }
}

/// Whether passes read ahead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reads {
    Open,
    /// A read failed, or what was read could not be passed on: no reads until the tick.
    BackedOff,
}

/// One-shot orders for the next pass.
#[derive(Debug, Default)]
struct Orders {
    empty: bool,
    sync: bool,
}

/// Messages on their way to disk, and the promises of the publishes that wait for them.
#[derive(Debug, Default)]
struct Outbox {
    msgs: Vec<Outgoing>,
    /// Their size on disk (for `--max-disk-bytes`).
    bytes: u64,
    promises: Vec<Promise>,
}

impl Outbox {
    fn len(&self) -> usize {
        self.msgs.len()
    }

    fn is_empty(&self) -> bool {
        self.msgs.is_empty()
    }

    /// Add a publish; its ticket completes when the promise is settled.
    fn push(&mut self, msgs: Vec<Message>, due: Option<i64>, bytes: u64) -> Ticket {
        self.bytes += bytes;
        self.msgs
            .extend(msgs.into_iter().map(|msg| Outgoing { msg, due }));
        let (p, c) = promise();
        self.promises.push(p);
        Ticket::waiting(c)
    }

    /// Accepted messages whose write failed go back in front, in order (their publishers were
    /// told already).
    fn put_back(&mut self, mut msgs: Vec<Outgoing>) {
        self.bytes += msgs
            .iter()
            .map(|o| record_len(o.msg.body().len()))
            .sum::<u64>();
        msgs.append(&mut self.msgs);
        self.msgs = msgs;
    }

    /// Everything: (messages, promises, bytes).
    fn take(&mut self) -> (Vec<Outgoing>, Vec<Promise>, u64) {
        (
            std::mem::take(&mut self.msgs),
            std::mem::take(&mut self.promises),
            std::mem::take(&mut self.bytes),
        )
    }

    /// The messages are dropped (emptied or deleted): their publishers are done.
    fn discard(&mut self) {
        self.msgs.clear();
        self.bytes = 0;
        for p in self.promises.drain(..) {
            let _ = p.send(Ok(()));
        }
    }
}

#[derive(Debug)]
pub(crate) struct DiskLink {
    pub writer: Arc<DiskWriter>,
    pub strict: bool,
    /// A topic's queue: records read are fanned out, never kept at write time.
    topic: bool,
    max_disk_bytes: u64,
    outbox: Outbox,
    /// Messages (and their bytes) the running pass took from the outbox.
    in_transit: usize,
    in_transit_bytes: u64,
    /// Unread records on disk, as of the writer's last report.
    unread: u64,
    /// Bytes of the data files, as of the writer's last report.
    bytes: u64,
    /// The disk queue has changes not synced yet, as of the writer's last report.
    needs_sync: bool,
    run: Run,
    writes: Writes,
    reads: Reads,
    starved: bool,
    drain: bool,
    orders: Orders,
    epoch: u64,
    window: Option<AckWindow>,
    /// Due times (Unix ns) of deferred messages that are on disk.
    pub dues: FxHashMap<u64, i64>,
    /// Attributes of messages that are on disk (`attrs_store.rs`).
    attrs: AttrMap,
    /// Copies of an ordered channel's head messages still unread on disk (`head_store.rs`).
    skip: SkipMap,
    skip_total: u64,
    /// [`MAX_SIDE_ATTRS`] (smaller in tests).
    side_attrs_limit: usize,
    stats: DiskStats,
}

/// What a freshly opened disk queue holds.
#[derive(Debug, Default)]
pub(crate) struct Opened {
    pub unread: u64,
    pub bytes: u64,
    pub dues: FxHashMap<u64, i64>,
    pub attrs: AttrMap,
    /// The head file of an ordered channel (its messages go to the owner, its skip map to the
    /// link).
    pub head: Head,
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
        let skip_total = opened.head.skip.values().map(|n| u64::from(*n)).sum();
        DiskLink {
            window: (strict && !topic).then(AckWindow::default),
            writer,
            strict,
            topic,
            max_disk_bytes,
            outbox: Outbox::default(),
            in_transit: 0,
            in_transit_bytes: 0,
            unread: opened.unread,
            bytes: opened.bytes,
            needs_sync: false,
            run: Run::Idle,
            writes: Writes::Ok,
            reads: Reads::Open,
            starved: false,
            drain: false,
            orders: Orders::default(),
            epoch: 0,
            dues: opened.dues,
            attrs: opened.attrs,
            skip: opened.head.skip,
            skip_total,
            side_attrs_limit: MAX_SIDE_ATTRS,
            stats: opened.stats,
        }
    }

    /// Shut down or deleted: puts are refused.
    pub fn is_closed(&self) -> bool {
        self.run == Run::Closed
    }

    /// Anything older than a new message is on disk or on its way there.
    pub fn behind(&self) -> bool {
        self.unread > 0 || self.in_transit > 0 || !self.outbox.is_empty()
    }

    pub fn backend_depth(&self) -> i64 {
        (self.unread + self.in_transit as u64 + self.outbox.len() as u64)
            .saturating_sub(self.skip_total) as i64
    }

    pub fn stats(&self) -> Option<DiskStats> {
        let mut s = self.stats.clone();
        s.last_write_error = self.writes.failure().map(DiskError::to_string);
        s.is_notable().then_some(s)
    }

    /// Default mode: an overflow is refused while the disk is failing (what was accepted
    /// before stays queued and is retried).
    pub fn check_writable(&self) -> Result<(), BrokerError> {
        match self.writes.failure() {
            Some(last) if !self.strict => Err(BrokerError::Disk(DiskError::Unavailable {
                queue: self.writer.name.clone(),
                last: std::sync::Arc::new(last.clone()),
            })),
            _ => Ok(()),
        }
    }

    /// Whether a pass may take the outbox now.
    fn may_write(&self) -> bool {
        self.strict || !matches!(self.writes, Writes::Failed(_))
    }

    /// Queue `msgs` for the writer. The returned ticket completes when the writer's `write`
    /// of them returned (default mode: the kernel has them, so a killed process keeps them)
    /// or, in strict mode, when they are fsynced. Refused beyond `--max-disk-bytes`.
    pub fn enqueue(&mut self, msgs: Vec<Message>, due: Option<i64>) -> Result<Ticket, BrokerError> {
        let needed: u64 = msgs.iter().map(|m| record_len(m.body().len())).sum();
        if self.max_disk_bytes > 0 {
            let used = self.bytes + self.outbox.bytes + self.in_transit_bytes;
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
        for m in &msgs {
            if let Some(a) = m.attributes() {
                self.keep_attrs(m.id.0, a);
            }
        }
        let ticket = self.outbox.push(msgs, due, needed);
        if self.may_write() {
            self.kick();
        }
        Ok(ticket)
    }

    /// Start the writer unless it is running (or the link is closed).
    pub fn kick(&mut self) {
        if self.run == Run::Idle {
            self.run = Run::Running;
            self.writer.spawn();
        }
    }

    /// A consumer took a message from memory (`was_empty`: it found none); `len` are left of
    /// `cap`. Reads ahead below three quarters of `cap`, or at once for a starved consumer.
    pub fn after_pop(&mut self, was_empty: bool, len: usize, cap: usize) {
        if was_empty {
            // Even with nothing on disk yet: what lands there next (a topic handing on its
            // backlog to a new channel with --mem-queue-size=0) must be read for this consumer.
            self.starved = true;
        }
        if self.reads == Reads::BackedOff || !self.behind() {
            return;
        }
        if self.starved || len + (cap / 4).max(1) <= cap {
            self.kick();
        }
    }

    /// A message of a strict channel is finished: its record may be acknowledged.
    pub fn finished(&mut self, id: u64) {
        if let Some(w) = self.window.as_mut() {
            w.finish(id);
            if w.ready() >= ACK_KICK {
                self.kick();
            }
        }
    }

    /// Drop everything queued and on disk; the next pass empties the disk queue. What a running
    /// pass is writing counts as dropped at once: that pass's report is stale (a new epoch) and
    /// the pass after it empties the disk queue, records and all, so `/stats` shows the queue
    /// empty as soon as the empty returns, as nsqd's does.
    pub fn request_empty(&mut self) {
        self.epoch += 1;
        self.orders.empty = true;
        self.outbox.discard();
        self.in_transit = 0;
        self.in_transit_bytes = 0;
        self.unread = 0;
        self.dues.clear();
        self.forget_side_state();
        self.starved = false;
        if let Some(w) = self.window.as_mut() {
            w.reset(0);
        }
        self.kick();
    }

    /// No more puts or passes; the owner removes the files (`DiskWriter::delete_now`).
    pub fn request_delete(&mut self) {
        self.epoch += 1;
        self.run = Run::Closed;
        self.outbox.discard();
        self.unread = 0;
        self.dues.clear();
        self.forget_side_state();
    }

    /// Keep a message's attributes while it is on disk, within [`MAX_SIDE_ATTRS`].
    fn keep_attrs(&mut self, id: u64, a: &Arc<crate::attrs::Attributes>) {
        if self.attrs.len() < self.side_attrs_limit || self.attrs.contains_key(&id) {
            self.attrs.insert(id, Arc::clone(a));
            return;
        }
        if self.stats.attributes_dropped == 0 {
            tracing::warn!(
                "DISKQUEUE({}): {} messages with attributes on disk; further ones lose their expiry, ordering key or dead-letter record",
                self.writer.name,
                self.side_attrs_limit
            );
        }
        self.stats.attributes_dropped += 1;
    }

    fn forget_side_state(&mut self) {
        self.attrs.clear();
        self.skip.clear();
        self.skip_total = 0;
    }

    /// Shutdown: the attributes of messages still on disk and the copies of head messages
    /// still to skip, for the side files.
    pub fn take_side_state(&mut self) -> (AttrMap, SkipMap) {
        self.skip_total = 0;
        (
            std::mem::take(&mut self.attrs),
            std::mem::take(&mut self.skip),
        )
    }

    /// The `--sync-timeout` tick: retry failed writes, read again after a backoff, sync if
    /// anything changed, push pending acknowledgements.
    pub fn tick(&mut self) {
        let acks = self.window.as_ref().is_some_and(|w| w.ready() > 0);
        self.writes = match std::mem::replace(&mut self.writes, Writes::Ok) {
            Writes::Failed(r) | Writes::Retry(r) if !self.outbox.is_empty() => Writes::Retry(r),
            // Nothing waits to be retried (a channel kept it in memory): let the next overflow
            // try the disk again.
            Writes::Failed(_) | Writes::Retry(_) | Writes::Ok => Writes::Ok,
        };
        self.reads = Reads::Open;
        if self.needs_sync {
            self.orders.sync = true;
        }
        let retry = matches!(self.writes, Writes::Retry(_));
        let read = self.behind() && (self.drain || self.starved);
        if acks || self.orders.sync || retry || read {
            self.kick();
        }
    }

    /// Topic: whether records read may be fanned out now.
    pub fn set_drain(&mut self, on: bool) {
        self.drain = on;
        if on && self.behind() && self.reads == Reads::Open {
            self.kick();
        }
    }

    /// `n` records read were not passed on (and were rewound): read them again after the tick.
    pub fn rewound(&mut self, n: usize) {
        self.unread += n as u64;
        self.reads = Reads::BackedOff;
    }

    /// Shutdown: no more puts or writer passes; returns what was still queued.
    pub fn close(&mut self) -> (Vec<Outgoing>, Vec<Promise>) {
        self.run = Run::Closed;
        let (msgs, promises, _) = self.outbox.take();
        (msgs, promises)
    }

    /// The next pass for the writer, or None (and the writer stops) when there is nothing to
    /// do. `mem_len` messages are in memory, of `cap`.
    #[cfg(test)]
    pub fn take_work(&mut self, mem_len: usize, cap: usize) -> Option<Work> {
        match self.next_work(mem_len, cap, false) {
            Next::Work(w) => Some(w),
            Next::Linger | Next::Stop => None,
        }
    }

    /// The writer's next step: a pass; or, with nothing to do, stop (`Running -> Idle`) unless
    /// `linger`, when it stays `Running` (publishes then queue without starting a writer) and
    /// asks again shortly.
    pub fn next_work(&mut self, mem_len: usize, cap: usize, linger: bool) -> Next {
        if self.run == Run::Closed {
            return Next::Stop;
        }
        let mut w = Work {
            epoch: self.epoch,
            empty: std::mem::take(&mut self.orders.empty),
            ..Work::default()
        };
        if !self.outbox.is_empty() && self.may_write() {
            self.take_writes(&mut w, mem_len, cap);
        }
        w.acks = self.window.as_mut().map_or(0, AckWindow::take_ready);
        w.load = self.plan_load(&w, mem_len, cap);
        w.sync = std::mem::take(&mut self.orders.sync);
        if !w.empty && w.writes.is_empty() && w.acks == 0 && w.load == 0 && !w.sync {
            if linger {
                return Next::Linger;
            }
            self.run = Run::Idle;
            return Next::Stop;
        }
        Next::Work(w)
    }

    /// Move the outbox into the pass; how many of them memory keeps (`consume`).
    fn take_writes(&mut self, w: &mut Work, mem_len: usize, cap: usize) {
        if let Writes::Retry(r) = &self.writes {
            self.writes = Writes::Failed(r.clone());
        }
        let (writes, promises, bytes) = self.outbox.take();
        w.writes = writes;
        w.promises = promises;
        self.in_transit = w.writes.len();
        self.in_transit_bytes = bytes;
        if self.unread == 0 && !self.topic {
            w.consume = w.writes.len().min(cap.saturating_sub(mem_len));
            if self.strict && self.starved {
                w.consume = w.consume.max(w.writes.len().min(READ_AHEAD));
            }
        }
    }

    /// How many records the pass reads ahead.
    fn plan_load(&self, w: &Work, mem_len: usize, cap: usize) -> usize {
        let backlog = self.unread > 0 || w.writes.len() > w.consume;
        if !backlog || self.reads == Reads::BackedOff {
            return 0;
        }
        if self.topic {
            return if self.drain { TOPIC_CHUNK } else { 0 };
        }
        let target = if self.starved {
            cap.max(READ_AHEAD)
        } else {
            cap
        };
        target.saturating_sub(mem_len + w.consume).min(MAX_LOAD)
    }

    /// Apply a pass's report; see `SpillQueue::apply`.
    pub fn apply(&mut self, done: Done, accept: bool) -> Option<Vec<(Message, Option<i64>)>> {
        self.in_transit = 0;
        self.in_transit_bytes = 0;
        if done.epoch != self.epoch {
            // Emptied or deleted since the pass began: what it read is gone.
            return Some(Vec::new());
        }
        let Done {
            first_seq,
            records,
            loaded,
            wrote,
            write_error,
            retry,
            read_error,
            state,
            ..
        } = done;
        let kept_in_memory = self.note_writes(wrote, write_error, retry);
        if let Some(e) = read_error {
            self.reads = Reads::BackedOff;
            self.stats.last_read_error = Some(e);
        }
        self.unread = state.unread;
        self.bytes = state.bytes;
        self.needs_sync = state.needs_sync;
        self.stats.absorb(&state);
        if loaded > 0 {
            self.starved = false;
        }
        if !accept && loaded > 0 {
            self.unread += loaded as u64;
            return None;
        }
        let mut out = Vec::with_capacity(records.len() + kept_in_memory.len());
        out.extend(kept_in_memory.into_iter().map(|o| (o.msg, o.due)));
        self.track_records(first_seq, records, &mut out);
        Some(out)
    }

    /// The write outcome of a pass: the health transition, and (default mode) what to do with
    /// the accepted messages that were not written. Returns those a channel keeps in memory.
    fn note_writes(
        &mut self,
        wrote: bool,
        error: Option<DiskError>,
        retry: Vec<Outgoing>,
    ) -> Vec<Outgoing> {
        let Some(e) = error else {
            if wrote && self.writes != Writes::Ok {
                tracing::info!("DISKQUEUE({}): writes succeed again", self.writer.name);
                self.writes = Writes::Ok;
            }
            return Vec::new();
        };
        self.stats.write_errors += 1;
        self.writes = Writes::Failed(e);
        if self.strict || retry.is_empty() {
            return Vec::new();
        }
        if self.topic {
            // A topic keeps them, in order, for the next attempt.
            self.outbox.put_back(retry);
            return Vec::new();
        }
        // A channel keeps them in memory (past --mem-queue-size): consumers get them, and new
        // overflow is refused until the disk works again.
        retry
    }

    /// True (and one copy fewer to skip) if this record is a copy of a head message.
    fn skip_copy(&mut self, id: u64) -> bool {
        if self.skip.is_empty() {
            return false;
        }
        let Some(n) = self.skip.get_mut(&id) else {
            return false;
        };
        *n -= 1;
        if *n == 0 {
            self.skip.remove(&id);
        }
        self.skip_total = self.skip_total.saturating_sub(1);
        true
    }

    /// Records kept at write time or read, in log order: tracked in the acknowledgement window
    /// (strict channels) and given their due time if deferred.
    fn track_records(
        &mut self,
        first_seq: u64,
        records: Vec<Option<Outgoing>>,
        out: &mut Vec<(Message, Option<i64>)>,
    ) {
        for (i, rec) in records.into_iter().enumerate() {
            let seq = first_seq + i as u64;
            let Some(o) = rec else {
                if let Some(w) = self.window.as_mut() {
                    w.skip(seq);
                }
                continue;
            };
            let id = o.msg.id.0;
            if self.skip_copy(id) {
                if let Some(w) = self.window.as_mut() {
                    w.skip(seq);
                }
                continue;
            }
            if let Some(w) = self.window.as_mut() {
                if !w.track(seq, id) {
                    continue;
                }
            }
            let stored = self.dues.remove(&id);
            let msg = match self.attrs.remove(&id) {
                Some(a) if o.msg.attributes().is_none() => o.msg.with_attributes(Some(a)),
                _ => o.msg,
            };
            out.push((msg, o.due.or(stored)));
        }
    }
}

#[cfg(test)]
mod tests;
