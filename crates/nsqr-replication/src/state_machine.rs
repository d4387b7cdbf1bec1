//! The state machine of a group: applies committed entries to the topic's [`TopicState`],
//! hands each one to the broker through a bounded channel, and builds, stores and installs
//! snapshots of the state.
//!
//! The state itself is in memory and is not written as entries apply: after a restart it is
//! the last snapshot plus the log replayed after it, so the broker sees the replayed entries
//! again, with their indexes, and skips those it has applied. A snapshot is fsynced before
//! openraft may purge the log it covers. No sockets here.

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::{
    AnyError, BasicNode, EntryPayload, RaftSnapshotBuilder, SnapshotMeta, StorageIOError,
    StoredMembership,
};
use tokio::sync::{mpsc, watch};

use crate::command::{Applied, Command};
use crate::error::StoreError;
use crate::files;
use crate::space::SpaceWait;
use crate::state::TopicState;
use crate::types::{Entry, LogId, NodeId, StorageError, TypeConfig};

/// What the broker is handed, in log order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Committed {
    /// A committed entry to apply.
    Entry { index: u64, command: Command },
    /// The state was replaced by a snapshot received from the leader, up to `index`: the
    /// broker reloads it from [`crate::ReplicatedLog::state`].
    Restored { index: u64 },
}

/// What a snapshot file holds: the snapshot's metadata, the state, then the last pass applied
/// of each node (`TopicState::passes`), last so that a file written without it reads (with
/// none).
struct SnapshotFile {
    meta: SnapshotMeta<NodeId, BasicNode>,
    state: TopicState,
}

impl SnapshotFile {
    fn encode(&self, path: &Path) -> Result<Vec<u8>, StoreError> {
        files::encode(path, &(&self.meta, &self.state, &self.state.passes))
    }

    fn decode(path: &Path, payload: &[u8]) -> Result<SnapshotFile, StoreError> {
        let corrupt = |e: postcard::Error| StoreError::Corrupt {
            path: path.display().to_string(),
            offset: 0,
            reason: e.to_string(),
        };
        let (meta, rest) = postcard::take_from_bytes(payload).map_err(corrupt)?;
        let (mut state, rest) = postcard::take_from_bytes::<TopicState>(rest).map_err(corrupt)?;
        if !rest.is_empty() {
            state.passes = postcard::from_bytes(rest).map_err(corrupt)?;
        }
        Ok(SnapshotFile { meta, state })
    }
}

struct Inner {
    dir: PathBuf,
    state: TopicState,
    last_applied: Option<LogId>,
    membership: StoredMembership<NodeId, BasicNode>,
    /// The last snapshot, encoded as it is sent to followers.
    snapshot: Option<(SnapshotMeta<NodeId, BasicNode>, Vec<u8>)>,
    snapshots_built: u64,
}

/// A group's state machine; clones share it (the snapshot builder is a clone).
#[derive(Clone)]
pub struct StateMachine {
    inner: Arc<Mutex<Inner>>,
    applied_tx: mpsc::Sender<Committed>,
    /// Where snapshot writes refused by a full disk wait.
    space: SpaceWait,
    /// How many snapshots from a leader were installed here.
    installs: Arc<watch::Sender<u64>>,
}

/// Snapshots installed from a leader from the moment it was taken on
/// ([`StateMachine::installs`]).
pub(crate) struct Installs(watch::Receiver<u64>);

