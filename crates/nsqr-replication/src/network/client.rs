//! The calling side of the transport: one connection per (group, target node), opened on first
//! use, handshaken, and dropped on any error or cancelled call so the next call opens a fresh
//! one. Each call writes one request frame and reads one reply frame within openraft's time
//! limit.

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

use super::tls::Stream;
use super::{frame, handshake, NetError, Reply, Request, SharedConfig};
use crate::types::{NodeId, TypeConfig};

/// How long opening a connection (TCP connect and handshake) may take.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Opens a connection to `target` for `group` (TLS when the node has a certificate) and runs
/// the handshake.
pub(crate) async fn connect(
    config: &SharedConfig,
    target: NodeId,
    address: &str,
    group: &str,
) -> Result<Stream, NetError> {
    let open = async {
        let tcp = TcpStream::connect(address).await?;
        tcp.set_nodelay(true)?;
        let mut stream: Stream = match &config.tls {
            Some(tls) => tls.connect(tcp, address).await?,
            None => Box::new(tcp),
        };
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
    stream: Option<Stream>,
}

type RpcError<E = openraft::error::Infallible> = RPCError<NodeId, BasicNode, RaftError<NodeId, E>>;

impl PeerClient {
    /// One request and its reply, within `ttl` (openraft's soft limit, so that this limit ends
    /// a slow call, not openraft's). The connection is out of `self` while the exchange runs
    /// and goes back only once the reply is read: a call openraft drops midway closes it, as a
    /// connection left holding an unread reply would answer the next request with the
    /// previous one's reply.
    async fn call(&mut self, request: &Request, ttl: Duration) -> Result<Reply, NetError> {
        let encoded = frame::encode(request, frame::RPC_MAX)?;
        let stream = self.stream.take();
        let (stream, reply) = tokio::time::timeout(ttl, self.exchange(stream, &encoded))
            .await
            .map_err(|_| NetError::Timeout)??;
        self.stream = Some(stream);
        Ok(reply)
    }

    async fn exchange(
        &self,
        stream: Option<Stream>,
        encoded: &[u8],
    ) -> Result<(Stream, Reply), NetError> {
        use tokio::io::AsyncWriteExt;
        let mut stream = match stream {
            Some(stream) => stream,
            None => connect(&self.config, self.target, &self.address, &self.group).await?,
        };
        stream.write_all(encoded).await?;
        let reply = frame::read(&mut stream, frame::RPC_MAX).await?;
        Ok((stream, reply))
    }

    /// Maps a transport failure to what openraft does next: back off from a node it cannot
    /// reach or that refused us, split a batch too large for a frame or too slow to be
    /// answered in time (openraft gives an append one heartbeat interval), retry anything else.
    fn rpc_error<E: std::error::Error>(&self, e: NetError, entries: usize) -> RpcError<E> {
        match e {
            NetError::TooLarge { .. } | NetError::Timeout if entries > 1 => {
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
        match self.call(&Request::Append(rpc), option.soft_ttl()).await {
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
        match self.call(&Request::Snapshot(rpc), option.soft_ttl()).await {
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
        match self.call(&Request::Vote(rpc), option.soft_ttl()).await {
            Ok(Reply::Vote(resp)) => Ok(resp),
            Ok(other) => Err(self.rpc_error(other.unexpected(), 0)),
            Err(e) => Err(self.rpc_error(e, 0)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;
    use std::time::Duration;

    use openraft::network::{RPCOption, RaftNetwork};
    use openraft::raft::{VoteRequest, VoteResponse};
    use openraft::Vote;
    use tokio::net::{TcpListener, TcpStream};

    use super::super::{frame, handshake, Reply, Request};
    use super::PeerClient;
    use crate::membership::{ClusterConfig, Peers};

    fn config(node_id: u64, server: &str) -> ClusterConfig {
        let peers = Peers::new(BTreeMap::from([
            (1, "127.0.0.1:1".to_string()),
            (2, server.to_string()),
        ]))
        .expect("peers");
        let address = peers.address(node_id).expect("address").to_string();
        ClusterConfig::new(node_id, address, peers, b"secret".to_vec()).expect("config")
    }

    /// Node 2's side: answers every vote request with the request's own vote, the first one
    /// only after `delay`.
    async fn serve(mut stream: TcpStream, config: ClusterConfig, mut delay: Duration) {
        let remote = stream.peer_addr().expect("peer");
        if handshake::server(&mut stream, remote, &config, |_| true)
            .await
            .is_err()
        {
            return;
        }
        while let Ok(Request::Vote(req)) = frame::read(&mut stream, frame::RPC_MAX).await {
            tokio::time::sleep(std::mem::take(&mut delay)).await;
            let reply = Reply::Vote(VoteResponse::new(req.vote, None, true));
            if frame::write(&mut stream, &reply, frame::RPC_MAX)
                .await
                .is_err()
            {
                return;
            }
        }
    }

    /// An append too slow to be answered in time is retried in halves; a single entry, or any
    /// other call, backs off.
    #[test]
    fn a_slow_append_is_split() {
        use openraft::error::{Infallible, RPCError};
        let client = PeerClient {
            config: Arc::new(config(1, "127.0.0.1:2")),
            group: "g".to_string(),
            target: 2,
            address: "127.0.0.1:2".to_string(),
            stream: None,
        };
        match client.rpc_error::<Infallible>(super::NetError::Timeout, 300) {
            RPCError::PayloadTooLarge(e) => assert_eq!(e.entries_hint(), 150),
            other => panic!("split expected, got {other}"),
        }
        let one = client.rpc_error::<Infallible>(super::NetError::Timeout, 1);
        assert!(matches!(one, RPCError::Unreachable(_)), "{one}");
    }

    /// openraft drops a call that outlives its time limit; the reply that arrives later must
    /// not be taken for the reply to the next request.
    #[tokio::test]
    async fn a_call_dropped_midway_leaves_no_reply_for_the_next_one() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let server = listener.local_addr().expect("addr").to_string();
        let server_config = config(2, &server);
        tokio::spawn(async move {
            let mut delay = Duration::from_millis(300);
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(
                    stream,
                    server_config.clone(),
                    std::mem::take(&mut delay),
                ));
            }
        });
        let mut client = PeerClient {
            config: Arc::new(config(1, &server)),
            group: "g".to_string(),
            target: 2,
            address: server,
            stream: None,
        };
        let ask = |term| VoteRequest::new(Vote::new(term, 1), None);
        let option = RPCOption::new(Duration::from_secs(10));

        let first = tokio::time::timeout(
            Duration::from_millis(100),
            client.vote(ask(1), option.clone()),
        )
        .await;
        assert!(first.is_err(), "the first call should outlive its limit");
        // The first request's reply is sent meanwhile.
        tokio::time::sleep(Duration::from_millis(500)).await;

        let second = client.vote(ask(2), option).await.expect("second call");
        assert_eq!(
            second.vote,
            Vote::new(2, 1),
            "the reply to the second request"
        );
    }
}
