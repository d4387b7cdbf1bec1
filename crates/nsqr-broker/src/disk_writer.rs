//! The disk writer of one queue: the only code that touches its `DiskQueue`.
//!
//! It runs on a blocking thread (tokio's blocking pool), started by the owner when there is
//! work and stopping when there is none (in default mode [`LINGER`] after its last write), so
//! reactor threads never wait for the disk and idle queues cost no thread. A pass: take the work under the owner's lock (`disk_link.rs`), then
//! with only the writer's own lock held: empty if asked, append the whole outbox (one `write` per
//! file), fsync once in strict mode (group commit: every publish queued meanwhile shares it)
//! and fulfil the promises, acknowledge finished records, read ahead what memory has room for,
//! sync on the `--sync-timeout` tick; then report back under the owner's lock, where the
//! records read are placed (ready, deferred, or fanned out by a topic).
//!
//! Records are nsqd's message payloads: `[i64 timestamp][u16 attempts][16-byte hex id][body]`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use diskqueue::{DiskQueue, DiskQueueError, DiskQueueOptions, Payload, MESSAGE_HEADER_LEN};

pub(crate) use crate::codec::record_len;
use parking_lot::Mutex;

use crate::attrs_store::{self, AttrMap};
use crate::broker_config::BrokerConfig;
use crate::chunk_pool::{self, READ_CHUNK_BYTES};
use crate::codec::{decode_chunk, encode};
use crate::deferred_store;
use crate::disk_link::{Next, Opened};
use crate::durability::{DiskError, Promise, Ticket};
use crate::head_store::{self, SkipMap};
use crate::message::Message;
use crate::spill_queue::SpillQueue;
use crate::stats::DiskStats;

/// How long a default-mode writer stays after its last write, looking for more every
/// [`LINGER_STEP`], before it stops: while publishes keep spilling, they queue for it without
/// starting a writer each (a hand-off to the blocking pool and its futex calls per pass), and
/// one pass takes what a step gathered (`docs/decisions/0025-spilled-publish-wake-ups.md`).
const LINGER: Duration = Duration::from_millis(2);
/// How long a lingering writer sleeps between looks at its outbox: the most a spilled publish
/// waits for its pass beyond the write itself.
const LINGER_STEP: Duration = Duration::from_micros(200);

/// A message on its way to disk, with its due time (Unix ns) if deferred.
#[derive(Debug, Clone)]
pub(crate) struct Outgoing {
    pub msg: Message,
    pub due: Option<i64>,
}

/// A message is appended to its disk queue as nsqd's record payload, encoded straight into the
/// queue's write buffer.
impl Payload for Outgoing {
    fn payload_len(&self) -> usize {
        MESSAGE_HEADER_LEN as usize + self.msg.body().len()
    }

    fn write_payload(&self, out: &mut Vec<u8>) {
        encode(&self.msg, out);
    }
}

/// One pass of the writer, decided under the owner's lock.
#[derive(Debug, Default)]
pub(crate) struct Work {
    pub epoch: u64,
    pub empty: bool,
    pub writes: Vec<Outgoing>,
    pub promises: Vec<Promise>,
    /// How many of `writes` (a prefix) the owner keeps in memory: counted as read at once.
    pub consume: usize,
    /// Finished records to acknowledge (strict channels).
    pub acks: usize,
    /// Records to read ahead.
    pub load: usize,
    pub sync: bool,
}

/// The disk queue's figures after a pass.
#[derive(Debug, Default, Clone)]
pub(crate) struct DiskState {
    pub unread: u64,
    pub bytes: u64,
    pub needs_sync: bool,
    pub counters: diskqueue::Counters,
    pub last_corruption: Option<String>,
    pub undecodable: u64,
}

/// What a pass did, reported under the owner's lock.
#[derive(Debug, Default)]
pub(crate) struct Done {
    pub epoch: u64,
    /// Log sequence of `records[0]`.
    pub first_seq: u64,
    /// Kept writes, then records read, in log order (None: a record that did not decode).
    pub records: Vec<Option<Outgoing>>,
    /// How many of `records` were read from disk.
    pub loaded: usize,
    pub wrote: bool,
    pub write_error: Option<DiskError>,
    /// Default mode: accepted messages that did not reach the disk, to retry.
    pub retry: Vec<Outgoing>,
    pub read_error: Option<String>,
    pub state: DiskState,
}

