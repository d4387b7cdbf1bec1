//! What a publisher is promised, and how it learns the promise was kept.
//!
//! `--durability=default` is nsqd's contract: a publish is acknowledged once the message is in
//! memory or, when it goes to disk (past `--mem-queue-size`, or behind older messages on disk),
//! once the disk writer's `write` of it returned: the kernel has it, so a killed process keeps
//! it (a power loss may not: no fsync). `--durability=strict` acknowledges only once the
//! message is on disk and fsynced in every queue it went to. A publish therefore returns a
//! [`Ticket`]: already done when everything went to memory (no allocation, no wait), or a set of
//! completions the disk writers fill in after their write (default) or group commit (strict).
//! The connection awaits the ticket before it writes `OK`, so responses stay in order.

use std::fmt;
use std::sync::Arc;

use tokio::sync::oneshot;

/// The `--durability` setting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Durability {
    /// nsqd's semantics: memory first, disk past `--mem-queue-size`, fsync every
    /// `--sync-every` operations or `--sync-timeout`.
    #[default]
    Default,
    /// Every publish is fsynced before it is acknowledged, and every message stays in its
    /// channel's disk queue until it is finished, so a crash loses nothing acknowledged.
    Strict,
}

impl Durability {
    /// The `--durability` flag's value (`default`, `""` or `strict`).
    pub fn parse(s: &str) -> Option<Durability> {
        match s {
            "default" | "" => Some(Durability::Default),
            "strict" => Some(Durability::Strict),
            _ => None,
        }
    }

    /// The flag's value for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Durability::Default => "default",
            Durability::Strict => "strict",
        }
    }
}

impl fmt::Display for Durability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a message could not be stored on disk. The text follows `PUB failed ` in the error a
/// publisher gets, so it names the queue and the cause. Clones share the IO error (a publish
/// to many queues, and every publisher of one failed pass, get the same one).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum DiskError {
    /// `--max-disk-bytes` reached.
    #[error("disk queue {queue} is full (max-disk-bytes {max_bytes}; {used_bytes} bytes used)")]
    Full {
        /// The queue (`topic` or `topic:channel`).
        queue: String,
        /// The limit.
        max_bytes: u64,
        /// What its data files hold.
        used_bytes: u64,
    },
    /// The write or fsync failed (ENOSPC, EIO, read-only file system, ...).
    #[error("disk write to queue {queue} failed: {source}")]
    Io {
        /// The queue (`topic` or `topic:channel`).
        queue: String,
        /// The operating system's error.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// A previous write failed and has not been retried yet (default mode, overflow only).
    #[error("disk queue {queue} unavailable after a write error: {last}")]
    Unavailable {
        /// The queue (`topic` or `topic:channel`).
        queue: String,
        /// The write error that made it unavailable.
        #[source]
        last: Arc<DiskError>,
    },
    /// A replicated topic's batch was not committed by a majority of its nodes (no majority
    /// reachable, leadership lost, the log stopping): the text says why.
    #[error("{0}")]
    Replication(String),
    /// A replicated topic's batch found no leader to take it (an election under way, or the
    /// leader unreachable) within the node's wait: the text names the topic and its leader.
    #[error("{0}")]
    NotLeader(String),
    /// The queue was closed before the message reached the disk (shutdown).
    #[error("exiting")]
    Exiting,
}

impl DiskError {
    /// The write or fsync of `queue` failed with `e`.
    pub(crate) fn io(queue: &str, e: std::io::Error) -> DiskError {
        DiskError::Io {
            queue: queue.to_string(),
            source: Arc::new(e),
        }
    }

    /// The operating system's error underneath, if there is one.
    pub fn io_error(&self) -> Option<&std::io::Error> {
        match self {
            DiskError::Io { source, .. } => Some(source),
            DiskError::Unavailable { last, .. } => last.io_error(),
            _ => None,
        }
    }
}

/// Equal when of the same kind, for the same queue, with the same text (IO errors compare by
/// what they say).
impl PartialEq for DiskError {
    fn eq(&self, other: &DiskError) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
            && self.to_string() == other.to_string()
    }
}

impl Eq for DiskError {}

type Completion = oneshot::Receiver<Result<(), DiskError>>;

