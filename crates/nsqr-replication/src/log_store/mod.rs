//! A group's durable Raft log, in its own directory: segment files of entries
//! ([`segment`]), the vote (`vote`), the last purged log id (`purged`) and the last known
//! commit (`committed`).
//!
//! An append is one `write` of all its entries; with `fsync` on, openraft hears they are
//! durable only after an `fdatasync` that [`flusher`] shares among every append that arrived
//! while the previous one ran (a group commit). The vote is always fsynced: Raft's safety rests on a node never voting twice in a
//! term. Compaction (`purge`, after a snapshot) deletes whole segments behind the purge point.
//! Where each entry is lives in memory, and the newest entries themselves ([`cache`]); older
//! entries are read back from the files. A write refused by a full disk waits for space
//! ([`crate::space`]) instead of stopping the group; an append cut short is cut off the file
//! first, so the next one starts where it did.

mod cache;
mod flusher;
pub(crate) mod segment;

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::ops::RangeBounds;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{AnyError, RaftLogReader, StorageIOError, Vote};

use self::cache::Cache;
use self::flusher::{Flusher, Written};
use crate::error::StoreError;
use crate::files::{self, io_error};
use crate::space::SpaceWait;
use crate::types::{Entry, LogId, NodeId, StorageError, TypeConfig};

/// The largest encoded entry: a record's length is 32 bits.
const MAX_ENTRY_BYTES: usize = u32::MAX as usize;

/// Where one entry is.
#[derive(Clone, Copy, Debug)]
struct Location {
    segment: u64,
    offset: u64,
    len: u32,
    log_id: LogId,
}

struct Segment {
    path: PathBuf,
    file: Arc<File>,
    len: u64,
}

struct Inner {
    dir: PathBuf,
    fsync: bool,
    segment_bytes: u64,
    segments: BTreeMap<u64, Segment>,
    index: BTreeMap<u64, Location>,
    purged: Option<LogId>,
    vote: Option<Vote<NodeId>>,
    committed: File,
    /// Whether the last write of `committed` failed (logged once until one succeeds).
    committed_failing: bool,
    cache: Cache,
}

/// A group's log store; clones share it (openraft reads through a clone while appending).
#[derive(Clone)]
pub struct LogStore {
    inner: Arc<Mutex<Inner>>,
    /// The sync thread, when appends are fsynced.
    flusher: Option<Arc<Flusher>>,
    /// Where writes refused by a full disk wait.
    space: SpaceWait,
}

impl LogStore {
    /// Opens (or creates) the log in `dir`: reads the vote and purge point, scans every segment,
    /// truncates a torn tail of the last one. `fsync`: appends are durable before they are
    /// acknowledged. A new segment starts once the current one exceeds `segment_bytes`.
    pub fn open(dir: &Path, fsync: bool, segment_bytes: u64) -> Result<Self, StoreError> {
        fs::create_dir_all(dir).map_err(|e| io_error(dir, e))?;
        let vote = read_small(&dir.join("vote"))?;
        let purged = read_small(&dir.join("purged"))?;
        let committed_path = dir.join("committed");
        let committed = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&committed_path)
            .map_err(|e| io_error(&committed_path, e))?;
        let mut inner = Inner {
            dir: dir.to_owned(),
            fsync,
            segment_bytes: segment_bytes.max(1),
            segments: BTreeMap::new(),
            index: BTreeMap::new(),
            purged,
            vote,
            committed,
            committed_failing: false,
            cache: Cache::default(),
        };
        inner.recover()?;
        let flusher = match fsync {
            false => None,
            true => {
                let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
                let flusher = Flusher::start(&name.unwrap_or_default());
                Some(Arc::new(flusher.map_err(|e| io_error(dir, e))?))
            }
        };
        Ok(LogStore {
            inner: Arc::new(Mutex::new(inner)),
            flusher,
            space: SpaceWait::default(),
        })
    }

    /// The wait of this store's writes for space, to close when the group stops.
    pub(crate) fn space_wait(&self) -> SpaceWait {
        self.space.clone()
    }

    /// How many committed entries the log holds after its purge point: at most what the
    /// state machine replays when the group opens.
    pub(crate) fn committed_in_log(&self) -> u64 {
        let inner = self.lock();
        let committed = inner.read_committed().map_or(0, |l| l.index + 1);
        let purged = inner.purged.map_or(0, |l| l.index + 1);
        committed.saturating_sub(purged)
    }

    /// True when this store has never held anything: no vote, no entry, nothing purged. A
    /// node whose store is pristine in a group that exists elsewhere lost its log
    /// (`rejoin.rs`).
    pub(crate) fn is_pristine(&self) -> bool {
        let inner = self.lock();
        inner.vote.is_none() && inner.index.is_empty() && inner.purged.is_none()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves the maps consistent with the files up to the
        // failed call, which the next call's errors report.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` on the store on a blocking thread (appends, truncation, purge do file IO).
    async fn blocking<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Inner) -> Result<T, StoreError> + Send + 'static,
    {
        let store = self.clone();
        tokio::task::spawn_blocking(move || f(&mut store.lock()))
            .await
            .map_err(|e| StoreError::Io {
                path: store_dir(&self.lock().dir),
                source: std::io::Error::other(e),
            })?
    }
}

