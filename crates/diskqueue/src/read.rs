//! The reader: returns records in order, moves to the next file when one is finished (deleting
//! it and syncing), and deals with damage the way nsqd does, but loudly: a file with a corrupt
//! length or a torn/short record is renamed `<file>.bad` and skipped, and the event is counted and
//! logged. Unlike nsqd, an I/O error that says nothing about the bytes (e.g. too many open files)
//! is returned to the caller without touching the file, so a transient error never costs data.

use std::io::{self, BufReader, Seek, SeekFrom};

use tracing::{error, warn};

use crate::error::{DiskQueueError, Result};
use crate::files::{open_read, remove_if_exists, Position};
use crate::queue::{Corruption, DiskQueue, Peeked, ReadHandle};
use crate::record::{read_record, record_len, ReadFailure};

/// One step of the reader.
pub(crate) enum Step<T> {
    Record(T),
    /// The read file is finished (a complete file read to its end, possibly empty).
    EndOfFile,
    /// The read file does not exist.
    Missing,
}

/// The read file, open, as far as a reader may go in it.
pub(crate) enum Window {
    /// Valid data runs from the read position to `end`; `complete`: a finished file (not the
    /// write file).
    Open {
        end: u64,
        complete: bool,
    },
    EndOfFile,
    Missing,
}

impl DiskQueue {
    /// The next record without consuming it; repeated calls return the same record. `None` when
    /// the queue has nothing to read.
    pub fn peek(&mut self) -> Result<Option<&[u8]>> {
        if self.peeked.is_none() {
            self.peeked = self.fetch()?;
        }
        Ok(self.peeked.as_ref().map(|p| p.payload.as_slice()))
    }

    /// Consumes and returns the next record (the one `peek` showed, if any). `None` when the
    /// queue has nothing to read. An `Err` leaves the read position unchanged.
    pub fn read_next(&mut self) -> Result<Option<Vec<u8>>> {
        let next = match self.peeked.take() {
            Some(p) => p,
            None => match self.fetch()? {
                Some(p) => p,
                None => return Ok(None),
            },
        };
        self.consume(next.next);
        Ok(Some(next.payload))
    }

    /// Reads the record at the read position, skipping finished, missing and corrupt files.
    fn fetch(&mut self) -> Result<Option<Peeked>> {
        self.fetch_with(Self::step)
    }

    /// Runs `step` at the read position until it reads something or the queue has nothing to
    /// read, skipping finished, missing and corrupt files on the way.
    pub(crate) fn fetch_with<T>(
        &mut self,
        mut step: impl FnMut(&mut Self) -> std::result::Result<Step<T>, ReadFailure>,
    ) -> Result<Option<T>> {
        loop {
            if !self.has_data() {
                self.check_tail();
                return Ok(None);
            }
            match step(self) {
                Ok(Step::Record(p)) => return Ok(Some(p)),
                Ok(Step::EndOfFile) => self.leave_read_file(),
                Ok(Step::Missing) => self.skip_missing_file(),
                Err(ReadFailure::Corrupt(reason)) => self.quarantine_read_file(reason),
                Err(ReadFailure::Io(e)) => {
                    // Position unknown after a failed read: reopen next time.
                    self.reader = None;
                    return Err(DiskQueueError::io(
                        "read",
                        self.layout.data_file(self.read.file),
                        e,
                    ));
                }
            }
        }
    }

    fn step(&mut self) -> std::result::Result<Step<Peeked>, ReadFailure> {
        let (end, complete) = match self.window()? {
            Window::Open { end, complete } => (end, complete),
            Window::EndOfFile => return Ok(Step::EndOfFile),
            Window::Missing => return Ok(Step::Missing),
        };
        let pos = self.read.pos;
        let Some(handle) = self.reader.as_mut() else {
            return Ok(Step::Missing);
        };
        if handle.offset != pos {
            handle
                .reader
                .seek(SeekFrom::Start(pos))
                .map_err(ReadFailure::Io)?;
            handle.offset = pos;
        }
        let payload = match read_record(&mut handle.reader, end - pos, &self.opts) {
            Ok(p) => p,
            Err(e) => {
                handle.offset = u64::MAX;
                return Err(e);
            }
        };
        let next_pos = pos + record_len(payload.len());
        handle.offset = next_pos;
        let next = self.position_after(next_pos, end, complete);
        Ok(Step::Record(Peeked { payload, next }))
    }

