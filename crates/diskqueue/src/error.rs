//! Errors of the disk queue as types, so the engine can tell "this message was refused" (size,
//! full queue) from "the disk failed" (I/O, which nsqd turns into `health: NOK`) without parsing
//! strings. Every I/O error carries the operation and the file it was about.

use std::io;
use std::path::PathBuf;

/// Everything [`crate::DiskQueue`] can fail with.
#[derive(Debug, thiserror::Error)]
pub enum DiskQueueError {
    /// The options passed to [`crate::DiskQueue::open`] make no sense (e.g. min > max).
    #[error("invalid disk queue options: {0}")]
    InvalidOptions(String),

    /// The queue name cannot be used as part of a file name.
    #[error("invalid disk queue name {0:?}")]
    InvalidName(String),

    /// A payload outside `[min_msg_size, max_msg_size]`; nothing was written.
    #[error("invalid message write size ({size}) minMsgSize={min} maxMsgSize={max}")]
    InvalidMessageSize { size: usize, min: u32, max: u32 },

    /// The put would grow the queue's files beyond `max_bytes`; nothing was written.
    #[error(
        "disk queue full: {current_bytes} bytes on disk + {needed_bytes} needed > max {max_bytes}"
    )]
    Full {
        max_bytes: u64,
        current_bytes: u64,
        needed_bytes: u64,
    },

    /// A batch failed part way: the first `written` payloads are in the queue, the rest are not.
    #[error("batch write failed after {written} of {total} messages: {source}")]
    BatchIncomplete {
        written: usize,
        total: usize,
        #[source]
        source: Box<DiskQueueError>,
    },

    /// A filesystem operation failed. The queue's state was left consistent: a failed put
    /// did not enqueue anything, a failed read did not advance the reader.
    #[error("{op} {}: {source}", path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// Shorthand used throughout the crate.
pub type Result<T, E = DiskQueueError> = std::result::Result<T, E>;

impl DiskQueueError {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        DiskQueueError::Io {
            op,
            path: path.into(),
            source,
        }
    }
}
