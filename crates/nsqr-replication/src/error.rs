//! The errors of this crate's public API.

use std::io;

use crate::types::NodeId;

/// A `--cluster-peers` / `--cluster-node-id` setting that cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MembershipError {
    #[error("invalid --cluster-peers entry {0:?}: want <node-id>@<host:port>")]
    BadPeer(String),
    #[error("--cluster-peers names node {0} twice")]
    DuplicatePeer(NodeId),
    #[error("--cluster-peers is empty")]
    NoPeers,
    #[error("--cluster-node-id {0} is not in --cluster-peers")]
    SelfNotAPeer(NodeId),
    #[error("the cluster secret is empty")]
    EmptySecret,
}

/// Opening or running a group's log store or state machine failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("{path}: cannot encode: {reason}")]
    Encode { path: String, reason: String },
    #[error("{path}: corrupt at byte {offset}: {reason}")]
    Corrupt {
        path: String,
        offset: u64,
        reason: String,
    },
}

/// Starting a node or a group failed.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cluster listener on {address}: {source}")]
    Listen {
        address: String,
        #[source]
        source: io::Error,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("raft: {0}")]
    Raft(String),
    #[error("group {0:?} is already open on this node")]
    GroupOpen(String),
}

/// A proposal that was not committed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ProposeError {
    /// This node does not lead the group; the leader, if known, is given so the proposal can
    /// be forwarded there.
    #[error("not the leader of this group (leader: {})", leader_name(leader))]
    NotLeader { leader: Option<(NodeId, String)> },
    /// The group stopped (shutdown, or a storage failure made it stop).
    #[error("replication stopped: {0}")]
    Stopped(String),
    /// Consensus refused the proposal for another reason (a membership change in progress...).
    #[error("proposal refused: {0}")]
    Refused(String),
    /// While the proposal waited, this node lost the lead and installed a snapshot of the
    /// group's state from the next leader, which replaced the log the proposal was appended
    /// to: it may be committed (in that snapshot) or not, and openraft will not say.
    #[error("outcome unknown: this node installed a snapshot from the group's leader while the proposal waited")]
    Superseded,
}

/// A membership change that did not happen.
#[derive(Debug, thiserror::Error)]
#[error("membership change failed: {0}")]
pub struct ChangeError(pub String);

/// How an error names a group's leader: `node <id> at <address>`, or why it is not known.
fn leader_name(leader: &Option<(NodeId, String)>) -> String {
    match leader {
        Some((id, address)) => format!("node {id} at {address}"),
        None => "unknown: an election is under way".to_string(),
    }
}
