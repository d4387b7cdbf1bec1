//! The writer: validates payloads, enforces `max_bytes`, rolls files like nsqd (before a write
//! that would make a non-empty file exceed `max_bytes_per_file`, syncing on the roll) and appends
//! records with one `write` per put, or per file segment of a batch. Writes go straight to the
//! file (no user-space buffer), so a put that returned `Ok` survives a process crash; surviving
//! power loss takes a sync.

use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};

use tracing::{info, warn};

use crate::error::{DiskQueueError, Result};
use crate::files::{file_len, Position};
use crate::queue::DiskQueue;
use crate::record::{encode_into, encode_payload, record_len};

/// Something to append as one record's payload. Byte slices are; an owner can implement it for
/// its own messages, so that a batch is encoded straight into the queue's write buffer instead
/// of being built in a buffer of its own first and copied.
pub trait Payload {
    /// Bytes [`Payload::write_payload`] appends.
    fn payload_len(&self) -> usize;
    /// Appends exactly [`Payload::payload_len`] bytes to `out`.
    fn write_payload(&self, out: &mut Vec<u8>);
}

impl<T: AsRef<[u8]> + ?Sized> Payload for T {
    fn payload_len(&self) -> usize {
        self.as_ref().len()
    }

    fn write_payload(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.as_ref());
    }
}

/// A batch is written in pieces of at most this many bytes (or one record, if larger), so a big
/// batch neither needs a buffer the size of a data file nor keeps one allocated.
const BATCH_WRITE_MAX: u64 = 1 << 20;

impl DiskQueue {
    /// Appends one payload (`[i64 ts][u16 attempts][16-byte id][body]` for nsqd messages) as
    /// `[i32 len][payload]`. On `Err` nothing was enqueued.
    pub fn put(&mut self, payload: &[u8]) -> Result<()> {
        self.check_size(payload)?;
        let needed = record_len(payload.len());
        self.check_capacity(needed)?;
        self.roll_if_needed(needed);
        self.write_buf.clear();
        encode_into(&mut self.write_buf, payload);
        let buf = std::mem::take(&mut self.write_buf);
        let result = self.append(&buf, 1);
        self.write_buf = buf;
        result?;
        self.maybe_sync();
        Ok(())
    }

    /// Appends several payloads in order, with one `write` per data file they land in (per MiB
    /// for big batches). All are validated (size, `max_bytes`) before anything is written, so
    /// on those errors nothing is enqueued; an I/O error part way returns
    /// [`DiskQueueError::BatchIncomplete`] telling how many were written (or the plain error
    /// when none were).
    pub fn put_batch<P: Payload>(&mut self, payloads: &[P]) -> Result<()> {
        let mut needed = 0u64;
        for payload in payloads {
            self.check_len(payload.payload_len())?;
            needed += record_len(payload.payload_len());
        }
        self.check_capacity(needed)?;

        let total = payloads.len();
        let mut written = 0;
        let mut buf = std::mem::take(&mut self.write_buf);
        let mut result = Ok(());
        while written < total {
            self.roll_if_needed(record_len(payloads[written].payload_len()));
            // Gather the records that fit in the current file; the first always goes.
            buf.clear();
            let mut pos = self.write.pos;
            let mut end = written;
            while end < total {
                let len = record_len(payloads[end].payload_len());
                let full =
                    self.would_overflow(pos, len) || (pos - self.write.pos) + len > BATCH_WRITE_MAX;
                if end > written && full {
                    break;
                }
                encode_payload(&mut buf, &payloads[end]);
                pos += len;
                end += 1;
            }
            if let Err(e) = self.append(&buf, (end - written) as i64) {
                result = Err(if written == 0 {
                    e
                } else {
                    DiskQueueError::BatchIncomplete {
                        written,
                        total,
                        source: Box::new(e),
                    }
                });
                break;
            }
            written = end;
        }
        buf.clear();
        if buf.capacity() as u64 > 2 * BATCH_WRITE_MAX {
            buf = Vec::new();
        }
        self.write_buf = buf;
        result?;
        self.maybe_sync();
        Ok(())
    }

    fn check_size(&self, payload: &[u8]) -> Result<()> {
        self.check_len(payload.len())
    }

    fn check_len(&self, len: usize) -> Result<()> {
        if self.opts.valid_len(len as u64) {
            Ok(())
        } else {
            Err(DiskQueueError::InvalidMessageSize {
                size: len,
                min: self.opts.min_msg_size,
                max: self.opts.max_msg_size,
            })
        }
    }

    fn check_capacity(&self, needed: u64) -> Result<()> {
        let max = self.opts.max_bytes;
        if max > 0 && self.disk_bytes.saturating_add(needed) > max {
            return Err(DiskQueueError::Full {
                max_bytes: max,
                current_bytes: self.disk_bytes,
                needed_bytes: needed,
            });
        }
        Ok(())
    }

