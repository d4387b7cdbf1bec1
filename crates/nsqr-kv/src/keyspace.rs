//! The keyspace: shards of keys, and what every change sets in motion.
//!
//! A key lives in one of N shards (chosen by its hash), each behind its own lock, so clients
//! on different cores rarely meet. Every change goes through [`Keyspace::emit`] while the
//! shard is still locked: the append-only log record (strict mode), the keyspace
//! notifications and the change feed therefore see each key's changes in the order they
//! happened. Locks are taken in one order only: shard (several in index order for multi-key
//! commands) → pub/sub hub → a subscriber's outbox; the change feed may take the broker's
//! topic lock, which never calls back here.
//!
//! The commands themselves are in `strings.rs` (values), `lists.rs`, `hashes.rs` and `sets.rs` (through
//! the steps of `typed.rs`) and `keys.rs` (keys, TTLs, scans);
//! expiry in `expiry.rs`, eviction in `evict.rs`, snapshots and the log in `persist.rs`;
//! transactions rest on `turn.rs` (who runs now) and `watch.rs` (WATCH).

use std::ops::{Deref, DerefMut};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::{Mutex, MutexGuard};

use crate::clock::now_ms;
use crate::config::{KvConfig, Settings};
use crate::entry::Entry;
use crate::error::KvError;
use crate::expiry::Timer;
use crate::feed::{Change, ChangeFeed, FeedConfig, FeedWait, Op};
use crate::log::Log;
use crate::notify::{keyevent_channel, keyspace_channel, Event, NotifyFlags};
use crate::pubsub::Hub;
use crate::record::Record;
use crate::revision::Revisions;
use crate::shard::{Lookup, Shard};
use crate::tracking::Tracking;
use crate::turn::{ExclusiveTurn, SharedTurn, Turns};
use crate::watch::Watchers;

/// A shard's lock on its own cache lines, so two shards never share one.
#[repr(align(128))]
#[derive(Debug, Default)]
struct Slot(Mutex<Shard>);

/// What a client must wait for before its writes are acknowledged (strict mode), gathered
/// while its commands run and awaited once per batch with [`Keyspace::durable`].
#[derive(Default)]
pub struct Pending {
    log_seq: u64,
    feed: Vec<FeedWait>,
    /// A transaction's log records, appended as one record when it ends (strict mode).
    batch: Option<Vec<u8>>,
    /// The client whose commands make these changes (CLIENT TRACKING's NOLOOP); 0: none.
    writer: u64,
}

impl Pending {
    /// For the changes of client `id`.
    pub fn of_client(id: u64) -> Pending {
        Pending {
            writer: id,
            ..Pending::default()
        }
    }

    pub fn is_empty(&self) -> bool {
        self.log_seq == 0 && self.feed.is_empty()
    }

    /// Whether a transaction is gathering the log records (`begin_transaction`).
    pub(crate) fn in_batch(&self) -> bool {
        self.batch.is_some()
    }
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending")
            .field("log_seq", &self.log_seq)
            .field("feed", &self.feed.len())
            .field("batch", &self.batch.as_ref().map(Vec::len))
            .finish()
    }
}

/// What finding a key counts as ([`Keyspace::find`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Find {
    /// Not an access (a write's own lookup, TYPE, OBJECT): nothing counted or touched.
    Peek,
    /// A command's read: the hit or miss counted, the access clock touched, `keymiss`
    /// announced on a miss.
    Read,
    /// TOUCH: the hit or miss counted and the clock touched, no `keymiss`.
    Touch,
}

/// One change, as the commands describe it to [`Keyspace::emit`].
#[derive(Debug, Clone)]
pub(crate) struct Emit<'a> {
    pub op: Op,
    pub key: &'a [u8],
    /// The value after the change, for ops that set one.
    pub value: Option<&'a [u8]>,
    /// The key's deadline after the change.
    pub deadline: Option<u64>,
    /// The key did not exist before (`new` notification).
    pub created: bool,
    /// A SET that also gave the key a deadline (`expire` notification after `set`).
    pub expire_set: bool,
    /// The log record, when the op and value do not make it (collections: `typed.rs`).
    pub record: Option<Record<'a>>,
}

