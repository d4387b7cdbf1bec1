//! Opening and closing the keyspace: what is on disk, and when it is written.
//!
//! - **Start**: load `kv.snapshot` (if any), then replay every log generation from the one
//!   the snapshot names (`kv.log.<g>`, strict mode), then start a new log generation. A torn
//!   record at the end of the newest log (a write the crash cut) is cut off; damage anywhere
//!   else stops the start with an error rather than serve a keyspace that lost writes.
//! - **Default mode**: a snapshot at graceful shutdown (and on `SAVE`). A crash loses what
//!   changed since the last snapshot, as Redis without its AOF.
//! - **Strict mode**: every change is also in the log, fsynced before its write is
//!   acknowledged (`log.rs`). When a log generation grows past 64 MiB and twice the last
//!   snapshot, it is compacted: writes move to a new generation, a snapshot is written while
//!   they go on (records hold whole states, so replaying the new generation over it is
//!   right whichever of them it already saw), and older generations are deleted.
//! - **Shutdown**: the log is drained, a snapshot written, older generations deleted.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::clock::now_ms;
use crate::collection::Value;
use crate::config::KvConfig;
use crate::dump::{decode_value, encode_value};
use crate::entry::Entry;
use crate::feed::ChangeFeed;
use crate::keyspace::Keyspace;
use crate::log::{log_path, Log};
use crate::record::{self, Record};
use crate::revision::Revisions;
use crate::snapshot::{self, SnapshotError, SnapshotWriter, Stored};

/// A log generation is compacted once it is larger than this and twice the last snapshot.
const COMPACT_MIN: u64 = 64 * 1024 * 1024;

/// Why the keyspace could not be opened or saved.
#[derive(Debug, thiserror::Error)]
pub enum PersistError {
    #[error("strict durability needs a data directory")]
    NoDataDir,
    #[error("{0}")]
    Snapshot(#[from] SnapshotError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {what}")]
    Log { path: PathBuf, what: String },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> PersistError + '_ {
    move |source| PersistError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The log generations present in `dir`, oldest first.
fn generations(dir: &Path) -> Result<Vec<u64>, PersistError> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).map_err(io(dir))? {
        let e = e.map_err(io(dir))?;
        let name = e.file_name();
        if let Some(g) = name
            .to_str()
            .and_then(|n| n.strip_prefix("kv.log."))
            .and_then(|g| g.parse::<u64>().ok())
        {
            out.push(g);
        }
    }
    out.sort_unstable();
    Ok(out)
}

impl Keyspace {
    /// Opens the keyspace: loads what `config.data_dir` holds, starts the expiry thread (and,
    /// in strict mode, the log writer and its compaction). Call within a tokio runtime when a
    /// change feed needs one. Stop it with [`Keyspace::close`].
    pub fn open(
        config: KvConfig,
        feed: Option<Arc<dyn ChangeFeed>>,
    ) -> Result<Arc<Keyspace>, PersistError> {
        if config.strict && config.data_dir.is_none() {
            return Err(PersistError::NoDataDir);
        }
        let dir = config.data_dir.clone();
        let rev_path = dir.as_ref().map(|d| d.join("kv.revision"));
        let revisions = Revisions::open(rev_path.clone()).map_err(|source| PersistError::Io {
            path: rev_path.unwrap_or_default(),
            source,
        })?;
        let mut ks = Keyspace::build(&config, feed, revisions, None);
        let next = match &dir {
            Some(d) => ks.load(d)?,
            None => 0,
        };
        ks.generation = AtomicU64::new(next);
        ks.note_loaded_databases();
        if let (true, Some(d)) = (config.strict, &dir) {
            ks.log = Some(Log::open(d, next).map_err(io(&log_path(d, next)))?);
        }
        let ks = Arc::new(ks);
        ks.start_threads();
        Ok(ks)
    }

