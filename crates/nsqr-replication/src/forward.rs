//! A publish that reaches a node which does not lead its topic's group is forwarded to the
//! leader over the cluster transport (authenticated like every cluster connection, so only a
//! configured peer can forward). What travels is the batch before it is stamped,
//! [`Unstamped`]: the leader's broker gives it ids, a timestamp and its place in the log, as
//! for a publish of its own, so every id in a group's log comes from its leader. The leader's
//! answer comes once the batch is committed: the forwarding node's `OK` still means that a
//! majority has it.
//!
//! The daemon decides what a forwarded batch becomes on the leader ([`ForwardHandler`]);
//! this crate carries it there and back ([`crate::ReplicatedLog::forward`]).

use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::network::NetError;

/// A publish batch as a follower received it, before the leader stamps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unstamped {
    /// Milliseconds since the Unix epoch before which the messages are not delivered (DPUB).
    pub deliver_at_ms: Option<u64>,
    /// The messages' bodies, in publish order.
    pub bodies: Vec<Bytes>,
}

/// Why the leader did not take a forwarded batch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum ForwardRefused {
    /// The node asked does not lead the group (any more): nothing was proposed, the batch can
    /// go to the leader.
    #[error("not the leader")]
    NotLeader,
    /// The leader proposed the batch and it was not committed (no majority in time, the lead
    /// lost meanwhile, the node stopping), or could not propose it: the text says why. The
    /// batch may still be committed later.
    #[error("{0}")]
    Failed(String),
}

/// A forwarded batch that did not get the leader's `OK`.
#[derive(Debug, thiserror::Error)]
pub enum ForwardError {
    /// The leader answered with a refusal.
    #[error("{0}")]
    Refused(#[from] ForwardRefused),
    /// The batch cannot travel at all (larger than a frame may be): nothing was proposed, and
    /// no node would take it.
    #[error("forwarding: {0}")]
    Unsendable(#[source] NetError),
    /// The batch never reached the node (no connection, the handshake refused): nothing was
    /// proposed.
    #[error("forwarding to node {node}: {source}")]
    Unsent {
        node: u64,
        #[source]
        source: NetError,
    },
    /// The connection failed or timed out after the batch was sent: it may have been
    /// committed.
    #[error("forwarding to node {node}: no answer: {source}")]
    NoAnswer {
        node: u64,
        #[source]
        source: NetError,
    },
}

/// What the leader's side answers once its broker has committed (or refused) a forwarded
/// batch.
pub type Forwarded = Pin<Box<dyn Future<Output = Result<(), ForwardRefused>> + Send>>;

/// What a node does with a batch forwarded to it for `group` (installed with
/// [`crate::ClusterNode::take_forwards`]). A node that has none refuses forwarded batches.
pub trait ForwardHandler: Send + Sync + 'static {
    /// Publishes `batch` to `group` as a publish of this node's own; resolves once it is
    /// committed. [`ForwardRefused::NotLeader`] when this node does not lead the group.
    fn publish(&self, group: &str, batch: Unstamped) -> Forwarded;
}