/// The owner's answer to a report.
pub(crate) enum Accepted {
    /// Placed; acknowledge them once the ticket completes (per the writer's policy).
    Taken(Ticket),
    /// Not now (a topic without channels): read them again later.
    Refused,
}

/// When records read from disk are acknowledged to the disk queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AckPolicy {
    /// As soon as the owner has them (nsqd's semantics: a read removes the record).
    OnAccept,
    /// When the channel FINs them (strict channels, through `Work::acks`).
    OnFinish,
    /// Once the channels they were fanned out to have them (topics).
    AfterTicket,
}

/// The owner of a queue (channel or topic), as its writer sees it.
pub(crate) trait QueueOwner: Send + Sync {
    /// Run `f` on the queue under the owner's lock.
    fn with_queue(&self, f: &mut dyn FnMut(&mut SpillQueue));
    /// Apply a pass and place the records it produced, under the owner's lock.
    fn report(&self, done: Done) -> Accepted;
}

struct IoState {
    dq: DiskQueue,
    /// Records read (or kept at write) since open / the last empty: the log sequence.
    read_seq: u64,
    undecodable: u64,
}

/// What shutdown writes, collected under the owner's lock once the writer is idle.
#[derive(Default)]
pub(crate) struct Final {
    pub writes: Vec<Outgoing>,
    pub promises: Vec<Promise>,
    pub dues: Vec<(u64, i64)>,
    /// Attributes of messages already on disk (those of `writes` are added).
    pub attrs: AttrMap,
    /// An ordered channel's head, in order (also in `writes`: `head_store.rs`).
    pub head: Vec<Outgoing>,
    /// Copies of earlier head messages still unread in the queue.
    pub skip: SkipMap,
}

impl Final {
    /// The side files' contents: attributes of everything on disk, the head with the copies
    /// to skip (one more for each head message, written to the queue now).
    fn side_files(&mut self) -> (AttrMap, Vec<(Message, Option<i64>)>, SkipMap) {
        let mut attrs = std::mem::take(&mut self.attrs);
        for o in &self.writes {
            if let Some(a) = o.msg.attributes() {
                attrs.insert(o.msg.id.0, Arc::clone(a));
            }
        }
        let mut skip = std::mem::take(&mut self.skip);
        let head: Vec<(Message, Option<i64>)> = std::mem::take(&mut self.head)
            .into_iter()
            .map(|o| {
                *skip.entry(o.msg.id.0).or_default() += 1;
                (o.msg, o.due)
            })
            .collect();
        (attrs, head, skip)
    }
}

pub(crate) struct DiskWriter {
    pub name: String,
    dir: PathBuf,
    opts: DiskQueueOptions,
    strict: bool,
    policy: AckPolicy,
    io: Mutex<Option<IoState>>,
    owner: OnceLock<Weak<dyn QueueOwner>>,
    rt: Option<tokio::runtime::Handle>,
    health: crate::health::Health,
    faults: Option<crate::broker_config::DiskFaults>,
    /// Times `spawn` was called (tests check that a link starts one writer at a time).
    #[cfg(test)]
    pub(crate) spawned: std::sync::atomic::AtomicUsize,
}

impl std::fmt::Debug for DiskWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiskWriter")
            .field("name", &self.name)
            .finish()
    }
}

/// A failed write as the publisher hears of it: the operating system's error when there is
/// one, `--max-disk-bytes`, or what the disk queue refused.
fn disk_error(queue: &str, e: DiskQueueError) -> DiskError {
    match e {
        DiskQueueError::Full {
            max_bytes,
            current_bytes,
            ..
        } => DiskError::Full {
            queue: queue.to_string(),
            max_bytes,
            used_bytes: current_bytes,
        },
        DiskQueueError::Io { source, .. } => DiskError::io(queue, source),
        DiskQueueError::BatchIncomplete { source, .. } => disk_error(queue, *source),
        other => DiskError::io(queue, std::io::Error::other(other)),
    }
}

fn not_open(queue: &str) -> DiskError {
    DiskError::io(queue, std::io::Error::other("disk queue not open"))
}