    fn start_threads(self: &Arc<Self>) {
        let rt = tokio::runtime::Handle::try_current().ok();
        let (weak, timer) = (Arc::downgrade(self), Arc::clone(&self.timer));
        let mut threads = self.threads.lock();
        match std::thread::Builder::new()
            .name("kv-expiry".into())
            .spawn(move || crate::expiry::run(weak, timer, rt))
        {
            Ok(t) => threads.push(t),
            Err(e) => tracing::error!("KV: cannot start the expiry thread - {e}"),
        }
        if self.log.is_some() {
            let weak = Arc::downgrade(self);
            match std::thread::Builder::new()
                .name("kv-compact".into())
                .spawn(move || compactor(weak))
            {
                Ok(t) => threads.push(t),
                Err(e) => tracing::error!("KV: cannot start log compaction - {e}"),
            }
        }
    }

    /// Loads the snapshot and replays the logs; returns the generation the next log takes.
    fn load(&mut self, dir: &Path) -> Result<u64, PersistError> {
        let started = std::time::Instant::now();
        let mut keys = 0u64;
        let snap_gen = snapshot::load(dir, |k, v, d| {
            let value = match v {
                Stored::Functions(libraries) => {
                    return self.functions.load_encoded(libraries).is_ok();
                }
                Stored::String(v) => Value::String(v.to_vec()),
                Stored::Object(v) => match decode_value(v) {
                    Ok(value) => value,
                    Err(_) => return false,
                },
            };
            keys += 1;
            self.load_value(k, value, d);
            true
        })?;
        let gens = generations(dir)?;
        let from = snap_gen.unwrap_or(0);
        let replay: Vec<u64> = gens.iter().copied().filter(|&g| g >= from).collect();
        let mut records = 0u64;
        for (i, &g) in replay.iter().enumerate() {
            records += self.replay(&log_path(dir, g), i + 1 == replay.len())?;
        }
        if snap_gen.is_some() || records > 0 {
            tracing::info!(
                "KV: loaded {keys} keys from the snapshot and {records} log records in {:?}",
                started.elapsed()
            );
        }
        let after_logs = gens.last().map_or(0, |g| g + 1);
        Ok(after_logs.max(from).max(1))
    }

    fn load_value(&self, key: &[u8], value: Value, deadline: Option<u64>) {
        let hash = self.hash(key);
        let clock = self.write_clock(None, now_ms());
        let mut g = self.lock(hash);
        g.put(hash, Entry::of(key, value, deadline, clock), self.hasher());
    }

    /// Applies one log file; a damaged tail of the newest file is cut off.
    fn replay(&self, path: &Path, newest: bool) -> Result<u64, PersistError> {
        let buf = std::fs::read(path).map_err(io(path))?;
        let mut at = 0usize;
        let mut n = 0u64;
        loop {
            match record::decode(&buf[at..], at as u64) {
                Ok(Some((r, len))) => {
                    self.apply(&r).map_err(|e| PersistError::Log {
                        path: path.to_path_buf(),
                        what: format!("batch at offset {at}: {e}"),
                    })?;
                    at += len;
                    n += 1;
                }
                Ok(None) => return Ok(n),
                Err(e) if newest => {
                    tracing::warn!(
                        "KV: {} - {e}: the last {} bytes were cut by a crash and are dropped",
                        path.display(),
                        buf.len() - at
                    );
                    let f = std::fs::OpenOptions::new()
                        .write(true)
                        .open(path)
                        .map_err(io(path))?;
                    f.set_len(at as u64).map_err(io(path))?;
                    f.sync_all().map_err(io(path))?;
                    return Ok(n);
                }
                Err(e) => {
                    return Err(PersistError::Log {
                        path: path.to_path_buf(),
                        what: e.to_string(),
                    })
                }
            }
        }
    }

