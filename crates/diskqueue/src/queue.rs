//! The queue handle: state, opening, syncing, emptying, closing. Reading and writing live in
//! `read.rs` and `write.rs`, recovery of the on-disk state in `recovery.rs`; they are all
//! `impl DiskQueue` blocks over the fields defined here.
//!
//! The API is synchronous and `&mut self` on purpose: the engine owns one `DiskQueue` per topic or
//! channel and calls it from a short critical section or a dedicated blocking thread, so there is
//! no internal locking, no background thread and no async runtime. Timers (`--sync-timeout`) are
//! the owner's: it calls [`DiskQueue::sync_if_dirty`] on its tick.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use tracing::{debug, error, info};

use crate::error::{DiskQueueError, Result};
use crate::files::{file_len, remove_if_exists, Layout, Metadata, Position};
use crate::options::DiskQueueOptions;
use crate::recovery;

/// Anomalies seen since the queue was opened, for `/stats` and health reporting. None of them
/// is ever handled silently: each is also logged (target `diskqueue`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Data files found corrupt (invalid length, torn or short record) and renamed to `.bad`.
    pub corrupt_files: u64,
    /// Data files the reader expected but that did not exist, skipped.
    pub missing_files: u64,
    /// Records written after the last metadata sync that were found intact on open and kept
    /// (nsqd delivers them too but does not count them in the depth).
    pub recovered_records: u64,
    /// Times the metadata was missing, unreadable or inconsistent while data files existed, and
    /// was rebuilt from the data files.
    pub metadata_rebuilds: u64,
    /// Times the depth was wrong when the reader caught up with the writer and was forced to 0.
    pub depth_resets: u64,
    /// fsync or metadata writes that failed (retried on the next sync).
    pub sync_errors: u64,
    /// Torn or corrupt tails cut off the last data file on open (bytes written after the last
    /// fsync that never formed a whole record: a crash mid-write, never acknowledged).
    pub torn_tails_truncated: u64,
}

/// The last corruption the reader ran into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Corruption {
    /// The file as it was named before being renamed to `.bad`.
    pub file: PathBuf,
    /// Offset of the first byte that could not be read.
    pub offset: u64,
    /// Why it was considered corrupt.
    pub reason: String,
}

/// A record read ahead by `peek`, not yet consumed.
pub(crate) struct Peeked {
    pub payload: Vec<u8>,
    /// Where the reader goes once this record is consumed.
    pub next: Position,
}

/// The open read file.
pub(crate) struct ReadHandle {
    pub file_num: u64,
    pub reader: BufReader<File>,
    /// Offset the `BufReader` stands at.
    pub offset: u64,
    /// Size of the file once it is no longer the write file (read lazily, then cached).
    pub complete_len: Option<u64>,
}

/// A durable FIFO of byte payloads in nsqd's on-disk format. See the crate docs.
pub struct DiskQueue {
    pub(crate) layout: Layout,
    pub(crate) opts: DiskQueueOptions,
    /// Records not read yet (in explicit-ack mode, read but unacknowledged records are not
    /// counted here but in `unacked`).
    pub(crate) depth: i64,
    pub(crate) read: Position,
    /// Explicit-ack mode (`ack.rs`): the position the metadata records as the read position,
    /// i.e. the oldest record not acknowledged. Equal to `read` in the default mode.
    pub(crate) acked: Position,
    /// Explicit-ack mode: where each read but unacknowledged record ends, oldest first.
    pub(crate) unacked: std::collections::VecDeque<Position>,
    pub(crate) explicit_ack: bool,
    /// Explicit-ack mode: corrupt files the reader skipped while acknowledged data still
    /// pointed into them; renamed `.bad` once the acknowledgements move past them.
    pub(crate) pending_bad: Vec<u64>,
    /// A data file was created since the directory was last fsynced.
    pub(crate) dir_unsynced: bool,
    /// An fsync of a finished data file failed since the last `flush_durable`.
    pub(crate) fsync_lost: bool,
    pub(crate) write: Position,
    pub(crate) reader: Option<ReadHandle>,
    pub(crate) writer: Option<File>,
    pub(crate) peeked: Option<Peeked>,
    /// Reads and writes since the last successful sync.
    pub(crate) ops_since_sync: u64,
    /// State changed in a way the metadata must record (file skipped, depth reset, ...).
    pub(crate) dirty: bool,
    /// Bytes were appended to the write file (or adopted by recovery) since its last fsync.
    pub(crate) data_unsynced: bool,
    /// Bytes of the data files from the read file to the write file.
    pub(crate) disk_bytes: u64,
    pub(crate) counters: Counters,
    pub(crate) last_corruption: Option<Corruption>,
    /// Reused encoding buffer, so a put allocates nothing in the steady state.
    pub(crate) write_buf: Vec<u8>,
}