impl DiskWriter {
    /// Open (and recover) the queue `name` in `dir`. An open failure is logged and retried by
    /// the writer's next pass; the queue then starts empty.
    pub(crate) fn open(
        dir: &Path,
        name: &str,
        cfg: &BrokerConfig,
        strict: bool,
        policy: AckPolicy,
    ) -> (Arc<DiskWriter>, Opened) {
        let opts = DiskQueueOptions {
            max_bytes_per_file: cfg.max_bytes_per_file.max(1),
            min_msg_size: MESSAGE_HEADER_LEN,
            max_msg_size: u32::try_from(cfg.max_msg_size.saturating_add(26))
                .unwrap_or(i32::MAX as u32)
                .min(i32::MAX as u32),
            sync_every: cfg.sync_every,
            max_bytes: cfg.max_disk_bytes,
        };
        let writer = DiskWriter {
            name: name.to_string(),
            dir: dir.to_path_buf(),
            opts,
            strict,
            policy,
            io: Mutex::new(None),
            owner: OnceLock::new(),
            rt: cfg
                .runtime
                .clone()
                .or_else(|| tokio::runtime::Handle::try_current().ok()),
            health: cfg.health.clone(),
            faults: cfg.disk_faults.clone(),
            #[cfg(test)]
            spawned: std::sync::atomic::AtomicUsize::new(0),
        };
        let mut opened = Opened::default();
        match writer.open_queue() {
            Ok(st) => {
                opened.unread = unread(&st.dq);
                opened.bytes = st.dq.disk_bytes();
                opened.stats.absorb(&state_of(&st));
                opened.dues = deferred_store::load(dir, name);
                opened.attrs = attrs_store::load(dir, name);
                opened.head = head_store::take(dir, name);
                *writer.io.lock() = Some(st);
            }
            Err(e) => {
                tracing::error!("DISKQUEUE({name}): failed to open - {e}");
                opened.stats.last_read_error = Some(e.to_string());
            }
        }
        (Arc::new(writer), opened)
    }

    fn open_queue(&self) -> Result<IoState, DiskQueueError> {
        let mut dq = DiskQueue::open(&self.dir, &self.name, self.opts)?;
        dq.set_explicit_ack(true);
        Ok(IoState {
            dq,
            read_seq: 0,
            undecodable: 0,
        })
    }

    pub(crate) fn set_owner(&self, owner: Weak<dyn QueueOwner>) {
        let _ = self.owner.set(owner);
    }

    /// Run passes on a blocking thread until there is no work (called as the link moves from
    /// `Run::Idle` to `Run::Running`, so at most one runs at a time).
    pub(crate) fn spawn(self: &Arc<Self>) {
        #[cfg(test)]
        self.spawned
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if self.owner.get().is_none() {
            return; // a link tested alone: no owner to report to
        }
        let b = Arc::clone(self);
        match &self.rt {
            Some(rt) => {
                rt.spawn_blocking(move || b.run());
            }
            None => {
                std::thread::spawn(move || b.run());
            }
        }
    }

    fn run(self: Arc<Self>) {
        let Some(owner) = self.owner.get().and_then(Weak::upgrade) else {
            return;
        };
        let mut io = self.io.lock();
        let mut last_write: Option<Instant> = None;
        loop {
            // Strict mode does not linger: its fsync already gathers the next pass's publishes.
            let linger = !self.strict && last_write.is_some_and(|t| t.elapsed() < LINGER);
            let mut next = Next::Stop;
            owner.with_queue(&mut |q| next = q.next_work(linger));
            let work = match next {
                Next::Work(w) => w,
                Next::Linger => {
                    std::thread::sleep(LINGER_STEP);
                    continue;
                }
                Next::Stop => return,
            };
            if !work.writes.is_empty() {
                last_write = Some(Instant::now());
            }
            if io.is_none() {
                match self.open_queue() {
                    Ok(st) => *io = Some(st),
                    Err(e) => tracing::error!("DISKQUEUE({}): failed to open - {e}", self.name),
                }
            }
            let done = self.pass(io.as_mut(), work);
            let n = done.records.len();
            let loaded = done.loaded;
            let accepted = owner.report(done);
            let Some(st) = io.as_mut() else {
                continue;
            };
            match (accepted, self.policy) {
                (Accepted::Refused, _) => {
                    st.dq.rewind();
                    st.read_seq -= loaded as u64;
                }
                (Accepted::Taken(_), AckPolicy::OnFinish) => {}
                (Accepted::Taken(_), AckPolicy::OnAccept) => {
                    st.dq.ack(n);
                }
                (Accepted::Taken(ticket), AckPolicy::AfterTicket) => {
                    if let Err(e) = ticket.wait_blocking() {
                        tracing::error!(
                            "DISKQUEUE({}): {n} message(s) could not be passed to the channels ({e}); they stay queued",
                            self.name
                        );
                        st.dq.rewind();
                        st.read_seq -= loaded as u64;
                        owner.with_queue(&mut |q| q.rewound(loaded));
                    } else {
                        st.dq.ack(n);
                    }
                }
            }
        }
    }

