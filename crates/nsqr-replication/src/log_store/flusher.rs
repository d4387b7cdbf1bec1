//! Group commit of a log's appends when the group fsyncs: `append` writes its entries and hands
//! openraft's durability callback here; one thread takes every callback queued while its last
//! `fdatasync` ran, syncs the files they wrote once, and fires them all. openraft calls `append`
//! once per proposal on the leader, so without this each proposal would wait for a sync of its
//! own. A failed sync fails every callback of the pass (openraft then stops the group): a sync
//! is never retried over data the kernel may have dropped.

use std::fs::File;
use std::io;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::Arc;

use openraft::storage::LogFlushed;

use crate::types::TypeConfig;

/// Entries written to `file`, durable once it is synced.
pub(crate) struct Written {
    pub file: Arc<File>,
    pub path: PathBuf,
    pub callback: LogFlushed<TypeConfig>,
}

/// The handle of a log's sync thread; the thread ends when the last handle is dropped.
pub(crate) struct Flusher {
    tx: mpsc::Sender<Written>,
}

impl Flusher {
    /// Starts the sync thread of the log named `name`.
    pub(crate) fn start(name: &str) -> io::Result<Flusher> {
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name(format!("raft-sync-{name}"))
            .spawn(move || run(rx))?;
        Ok(Flusher { tx })
    }

    /// Queues `written` for the next sync.
    pub(crate) fn submit(&self, written: Written) {
        if let Err(mpsc::SendError(lost)) = self.tx.send(written) {
            let e = io::Error::other("the log's sync thread is gone");
            lost.callback.log_io_completed(Err(e));
        }
    }
}

fn run(rx: mpsc::Receiver<Written>) {
    while let Ok(first) = rx.recv() {
        let mut pass = vec![first];
        pass.extend(rx.try_iter());
        let mut synced: Vec<&Arc<File>> = Vec::new();
        let mut failure: Option<(io::ErrorKind, String)> = None;
        for written in &pass {
            if failure.is_some() || synced.iter().any(|f| Arc::ptr_eq(f, &written.file)) {
                continue;
            }
            match written.file.sync_data() {
                Ok(()) => synced.push(&written.file),
                Err(e) => {
                    tracing::error!(path = %written.path.display(), "replication log: fsync: {e}");
                    failure = Some((e.kind(), format!("{}: {e}", written.path.display())));
                }
            }
        }
        for written in pass {
            let result = match &failure {
                None => Ok(()),
                Some((kind, text)) => Err(io::Error::new(*kind, text.clone())),
            };
            written.callback.log_io_completed(result);
        }
    }
}
