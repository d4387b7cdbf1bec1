//! A full disk stalls a group on this node instead of stopping it for good.
//!
//! openraft treats every storage error as fatal: the group's Raft core stops, and the node
//! serves the group no more until the process restarts. A full disk (ENOSPC, EDQUOT) is not a
//! lasting failure, so the writes it refuses (a log append, the vote, the purge point, a
//! snapshot) are tried again, every [`RETRY_MAX`] at most, until space returns or the group
//! closes. Meanwhile the group waits on this node: as a leader it acknowledges nothing and
//! sends no heartbeats, so the other nodes elect a leader among themselves if a majority of
//! them has space; as a follower it answers nothing and the leader commits with the others.
//! Once the write goes through, the node carries on as one that was paused and catches up.
//! A write that fails for another reason (EIO, a read-only file system) still stops the
//! group: the disk cannot be trusted.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::error::StoreError;

/// The first wait before a refused write is tried again; it doubles up to [`RETRY_MAX`].
const RETRY_FIRST: Duration = Duration::from_millis(50);
const RETRY_MAX: Duration = Duration::from_secs(1);

/// ENOSPC and EDQUOT (Linux's numbers; `io::ErrorKind::StorageFull` is younger than the
/// workspace's minimum Rust).
const ENOSPC: i32 = 28;
const EDQUOT: i32 = 122;

/// Whether `e` says the disk is full.
pub(crate) fn is_full(e: &StoreError) -> bool {
    match e {
        StoreError::Io { source, .. } => matches!(source.raw_os_error(), Some(ENOSPC | EDQUOT)),
        _ => false,
    }
}

/// Where a group's writes wait for space; clones share it. Closing it makes waiting writes
/// give up (with their error), so a group can stop while its disk is full.
#[derive(Clone, Default)]
pub(crate) struct SpaceWait {
    closed: Arc<AtomicBool>,
}

impl SpaceWait {
    /// Writes that wait for space give up, now and from now on.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }

    /// Runs `write` until it succeeds, fails with anything but a full disk, or the wait is
    /// closed. `what` names the write in the log.
    pub(crate) async fn retry<T, F, Fut>(&self, what: &str, mut write: F) -> Result<T, StoreError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, StoreError>>,
    {
        let mut wait = RETRY_FIRST;
        let mut waited = false;
        loop {
            match write().await {
                Err(e) if is_full(&e) && !self.closed.load(Ordering::Acquire) => {
                    if !waited {
                        tracing::warn!("replication: {e}; the {what} waits for space");
                        waited = true;
                    }
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(RETRY_MAX);
                }
                result => {
                    if waited && result.is_ok() {
                        tracing::info!("replication: space is back; the {what} went through");
                    }
                    return result;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io;

    use super::*;

    fn full() -> StoreError {
        StoreError::Io {
            path: "log".into(),
            source: io::Error::from_raw_os_error(ENOSPC),
        }
    }

    #[tokio::test]
    async fn a_full_disk_is_waited_out_and_other_errors_are_not() {
        let space = SpaceWait::default();
        let mut tries = 0;
        let r = space
            .retry("append", || {
                tries += 1;
                let fail = tries < 4;
                async move {
                    if fail {
                        Err(full())
                    } else {
                        Ok(tries)
                    }
                }
            })
            .await;
        assert_eq!(r.ok(), Some(4));

        let mut tries = 0;
        let r: Result<(), _> = space
            .retry("append", || {
                tries += 1;
                async {
                    Err(StoreError::Io {
                        path: "log".into(),
                        source: io::Error::from_raw_os_error(5),
                    })
                }
            })
            .await;
        assert!(r.is_err());
        assert_eq!(tries, 1, "EIO is not retried");
    }

    #[tokio::test]
    async fn a_closed_wait_gives_up() {
        let space = SpaceWait::default();
        let closer = space.clone();
        let mut tries = 0;
        let r: Result<(), _> = space
            .retry("vote", || {
                tries += 1;
                if tries == 3 {
                    closer.close();
                }
                async { Err(full()) }
            })
            .await;
        assert!(r.as_ref().is_err_and(is_full));
        assert_eq!(tries, 3);
    }
}