impl<'a> Emit<'a> {
    pub fn new(op: Op, key: &'a [u8]) -> Emit<'a> {
        Emit {
            op,
            key,
            value: None,
            deadline: None,
            created: false,
            expire_set: false,
            record: None,
        }
    }
}

/// The keyspace engine. Built by [`Keyspace::open`] (see `persist.rs`).
pub struct Keyspace {
    shards: Box<[Slot]>,
    mask: u64,
    hasher: foldhash::fast::FixedState,
    pub(crate) settings: Settings,
    pub(crate) hub: Arc<Hub>,
    feed: Option<Arc<dyn ChangeFeed>>,
    feed_config: FeedConfig,
    pub(crate) revisions: Revisions,
    pub(crate) log: Option<Log>,
    pub(crate) timer: Arc<Timer>,
    /// Bytes used by every shard (kept up to date by [`Guard`]).
    used: AtomicI64,
    pub(crate) max_bulk: u64,
    pub(crate) strict: bool,
    pub(crate) data_dir: Option<PathBuf>,
    pub(crate) threads: Mutex<Vec<JoinHandle<()>>>,
    pub(crate) closed: AtomicBool,
    feed_errors: AtomicU64,
    pub(crate) evict_pool: Mutex<Vec<crate::evict::Candidate>>,
    /// The log generation the next snapshot names (default mode; strict mode asks the log).
    pub(crate) generation: AtomicU64,
    /// Size of the last snapshot (compaction threshold).
    pub(crate) last_snapshot: AtomicU64,
    /// One compaction (or SAVE) at a time.
    pub(crate) compacting: Mutex<()>,
    /// Shared turns for clients' batches, the exclusive one for a transaction (`turn.rs`).
    turns: Turns,
    /// Clients watching keys (`watch.rs`).
    pub(crate) watchers: Watchers,
    /// Clients tracking keys (`tracking.rs`).
    pub(crate) tracking: Tracking,
    /// Unix seconds of the last snapshot written (or of the start).
    pub(crate) last_save: AtomicU64,
    /// A BGSAVE is running (`persist.rs`).
    pub(crate) bgsave_running: AtomicBool,
    /// Clients blocked on lists (`blocking.rs`).
    pub(crate) blockers: Arc<crate::blocking::Blockers>,
    /// A database other than 0 has been used (`databases.rs`).
    pub(crate) multi_db: AtomicBool,
    /// Function libraries (`functions.rs`).
    pub(crate) functions: crate::functions::FunctionStore,
}

impl Drop for Keyspace {
    fn drop(&mut self) {
        self.timer.stop();
    }
}

impl std::fmt::Debug for Keyspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keyspace")
            .field("shards", &self.shards.len())
            .field("strict", &self.strict)
            .finish_non_exhaustive()
    }
}

/// A locked shard. Dropping it brings the keyspace's memory total up to date.
pub(crate) struct Guard<'a> {
    ks: &'a Keyspace,
    shard: MutexGuard<'a, Shard>,
    before: usize,
    pub index: usize,
}

impl Deref for Guard<'_> {
    type Target = Shard;
    fn deref(&self) -> &Shard {
        &self.shard
    }
}

impl DerefMut for Guard<'_> {
    fn deref_mut(&mut self) -> &mut Shard {
        &mut self.shard
    }
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        let after = self.shard.memory();
        if after != self.before {
            self.ks
                .used
                .fetch_add(after as i64 - self.before as i64, Ordering::Relaxed);
        }
    }
}

impl Keyspace {
    /// A keyspace with nothing loaded and no threads (see `persist.rs` for `open`).
    pub(crate) fn build(
        config: &KvConfig,
        feed: Option<Arc<dyn ChangeFeed>>,
        revisions: Revisions,
        log: Option<Log>,
    ) -> Keyspace {
        let n = config.shards.clamp(1, 256).next_power_of_two();
        Keyspace {
            shards: (0..n).map(|_| Slot::default()).collect(),
            mask: (n - 1) as u64,
            hasher: foldhash::fast::FixedState::with_seed(fastrand::u64(..)),
            settings: Settings::new(config),
            hub: Arc::new(Hub::new()),
            feed,
            feed_config: config.feed.clone(),
            revisions,
            log,
            timer: Arc::new(Timer::default()),
            used: AtomicI64::new(0),
            max_bulk: config.max_bulk,
            strict: config.strict,
            data_dir: config.data_dir.clone(),
            threads: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
            feed_errors: AtomicU64::new(0),
            evict_pool: Mutex::new(Vec::new()),
            generation: AtomicU64::new(0),
            last_snapshot: AtomicU64::new(0),
            compacting: Mutex::new(()),
            turns: Turns::default(),
            watchers: Watchers::default(),
            tracking: Tracking::default(),
            last_save: AtomicU64::new(now_ms() / 1000),
            bgsave_running: AtomicBool::new(false),
            blockers: Arc::default(),
            multi_db: AtomicBool::new(false),
            functions: Default::default(),
        }
    }