fn read_small<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<T>, StoreError> {
    match files::read_checked(path)? {
        Some(payload) => files::decode(path, &payload).map(Some),
        None => Ok(None),
    }
}

fn store_dir(dir: &Path) -> String {
    dir.display().to_string()
}

fn storage_error(e: StoreError) -> StorageError {
    StorageIOError::write_logs(AnyError::new(&e)).into()
}

impl Inner {
    fn recover(&mut self) -> Result<(), StoreError> {
        let mut firsts = Vec::new();
        for item in fs::read_dir(&self.dir).map_err(|e| io_error(&self.dir, e))? {
            let path = item.map_err(|e| io_error(&self.dir, e))?.path();
            if let Some(first) = segment::first_index(&path) {
                firsts.push((first, path));
            }
        }
        firsts.sort();
        let count = firsts.len();
        for (n, (first, path)) in firsts.into_iter().enumerate() {
            self.recover_segment(first, path, n + 1 == count)?;
        }
        Ok(())
    }

    fn recover_segment(&mut self, first: u64, path: PathBuf, last: bool) -> Result<(), StoreError> {
        let bytes = fs::read(&path).map_err(|e| io_error(&path, e))?;
        let scanned = segment::scan(&bytes);
        if let Some(reason) = scanned.stopped {
            if !last {
                return Err(corrupt(&path, scanned.valid_len, reason));
            }
            tracing::warn!(
                path = %path.display(),
                offset = scanned.valid_len,
                "replication log: {reason}; truncating the torn tail"
            );
        }
        let file = Arc::new(open_segment(&path)?);
        if scanned.stopped.is_some() {
            file.set_len(scanned.valid_len)
                .map_err(|e| io_error(&path, e))?;
        }
        let purged = self.purged.map(|p| p.index);
        for (offset, len) in scanned.records {
            let payload = &bytes[offset as usize..offset as usize + len as usize];
            let entry: Entry = files::decode(&path, payload)?;
            let index = entry.log_id.index;
            let expected = self.index.keys().next_back().map(|i| i + 1);
            if expected.is_some_and(|e| e != index) {
                return Err(corrupt(&path, offset, "entries out of sequence"));
            }
            if !matches!(purged, Some(p) if index <= p) {
                let log_id = entry.log_id;
                let location = Location {
                    segment: first,
                    offset,
                    len,
                    log_id,
                };
                self.index.insert(index, location);
            }
        }
        let len = scanned.valid_len;
        self.segments.insert(first, Segment { path, file, len });
        Ok(())
    }