impl std::fmt::Debug for DiskQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiskQueue")
            .field("name", &self.layout.name())
            .field("depth", &self.depth)
            .field("read", &self.read)
            .field("write", &self.write)
            .field("disk_bytes", &self.disk_bytes)
            .field("counters", &self.counters)
            .finish_non_exhaustive()
    }
}

impl DiskQueue {
    /// Opens (or creates, lazily) the queue `name` in `dir`, which must exist. Reads the metadata
    /// and repairs whatever a crash left behind (see the crate docs, "Recovery"). Data files are
    /// only created by the first put; the metadata file by the first sync.
    pub fn open(dir: &Path, name: &str, opts: DiskQueueOptions) -> Result<DiskQueue> {
        opts.validate()?;
        let layout = Layout::new(dir, name)?;
        match std::fs::metadata(dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(DiskQueueError::io(
                    "open",
                    dir,
                    std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a directory"),
                ))
            }
            Err(e) => return Err(DiskQueueError::io("open", dir, e)),
        }
        let recovered = recovery::recover(&layout, &opts)?;
        let mut queue = DiskQueue {
            layout,
            opts,
            depth: recovered.meta.depth,
            read: recovered.meta.read,
            acked: recovered.meta.read,
            unacked: std::collections::VecDeque::new(),
            explicit_ack: false,
            pending_bad: Vec::new(),
            dir_unsynced: false,
            fsync_lost: false,
            write: recovered.meta.write,
            reader: None,
            writer: None,
            peeked: None,
            ops_since_sync: 0,
            dirty: recovered.changed,
            // Adopted records may still be only in the page cache: fsync before the
            // metadata claims them.
            data_unsynced: recovered.changed,
            disk_bytes: recovered.disk_bytes,
            counters: recovered.counters,
            last_corruption: None,
            write_buf: Vec::new(),
        };
        if queue.dirty {
            // Persist the repaired state now, so a second crash does not redo (or undo) it.
            queue.sync_logged();
        }
        info!(
            target: "diskqueue",
            queue = queue.layout.name(),
            depth = queue.depth,
            "DISKQUEUE({}): opened, read {},{} write {},{}",
            queue.layout.name(),
            queue.read.file,
            queue.read.pos,
            queue.write.file,
            queue.write.pos
        );
        Ok(queue)
    }

    /// The queue's name (`<topic>` or `<topic>:<channel>`).
    pub fn name(&self) -> &str {
        self.layout.name()
    }

    /// The options the queue was opened with.
    pub fn options(&self) -> &DiskQueueOptions {
        &self.opts
    }

    /// Number of unread records as tracked in the metadata (nsqd's `backend_depth`). It can be
    /// off after corruption (until the reader reaches the writer, where it is reset to 0); use
    /// [`DiskQueue::has_data`] to decide whether to read.
    pub fn depth(&self) -> i64 {
        self.depth
    }

    /// Whether there is anything left to read, from the read and write positions (exact even
    /// when the depth is not). Read but unacknowledged records (explicit-ack mode) do not count.
    pub fn has_data(&self) -> bool {
        self.read < self.write
    }

    /// Bytes of the data files from the current read file to the current write file, the
    /// quantity `max_bytes` bounds. Read data stays counted until its file is deleted.
    pub fn disk_bytes(&self) -> u64 {
        self.disk_bytes
    }

    /// `(file number, offset)` of the next record to read.
    pub fn read_position(&self) -> (u64, u64) {
        (self.read.file, self.read.pos)
    }

    /// `(file number, offset)` the metadata records as the read position: the oldest record
    /// not acknowledged (the same as [`DiskQueue::read_position`] unless explicit-ack mode).
    pub fn acked_position(&self) -> (u64, u64) {
        (self.acked.file, self.acked.pos)
    }

    /// `(file number, offset)` where the next record will be written.
    pub fn write_position(&self) -> (u64, u64) {
        (self.write.file, self.write.pos)
    }

    /// Anomaly counters since open.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// Data files renamed to `.bad` since open (shorthand for `counters().corrupt_files`).
    pub fn corrupt_files(&self) -> u64 {
        self.counters.corrupt_files
    }

    /// The most recent corruption met by the reader, if any.
    pub fn last_corruption(&self) -> Option<&Corruption> {
        self.last_corruption.as_ref()
    }

    /// Whether anything happened since the last sync (nsqd syncs on its `--sync-timeout` tick
    /// only then).
    pub fn needs_sync(&self) -> bool {
        self.ops_since_sync > 0 || self.dirty
    }

    /// Syncs if [`DiskQueue::needs_sync`]; for the owner's `--sync-timeout` tick.
    pub fn sync_if_dirty(&mut self) -> Result<()> {
        if self.needs_sync() {
            self.sync()
        } else {
            Ok(())
        }
    }

    /// fsyncs the current write file (if anything was written to it since its last fsync),
    /// then replaces the metadata file atomically (`<meta>.<random>.tmp`, fsync, rename).
    pub fn sync(&mut self) -> Result<()> {
        self.fsync_write_file()?;
        self.layout.write_metadata(self.metadata())?;
        self.ops_since_sync = 0;
        self.dirty = false;
        Ok(())
    }

    /// Deletes every data file and the metadata file; the queue is empty afterwards and the
    /// next write starts a new file number (the metadata is recreated by the next sync, as in
    /// nsqd). On a removal error the queue is still reset and the first error is returned.
    pub fn empty(&mut self) -> Result<()> {
        info!(target: "diskqueue", "DISKQUEUE({}): emptying", self.name());
        let result = self.remove_all_files();
        self.write = Position::start_of(self.write.file + 1);
        self.read = self.write;
        self.acked = self.write;
        self.unacked.clear();
        self.pending_bad.clear();
        self.depth = 0;
        self.disk_bytes = 0;
        self.ops_since_sync = 0;
        self.data_unsynced = false;
        result
    }

    /// Syncs and closes the queue (nsqd's `Close`). Dropping a queue without closing it is like
    /// a process crash: written data stays in the files, unsynced read progress is lost.
    pub fn close(mut self) -> Result<()> {
        info!(target: "diskqueue", "DISKQUEUE({}): closing", self.name());
        self.sync()
    }

    /// Removes the queue's data files and metadata file (`.bad` files are left for inspection).
    pub fn delete(mut self) -> Result<()> {
        info!(target: "diskqueue", "DISKQUEUE({}): deleting", self.name());
        self.remove_all_files()
    }

    pub(crate) fn metadata(&self) -> Metadata {
        Metadata {
            depth: self.depth + self.unacked.len() as i64,
            read: self.acked,
            write: self.write,
        }
    }

    /// fsyncs the write file if bytes were appended (or adopted) since its last fsync.
    pub(crate) fn fsync_write_file(&mut self) -> Result<()> {
        if !self.data_unsynced {
            return Ok(());
        }
        let path = self.layout.data_file(self.write.file);
        let synced = match &self.writer {
            Some(writer) => writer.sync_data(),
            // No handle (after a failed write, or right after open): fsync through a fresh
            // one, so the metadata never claims bytes that are not on disk.
            None if self.write.pos > 0 => match File::open(&path) {
                Ok(file) => file.sync_data(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(e),
            },
            None => Ok(()),
        };
        if let Err(e) = synced {
            // The handle's state is unknown after a failed fsync: reopen on next write.
            self.writer = None;
            return Err(DiskQueueError::io("fsync", path, e));
        }
        self.data_unsynced = false;
        Ok(())
    }

    /// Syncs; a failure is logged and counted, and the state stays dirty so the next sync
    /// retries. Used where nsqd syncs as a side effect (roll, file change, sync_every).
    pub(crate) fn sync_logged(&mut self) {
        if let Err(e) = self.sync() {
            self.note_sync_error(&e);
        }
    }

    pub(crate) fn note_sync_error(&mut self, e: &DiskQueueError) {
        self.counters.sync_errors += 1;
        self.dirty = true;
        error!(target: "diskqueue", "DISKQUEUE({}) failed to sync - {}", self.name(), e);
    }

    /// Syncs once `sync_every` reads and writes have accumulated.
    pub(crate) fn maybe_sync(&mut self) {
        if self.ops_since_sync >= self.opts.sync_interval() {
            self.sync_logged();
        }
    }

    /// Subtracts a file's size from `disk_bytes` before it is removed or renamed.
    pub(crate) fn forget_file_bytes(&mut self, path: &Path) {
        let len = file_len(path).ok().flatten().unwrap_or(0);
        self.disk_bytes = self.disk_bytes.saturating_sub(len);
    }

    fn remove_all_files(&mut self) -> Result<()> {
        self.peeked = None;
        self.reader = None;
        self.writer = None;
        let mut first_error = None;
        for n in self.acked.file.min(self.read.file)..=self.write.file {
            let path = self.layout.data_file(n);
            if let Err(e) = remove_if_exists(&path) {
                error!(target: "diskqueue", "DISKQUEUE({}) failed to remove data file - {}", self.name(), e);
                first_error.get_or_insert(DiskQueueError::io("remove", path, e));
            }
        }
        let meta = self.layout.meta_file();
        if let Err(e) = remove_if_exists(&meta) {
            error!(target: "diskqueue", "DISKQUEUE({}) failed to remove metadata file - {}", self.name(), e);
            first_error.get_or_insert(DiskQueueError::io("remove", meta, e));
        }
        debug!(target: "diskqueue", "DISKQUEUE({}): removed files {}..={}", self.name(), self.read.file, self.write.file);
        first_error.map_or(Ok(()), Err)
    }
}
