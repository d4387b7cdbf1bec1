//! The transport between the nodes of a cluster, over TCP: the server that answers Raft's RPCs
//! for every group this node serves ([`server`]), the client side openraft calls ([`client`]),
//! both opened by an authenticating [`handshake`] (inside mutual [`tls`] when the nodes have
//! certificates) and exchanging length-prefixed postcard [`frame`]s. Nothing else in the
//! crate touches a socket.

pub(crate) mod client;
pub(crate) mod forward;
pub(crate) mod frame;
pub(crate) mod handshake;
pub(crate) mod server;
pub(crate) mod tls;

use std::io;
use std::sync::Arc;

use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use serde::{Deserialize, Serialize};

use crate::forward::{ForwardRefused, Unstamped};
use crate::membership::ClusterConfig;
use crate::rejoin::Rejoining;
use crate::types::{NodeId, TypeConfig};

pub use client::{Network, PeerClient};
pub use server::Server;
pub use tls::{ClusterTls, TlsError};

pub(crate) type SharedConfig = Arc<ClusterConfig>;

/// A failure on a cluster connection.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    #[error("cluster connection: {0}")]
    Io(#[from] io::Error),
    #[error("cluster connection: a frame of {len} bytes, over the limit of {max}")]
    TooLarge { len: usize, max: usize },
    #[error("cluster connection: cannot encode a frame: {0}")]
    Encode(String),
    #[error("cluster connection: cannot decode a frame: {0}")]
    Decode(String),
    #[error("cluster connection refused by the peer: {0}")]
    Refused(String),
    #[error("cluster connection: the peer is not who it should be: {0}")]
    BadPeer(String),
    #[error("cluster connection: the peer failed the request: {0}")]
    Remote(String),
    #[error("cluster connection: timed out")]
    Timeout,
    #[error("cluster connection: no system randomness for a nonce")]
    Random,
    #[error("cluster connection: TLS: {0}")]
    Tls(io::Error),
}

/// A Raft RPC, as the client sends it, or a publish forwarded to the leader.
#[derive(Serialize, Deserialize)]
pub(crate) enum Request {
    Append(AppendEntriesRequest<TypeConfig>),
    Vote(VoteRequest<NodeId>),
    Snapshot(InstallSnapshotRequest<TypeConfig>),
    Forward(Unstamped),
    /// Whether the group has a log here (a membership, entries): asked before founding it.
    Initialized,
    /// A node that opened the group with a pristine store asks whether it may take part
    /// ([`crate::rejoin`]).
    Rejoin(NodeId),
}

/// The server's answer to a [`Request`].
#[derive(Serialize, Deserialize)]
pub(crate) enum Reply {
    Append(AppendEntriesResponse<NodeId>),
    Vote(VoteResponse<NodeId>),
    Snapshot(InstallSnapshotResponse<NodeId>),
    /// The leader's answer to a forwarded publish, once committed or refused.
    Forwarded(Result<(), ForwardRefused>),
    Initialized(bool),
    /// The group refused or failed the request (it is shutting down, or not here any more).
    Failed(String),
    Rejoin(Rejoining),
}

impl Reply {
    /// The error of a reply that does not answer the request that was sent.
    fn unexpected(self) -> NetError {
        match self {
            Reply::Failed(reason) => NetError::Remote(reason),
            _ => NetError::Decode("a reply of the wrong kind".into()),
        }
    }
}

/// Connects to node `target` at `address` for `group` and runs the handshake, without sending
/// anything else: whether this node's settings are accepted there.
pub async fn probe(
    config: &ClusterConfig,
    target: NodeId,
    address: &str,
    group: &str,
) -> Result<(), NetError> {
    let shared = Arc::new(config.clone());
    client::connect(&shared, target, address, group)
        .await
        .map(drop)
}

/// Whether node `target` at `address` holds `group` with a log (a membership, entries): false
/// when the group is not open there.
pub(crate) async fn initialized(
    config: &SharedConfig,
    target: NodeId,
    address: &str,
    group: &str,
) -> Result<bool, NetError> {
    match ask(config, target, address, group, &Request::Initialized).await? {
        None => Ok(false),
        Some(Reply::Initialized(initialized)) => Ok(initialized),
        Some(other) => Err(other.unexpected()),
    }
}

/// Node `target`'s answer to this node, which opened `group` with a pristine store; None when
/// the group is not open there.
pub(crate) async fn rejoin(
    config: &SharedConfig,
    target: NodeId,
    address: &str,
    group: &str,
) -> Result<Option<Rejoining>, NetError> {
    let request = Request::Rejoin(config.node_id);
    match ask(config, target, address, group, &request).await? {
        None => Ok(None),
        Some(Reply::Rejoin(answer)) => Ok(Some(answer)),
        Some(other) => Err(other.unexpected()),
    }
}

/// One request on a connection of its own, answered within the connect timeout (or within
/// [`crate::rejoin::ANSWER_TIMEOUT`] for a rejoin, which may wait for a change of voters);
/// None when `group` is not open on `target`.
async fn ask(
    config: &SharedConfig,
    target: NodeId,
    address: &str,
    group: &str,
    request: &Request,
) -> Result<Option<Reply>, NetError> {
    let mut stream = match client::connect(config, target, address, group).await {
        Ok(stream) => stream,
        Err(NetError::Refused(reason)) if reason.starts_with(handshake::NO_GROUP) => {
            return Ok(None)
        }
        Err(e) => return Err(e),
    };
    let exchange = async {
        frame::write(&mut stream, request, frame::RPC_MAX).await?;
        frame::read(&mut stream, frame::RPC_MAX).await
    };
    let limit = match request {
        Request::Rejoin(_) => crate::rejoin::ANSWER_TIMEOUT,
        _ => client::CONNECT_TIMEOUT,
    };
    match tokio::time::timeout(limit, exchange).await {
        Ok(Ok(reply)) => Ok(Some(reply)),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(NetError::Timeout),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{frame, Reply, Request};
    use crate::types::Entry;

    proptest! {
        /// Bytes from a peer or the disk decode to a value or an error, never a panic.
        #[test]
        fn any_bytes_decode_or_fail(bytes in proptest::collection::vec(any::<u8>(), 0..1024)) {
            let _ = postcard::from_bytes::<Request>(&bytes);
            let _ = postcard::from_bytes::<Reply>(&bytes);
            let _ = postcard::from_bytes::<Entry>(&bytes);
        }
    }

    #[tokio::test]
    async fn a_frame_over_the_bound_is_refused_before_it_is_read() {
        let mut wire: &[u8] = &[0xff, 0xff, 0xff, 0xff];
        let read = frame::read::<_, Request>(&mut wire, frame::RPC_MAX).await;
        assert!(matches!(read, Err(super::NetError::TooLarge { .. })));
    }
}