    /// Applies one record (a batch's records in order); fails only on a batch whose records
    /// do not decode.
    fn apply(&self, r: &Record<'_>) -> Result<(), record::RecordError> {
        match *r {
            Record::Put {
                key,
                value,
                deadline,
            } => self.load_value(key, Value::String(value.to_vec()), deadline),
            Record::Object {
                key,
                value,
                deadline,
            } => {
                let value = decode_value(value).map_err(|_| record::RecordError::Malformed(0))?;
                self.load_value(key, value, deadline);
            }
            Record::Members { key, kind, states } => self.apply_members(key, kind, states)?,
            Record::Stream { key, changes } => self.apply_stream(key, changes)?,
            Record::Functions(libraries) => self.functions.load_encoded(libraries)?,
            Record::Del { key } => {
                let hash = self.hash(key);
                self.lock(hash).remove(hash, key);
            }
            Record::Deadline { key, deadline } => {
                let hash = self.hash(key);
                self.lock(hash).set_deadline(hash, key, deadline);
            }
            Record::Flush => {
                for mut g in self.lock_all() {
                    g.clear();
                }
            }
            Record::Batch(records) => {
                let mut at = 0;
                while let Some((r, n)) = record::decode(&records[at..], at as u64)? {
                    self.apply(&r)?;
                    at += n;
                }
            }
        }
        Ok(())
    }

    /// Writes a snapshot of everything now in the keyspace, naming `generation` as the first
    /// log generation it does not contain. Returns the file's size.
    fn write_snapshot(&self, dir: &Path, generation: u64) -> Result<u64, PersistError> {
        let mut w = SnapshotWriter::create(dir, generation)?;
        // Key, string value (`None` for a collection, encoded one key at a time), deadline.
        type Copied = (Vec<u8>, Option<Vec<u8>>, Option<u64>);
        let mut batch: Vec<Copied> = Vec::new();
        for i in 0..self.shard_count() {
            batch.clear();
            {
                let g = self.lock_index(i);
                batch.extend(g.iter().map(|e| {
                    let value = e.string().map(<[u8]>::to_vec);
                    (e.key().to_vec(), value, e.deadline())
                }));
            }
            for (k, v, d) in &batch {
                match v {
                    Some(v) => w.key(k, Stored::String(v), *d)?,
                    None => self.snapshot_object(&mut w, i, k)?,
                }
            }
        }
        let libraries = self.functions.encoded();
        if !libraries.is_empty() {
            w.key(b"", Stored::Functions(&libraries), None)?;
        }
        let (size, keys) = w.finish()?;
        tracing::info!("KV: snapshot of {keys} keys written ({size} bytes)");
        Ok(size)
    }

    /// Writes the key `key` of shard `i`, a collection, to the snapshot: encoded under the
    /// shard's lock, one key at a time, so a large collection never holds the lock while the
    /// file is written. A key gone meanwhile is left out (the log, replayed over the
    /// snapshot, removes it anyway).
    fn snapshot_object(
        &self,
        w: &mut SnapshotWriter,
        i: usize,
        key: &[u8],
    ) -> Result<(), PersistError> {
        let mut body = Vec::new();
        let deadline = {
            let g = self.lock_index(i);
            let Some(e) = g.get(self.hash(key), key) else {
                return Ok(());
            };
            encode_value(e, &mut body);
            e.deadline()
        };
        Ok(w.key(key, Stored::Object(&body), deadline)?)
    }

    /// Deletes log generations older than `generation`.
    fn drop_logs_before(&self, dir: &Path, generation: u64) {
        if let Ok(gens) = generations(dir) {
            for g in gens.into_iter().filter(|&g| g < generation) {
                if let Err(e) = std::fs::remove_file(log_path(dir, g)) {
                    tracing::warn!("KV: cannot remove {} - {e}", log_path(dir, g).display());
                }
            }
        }
    }

    /// Unix seconds of the last snapshot written, or of the start (LASTSAVE).
    pub fn last_save(&self) -> u64 {
        self.last_save.load(Ordering::Relaxed)
    }