    /// Remove the queue's files (its owner was deleted), once a running pass is over.
    pub(crate) fn delete_now(&self) {
        let mut io = self.io.lock();
        if let Some(st) = io.take() {
            if let Err(e) = st.dq.delete() {
                tracing::error!("DISKQUEUE({}): failed to delete - {e}", self.name);
            }
        }
        self.remove_side_files();
    }

    /// The queue is gone or emptied: so are its side files.
    fn remove_side_files(&self) {
        for (what, r) in [
            (
                "deferred",
                deferred_store::FILE.remove(&self.dir, &self.name),
            ),
            (
                "attributes",
                attrs_store::FILE.remove(&self.dir, &self.name),
            ),
            ("head", head_store::remove(&self.dir, &self.name)),
        ] {
            if let Err(e) = r {
                tracing::error!(
                    "DISKQUEUE({}): failed to remove {what} file - {e}",
                    self.name
                );
            }
        }
    }

    fn pass(&self, st: Option<&mut IoState>, mut w: Work) -> Done {
        let mut done = Done {
            epoch: w.epoch,
            ..Done::default()
        };
        let Some(st) = st else {
            let e = not_open(&self.name);
            for p in w.promises.drain(..) {
                let _ = p.send(Err(e.clone()));
            }
            if !self.strict {
                done.retry = w.writes;
            }
            if !done.retry.is_empty() || self.strict {
                self.health.set_error(&e.to_string());
                done.write_error = Some(e);
            }
            return done;
        };
        if w.empty {
            if let Err(e) = st.dq.empty() {
                tracing::error!("DISKQUEUE({}): failed to empty - {e}", self.name);
            }
            st.read_seq = 0;
            self.remove_side_files();
        }
        done.first_seq = st.read_seq;
        if !w.writes.is_empty() {
            self.write(st, &mut w, &mut done);
        }
        if w.acks > 0 {
            st.dq.ack(w.acks);
        }
        let mut left = w.load;
        done.records.reserve(left.min(4096));
        while left > 0 {
            match st
                .dq
                .read_chunk_in(chunk_pool::POOL.take(), left, READ_CHUNK_BYTES)
            {
                Ok(Some(chunk)) => {
                    left -= chunk.len().min(left);
                    done.loaded += chunk.len();
                    decode_chunk(chunk, |msg| {
                        if msg.is_none() {
                            st.undecodable += 1;
                            tracing::error!(
                                "DISKQUEUE({}): record with an invalid message id skipped (not delivered)",
                                self.name
                            );
                        }
                        done.records
                            .push(msg.map(|msg| Outgoing { msg, due: None }));
                    });
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::error!("DISKQUEUE({}): read failed - {e}", self.name);
                    done.read_error = Some(e.to_string());
                    break;
                }
            }
        }
        if w.sync {
            if let Err(e) = st.dq.sync_if_dirty() {
                tracing::error!("DISKQUEUE({}): sync failed - {e}", self.name);
            }
        }
        st.read_seq += done.records.len() as u64;
        done.state = state_of(st);
        done
    }

