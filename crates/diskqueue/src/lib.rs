//! diskqueue: nsqd's durable per-topic/per-channel FIFO, in files an nsqd can read and that
//! this crate can read from an nsqd, so nsqr can take over an existing `--data-path`.
//!
//! It is a standalone, synchronous building block: no async runtime, no threads, no locks. The
//! engine owns one [`DiskQueue`] per non-ephemeral topic (`<topic>`) and channel
//! (`<topic>:<channel>`) and drives it with `&mut self` calls.
//!
//! # On disk (nsqd's format, see `files.rs` and `record.rs`)
//! * `<dir>/<name>.diskqueue.<6-digit n>.dat`: data files, records `[i32 BE length][payload]`.
//!   A payload is whatever the caller puts; for nsqd it is `[i64 ts][u16 attempts][16-byte id]
//!   [body]`, so valid lengths are `min_msg_size` (26) ..= `max_msg_size` (max-msg-size + 26).
//! * `<dir>/<name>.diskqueue.meta.dat`: `<depth>\n<readFileNum>,<readPos>\n<writeFileNum>,<writePos>\n`,
//!   replaced atomically (`<meta>.<random>.tmp`, fsync, rename).
//!
//! # Behaviour (as nsqd)
//! * A write rolls to the next file when the current one is non-empty and the record would make
//!   it exceed `max_bytes_per_file`; the roll syncs.
//! * A file the reader has finished is deleted (after a sync recording the move).
//! * Sync = fsync of the write file + metadata rewrite: after `sync_every` reads+writes, on a
//!   roll or file change, when the owner calls [`DiskQueue::sync_if_dirty`] on its
//!   `--sync-timeout` tick, and on [`DiskQueue::close`].
//! * A corrupt length or a torn/short record renames the file `<file>.bad` and skips to the next
//!   file; the depth is forced to 0 when the reader reaches the writer.
//!
//! # Beyond nsqd
//! * Corruption is counted ([`DiskQueue::counters`], [`DiskQueue::corrupt_files`]) and described
//!   ([`DiskQueue::last_corruption`]) as well as logged; I/O errors that say nothing about the
//!   bytes (fd exhaustion, EIO) are returned instead of condemning the file.
//! * Recovery on open keeps intact records written after the last sync and counts them in the
//!   depth, adopts files past the metadata's write file, and rebuilds lost or broken metadata
//!   from the data files (see `recovery.rs` for the exact rules).
//! * `max_bytes` bounds the queue's files (`--max-disk-bytes`): a put beyond it fails with
//!   [`DiskQueueError::Full`].
//! * [`DiskQueue::put_batch`] writes many records with one `write` per file, and
//!   [`DiskQueue::read_chunk`] reads many with one `pread` into one buffer.
//! * Explicit acknowledgements (`ack.rs`): in that mode a read record stays in the persisted
//!   queue until [`DiskQueue::ack`], so an at-least-once owner loses nothing it handed out when
//!   the process dies; [`DiskQueue::flush_durable`] makes appended records durable before a
//!   publisher is told so.
//! * A torn or corrupt tail of the last data file (bytes written after the last fsync that
//!   never formed whole records) is cut off on open and counted; the records before it are
//!   kept. Damage anywhere else is corruption: reported, counted, the file kept as `.bad`.
//!
//! # Example
//! ```
//! # let dir = std::env::temp_dir().join(format!("dq-doc-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir).unwrap();
//! use diskqueue::{DiskQueue, DiskQueueOptions};
//! let mut q = DiskQueue::open(&dir, "orders:billing", DiskQueueOptions::default())?;
//! q.put(&[0u8; 30])?;
//! assert_eq!(q.depth(), 1);
//! assert_eq!(q.read_next()?.as_deref(), Some(&[0u8; 30][..]));
//! q.close()?;
//! # std::fs::remove_dir_all(&dir).unwrap();
//! # Ok::<(), diskqueue::DiskQueueError>(())
//! ```

mod ack;
mod chunk;
mod error;
mod files;
mod options;
mod queue;
mod read;
mod record;
mod recovery;
mod write;

pub use chunk::{Chunk, PayloadRanges};
pub use error::{DiskQueueError, Result};
pub use options::{DiskQueueOptions, LENGTH_PREFIX_LEN, MESSAGE_HEADER_LEN};
pub use queue::{Corruption, Counters, DiskQueue};
pub use write::Payload;
