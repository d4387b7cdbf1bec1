//! Startup recovery: turn whatever is on disk (clean shutdown, crash, partial damage) into a
//! consistent starting state. nsqd's rules are kept, and a few cheap checks are added where nsqd
//! loses or misplaces data:
//!
//! * Write file longer than the metadata's write position (records written after the last
//!   sync). nsqd moves the writer to a new file and lets the reader read the old one to its end,
//!   without counting those records in the depth. Here the tail is scanned: every complete, valid
//!   record is counted in the depth; if the file ends exactly on a record boundary, writing
//!   simply continues at its end; otherwise (torn or corrupt tail: a write cut by the crash) the
//!   bytes after the last whole record are truncated, counted (`torn_tails_truncated`) and
//!   logged, and writing continues there. Only the last data file has a tail: damage in an
//!   earlier file (or before the metadata's write position) is corruption, which the reader
//!   reports and quarantines (`.bad`) when it gets there.
//! * Data files past the write file (metadata older than a roll, e.g. a failed metadata write):
//!   nsqd would later overwrite them in place. Here they are adopted (scanned and counted) and
//!   the writer continues after the last one.
//! * Write file shorter than the write position, or missing: nsqd would write past a hole. Here
//!   the writer moves to a new file (the reader reports the short file when it gets there).
//! * Metadata missing while data files exist (crash after `empty` or before the first sync),
//!   unparsable, or with the reader ahead of the writer: nsqd starts from 0,0 and overwrites
//!   file 0 (or stalls). Here the state is rebuilt from the data files in the directory: reader at
//!   the first, depth = the valid records found. An unparsable file is kept as `<meta>.bad`.
//! * A file just before the read file (crash between syncing a file change and deleting the
//!   finished file) is removed.
//! * Metadata naming file numbers or offsets beyond nsqd's int64 is unreadable (rebuilt as
//!   above); a writer any number of files ahead of the reader is fine: only the data files
//!   present are visited, here and when the reader skips missing files (`read.rs`), never
//!   every number in between.
//!
//! Scanning costs a read of the unsynced tail only (at most one data file), except for a
//! rebuild, which reads every data file of the queue.

use tracing::{error, warn};

use crate::error::{DiskQueueError, Result};
use crate::files::{file_len, remove_if_exists, Layout, Metadata, Position};
use crate::options::DiskQueueOptions;
use crate::queue::Counters;
use crate::record::{scan_file, Scan};

/// The state to start from.
pub(crate) struct Recovered {
    pub meta: Metadata,
    pub disk_bytes: u64,
    pub counters: Counters,
    /// Whether `meta` differs from the metadata file (so it must be written now).
    pub changed: bool,
}

pub(crate) fn recover(layout: &Layout, opts: &DiskQueueOptions) -> Result<Recovered> {
    let mut counters = Counters::default();
    let (mut meta, mut changed) = start_from_metadata(layout, opts, &mut counters)?;

    if meta.read == meta.write && meta.depth != 0 {
        warn!(
            target: "diskqueue",
            "DISKQUEUE({}) depth {} with nothing to read, resetting to 0",
            layout.name(), meta.depth
        );
        meta.depth = 0;
        counters.depth_resets += 1;
        changed = true;
    }

    // A finished file the reader left right before a crash.
    if meta.read.file > 0 {
        let previous = layout.data_file(meta.read.file - 1);
        if file_len(&previous)?.is_some() {
            warn!(target: "diskqueue", "DISKQUEUE({}) removing finished file {}", layout.name(), previous.display());
            remove_if_exists(&previous).map_err(|e| DiskQueueError::io("remove", &previous, e))?;
        }
    }

    let mut disk_bytes = 0;
    for n in layout.existing_data_files(meta.read.file..meta.write.file + 1)? {
        disk_bytes += file_len(&layout.data_file(n))?.unwrap_or(0);
    }
    Ok(Recovered {
        meta,
        disk_bytes,
        counters,
        changed,
    })
}

