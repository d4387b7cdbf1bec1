//! The listening side of the transport: accepts connections on `--cluster-address`, runs the
//! TLS handshake when the node has a certificate and then the peers' handshake (refusing and
//! logging anything that is not a configured peer), then answers the Raft RPCs of the group
//! the connection was opened for, one at a time, in order, and the publishes a peer forwards
//! to this node ([`crate::forward`]), through the daemon's [`ForwardHandler`].

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use openraft::raft::VoteResponse;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::tls::Stream;
use super::{frame, handshake, NetError, Reply, Request, SharedConfig};
use crate::error::StartError;
use crate::forward::{ForwardHandler, ForwardRefused, Unstamped};
use crate::rejoin::{self, Gate};
use crate::types::{NodeId, Raft};

/// How long a connecting peer has to complete the handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections open at once, handshaking or serving: a bound on what strangers can hold open.
/// A cluster needs one per group and peer in each direction.
const MAX_CONNECTIONS: usize = 4096;

/// Each served group's Raft instance and its gate (`rejoin.rs`).
type Groups = Arc<RwLock<HashMap<String, (Raft, Gate)>>>;
type Forwards = Arc<RwLock<Option<Arc<dyn ForwardHandler>>>>;

/// A node's cluster listener and the groups it serves.
pub struct Server {
    local_addr: SocketAddr,
    groups: Groups,
    forwards: Forwards,
    stop: watch::Sender<bool>,
}

impl Server {
    /// Starts accepting on `listener`, or else on `config.address`.
    pub async fn bind(
        config: SharedConfig,
        listener: Option<TcpListener>,
    ) -> Result<Server, StartError> {
        let listen_error = |source| StartError::Listen {
            address: config.address.clone(),
            source,
        };
        let listener = match listener {
            Some(listener) => listener,
            None => TcpListener::bind(&config.address)
                .await
                .map_err(listen_error)?,
        };
        let local_addr = listener.local_addr().map_err(listen_error)?;
        let groups = Groups::default();
        let forwards = Forwards::default();
        let (stop, stopped) = watch::channel(false);
        let served = Served {
            config,
            groups: groups.clone(),
            forwards: forwards.clone(),
        };
        tokio::spawn(accept_loop(listener, served, stopped));
        Ok(Server {
            local_addr,
            groups,
            forwards,
            stop,
        })
    }

    /// The address the listener is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Serves `name`'s RPCs with `raft`, those its `gate` lets through; false if that group
    /// is already served.
    pub(crate) fn register(&self, name: &str, raft: Raft, gate: Gate) -> bool {
        let mut groups = self.groups.write().unwrap_or_else(|p| p.into_inner());
        if groups.contains_key(name) {
            return false;
        }
        groups.insert(name.to_owned(), (raft, gate));
        true
    }

    /// Publishes forwarded to this node go to `handler`.
    pub(crate) fn take_forwards(&self, handler: Arc<dyn ForwardHandler>) {
        let mut forwards = self.forwards.write().unwrap_or_else(|p| p.into_inner());
        *forwards = Some(handler);
    }

    /// Stops serving `name`.
    pub(crate) fn unregister(&self, name: &str) {
        let mut groups = self.groups.write().unwrap_or_else(|p| p.into_inner());
        groups.remove(name);
    }

    /// Stops accepting and closes every connection.
    pub fn shutdown(&self) {
        self.stop.send_replace(true);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// What every connection of the listener serves.
#[derive(Clone)]
struct Served {
    config: SharedConfig,
    groups: Groups,
    forwards: Forwards,
}

async fn accept_loop(listener: TcpListener, served: Served, mut stopped: watch::Receiver<bool>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = stopped.changed() => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, remote)) if connections.len() >= MAX_CONNECTIONS => {
                    tracing::warn!(%remote, "cluster: refused a connection: {MAX_CONNECTIONS} already open");
                    drop(stream);
                }
                Ok((stream, remote)) => {
                    connections.spawn(serve(stream, remote, served.clone()));
                }
                Err(e) => {
                    tracing::warn!("cluster: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
        }
    }
    // Dropping the set aborts every connection's task.
}