impl Installs {
    /// Resolves once a snapshot is installed; never if the state machine is gone.
    pub(crate) async fn next(&mut self) {
        if self.0.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

impl StateMachine {
    /// Opens the state machine of `dir`, from its snapshot if it has one. Committed entries
    /// go to `applied_tx`; applying waits while it is full.
    pub fn open(dir: &Path, applied_tx: mpsc::Sender<Committed>) -> Result<Self, StoreError> {
        let path = snapshot_path(dir);
        let mut inner = Inner {
            dir: dir.to_owned(),
            state: TopicState::default(),
            last_applied: None,
            membership: StoredMembership::default(),
            snapshot: None,
            snapshots_built: 0,
        };
        if let Some(payload) = files::read_checked(&path)? {
            let file = SnapshotFile::decode(&path, &payload)?;
            inner.state = file.state;
            inner.last_applied = file.meta.last_log_id;
            inner.membership = file.meta.last_membership.clone();
            inner.snapshot = Some((file.meta, payload));
        }
        Ok(StateMachine {
            inner: Arc::new(Mutex::new(inner)),
            applied_tx,
            space: SpaceWait::default(),
            installs: Arc::new(watch::channel(0).0),
        })
    }

    /// Follows the snapshots installed from a leader from now on: what a proposal waits for
    /// besides its answer (`ReplicatedLog::propose`).
    pub(crate) fn installs(&self) -> Installs {
        Installs(self.installs.subscribe())
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The wait of snapshot writes for space, to close when the group stops.
    pub(crate) fn space_wait(&self) -> SpaceWait {
        self.space.clone()
    }

    /// Writes `payload` as the snapshot file, waiting for space if the disk is full.
    async fn write_snapshot(
        &self,
        path: PathBuf,
        payload: Arc<Vec<u8>>,
    ) -> Result<(), StorageError> {
        let write = || {
            let (to, payload) = (path.clone(), Arc::clone(&payload));
            let name = path.display().to_string();
            async move {
                tokio::task::spawn_blocking(move || files::write_atomic(&to, &payload))
                    .await
                    .map_err(|e| StoreError::Io {
                        path: name,
                        source: std::io::Error::other(e),
                    })?
            }
        };
        self.space
            .retry("snapshot", write)
            .await
            .map_err(|e| snapshot_error(&e))
    }

    /// Calls `f` with the current state.
    pub fn with_state<T>(&self, f: impl FnOnce(&TopicState) -> T) -> T {
        f(&self.lock().state)
    }

    /// Calls `f` with the current state and the index of the last entry applied to it.
    pub fn with_state_at<T>(&self, f: impl FnOnce(&TopicState, Option<u64>) -> T) -> T {
        let inner = self.lock();
        f(&inner.state, inner.last_applied.map(|l| l.index))
    }

    /// The index of the last applied entry.
    pub fn last_applied(&self) -> Option<u64> {
        self.lock().last_applied.map(|l| l.index)
    }

    async fn send(&self, event: Committed) {
        // No receiver means the broker does not follow this group (tests, tools): the state
        // still applies.
        let _ = self.applied_tx.send(event).await;
    }
}

fn snapshot_path(dir: &Path) -> PathBuf {
    dir.join("snapshot")
}

fn snapshot_error(e: &StoreError) -> StorageError {
    StorageIOError::write_snapshot(None, AnyError::new(e)).into()
}

impl RaftSnapshotBuilder<TypeConfig> for StateMachine {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError> {
        let (meta, state, dir) = {
            let mut inner = self.lock();
            inner.snapshots_built += 1;
            let last = inner.last_applied;
            let snapshot_id = match last {
                Some(l) => format!("{}-{}-{}", l.leader_id, l.index, inner.snapshots_built),
                None => format!("none-{}", inner.snapshots_built),
            };
            let meta = SnapshotMeta {
                last_log_id: last,
                last_membership: inner.membership.clone(),
                snapshot_id,
            };
            (meta, inner.state.clone(), inner.dir.clone())
        };
        let file = SnapshotFile { meta, state };
        let path = snapshot_path(&dir);
        let to = path.clone();
        let encode = move || -> Result<(SnapshotFile, Vec<u8>), StoreError> {
            let payload = file.encode(&to)?;
            Ok((file, payload))
        };
        let (file, payload) = tokio::task::spawn_blocking(encode)
            .await
            .map_err(|e| {
                StorageError::from(StorageIOError::write_snapshot(None, AnyError::new(&e)))
            })?
            .map_err(|e| snapshot_error(&e))?;
        let payload = Arc::new(payload);
        self.write_snapshot(path, Arc::clone(&payload)).await?;
        let payload = Arc::unwrap_or_clone(payload);
        let meta = file.meta;
        self.lock().snapshot = Some((meta.clone(), payload.clone()));
        Ok(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(payload)),
        })
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = StateMachine;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId>, StoredMembership<NodeId, BasicNode>), StorageError> {
        let inner = self.lock();
        Ok((inner.last_applied, inner.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Applied>, StorageError>
    where
        I: IntoIterator<Item = Entry> + Send,
        I::IntoIter: Send,
    {
        let mut replies = Vec::new();
        let mut events = Vec::new();
        {
            let mut inner = self.lock();
            for entry in entries {
                let index = entry.log_id.index;
                inner.last_applied = Some(entry.log_id);
                match entry.payload {
                    EntryPayload::Blank => {}
                    // A pass applied before is not handed to the broker again either.
                    EntryPayload::Normal(command) => {
                        if inner.state.apply(&command) {
                            events.push(Committed::Entry { index, command });
                        }
                    }
                    EntryPayload::Membership(m) => {
                        inner.membership = StoredMembership::new(Some(entry.log_id), m);
                    }
                }
                replies.push(Applied { index });
            }
        }
        for event in events {
            self.send(event).await;
        }
        Ok(replies)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<Cursor<Vec<u8>>>, StorageError> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<NodeId, BasicNode>,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError> {
        let payload = snapshot.into_inner();
        let dir = self.lock().dir.clone();
        let path = snapshot_path(&dir);
        let file = SnapshotFile::decode(&path, &payload).map_err(|e| snapshot_error(&e))?;
        let payload = Arc::new(payload);
        self.write_snapshot(path, Arc::clone(&payload)).await?;
        let payload = Arc::unwrap_or_clone(payload);
        let index = meta.last_log_id.map_or(0, |l| l.index);
        {
            let mut inner = self.lock();
            inner.state = file.state;
            inner.last_applied = meta.last_log_id;
            inner.membership = meta.last_membership.clone();
            inner.snapshot = Some((meta.clone(), payload));
        }
        self.installs.send_modify(|n| *n += 1);
        self.send(Committed::Restored { index }).await;
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>, StorageError> {
        let inner = self.lock();
        Ok(inner.snapshot.as_ref().map(|(meta, payload)| Snapshot {
            meta: meta.clone(),
            snapshot: Box::new(Cursor::new(payload.clone())),
        }))
    }
}

#[cfg(test)]
mod tests {
    use openraft::{CommittedLeaderId, LogId};

    use super::*;
    use crate::command::{ChannelOp, PassId};

    fn entry(index: u64, command: Command) -> Entry {
        Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
            payload: EntryPayload::Normal(command),
        }
    }

    #[tokio::test]
    async fn a_pass_committed_twice_reaches_the_broker_once() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (tx, mut rx) = mpsc::channel(16);
        let mut machine = StateMachine::open(dir.path(), tx).expect("open");
        let id = PassId {
            node: 1,
            run: 9,
            seq: 0,
        };
        let create = Command::Pass {
            id,
            ops: vec![ChannelOp::Create {
                channel: "c".into(),
            }],
        };
        let replies = machine
            .apply(vec![entry(1, create.clone()), entry(2, create.clone())])
            .await
            .expect("applied");
        assert_eq!(replies.len(), 2, "both entries answered");
        assert_eq!(
            rx.try_recv().ok(),
            Some(Committed::Entry {
                index: 1,
                command: create
            })
        );
        assert!(rx.try_recv().is_err(), "the copy is not handed over");
        assert_eq!(machine.last_applied(), Some(2));
    }

    #[test]
    fn a_snapshot_keeps_the_passes_and_one_written_without_them_reads() -> Result<(), StoreError> {
        let path = Path::new("snapshot");
        let mut state = TopicState::default();
        state.apply(&Command::Pass {
            id: PassId {
                node: 3,
                run: 1,
                seq: 4,
            },
            ops: vec![],
        });
        let file = SnapshotFile {
            meta: SnapshotMeta::default(),
            state,
        };
        let read = SnapshotFile::decode(path, &file.encode(path)?)?;
        assert_eq!(read.state, file.state);
        assert_eq!(read.state.passes, file.state.passes);
        assert_eq!(read.state.passes.len(), 1);

        let without = files::encode(path, &(&file.meta, &file.state))?;
        let read = SnapshotFile::decode(path, &without)?;
        assert!(read.state.passes.is_empty());
        assert!(SnapshotFile::decode(path, &without[..without.len() / 2]).is_err());
        Ok(())
    }
}