/// The metadata to start from: the file's, with its write file reconciled, or rebuilt from the
/// data files when it is missing, unreadable or impossible. Returns whether it differs from
/// the file.
fn start_from_metadata(
    layout: &Layout,
    opts: &DiskQueueOptions,
    counters: &mut Counters,
) -> Result<(Metadata, bool)> {
    Ok(match layout.read_metadata()? {
        Some(Ok(meta)) if meta.read <= meta.write => {
            let mut meta = meta;
            let changed = recover_tail(layout, opts, &mut meta, counters)?;
            (meta, changed)
        }
        Some(Ok(meta)) => {
            error!(
                target: "diskqueue",
                "DISKQUEUE({}) metadata has the reader ahead of the writer ({},{} > {},{}), rebuilding from data files",
                layout.name(), meta.read.file, meta.read.pos, meta.write.file, meta.write.pos
            );
            (
                rebuild(layout, opts, counters, meta.read.file.max(meta.write.file))?,
                true,
            )
        }
        Some(Err(text)) => {
            let meta_path = layout.meta_file();
            let bad = meta_path.with_extension("dat.bad");
            error!(
                target: "diskqueue",
                "DISKQUEUE({}) unreadable metadata {:?}, saved as {} and rebuilding from data files",
                layout.name(), text, bad.display()
            );
            std::fs::rename(&meta_path, &bad)
                .map_err(|e| DiskQueueError::io("rename metadata", &meta_path, e))?;
            (rebuild(layout, opts, counters, 0)?, true)
        }
        None => {
            let files = layout.list_data_files()?;
            if files.is_empty() {
                (Metadata::default(), false)
            } else {
                warn!(
                    target: "diskqueue",
                    "DISKQUEUE({}) no metadata but {} data file(s), rebuilding from them",
                    layout.name(), files.len()
                );
                (rebuild(layout, opts, counters, 0)?, true)
            }
        }
    })
}

/// Reconciles the write file (and any later files) with the metadata. Returns whether the
/// metadata changed.
fn recover_tail(
    layout: &Layout,
    opts: &DiskQueueOptions,
    meta: &mut Metadata,
    counters: &mut Counters,
) -> Result<bool> {
    let orphans = later_files(layout, meta.write.file)?;
    let write_path = layout.data_file(meta.write.file);
    let mut changed = false;
    // Whether the writer can keep appending to its file.
    let mut keep_writing = orphans.is_empty();
    match file_len(&write_path)? {
        None if meta.write.pos == 0 => {}
        None => {
            warn!(
                target: "diskqueue",
                "DISKQUEUE({}) write file {} missing (metadata writePos {}), continuing in a new file",
                layout.name(), write_path.display(), meta.write.pos
            );
            keep_writing = false;
        }
        Some(len) if len < meta.write.pos => {
            warn!(
                target: "diskqueue",
                "DISKQUEUE({}) {} is {} bytes, shorter than metadata writePos {}: data lost, continuing in a new file",
                layout.name(), write_path.display(), len, meta.write.pos
            );
            keep_writing = false;
        }
        Some(len) if len > meta.write.pos => {
            let scan = scan(layout, opts, meta.write.file, meta.write.pos)?;
            adopt(meta, counters, scan.records);
            changed = scan.records > 0;
            if scan.is_clean() && keep_writing {
                warn!(
                    target: "diskqueue",
                    "DISKQUEUE({}) {} metadata writePos {} < file size {}: kept {} unsynced record(s), continuing at the end",
                    layout.name(), write_path.display(), meta.write.pos, len, scan.records
                );
                meta.write.pos = len;
                changed = true;
            } else if keep_writing {
                // The last file ends in bytes that never formed a whole record: a write cut
                // by the crash, never acknowledged. Cut them off and go on after the last
                // whole record.
                truncate_tail(layout, meta.write.file, &scan, counters)?;
                meta.write.pos = scan.valid_end;
                changed = true;
            } else {
                warn!(
                    target: "diskqueue",
                    "DISKQUEUE({}) {} metadata writePos {} < file size {}: {} unsynced record(s) then {} damaged byte(s), continuing in a new file",
                    layout.name(), write_path.display(), meta.write.pos, len, scan.records, len - scan.valid_end
                );
                keep_writing = false;
            }
        }
        Some(_) => {}
    }

    if !orphans.is_empty() {
        adopt_orphans(layout, opts, meta, counters, &orphans)?;
        changed = true;
    }
    if !keep_writing && orphans.is_empty() {
        meta.write = Position::start_of(meta.write.file + 1);
        changed = true;
    }
    Ok(changed)
}