/// The sending half of one queue's completion of a publish.
pub(crate) type Promise = oneshot::Sender<Result<(), DiskError>>;

pub(crate) fn promise() -> (Promise, Completion) {
    oneshot::channel()
}

/// Completion of a publish: done at once when it went to memory; otherwise after the write
/// (default mode) or the fsync (strict mode) of every queue it went to.
#[derive(Debug, Default)]
pub struct Ticket {
    waits: Vec<Completion>,
    failure: Option<DiskError>,
}

impl Ticket {
    /// A ticket with nothing to wait for.
    pub fn done() -> Ticket {
        Ticket::default()
    }

    pub(crate) fn waiting(c: Completion) -> Ticket {
        Ticket {
            waits: vec![c],
            failure: None,
        }
    }

    /// A ticket that fails with `e`.
    pub fn failed(e: DiskError) -> Ticket {
        Ticket {
            waits: Vec::new(),
            failure: Some(e),
        }
    }

    /// Nothing to wait for and no failure (the in-memory hot path tests only this).
    pub fn is_done(&self) -> bool {
        self.waits.is_empty() && self.failure.is_none()
    }

    /// Wait for `other` too.
    pub fn merge(&mut self, mut other: Ticket) {
        self.waits.append(&mut other.waits);
        if self.failure.is_none() {
            self.failure = other.failure;
        }
    }

    fn record(&mut self, r: Result<Result<(), DiskError>, oneshot::error::RecvError>) {
        let r = r.unwrap_or(Err(DiskError::Exiting));
        if let Err(e) = r {
            self.failure.get_or_insert(e);
        }
    }

    /// The outcome if every queue has answered (the first failure wins), else None.
    pub fn try_result(&mut self) -> Option<Result<(), DiskError>> {
        while let Some(w) = self.waits.last_mut() {
            let r = match w.try_recv() {
                Ok(r) => Ok(r),
                Err(oneshot::error::TryRecvError::Empty) => return None,
                Err(oneshot::error::TryRecvError::Closed) => Ok(Err(DiskError::Exiting)),
            };
            self.waits.pop();
            self.record(r);
        }
        Some(self.failure.clone().map_or(Ok(()), Err))
    }

    /// Resolves once every queue has answered; cancel-safe (see `try_result` for the outcome).
    pub async fn ready(&mut self) {
        while let Some(w) = self.waits.last_mut() {
            let r = w.await;
            self.waits.pop();
            self.record(r);
        }
    }

    /// Wait until every queue has the message on disk; the first failure wins.
    pub async fn wait(mut self) -> Result<(), DiskError> {
        self.ready().await;
        self.try_result().unwrap_or(Ok(()))
    }

    /// [`Ticket::wait`] for a thread outside the async runtime (the disk writers).
    pub fn wait_blocking(mut self) -> Result<(), DiskError> {
        while let Some(w) = self.waits.pop() {
            let r = w.blocking_recv();
            self.record(r);
        }
        self.failure.map_or(Ok(()), Err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_display() {
        assert_eq!(Durability::parse("strict"), Some(Durability::Strict));
        assert_eq!(Durability::parse("default"), Some(Durability::Default));
        assert_eq!(Durability::parse("fast"), None);
        assert_eq!(Durability::Strict.to_string(), "strict");
    }

    #[tokio::test]
    async fn ticket_reports_the_first_failure() {
        assert!(Ticket::done().is_done());
        assert_eq!(Ticket::done().wait().await, Ok(()));
        let (a, ra) = promise();
        let (b, rb) = promise();
        let mut t = Ticket::waiting(ra);
        t.merge(Ticket::waiting(rb));
        assert!(!t.is_done());
        let _ = a.send(Ok(()));
        let _ = b.send(Err(DiskError::Exiting));
        assert_eq!(t.wait().await, Err(DiskError::Exiting));
        let (c, rc) = promise();
        drop(c);
        assert_eq!(Ticket::waiting(rc).wait().await, Err(DiskError::Exiting));
        let (d, rd) = promise();
        let mut t = Ticket::waiting(rd);
        assert_eq!(t.try_result(), None);
        let _ = d.send(Ok(()));
        assert_eq!(t.try_result(), Some(Ok(())));
        assert!(!Ticket::failed(DiskError::Exiting).is_done());
    }
}