    /// A shared turn: hold it while running a batch of one client's commands (see `turn.rs`).
    pub fn enter(&self) -> SharedTurn {
        self.turns.shared()
    }

    /// The exclusive turn: hold it while running a transaction; no other command runs
    /// meanwhile. Never call it while holding a shared turn on the same thread.
    pub fn enter_alone(&self) -> ExclusiveTurn {
        self.turns.exclusive()
    }

    /// [`Keyspace::enter`], giving up after `wait`.
    pub fn try_enter_for(&self, wait: std::time::Duration) -> Option<SharedTurn> {
        self.turns.try_shared_for(wait)
    }

    /// [`Keyspace::enter_alone`], giving up after `wait`.
    pub fn try_enter_alone_for(&self, wait: std::time::Duration) -> Option<ExclusiveTurn> {
        self.turns.try_exclusive_for(wait)
    }

    /// Starts gathering the log records of a transaction into `pending`, so they reach the
    /// log as one record: a crash keeps all of them or none (strict mode; nothing to do
    /// otherwise).
    pub fn begin_transaction(&self, pending: &mut Pending) {
        if self.log.is_some() {
            pending.batch = Some(Vec::new());
        }
    }

    /// Appends the records gathered since [`Keyspace::begin_transaction`] as one record.
    pub fn end_transaction(&self, pending: &mut Pending) {
        if let (Some(log), Some(batch)) = (&self.log, pending.batch.take()) {
            if !batch.is_empty() {
                pending.log_seq = log.append(&Record::Batch(&batch));
            }
        }
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The pub/sub hub (PUBLISH, SUBSCRIBE and keyspace notifications).
    pub fn hub(&self) -> &Arc<Hub> {
        &self.hub
    }

    pub fn is_strict(&self) -> bool {
        self.strict
    }

    pub(crate) fn hash(&self, key: &[u8]) -> u64 {
        use std::hash::BuildHasher;
        self.hasher.hash_one(key)
    }

    pub(crate) fn hasher(&self) -> impl Fn(&Entry) -> u64 + '_ {
        move |e: &Entry| self.hash(e.key())
    }

    pub(crate) fn shard_index(&self, hash: u64) -> usize {
        ((hash >> 32) & self.mask) as usize
    }

    pub(crate) fn shard_count(&self) -> usize {
        self.shards.len()
    }