    /// nsqd's rule: roll when the file is non-empty and the record would push it past the limit.
    pub(crate) fn would_overflow(&self, pos: u64, len: u64) -> bool {
        pos > 0 && pos.saturating_add(len) > self.opts.max_bytes_per_file
    }

    fn roll_if_needed(&mut self, len: u64) {
        if self.would_overflow(self.write.pos, len) {
            self.roll();
        }
    }

    /// Moves the writer to the start of the next file and syncs, as nsqd: the finished file is
    /// fsynced, then the metadata names the new file (before it exists).
    fn roll(&mut self) {
        if self.writer.is_none() && self.write.pos > 0 {
            self.trim_failed_write();
        }
        let finished = self.fsync_write_file();
        self.write = Position::start_of(self.write.file + 1);
        self.writer = None;
        self.data_unsynced = false;
        match finished {
            Ok(()) => self.sync_logged(),
            Err(e) => {
                // Records of the finished file may not be on disk: the next
                // `flush_durable` must not report success.
                self.fsync_lost = true;
                self.note_sync_error(&e);
            }
        }
    }

    /// Writes already-encoded records at the write position and accounts for them.
    fn append(&mut self, bytes: &[u8], records: i64) -> Result<()> {
        let n = self.write.file;
        let file = self.writer_file()?;
        if let Err(e) = file.write_all(bytes) {
            // Part of the bytes may be in the file past `write.pos`: cut them now, so no reader
            // opened before the writer reopens can buffer them (it would later return them in
            // place of the records written at the same offsets). Reopening trims them too.
            self.writer = None;
            self.trim_failed_write();
            if self.read.file == self.write.file {
                self.reader = None;
            }
            return Err(DiskQueueError::io("write", self.layout.data_file(n), e));
        }
        self.write.pos += bytes.len() as u64;
        self.data_unsynced = true;
        self.depth += records;
        self.disk_bytes += bytes.len() as u64;
        self.ops_since_sync += records.unsigned_abs();
        Ok(())
    }

    /// Cuts the bytes a failed write may have left past the write position, so that the file,
    /// once finished, ends on a record boundary. (A reopened writer does the same.)
    fn trim_failed_write(&mut self) {
        let path = self.layout.data_file(self.write.file);
        let trimmed = OpenOptions::new().write(true).open(&path).and_then(|file| {
            if file.metadata()?.len() > self.write.pos {
                file.set_len(self.write.pos)?;
            }
            Ok(())
        });
        match trimmed {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => warn!(
                target: "diskqueue",
                "DISKQUEUE({}) failed to trim {} to {} bytes - {}",
                self.name(),
                path.display(),
                self.write.pos,
                e
            ),
            _ => {}
        }
    }

    /// The open write file, opened (and created) at the write position if needed.
    fn writer_file(&mut self) -> Result<&mut File> {
        if self.writer.is_none() {
            self.open_writer()?;
        }
        match self.writer.as_mut() {
            Some(file) => Ok(file),
            None => Err(DiskQueueError::io(
                "open",
                self.layout.data_file(self.write.file),
                std::io::Error::other("write file not open"),
            )),
        }
    }

    fn open_writer(&mut self) -> Result<()> {
        let mut path = self.layout.data_file(self.write.file);
        if self.write.pos > 0 {
            let len = file_len(&path)?.unwrap_or(0);
            if len < self.write.pos {
                // Someone removed or truncated our file: appending at write.pos would leave a
                // hole the reader takes for corruption. Start a new file; the reader will
                // report the short one.
                warn!(
                    target: "diskqueue",
                    "DISKQUEUE({}) {} is {} bytes, expected {}: continuing in a new file",
                    self.name(),
                    path.display(),
                    len,
                    self.write.pos
                );
                self.roll();
                path = self.layout.data_file(self.write.file);
            }
        }
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| DiskQueueError::io("open", &path, e))?;
        let len = file
            .metadata()
            .map_err(|e| DiskQueueError::io("stat", &path, e))?
            .len();
        if len > self.write.pos {
            // Leftovers of a failed write: never acknowledged, never counted. A reader on this
            // file may have buffered them: it must reopen.
            file.set_len(self.write.pos)
                .map_err(|e| DiskQueueError::io("truncate", &path, e))?;
            if self.read.file == self.write.file {
                self.reader = None;
            }
        }
        file.seek(SeekFrom::Start(self.write.pos))
            .map_err(|e| DiskQueueError::io("seek", &path, e))?;
        info!(target: "diskqueue", "DISKQUEUE({}): writeOne() opened {}", self.name(), path.display());
        if self.write.pos == 0 {
            // Possibly a new directory entry: `flush_durable` fsyncs the directory too.
            self.dir_unsynced = true;
        }
        self.writer = Some(file);
        Ok(())
    }
}