    /// Writes `entries` to the active segment; returns the segment written (None if there
    /// was nothing to write). Syncing is the caller's. On failure the entries come back with
    /// the error, and the files are as they were.
    fn append(&mut self, entries: Vec<Entry>) -> Result<Option<(Arc<File>, PathBuf)>, Refused> {
        let Some(first) = entries.first().map(|e| e.log_id.index) else {
            return Ok(None);
        };
        let (buf, records, sizes) = match encode_entries(&self.dir, &entries) {
            Ok(encoded) => encoded,
            Err(e) => return Err((e, entries)),
        };
        let (seg_first, seg) = match self.active_segment(first) {
            Ok(active) => active,
            Err(e) => return Err((e, entries)),
        };
        let base = seg.len;
        if let Err(e) = (&*seg.file).write_all(&buf) {
            // A write cut short (a full disk) left part of a record at the end: cut it, so
            // the file ends on whole records where this store says it does.
            let e = match seg.file.set_len(base) {
                Ok(()) => io_error(&seg.path, e),
                Err(cut) => corrupt(
                    &seg.path,
                    base,
                    &format!("a failed append ({e}) could not be cut off: {cut}"),
                ),
            };
            return Err((e, entries));
        }
        seg.len += buf.len() as u64;
        let written = (seg.file.clone(), seg.path.clone());
        for (offset, len, log_id) in records {
            let location = Location {
                segment: seg_first,
                offset: base + offset,
                len,
                log_id,
            };
            self.index.insert(log_id.index, location);
        }
        for (entry, size) in entries.into_iter().zip(sizes) {
            self.cache.push(entry, size);
        }
        Ok(Some(written))
    }

    /// The segment to append to, starting a new one (named `first`) when there is none or the
    /// last one is full.
    fn active_segment(&mut self, first: u64) -> Result<(u64, &mut Segment), StoreError> {
        let full = match self.segments.last_key_value() {
            Some((_, seg)) => seg.len >= self.segment_bytes,
            None => true,
        };
        if full {
            let path = self.dir.join(segment::file_name(first));
            let file = Arc::new(open_segment(&path)?);
            files::sync_dir(&path).map_err(|e| io_error(&path, e))?;
            self.segments.insert(first, Segment { path, file, len: 0 });
        }
        match self.segments.last_entry() {
            Some(entry) => {
                let key = *entry.key();
                Ok((key, entry.into_mut()))
            }
            None => Err(corrupt(&self.dir, 0, "no segment to append to")),
        }
    }

    /// Removes every entry from `index` on.
    fn truncate(&mut self, index: u64) -> Result<(), StoreError> {
        let Some(cut) = self.index.get(&index).copied() else {
            return Ok(());
        };
        let later: Vec<u64> = self
            .segments
            .range(cut.segment + 1..)
            .map(|(k, _)| *k)
            .collect();
        for first in later {
            if let Some(seg) = self.segments.remove(&first) {
                fs::remove_file(&seg.path).map_err(|e| io_error(&seg.path, e))?;
            }
        }
        if let Some(seg) = self.segments.get_mut(&cut.segment) {
            let len = cut.offset - segment::HEADER as u64;
            seg.file.set_len(len).map_err(|e| io_error(&seg.path, e))?;
            seg.len = len;
            if self.fsync {
                seg.file.sync_all().map_err(|e| io_error(&seg.path, e))?;
            }
        }
        self.index.split_off(&index);
        self.cache.truncate(index);
        Ok(())
    }

    /// Forgets every entry up to `log_id`, deleting the segments that hold nothing after it.
    fn purge(&mut self, log_id: LogId) -> Result<(), StoreError> {
        let path = self.dir.join("purged");
        files::write_atomic(&path, &files::encode(&path, &log_id)?)?;
        self.purged = Some(log_id);
        self.index = self.index.split_off(&(log_id.index + 1));
        self.cache.purge(log_id.index);
        // A segment may go once the next one starts at or before the first entry kept.
        let keep_from = self
            .index
            .keys()
            .next()
            .copied()
            .unwrap_or(log_id.index + 1);
        let firsts: Vec<u64> = self.segments.keys().copied().collect();
        for pair in firsts.windows(2) {
            if pair[1] <= keep_from {
                if let Some(seg) = self.segments.remove(&pair[0]) {
                    fs::remove_file(&seg.path).map_err(|e| io_error(&seg.path, e))?;
                }
            }
        }
        Ok(())
    }