    pub(crate) fn lock_index(&self, index: usize) -> Guard<'_> {
        let shard = self.shards[index].0.lock();
        let before = shard.memory();
        Guard {
            ks: self,
            shard,
            before,
            index,
        }
    }

    pub(crate) fn lock(&self, hash: u64) -> Guard<'_> {
        self.lock_index(self.shard_index(hash))
    }

    /// Locks the shards of every key in `hashes`, in index order (no deadlock with another
    /// multi-key command).
    pub(crate) fn lock_many(&self, hashes: &[u64]) -> Vec<Guard<'_>> {
        let mut idx: Vec<usize> = hashes.iter().map(|&h| self.shard_index(h)).collect();
        idx.sort_unstable();
        idx.dedup();
        idx.into_iter().map(|i| self.lock_index(i)).collect()
    }

    /// Locks every shard, in index order.
    pub(crate) fn lock_all(&self) -> Vec<Guard<'_>> {
        (0..self.shards.len()).map(|i| self.lock_index(i)).collect()
    }

    /// Bytes the keyspace uses by its own accounting (what `maxmemory` is compared with).
    pub fn used_memory(&self) -> u64 {
        self.used.load(Ordering::Relaxed).max(0) as u64
    }

    /// The entry of `key` if it is live at `now`; an entry past its deadline is removed here
    /// and announced as expired, so it is never served. `access` says what finding it counts
    /// as.
    pub(crate) fn find<'g>(
        &self,
        g: &'g mut Guard<'_>,
        hash: u64,
        key: &[u8],
        now: u64,
        access: Find,
    ) -> Option<&'g mut Entry> {
        let found = match g.shard.lookup(hash, key, now, access != Find::Peek) {
            Lookup::Live(e) => Some(e),
            Lookup::Expired(e) => {
                self.emit(
                    Emit::new(Op::Expired, e.key()),
                    now,
                    &mut Pending::default(),
                );
                None
            }
            Lookup::Missing => None,
        };
        match found {
            Some(e) => {
                if access != Find::Peek {
                    self.touch(e, now);
                }
                Some(e)
            }
            None => {
                if access == Find::Read {
                    self.notify(self.settings.notify(), Event::KeyMiss, key);
                }
                None
            }
        }
    }

    /// Gives the live `key` the deadline `at` (Unix ms, in the future), schedules its expiry
    /// and announces the change (`expire`).
    pub(crate) fn set_expiry(
        &self,
        g: &mut Guard<'_>,
        hash: u64,
        key: &[u8],
        at: u64,
        now: u64,
        pending: &mut Pending,
    ) {
        g.set_deadline(hash, key, Some(at));
        self.timer.schedule(at);
        let emit = Emit {
            deadline: Some(at),
            ..Emit::new(Op::Expire, key)
        };
        self.emit(emit, now, pending);
    }

    /// Announces one change: log record, notifications, change feed.
    pub(crate) fn emit(&self, e: Emit<'_>, now: u64, pending: &mut Pending) {
        if let Some(log) = &self.log {
            match &mut pending.batch {
                Some(batch) => record_of(&e).encode(batch),
                None => pending.log_seq = log.append(&record_of(&e)),
            }
        }
        self.emit_unlogged(e, now, pending);
    }

    /// Announces one change with no log record: WATCH, blocked clients, notifications,
    /// change feed.
    pub(crate) fn emit_unlogged(&self, e: Emit<'_>, now: u64, pending: &mut Pending) {
        if e.op != Op::Flush {
            self.watchers.touch(e.key);
            self.tracking
                .invalidate(self, crate::db::user_key(e.key), pending.writer);
        } else {
            self.tracking.invalidate_all(self);
        }
        if matches!(e.op, Op::Lpush | Op::Rpush | Op::Zadd | Op::Zincr) {
            self.blockers.wake(e.key);
        }
        self.notify_change(&e);
        if let Some(feed) = &self.feed {
            if self.feed_config.wants(e.op, crate::db::user_key(e.key)) {
                self.publish_change(feed.as_ref(), &e, now, pending);
            }
        }
    }

    /// Logs a record that announces nothing (a change Redis sends no event for).
    pub(crate) fn log_only(&self, record: &Record<'_>, pending: &mut Pending) {
        if let Some(log) = &self.log {
            match &mut pending.batch {
                Some(batch) => record.encode(batch),
                None => pending.log_seq = log.append(record),
            }
        }
    }

    /// A change to a value that is no event (PFCOUNT refreshing an HLL's cached count): the
    /// log keeps it and WATCH sees it, as Redis's `signalModifiedKey`; no notification, no feed.
    pub(crate) fn record_quietly(&self, record: &Record<'_>, key: &[u8], pending: &mut Pending) {
        self.log_only(record, pending);
        self.watchers.touch(key);
    }

    fn publish_change(&self, feed: &dyn ChangeFeed, e: &Emit<'_>, now: u64, pending: &mut Pending) {
        let (db, key) = crate::db::split(e.key);
        let change = Change {
            op: e.op,
            db,
            key,
            value: e.value,
            deadline: e.deadline,
            rev: self.revisions.next(),
            time_ms: now,
        };
        let body = change.to_json(self.feed_config.include_value);
        match feed.publish(body) {
            Ok(Some(wait)) => pending.feed.push(wait),
            Ok(None) => {}
            Err(err) => {
                let n = self.feed_errors.fetch_add(1, Ordering::Relaxed);
                if n.is_power_of_two() {
                    tracing::error!("KV: change feed failed ({} so far) - {err}", n + 1);
                }
                if self.strict {
                    pending.feed.push(Box::pin(async move { Err(err) }));
                }
            }
        }
    }

    /// Keyspace notifications of one change, as `notify-keyspace-events` asks.
    fn notify_change(&self, e: &Emit<'_>) {
        let flags = self.settings.notify();
        if flags.0 == 0 || self.hub.is_idle() {
            return;
        }
        if e.created {
            self.notify(flags, Event::New, e.key);
        }
        if e.op == Op::Flush {
            return;
        }
        let event = Event::Change(e.op);
        self.notify(flags, event, e.key);
        if e.expire_set {
            self.notify(flags, Event::Change(Op::Expire), e.key);
        }
    }

    /// Publishes one event on the keyspace and keyevent channels.
    pub(crate) fn notify(&self, flags: NotifyFlags, event: Event, key: &[u8]) {
        if !flags.wants(event.class()) || self.hub.is_idle() {
            return;
        }
        let mut channel = Vec::with_capacity(32 + key.len());
        if flags.keyspace() {
            keyspace_channel(key, &mut channel);
            self.hub.publish(&channel, event.name().as_bytes());
        }
        if flags.keyevent() {
            let (db, key) = crate::db::split(key);
            keyevent_channel(db, event, &mut channel);
            self.hub.publish(&channel, key);
        }
    }

    /// Waits until the changes gathered in `pending` are durable (strict mode); nothing to
    /// wait for otherwise.
    pub async fn durable(&self, pending: &mut Pending) -> Result<(), KvError> {
        let seq = std::mem::take(&mut pending.log_seq);
        if seq > 0 {
            if let Some(log) = &self.log {
                log.wait(seq).await.map_err(KvError::Log)?;
            }
        }
        for w in pending.feed.drain(..) {
            w.await.map_err(|e| KvError::Feed(e.0))?;
        }
        Ok(())
    }

    /// Strict mode refuses writes once the log has failed.
    pub fn check_writable(&self) -> Result<(), KvError> {
        match &self.log {
            Some(log) => match log.failed() {
                Some(f) => Err(KvError::Log(f)),
                None => Ok(()),
            },
            None => Ok(()),
        }
    }

    /// The revision of the last change sent to the feed.
    pub fn revision(&self) -> u64 {
        self.revisions.current()
    }

    /// Changes the feed could not take since start.
    pub fn feed_errors(&self) -> u64 {
        self.feed_errors.load(Ordering::Relaxed)
    }

    /// Counters summed over the shards.
    pub fn stats(&self) -> KvStats {
        let mut s = KvStats {
            used_memory: self.used_memory(),
            revision: self.revision(),
            ..KvStats::default()
        };
        for i in 0..self.shards.len() {
            let g = self.lock_index(i);
            s.keys += g.len() as u64;
            s.volatile += g.volatile() as u64;
            s.hits += g.stats.hits;
            s.misses += g.stats.misses;
            s.expired += g.stats.expired;
            s.evicted += g.stats.evicted;
        }
        s
    }

    /// CONFIG RESETSTAT: hits, misses, expired and evicted counts back to zero.
    pub fn reset_stats(&self) {
        for i in 0..self.shards.len() {
            self.lock_index(i).stats = crate::shard::ShardStats::default();
        }
    }

    /// The time now (Unix ms) as commands see it.
    pub fn now_ms(&self) -> u64 {
        now_ms()
    }
}

/// Figures for `INFO` and `DBSIZE`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KvStats {
    pub keys: u64,
    pub volatile: u64,
    pub used_memory: u64,
    pub hits: u64,
    pub misses: u64,
    pub expired: u64,
    pub evicted: u64,
    pub revision: u64,
}

/// The log record a change leaves: the key's new value, its removal, its new deadline, or a
/// flush.
fn record_of<'a>(e: &Emit<'a>) -> Record<'a> {
    if let Some(r) = &e.record {
        return r.clone();
    }
    match e.op {
        Op::Flush => Record::Flush,
        op if op.has_value() => Record::Put {
            key: e.key,
            value: e.value.unwrap_or_default(),
            deadline: e.deadline,
        },
        op if op.removes() => Record::Del { key: e.key },
        _ => Record::Deadline {
            key: e.key,
            deadline: e.deadline,
        },
    }
}