    /// Append `w.writes`; in strict mode fsync and settle the promises.
    fn write(&self, st: &mut IoState, w: &mut Work, done: &mut Done) {
        let writes = std::mem::take(&mut w.writes);
        let n = writes.len();
        let consume = w.consume.min(n);
        let mut written = 0;
        let mut kept = false;
        let result = (|| -> Result<(), DiskQueueError> {
            if let Some(e) = self.faults.as_ref().and_then(|f| f.before_write()) {
                return Err(DiskQueueError::Io {
                    op: "write",
                    path: self.dir.clone(),
                    source: e,
                });
            }
            if consume > 0 {
                kept = st.dq.put_batch_read(&writes[..consume]).inspect_err(|e| {
                    if let DiskQueueError::BatchIncomplete { written: k, .. } = e {
                        written = *k;
                    }
                })?;
                written = consume;
            }
            if consume < n {
                st.dq.put_batch(&writes[consume..]).inspect_err(|e| {
                    if let DiskQueueError::BatchIncomplete { written: k, .. } = e {
                        written = consume + k;
                    }
                })?;
                written = n;
            }
            if self.strict {
                st.dq.flush_durable()?;
            }
            Ok(())
        })();
        let outcome = result.map_err(|e| disk_error(&self.name, e));
        if let Err(e) = &outcome {
            tracing::error!(
                "DISKQUEUE({}): writing {n} message(s) failed after {written} - {e}",
                self.name
            );
        }
        done.wrote = written > 0 && outcome.is_ok();
        done.write_error = outcome.clone().err();
        // Health first: a publisher told of the failure must find the node unhealthy.
        match &outcome {
            Ok(()) => self.health.set_ok(),
            Err(e) => self.health.set_error(&e.to_string()),
        }
        for p in w.promises.drain(..) {
            let _ = p.send(outcome.clone());
        }
        let mut writes = writes;
        if !self.strict && outcome.is_err() {
            done.retry = writes.split_off(written.min(n));
        }
        if kept {
            writes.truncate(consume);
            done.records.extend(writes.into_iter().map(Some));
        }
    }

    /// Shutdown: wait for the running pass, then append what `collect` gathers (outbox,
    /// memory, in-flight, deferred: nsqd's order), acknowledge every record read (their
    /// messages were just appended again, or are finished), save the due times of deferred
    /// messages and close the queue.
    pub(crate) fn close(&self, collect: &mut dyn FnMut() -> Final) {
        let mut io = self.io.lock();
        let mut fin = collect();
        let n = fin.writes.len();
        let (attrs, head, skip) = fin.side_files();
        let result = match io.take() {
            None => Err(not_open(&self.name)),
            Some(mut st) => {
                let written = st
                    .dq
                    .put_batch(&fin.writes)
                    .and_then(|()| st.dq.flush_durable())
                    .map_err(|e| disk_error(&self.name, e));
                if written.is_ok() || !self.strict {
                    st.dq.ack_all_read();
                }
                if let Err(e) = deferred_store::save(&self.dir, &self.name, fin.dues) {
                    tracing::error!(
                        "DISKQUEUE({}): failed to save deferred due times - {e}",
                        self.name
                    );
                }
                if let Err(e) = attrs_store::save(&self.dir, &self.name, attrs) {
                    tracing::error!(
                        "DISKQUEUE({}): failed to save message attributes - {e}",
                        self.name
                    );
                }
                if let Err(e) = head_store::save(&self.dir, &self.name, &head, &skip) {
                    tracing::error!(
                        "DISKQUEUE({}): failed to save the head of the queue - {e}",
                        self.name
                    );
                }
                if let Err(e) = st.dq.close() {
                    tracing::error!("DISKQUEUE({}): close failed - {e}", self.name);
                }
                written
            }
        };
        match &result {
            Ok(()) if n > 0 => tracing::info!(
                "DISKQUEUE({}): flushed {n} message(s) from memory",
                self.name
            ),
            Ok(()) => {}
            Err(e) => tracing::error!(
                "DISKQUEUE({}): {n} message(s) from memory could not be written at shutdown - {e}",
                self.name
            ),
        }
        for p in fin.promises {
            let _ = p.send(result.clone());
        }
    }
}

fn unread(dq: &DiskQueue) -> u64 {
    if dq.has_data() {
        dq.depth().max(1) as u64
    } else {
        0
    }
}

fn state_of(st: &IoState) -> DiskState {
    DiskState {
        unread: unread(&st.dq),
        bytes: st.dq.disk_bytes(),
        needs_sync: st.dq.needs_sync(),
        counters: st.dq.counters(),
        last_corruption: st
            .dq
            .last_corruption()
            .map(|c| format!("{} at offset {}: {}", c.file.display(), c.offset, c.reason)),
        undecodable: st.undecodable,
    }
}

impl DiskStats {
    pub(crate) fn absorb(&mut self, s: &DiskState) {
        self.corrupt_files = s.counters.corrupt_files;
        self.missing_files = s.counters.missing_files;
        self.recovered_records = s.counters.recovered_records;
        self.torn_tails_truncated = s.counters.torn_tails_truncated;
        self.metadata_rebuilds = s.counters.metadata_rebuilds;
        self.undecodable_records = s.undecodable;
        if s.last_corruption.is_some() {
            self.last_corruption.clone_from(&s.last_corruption);
        }
    }
}

#[cfg(test)]
mod tests;
