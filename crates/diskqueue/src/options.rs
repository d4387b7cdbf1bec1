//! The knobs of one queue, mirroring nsqd's flags (`--max-bytes-per-file`, `--sync-every`,
//! `--max-msg-size`) plus `max_bytes` for `--max-disk-bytes`. Kept separate so the engine can
//! build one value from its config and hand copies to every topic and channel queue.

use crate::error::{DiskQueueError, Result};

/// Size of the header nsqd puts before every body: `[i64 timestamp][u16 attempts][16-byte id]`.
/// It is the smallest valid payload, and nsqd's `min_msg_size`.
pub const MESSAGE_HEADER_LEN: u32 = 26;

/// Bytes of the big-endian `i32` length prefix in front of every payload on disk.
pub const LENGTH_PREFIX_LEN: u64 = 4;

/// Options of one queue. `Default` gives nsqd's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiskQueueOptions {
    /// Roll to a new data file before a write would make the current one exceed this
    /// (`--max-bytes-per-file`, default 104857600). A single record larger than this still
    /// goes, alone, into its own file.
    pub max_bytes_per_file: u64,
    /// Smallest valid payload (nsqd: 26, the message header).
    pub min_msg_size: u32,
    /// Largest valid payload (nsqd: `--max-msg-size` + 26). Also the bound the reader uses to
    /// decide that a length prefix is corrupt.
    pub max_msg_size: u32,
    /// fsync + metadata write after this many reads and writes (`--sync-every`, default 2500).
    /// 0 behaves like 1 (sync after every operation), as in nsqd.
    pub sync_every: u64,
    /// Refuse puts that would grow the queue's data files beyond this many bytes; 0 means
    /// unlimited (nsqd has no such limit).
    pub max_bytes: u64,
}

impl Default for DiskQueueOptions {
    fn default() -> Self {
        DiskQueueOptions {
            max_bytes_per_file: 100 * 1024 * 1024,
            min_msg_size: MESSAGE_HEADER_LEN,
            max_msg_size: 1024 * 1024 + MESSAGE_HEADER_LEN,
            sync_every: 2500,
            max_bytes: 0,
        }
    }
}

impl DiskQueueOptions {
    /// Checks the options for consistency; [`crate::DiskQueue::open`] calls this.
    pub fn validate(&self) -> Result<()> {
        if self.max_bytes_per_file == 0 {
            return Err(DiskQueueError::InvalidOptions(
                "max_bytes_per_file must be > 0".into(),
            ));
        }
        if self.min_msg_size > self.max_msg_size {
            return Err(DiskQueueError::InvalidOptions(format!(
                "min_msg_size {} > max_msg_size {}",
                self.min_msg_size, self.max_msg_size
            )));
        }
        // The length prefix is a signed 32-bit integer on disk.
        if self.max_msg_size > i32::MAX as u32 {
            return Err(DiskQueueError::InvalidOptions(format!(
                "max_msg_size {} does not fit the i32 length prefix",
                self.max_msg_size
            )));
        }
        Ok(())
    }

    /// The effective sync interval (0 is treated as 1).
    pub(crate) fn sync_interval(&self) -> u64 {
        self.sync_every.max(1)
    }

    pub(crate) fn valid_len(&self, len: u64) -> bool {
        len >= u64::from(self.min_msg_size) && len <= u64::from(self.max_msg_size)
    }
}