    fn read(&self, location: &Location) -> Result<Entry, StoreError> {
        if let Some(entry) = self.cache.get(location.log_id.index) {
            if entry.log_id == location.log_id {
                return Ok(entry.clone());
            }
        }
        let seg = self
            .segments
            .get(&location.segment)
            .ok_or_else(|| corrupt(&self.dir, location.offset, "an entry's segment is gone"))?;
        let mut payload = vec![0; location.len as usize];
        seg.file
            .read_exact_at(&mut payload, location.offset)
            .map_err(|e| io_error(&seg.path, e))?;
        files::decode(&seg.path, &payload)
    }

    /// Rewrites `committed` in place without fsync: it only saves re-applying entries after
    /// a restart, and a stale or unreadable value makes the node wait for the leader's commit
    /// instead, so a failed write (a full disk) is logged, not an error.
    fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), StoreError> {
        let path = self.dir.join("committed");
        let payload = files::encode(&path, &committed)?;
        let mut record = Vec::with_capacity(payload.len() + segment::HEADER);
        segment::encode_record(&mut record, &payload);
        match self.committed.write_all_at(&record, 0) {
            Ok(()) => self.committed_failing = false,
            Err(e) if !self.committed_failing => {
                tracing::warn!(path = %path.display(), "replication log: {e}; the commit mark is not saved until a write succeeds");
                self.committed_failing = true;
            }
            Err(_) => {}
        }
        Ok(())
    }

    fn read_committed(&self) -> Option<LogId> {
        let mut bytes = Vec::new();
        let mut buf = [0u8; 256];
        let n = match self.committed.read_at(&mut buf, 0) {
            Ok(n) => n,
            Err(e) => {
                let path = self.dir.join("committed");
                tracing::warn!(path = %path.display(), "replication log: {e}; waiting for the leader's commit");
                0
            }
        };
        bytes.extend_from_slice(&buf[..n]);
        let scanned = segment::scan(&bytes);
        let (offset, len) = scanned.records.first()?;
        let payload = &bytes[*offset as usize..*offset as usize + *len as usize];
        postcard::from_bytes::<Option<LogId>>(payload)
            .ok()
            .flatten()
    }
}

/// An append that failed: why, and its entries, to be tried again.
type Refused = (StoreError, Vec<Entry>);

/// An append's encoded records: the bytes to write, each record's offset in them, length and
/// log id, and each entry's payload size (for the cache).
type Encoded = (Vec<u8>, Vec<(u64, u32, LogId)>, Vec<usize>);

fn encode_entries(dir: &Path, entries: &[Entry]) -> Result<Encoded, StoreError> {
    let mut buf = Vec::new();
    let mut records = Vec::with_capacity(entries.len());
    let mut sizes = Vec::with_capacity(entries.len());
    for entry in entries {
        let payload = files::encode(dir, entry)?;
        if payload.len() > MAX_ENTRY_BYTES - segment::HEADER {
            return Err(StoreError::Encode {
                path: dir.display().to_string(),
                reason: format!("entry {} is over 4 GiB", entry.log_id.index),
            });
        }
        let offset = (buf.len() + segment::HEADER) as u64;
        records.push((offset, payload.len() as u32, entry.log_id));
        segment::encode_record(&mut buf, &payload);
        sizes.push(payload.len());
    }
    Ok((buf, records, sizes))
}

