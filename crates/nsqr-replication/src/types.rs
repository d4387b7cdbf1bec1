//! The Raft type configuration of a topic group: what openraft's generic types are here.

use std::io::Cursor;

use crate::command::{Applied, Command};

openraft::declare_raft_types!(
    /// openraft's types for one topic group: entries carry a [`Command`], nodes are addressed
    /// by `host:port`, snapshots travel as bytes.
    pub TypeConfig:
        D = Command,
        R = Applied,
        NodeId = u64,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = Cursor<Vec<u8>>,
        AsyncRuntime = openraft::TokioRuntime,
);

/// A node's id in the cluster (`--cluster-node-id`).
pub type NodeId = u64;
/// A Raft instance of one group.
pub type Raft = openraft::Raft<TypeConfig>;
/// A log entry of a group.
pub type Entry = openraft::Entry<TypeConfig>;
/// A log id (term, leader, index).
pub type LogId = openraft::LogId<NodeId>;
/// openraft's storage error, as this crate's storage reports it.
pub type StorageError = openraft::StorageError<NodeId>;