    /// BGSAVE: [`Keyspace::save`] on a thread of its own, while clients go on. `Ok(false)` if
    /// one is running already. The snapshot is not a single point in time: a command that
    /// runs meanwhile may be in it or not (in strict mode the log replayed over it makes it
    /// whole).
    pub fn save_in_background(self: &Arc<Self>) -> std::io::Result<bool> {
        if self.bgsave_running.swap(true, Ordering::AcqRel) {
            return Ok(false);
        }
        let ks = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name("kv-bgsave".into())
            .spawn(move || {
                if let Err(e) = ks.save() {
                    tracing::error!("KV: background save failed - {e}");
                }
                ks.bgsave_running.store(false, Ordering::Release);
            });
        match spawned {
            Ok(_) => Ok(true),
            Err(e) => {
                self.bgsave_running.store(false, Ordering::Release);
                Err(e)
            }
        }
    }

    /// Whether a BGSAVE is running.
    pub fn saving_in_background(&self) -> bool {
        self.bgsave_running.load(Ordering::Acquire)
    }

    /// SAVE: a snapshot now (strict mode: a compaction of the log).
    pub fn save(&self) -> Result<(), PersistError> {
        let Some(dir) = self.data_dir.clone() else {
            return Ok(());
        };
        // One snapshot at a time (SAVE, BGSAVE, compaction): they share a temporary file.
        let _one = self.compacting.lock();
        match &self.log {
            Some(log) => {
                let g = log.rotate().map_err(|what| PersistError::Log {
                    path: dir.clone(),
                    what,
                })?;
                let size = self.write_snapshot(&dir, g)?;
                self.last_snapshot.store(size, Ordering::Relaxed);
                self.drop_logs_before(&dir, g);
            }
            None => {
                let g = self.generation.load(Ordering::Relaxed);
                self.write_snapshot(&dir, g)?;
                self.drop_logs_before(&dir, g);
            }
        }
        self.last_save.store(now_ms() / 1000, Ordering::Relaxed);
        Ok(())
    }

    /// Stops the threads, drains the log and writes the shutdown snapshot. Later calls do
    /// nothing. Commands must have stopped (the server stops listening first).
    pub fn close(&self) -> Result<(), PersistError> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.timer.stop();
        let threads: Vec<_> = self.threads.lock().drain(..).collect();
        for t in threads {
            let _ = t.join();
        }
        let Some(dir) = self.data_dir.clone() else {
            return Ok(());
        };
        // A BGSAVE still running finishes first: snapshots share a temporary file.
        let _one = self.compacting.lock();
        let generation = match &self.log {
            Some(log) => {
                let g = log.rotate().map_err(|what| PersistError::Log {
                    path: dir.clone(),
                    what,
                })?;
                log.close().map_err(|what| PersistError::Log {
                    path: dir.clone(),
                    what,
                })?;
                g
            }
            None => self.generation.load(Ordering::Relaxed),
        };
        self.write_snapshot(&dir, generation)?;
        self.drop_logs_before(&dir, generation);
        // The rotation made an empty file of the new generation; the next start makes its own.
        let _ = std::fs::remove_file(log_path(&dir, generation));
        Ok(())
    }

    /// Compacts the log if the current generation is due.
    fn maybe_compact(&self) {
        let (Some(log), Some(dir)) = (&self.log, &self.data_dir) else {
            return;
        };
        let threshold = COMPACT_MIN.max(2 * self.last_snapshot.load(Ordering::Relaxed));
        if log.generation_bytes() < threshold {
            return;
        }
        if let Err(e) = self.save() {
            tracing::error!("KV: log compaction in {} failed - {e}", dir.display());
        }
    }
}

/// The compaction thread of strict mode: checks the log's size every second (and whether to
/// stop every 100 ms).
fn compactor(ks: Weak<Keyspace>) {
    let mut ticks = 0u32;
    loop {
        std::thread::sleep(Duration::from_millis(100));
        let Some(ks) = ks.upgrade() else {
            return;
        };
        if ks.closed.load(Ordering::Acquire) {
            return;
        }
        ticks += 1;
        if ticks.is_multiple_of(10) {
            ks.maybe_compact();
        }
    }
}

#[cfg(test)]
#[path = "persist_tests.rs"]
mod tests;