    /// Opens the read file if needed and says how far its valid data goes: the end of a
    /// finished file, the write position in the write file.
    pub(crate) fn window(&mut self) -> std::result::Result<Window, ReadFailure> {
        let file_num = self.read.file;
        let pos = self.read.pos;
        let complete = file_num < self.write.file;
        let handle = match self.reader.take() {
            Some(h) if h.file_num == file_num => h,
            _ => match open_read(&self.layout.data_file(file_num)) {
                Ok(file) => ReadHandle {
                    file_num,
                    reader: BufReader::with_capacity(64 * 1024, file),
                    offset: u64::MAX,
                    complete_len: None,
                },
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Window::Missing),
                Err(e) => return Err(ReadFailure::Io(e)),
            },
        };
        let handle = self.reader.insert(handle);
        let end = if complete {
            match handle.complete_len {
                Some(len) => len,
                None => {
                    let len = handle
                        .reader
                        .get_ref()
                        .metadata()
                        .map_err(ReadFailure::Io)?
                        .len();
                    *handle.complete_len.insert(len)
                }
            }
        } else {
            self.write.pos
        };
        if pos >= end {
            if pos > end {
                return Err(ReadFailure::Corrupt(format!(
                    "read position {pos} is past the end of the file ({end} bytes)"
                )));
            }
            // Only a complete file can end here: in the write file pos < write.pos.
            return Ok(Window::EndOfFile);
        }
        Ok(Window::Open { end, complete })
    }

    /// Where the reader goes after a record ending at `next_pos` of the read file: the start of
    /// the next file once a finished file is read to its end.
    pub(crate) fn position_after(&self, next_pos: u64, end: u64, complete: bool) -> Position {
        if complete && next_pos >= end {
            Position::start_of(self.read.file + 1)
        } else {
            Position::new(self.read.file, next_pos)
        }
    }

    /// Moves the read position past a consumed record. In explicit-ack mode the record stays
    /// part of the persisted queue until [`DiskQueue::ack`].
    pub(crate) fn consume(&mut self, next: Position) {
        self.read = next;
        if self.depth > 0 {
            self.depth -= 1;
        }
        if self.explicit_ack {
            self.unacked.push_back(next);
            self.check_tail();
            return;
        }
        self.ops_since_sync += 1;
        self.follow_read();
        self.check_tail();
        self.maybe_sync();
    }

    /// The read file is finished: move to the next one.
    fn leave_read_file(&mut self) {
        self.read = Position::start_of(self.read.file + 1);
        self.reader = None;
        self.follow_read();
    }

    /// With nothing read-but-unacknowledged in between, the acknowledged position follows the
    /// reader (always so outside explicit-ack mode), retiring the files it leaves.
    pub(crate) fn follow_read(&mut self) {
        if self.unacked.is_empty() && self.acked != self.read {
            self.advance_ack(self.read);
        }
    }

    /// Moves the acknowledged position to `to`. Files it leaves are retired: sync first (so
    /// the metadata no longer points at them), then delete them (or rename them `.bad` if the
    /// reader found them corrupt). In this order a crash in between leaves an orphan file that
    /// the next open removes, instead of metadata pointing at a missing file.
    pub(crate) fn advance_ack(&mut self, to: Position) {
        let from = self.acked;
        self.acked = to;
        if to.file == from.file {
            return;
        }
        self.check_tail();
        self.sync_logged();
        let left = from.file..to.file;
        let (bad, pending): (Vec<u64>, Vec<u64>) =
            self.pending_bad.iter().partition(|f| left.contains(f));
        self.pending_bad = pending;
        for &file in &bad {
            self.rename_bad(file);
        }
        // Only the files that exist: a jump over a gap of missing files is not a loop over it.
        let files = match self.layout.existing_data_files(left) {
            Ok(files) => files,
            Err(e) => {
                error!(target: "diskqueue", "DISKQUEUE({}) cannot find the finished files to remove - {}", self.name(), e);
                return;
            }
        };
        for file in files.into_iter().filter(|f| !bad.contains(f)) {
            let path = self.layout.data_file(file);
            self.forget_file_bytes(&path);
            if let Err(e) = remove_if_exists(&path) {
                error!(target: "diskqueue", "DISKQUEUE({}) failed to Remove({}) - {}", self.name(), path.display(), e);
            }
        }
    }

    /// The read file is missing: skip it and every missing file after it, in one step, to the
    /// next file that exists (or the write file). A damaged metadata file can put billions of
    /// file numbers between the reader and the writer.
    fn skip_missing_file(&mut self) {
        let file = self.read.file;
        let next = if file < self.write.file {
            match self.layout.existing_data_files(file + 1..self.write.file) {
                Ok(found) => found.first().copied().unwrap_or(self.write.file),
                Err(e) => {
                    error!(target: "diskqueue", "DISKQUEUE({}) cannot look for the next data file - {}", self.name(), e);
                    file + 1
                }
            }
        } else {
            file + 1
        };
        self.counters.missing_files += next - file;
        error!(
            target: "diskqueue",
            "DISKQUEUE({}) data file {} is missing ({} file(s) up to {}), skipping to the next file",
            self.name(),
            self.layout.data_file(file).display(),
            next - file,
            next
        );
        self.skip_read_to(next);
        self.follow_read();
        self.sync_logged();
    }

    /// nsqd's handleReadError: rename the file to `.bad` and go on with the next file. In
    /// explicit-ack mode the rename waits until the acknowledgements leave the file, so records
    /// read from it before the damage are still there if the process dies before their ack.
    fn quarantine_read_file(&mut self, reason: String) {
        let file = self.read.file;
        let path = self.layout.data_file(file);
        self.counters.corrupt_files += 1;
        error!(
            target: "diskqueue",
            "DISKQUEUE({}) reading at {} of {} - {}; jump to next file and saving bad file as {}",
            self.name(),
            self.read.pos,
            path.display(),
            reason,
            self.layout.bad_file(file).display()
        );
        self.last_corruption = Some(Corruption {
            file: path,
            offset: self.read.pos,
            reason,
        });
        self.reader = None;
        if self.explicit_ack {
            if !self.pending_bad.contains(&file) {
                self.pending_bad.push(file);
            }
        } else {
            self.rename_bad(file);
        }
        self.skip_read_file();
        self.follow_read();
        self.sync_logged();
    }

    fn rename_bad(&mut self, file: u64) {
        let path = self.layout.data_file(file);
        let bad = self.layout.bad_file(file);
        self.forget_file_bytes(&path);
        if let Err(e) = std::fs::rename(&path, &bad) {
            if e.kind() != io::ErrorKind::NotFound {
                error!(
                    target: "diskqueue",
                    "DISKQUEUE({}) failed to rename bad diskqueue file {} to {} - {}",
                    self.name(),
                    path.display(),
                    bad.display(),
                    e
                );
            }
        }
    }

    /// Moves the reader to the next file; when the bad file is also the write file, the writer
    /// moves on too (nothing more can be appended to a file that cannot be read).
    fn skip_read_file(&mut self) {
        self.skip_read_to(self.read.file + 1);
    }

    /// Moves the reader to the start of file `next`, and the writer with it if that passes the
    /// write file.
    fn skip_read_to(&mut self, next: u64) {
        self.reader = None;
        if self.write.file < next {
            self.writer = None;
            self.data_unsynced = false;
            self.write = Position::start_of(next);
        }
        self.read = Position::start_of(next);
        self.dirty = true;
        self.check_tail();
    }

    /// nsqd's checkTailCorruption: once the reader has caught up with the writer there is
    /// nothing left, whatever the depth says.
    pub(crate) fn check_tail(&mut self) {
        if self.read == self.write && self.depth != 0 {
            warn!(
                target: "diskqueue",
                "DISKQUEUE({}) depth {} at tail (read = write = {},{}), resetting to 0",
                self.name(),
                self.depth,
                self.read.file,
                self.read.pos
            );
            self.depth = 0;
            self.counters.depth_resets += 1;
            self.dirty = true;
        }
    }
}