/// Adopts the records of data files past the metadata's write file (`orphans`, in order):
/// the writer goes on after the last of them, cutting a damaged tail off it.
fn adopt_orphans(
    layout: &Layout,
    opts: &DiskQueueOptions,
    meta: &mut Metadata,
    counters: &mut Counters,
    orphans: &[u64],
) -> Result<()> {
    for (i, &n) in orphans.iter().enumerate() {
        let scan = scan(layout, opts, n, 0)?;
        warn!(
            target: "diskqueue",
            "DISKQUEUE({}) data file {} is past the metadata's write file: adopting {} record(s)",
            layout.name(), layout.data_file(n).display(), scan.records
        );
        adopt(meta, counters, scan.records);
        let last = i + 1 == orphans.len();
        meta.write = if scan.is_clean() {
            Position::new(n, scan.file_len)
        } else if last {
            truncate_tail(layout, n, &scan, counters)?;
            Position::new(n, scan.valid_end)
        } else {
            Position::start_of(n + 1)
        };
    }
    Ok(())
}

/// Cuts the damaged tail off the last data file (see `recover_tail`).
fn truncate_tail(layout: &Layout, file: u64, scan: &Scan, counters: &mut Counters) -> Result<()> {
    let path = layout.data_file(file);
    warn!(
        target: "diskqueue",
        "DISKQUEUE({}) {} ends in {} byte(s) that are not a whole record (write cut by a crash): truncated to {} bytes, the records before are kept",
        layout.name(), path.display(), scan.file_len - scan.valid_end, scan.valid_end
    );
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .and_then(|f| f.set_len(scan.valid_end))
        .map_err(|e| DiskQueueError::io("truncate", &path, e))?;
    counters.torn_tails_truncated += 1;
    Ok(())
}

fn adopt(meta: &mut Metadata, counters: &mut Counters, records: u64) {
    meta.depth = meta
        .depth
        .saturating_add(i64::try_from(records).unwrap_or(i64::MAX));
    counters.recovered_records += records;
}

/// Data files numbered right after `file`, up to the first gap.
fn later_files(layout: &Layout, file: u64) -> Result<Vec<u64>> {
    let mut found = Vec::new();
    let mut n = file + 1;
    while file_len(&layout.data_file(n))?.is_some() {
        found.push(n);
        n += 1;
    }
    Ok(found)
}

fn scan(layout: &Layout, opts: &DiskQueueOptions, file: u64, start: u64) -> Result<Scan> {
    let path = layout.data_file(file);
    scan_file(&path, start, opts).map_err(|e| DiskQueueError::io("scan", path, e))
}

/// Builds the state from the data files alone: reader at the start of the first, writer after
/// the last (at its end if it is clean), depth = valid records found. `min_write_file` keeps the
/// writer from reusing numbers an untrusted metadata file mentioned.
fn rebuild(
    layout: &Layout,
    opts: &DiskQueueOptions,
    counters: &mut Counters,
    min_write_file: u64,
) -> Result<Metadata> {
    let files = layout.list_data_files()?;
    let (Some(&first), Some(&last)) = (files.first(), files.last()) else {
        let start = Position::start_of(min_write_file);
        return Ok(Metadata {
            depth: 0,
            read: start,
            write: start,
        });
    };
    counters.metadata_rebuilds += 1;
    let mut depth = 0u64;
    let mut last_scan = None;
    for &n in &files {
        let scan = scan(layout, opts, n, 0)?;
        depth += scan.records;
        last_scan = Some(scan);
    }
    let write = match last_scan {
        Some(scan) if scan.is_clean() && last >= min_write_file => {
            Position::new(last, scan.file_len)
        }
        _ => Position::start_of((last + 1).max(min_write_file)),
    };
    warn!(
        target: "diskqueue",
        "DISKQUEUE({}) rebuilt metadata from data files {}..={}: depth {}",
        layout.name(), first, last, depth
    );
    Ok(Metadata {
        depth: i64::try_from(depth).unwrap_or(i64::MAX),
        read: Position::start_of(first),
        write,
    })
}