async fn serve(tcp: TcpStream, remote: SocketAddr, served: Served) {
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::debug!(%remote, "cluster: set_nodelay: {e}");
    }
    let serves = |group: &str| {
        let groups = served.groups.read().unwrap_or_else(|p| p.into_inner());
        groups.contains_key(group)
    };
    let handshake = async {
        let mut stream: Stream = match &served.config.tls {
            Some(tls) => tls.accept(tcp).await?,
            None => Box::new(tcp),
        };
        let group = handshake::server(&mut stream, remote, &served.config, serves).await?;
        Ok::<_, NetError>((stream, group))
    };
    let (mut stream, group) = match tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake).await {
        Ok(Ok(opened)) => opened,
        Ok(Err(NetError::Refused(_))) => return, // logged by the handshake
        Ok(Err(NetError::Tls(e))) => {
            tracing::warn!(%remote, "cluster: refused a connection: TLS: {e}");
            return;
        }
        Ok(Err(e)) => {
            tracing::warn!(%remote, "cluster: handshake failed: {e}");
            return;
        }
        Err(_) => {
            tracing::warn!(%remote, "cluster: handshake timed out");
            return;
        }
    };
    if let Err(e) = answer(&mut stream, &group, &served).await {
        tracing::debug!(%remote, group, "cluster: connection closed: {e}");
    }
}

/// Answers requests until the peer closes the connection.
async fn answer(stream: &mut Stream, group: &str, served: &Served) -> Result<(), NetError> {
    loop {
        let request: Request = frame::read(stream, frame::RPC_MAX).await?;
        let raft = {
            let groups = served.groups.read().unwrap_or_else(|p| p.into_inner());
            groups.get(group).cloned()
        };
        let reply = match (raft, request) {
            (None, _) => Reply::Failed(format!("no group {group:?} on this node")),
            (Some(_), Request::Forward(batch)) => forward(&served.forwards, group, batch).await,
            (Some((raft, gate)), request) if !gate_lets_through(&raft, &gate, &request) => {
                refuse(&raft, &request, served.config.node_id, group)
            }
            (Some((raft, _)), request) => dispatch(&raft, request).await,
        };
        frame::write(stream, &reply, frame::RPC_MAX).await?;
    }
}

/// A publish forwarded by a peer, handed to the daemon.
async fn forward(forwards: &Forwards, group: &str, batch: Unstamped) -> Reply {
    let handler = forwards.read().unwrap_or_else(|p| p.into_inner()).clone();
    let answer = match handler {
        Some(handler) => handler.publish(group, batch).await,
        None => Err(ForwardRefused::Failed(
            "this node takes no forwarded publishes".to_string(),
        )),
    };
    Reply::Forwarded(answer)
}

/// Whether a group's gate (`rejoin.rs`) lets `request` through to its Raft instance.
fn gate_lets_through(raft: &Raft, gate: &Gate, request: &Request) -> bool {
    if gate.is_open() {
        return true;
    }
    let request = match request {
        Request::Vote(rpc) => rejoin::Request::Vote {
            last_log: rpc.last_log_id.map(|l| (l.leader_id.term, l.index)),
        },
        Request::Append(rpc) => rejoin::Request::Replicate {
            term: rpc.vote.leader_id.term,
        },
        Request::Snapshot(rpc) => rejoin::Request::Replicate {
            term: rpc.vote.leader_id.term,
        },
        Request::Forward(_) | Request::Initialized | Request::Rejoin(_) => return true,
    };
    let last_index = raft.metrics().borrow().last_log_index.unwrap_or(0);
    gate.lets_through(request, last_index)
}

/// The answer to a request the gate holds back: a vote not granted (the candidate goes on
/// with the others' votes), else a failure.
fn refuse(raft: &Raft, request: &Request, me: NodeId, group: &str) -> Reply {
    match request {
        Request::Vote(_) => Reply::Vote(VoteResponse {
            vote: raft.metrics().borrow().vote,
            vote_granted: false,
            last_log_id: None,
        }),
        _ => Reply::Failed(format!(
            "node {me} holds no log of {group:?} yet and takes no part until a peer says it may"
        )),
    }
}

async fn dispatch(raft: &Raft, request: Request) -> Reply {
    match request {
        Request::Append(rpc) => match raft.append_entries(rpc).await {
            Ok(resp) => Reply::Append(resp),
            Err(e) => Reply::Failed(e.to_string()),
        },
        Request::Vote(rpc) => match raft.vote(rpc).await {
            Ok(resp) => Reply::Vote(resp),
            Err(e) => Reply::Failed(e.to_string()),
        },
        Request::Snapshot(rpc) => match raft.install_snapshot(rpc).await {
            Ok(resp) => Reply::Snapshot(resp),
            Err(e) => Reply::Failed(e.to_string()),
        },
        Request::Forward(_) => Reply::Failed("a forwarded publish is not a Raft RPC".into()),
        Request::Initialized => match raft.is_initialized().await {
            Ok(initialized) => Reply::Initialized(initialized),
            Err(e) => Reply::Failed(e.to_string()),
        },
        Request::Rejoin(node) => {
            tracing::debug!(
                "replication: node {node} holds no log and asks whether it may take part"
            );
            Reply::Rejoin(rejoin::answer(raft).await)
        }
    }
}
