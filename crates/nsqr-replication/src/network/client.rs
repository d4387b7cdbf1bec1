//! The calling side of the transport: one connection per (group, target node), opened on first
//! use, handshaken, and dropped on any error so the next call opens a fresh one. Each call
//! writes one request frame and reads one reply frame within openraft's time limit.

use std::time::Duration;

use openraft::error::{
    InstallSnapshotError, NetworkError, PayloadTooLarge, RPCError, RaftError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::BasicNode;
use tokio::net::TcpStream;

use super::{frame, handshake, NetError, Reply, Request, SharedConfig};
use crate::types::{NodeId, TypeConfig};

/// How long opening a connection (TCP connect and handshake) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Opens a connection to `target` for `group` and runs the handshake.
pub(crate) async fn connect(
    config: &SharedConfig,
    target: NodeId,
    address: &str,
    group: &str,
) -> Result<TcpStream, NetError> {
    let open = async {
        let mut stream = TcpStream::connect(address).await?;
        stream.set_nodelay(true)?;
        handshake::client(&mut stream, config, target, group).await?;
        Ok::<_, NetError>(stream)
    };
    tokio::time::timeout(CONNECT_TIMEOUT, open)
        .await
        .map_err(|_| NetError::Timeout)?
}

/// openraft's network factory for one group: a [`PeerClient`] per target.
pub struct Network {
    pub(crate) config: SharedConfig,
    pub(crate) group: String,
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = PeerClient;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> PeerClient {
        PeerClient {
            config: self.config.clone(),
            group: self.group.clone(),
            target,
            address: node.addr.clone(),
            stream: None,
        }
    }
}

/// The connection of a group to one target node.
pub struct PeerClient {
    config: SharedConfig,
    group: String,
    target: NodeId,
    address: String,
    stream: Option<TcpStream>,
}

type RpcError<E = openraft::error::Infallible> = RPCError<NodeId, BasicNode, RaftError<NodeId, E>>;

impl PeerClient {
    async fn call(&mut self, request: &Request, ttl: Duration) -> Result<Reply, NetError> {
        let encoded = frame::encode(request, frame::RPC_MAX)?;
        let result = tokio::time::timeout(ttl, self.exchange(&encoded))
            .await
            .unwrap_or(Err(NetError::Timeout));
        if result.is_err() {
            self.stream = None;
        }
        result
    }

    async fn exchange(&mut self, encoded: &[u8]) -> Result<Reply, NetError> {
        use tokio::io::AsyncWriteExt;
        let stream = match &mut self.stream {
            Some(stream) => stream,
            None => {
                let stream = connect(&self.config, self.target, &self.address, &self.group);
                self.stream.insert(stream.await?)
            }
        };
        stream.write_all(encoded).await?;
        frame::read(stream, frame::RPC_MAX).await
    }

    /// Maps a transport failure to what openraft does next: back off from a node it cannot
    /// reach or that refused us, split a batch too large for a frame, retry anything else.
    fn rpc_error<E: std::error::Error>(&self, e: NetError, entries: usize) -> RpcError<E> {
        match e {
            NetError::TooLarge { .. } if entries > 1 => {
                RPCError::PayloadTooLarge(PayloadTooLarge::new_entries_hint(entries as u64 / 2))
            }
            NetError::Encode(_) | NetError::Decode(_) => RPCError::Network(NetworkError::new(&e)),
            _ => RPCError::Unreachable(Unreachable::new(&e)),
        }
    }
}

impl RaftNetwork<TypeConfig> for PeerClient {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RpcError> {
        let entries = rpc.entries.len();
        match self.call(&Request::Append(rpc), option.hard_ttl()).await {
            Ok(Reply::Append(resp)) => Ok(resp),
            Ok(other) => Err(self.rpc_error(other.unexpected(), entries)),
            Err(e) => Err(self.rpc_error(e, entries)),
        }
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<InstallSnapshotResponse<NodeId>, RpcError<InstallSnapshotError>> {
        match self.call(&Request::Snapshot(rpc), option.hard_ttl()).await {
            Ok(Reply::Snapshot(resp)) => Ok(resp),
            Ok(other) => Err(self.rpc_error(other.unexpected(), 0)),
            Err(e) => Err(self.rpc_error(e, 0)),
        }
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RpcError> {
        match self.call(&Request::Vote(rpc), option.hard_ttl()).await {
            Ok(Reply::Vote(resp)) => Ok(resp),
            Ok(other) => Err(self.rpc_error(other.unexpected(), 0)),
            Err(e) => Err(self.rpc_error(e, 0)),
        }
    }
}