/// True for a range of indexes that holds none because it ends before it starts.
fn is_empty_range(range: &impl RangeBounds<u64>) -> bool {
    use std::ops::Bound::{Excluded, Included, Unbounded};
    match (range.start_bound(), range.end_bound()) {
        (Included(s), Included(e)) => s > e,
        (Included(s), Excluded(e)) | (Excluded(s), Included(e)) => s >= e,
        (Excluded(s), Excluded(e)) => s.saturating_add(1) >= *e,
        (_, Unbounded) | (Unbounded, _) => false,
    }
}

fn open_segment(path: &Path) -> Result<File, StoreError> {
    OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| io_error(path, e))
}

fn corrupt(path: &Path, offset: u64, reason: &str) -> StoreError {
    StoreError::Corrupt {
        path: path.display().to_string(),
        offset,
        reason: reason.to_owned(),
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + Send>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError> {
        let inner = self.lock();
        let mut entries = Vec::new();
        if is_empty_range(&range) {
            // `BTreeMap::range` panics on a range that ends before it starts; openraft asks
            // for one only when its own bookkeeping is off, and gets no entries (its caller
            // then reports the entries missing as a storage error).
            return Ok(entries);
        }
        for location in inner.index.range(range).map(|(_, l)| *l) {
            let entry = inner.read(&location).map_err(|e| {
                StorageError::from(StorageIOError::read_log_at_index(
                    location.log_id.index,
                    AnyError::new(&e),
                ))
            })?;
            entries.push(entry);
        }
        Ok(entries)
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError> {
        let inner = self.lock();
        let last = inner.index.values().next_back().map(|l| l.log_id);
        Ok(LogState {
            last_purged_log_id: inner.purged,
            last_log_id: last.or(inner.purged),
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> Result<(), StorageError> {
        let vote = *vote;
        let save = || {
            self.blocking(move |inner| {
                let path = inner.dir.join("vote");
                files::write_atomic(&path, &files::encode(&path, &vote)?)?;
                inner.vote = Some(vote);
                Ok(())
            })
        };
        self.space
            .retry("vote", save)
            .await
            .map_err(|e| StorageIOError::write_vote(AnyError::new(&e)).into())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<NodeId>>, StorageError> {
        Ok(self.lock().vote)
    }

    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), StorageError> {
        self.lock().save_committed(committed).map_err(storage_error)
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, StorageError> {
        Ok(self.lock().read_committed())
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError>
    where
        I: IntoIterator<Item = Entry> + Send,
        I::IntoIter: Send,
    {
        // The entries go to the blocking thread and come back if the write failed, to be
        // tried again once there is space.
        let slot = Arc::new(Mutex::new(Some(
            entries.into_iter().collect::<Vec<Entry>>(),
        )));
        let append = || {
            let slot = Arc::clone(&slot);
            self.blocking(move |inner| {
                let take = |s: &Mutex<Option<Vec<Entry>>>| {
                    s.lock().unwrap_or_else(|p| p.into_inner()).take()
                };
                let entries = take(&slot).unwrap_or_default();
                inner.append(entries).map_err(|(e, entries)| {
                    *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(entries);
                    e
                })
            })
        };
        let written = self.space.retry("log append", append).await;
        match (written, &self.flusher) {
            (Ok(Some((file, path))), Some(flusher)) => {
                flusher.submit(Written {
                    file,
                    path,
                    callback,
                });
                Ok(())
            }
            (Ok(_), _) => {
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            (Err(e), _) => {
                callback.log_io_completed(Err(std::io::Error::other(e.to_string())));
                Err(storage_error(e))
            }
        }
    }

    async fn truncate(&mut self, log_id: LogId) -> Result<(), StorageError> {
        self.blocking(move |inner| inner.truncate(log_id.index))
            .await
            .map_err(storage_error)
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), StorageError> {
        let purge = || self.blocking(move |inner| inner.purge(log_id));
        self.space
            .retry("purge", purge)
            .await
            .map_err(storage_error)
    }
}

#[cfg(test)]
mod tests;
