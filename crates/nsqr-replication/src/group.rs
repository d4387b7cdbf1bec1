//! A node of the cluster and the groups it serves: [`ClusterNode`] owns the cluster listener;
//! each [`ReplicatedLog`] is one topic group's Raft instance on it (its log store, state
//! machine and network), with the API the broker calls: `propose` a batch and get its index
//! once a majority has it, and read committed entries from the channel `open_group` returns.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use openraft::error::{ClientWriteError, InitializeError, RaftError};
use openraft::{BasicNode, ChangeMembers, Config, ServerState, SnapshotPolicy};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::command::Command;
use crate::elect::Elector;
use crate::error::{ChangeError, ProposeError, StartError};
use crate::forward::{ForwardError, ForwardHandler, Unstamped};
use crate::log_store::LogStore;
use crate::membership::ClusterConfig;
use crate::network::forward::Forwarder;
use crate::network::{self, Network, Server, SharedConfig};
use crate::rejoin::{self, Gate};
use crate::space::SpaceWait;
use crate::state::TopicState;
use crate::state_machine::{Committed, StateMachine};
use crate::types::{NodeId, Raft};

/// The leader's default heartbeat, in milliseconds: a follower stands for election only after
/// six or more heartbeats in a row went missing. openraft 0.9 also gives every append to a
/// follower this long to be answered (the transport splits an append that takes longer), so
/// a shorter one would cut large appends on a loaded machine.
const HEARTBEAT_MS: u64 = 250;

/// The default election timeout range, in milliseconds; the leader's lease is its upper end. A
/// follower that heard from a leader stands after the lease plus a timeout drawn from the range
/// for that round ([`crate::elect`]): a lost leader is missed after 1.5-2 s. A candidate refused
/// for its shorter log waits twice the upper end more, leaving the next round to the node with
/// the longer log, so a failover takes one round or two, three when two candidates stand in
/// one term (`docs/decisions/0030-failover-time.md`).
const ELECTION_TIMEOUT_MS: (u64, u64) = (500, 1000);

/// How long the leader gives a follower to take one chunk of a snapshot (3 MiB, openraft's
/// default) and, for the last, to install it: written and fsynced whole. openraft's default
/// (200 ms, of which the transport waits three quarters) cuts a snapshot of a few MiB on a
/// loaded machine every time, so a follower far behind (restarted after missing more than the
/// log keeps) never catches up, and a leader left with it alone commits nothing
/// (`docs/decisions/0017-raft-timing.md`).
const SNAPSHOT_CHUNK_TIMEOUT_MS: u64 = 10_000;

/// One group's settings on this node.
#[derive(Clone, Debug)]
pub struct GroupConfig {
    /// The group's name (a topic's, or a shard's), the same on every node.
    pub name: String,
    /// The group's directory on this node: its log, vote and snapshot.
    pub dir: PathBuf,
    /// fsync appended entries before they count (`--durability=strict`); otherwise an entry
    /// counts once written.
    pub fsync: bool,
    /// Entries applied between snapshots; the log behind a snapshot is purged.
    pub snapshot_every: u64,
    /// Size at which a new log segment starts.
    pub segment_bytes: u64,
    /// The leader's heartbeat, in milliseconds.
    pub heartbeat_ms: u64,
    /// A follower hearing nothing for a random time in this range, in milliseconds, stands
    /// for election.
    pub election_timeout_ms: (u64, u64),
    /// Committed entries waiting for the broker before applying waits.
    pub apply_buffer: usize,
}

impl GroupConfig {
    /// A group with the default settings.
    pub fn new(name: impl Into<String>, dir: impl Into<PathBuf>) -> Self {
        GroupConfig {
            name: name.into(),
            dir: dir.into(),
            fsync: false,
            snapshot_every: 10_000,
            segment_bytes: 64 << 20,
            heartbeat_ms: HEARTBEAT_MS,
            election_timeout_ms: ELECTION_TIMEOUT_MS,
            apply_buffer: 1024,
        }
    }

    fn raft_config(&self) -> Result<Config, StartError> {
        let config = Config {
            cluster_name: self.name.clone(),
            heartbeat_interval: self.heartbeat_ms,
            election_timeout_min: self.election_timeout_ms.0,
            election_timeout_max: self.election_timeout_ms.1,
            install_snapshot_timeout: SNAPSHOT_CHUNK_TIMEOUT_MS,
            snapshot_policy: SnapshotPolicy::LogsSinceLast(self.snapshot_every),
            // Keep a few entries behind a snapshot so a follower just behind still gets
            // entries rather than the whole snapshot.
            max_in_snapshot_log_to_keep: self.snapshot_every.min(1000),
            ..Config::default()
        };
        config
            .validate()
            .map_err(|e| StartError::Raft(e.to_string()))
    }
}

/// This node in the cluster: its settings and its listener.
pub struct ClusterNode {
    config: SharedConfig,
    server: Arc<Server>,
}

impl ClusterNode {
    /// Binds `--cluster-address` and starts serving peers.
    pub async fn start(config: ClusterConfig) -> Result<Self, StartError> {
        let config = Arc::new(config);
        let server = Server::bind(config.clone(), None).await?;
        Ok(ClusterNode {
            config,
            server: Arc::new(server),
        })
    }

    /// Serves peers on a listener already bound (tests bind ephemeral ports first).
    pub async fn start_on(
        config: ClusterConfig,
        listener: TcpListener,
    ) -> Result<Self, StartError> {
        let config = Arc::new(config);
        let server = Server::bind(config.clone(), Some(listener)).await?;
        Ok(ClusterNode {
            config,
            server: Arc::new(server),
        })
    }

    /// This node's settings.
    pub fn config(&self) -> &ClusterConfig {
        &self.config
    }

    /// The address the cluster listener is bound to.
    pub fn local_addr(&self) -> std::net::SocketAddr {
        self.server.local_addr()
    }

    /// Opens (or creates) a group on this node and serves it to peers. Committed entries come
    /// out of the returned receiver, in order, from the last snapshot on.
    pub async fn open_group(
        &self,
        group: GroupConfig,
    ) -> Result<(ReplicatedLog, mpsc::Receiver<Committed>), StartError> {
        let log = LogStore::open(&group.dir, group.fsync, group.segment_bytes)?;
        let pristine = log.is_pristine();
        // Opening replays the committed entries after the snapshot into the channel before
        // the caller has the receiver: room for all of them, or the open never returns.
        // (Capped under tokio's bound on a channel's capacity.)
        let replay = usize::try_from(log.committed_in_log()).unwrap_or(usize::MAX);
        let capacity = group.apply_buffer.max(1).saturating_add(replay);
        let (tx, rx) = mpsc::channel(capacity.min(usize::MAX >> 4));
        let machine = StateMachine::open(&group.dir, tx)?;
        let space = [log.space_wait(), machine.space_wait()];
        let network = Network {
            config: self.config.clone(),
            group: group.name.clone(),
        };
        let raft_config = Arc::new(group.raft_config()?);
        let raft = Raft::new(
            self.config.node_id,
            raft_config.clone(),
            network,
            log,
            machine.clone(),
        )
        .await
        .map_err(|e| StartError::Raft(e.to_string()))?;
        let gate = Gate::new(&raft, pristine);
        if !self
            .server
            .register(&group.name, raft.clone(), gate.clone())
        {
            let _ = raft.shutdown().await;
            return Err(StartError::GroupOpen(group.name));
        }
        if gate.is_closed() {
            tokio::spawn(rejoin::run(
                self.config.clone(),
                group.name.clone(),
                gate.clone(),
            ));
        }
        let elector = Elector::start(raft.clone(), self.config.node_id, raft_config, gate.clone());
        let replicated = ReplicatedLog {
            elector,
            gate,
            forwarder: Forwarder::new(self.config.clone(), group.name.clone()),
            name: group.name,
            config: self.config.clone(),
            raft,
            machine,
            space,
            server: self.server.clone(),
        };
        Ok((replicated, rx))
    }

    /// Publishes that peers forward to this node ([`crate::forward`]) go to `handler`; until
    /// it is installed they are refused.
    pub fn take_forwards(&self, handler: Arc<dyn ForwardHandler>) {
        self.server.take_forwards(handler);
    }

    /// Stops the listener and closes every cluster connection to this node.
    pub fn shutdown(&self) {
        self.server.shutdown();
    }
}

/// Where a group stands on this node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupStatus {
    pub leader: Option<NodeId>,
    pub is_leader: bool,
    pub term: u64,
    pub last_log_index: Option<u64>,
    pub last_applied: Option<u64>,
    pub snapshot: Option<u64>,
    pub voters: BTreeSet<NodeId>,
    /// The last applied entry is of the current term: on a leader, everything committed
    /// before its election is applied, so its state is complete.
    pub applied_in_term: bool,
    /// On the leader, the last entry each other member (voter or learner) is known to hold
    /// (None: nothing yet); empty elsewhere.
    pub matched: BTreeMap<NodeId, Option<u64>>,
}

/// What [`ReplicatedLog::found`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Founding {
    /// The group had no log anywhere that answered: this node made its first voters.
    Founded,
    /// The group has a log here or on a peer: a leader adds this node when it should be a
    /// voter.
    Exists,
    /// Too few peers answered to tell: ask again later.
    Undecided,
}

/// Wakes whenever the group's status may have changed (leadership, applied index).
pub struct StatusWatch(tokio::sync::watch::Receiver<openraft::RaftMetrics<NodeId, BasicNode>>);

impl StatusWatch {
    /// Waits for the next change; false once the group stopped.
    pub async fn changed(&mut self) -> bool {
        self.0.changed().await.is_ok()
    }
}

/// One topic group's replicated log on this node.
pub struct ReplicatedLog {
    name: String,
    config: SharedConfig,
    raft: Raft,
    machine: StateMachine,
    /// The log's and the state machine's waits for space: closed at shutdown, so a group
    /// whose disk is full can stop.
    space: [SpaceWait; 2],
    server: Arc<Server>,
    forwarder: Forwarder,
    /// Stands this node for election with a timeout drawn per round ([`crate::elect`]).
    elector: Elector,
    /// What this node takes part in while its log may have forgotten its past
    /// ([`crate::rejoin`]).
    gate: Gate,
}

impl ReplicatedLog {
    /// The group's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Makes every configured peer a voter of a new group. Called on one node (the preferred
    /// leader, [`crate::Peers::preferred_leader`]) when the group is created; a group that
    /// already has members is left as it is.
    pub async fn initialize(&self) -> Result<(), ChangeError> {
        let all = self.config.peers.iter().map(|(id, _)| id).collect();
        self.initialize_voters(all).await
    }

    /// Makes `voters` (configured peers) the voters of a new group; the other peers may join
    /// later ([`Self::add_learner`], [`Self::change_voters`]).
    pub async fn initialize_voters(&self, voters: BTreeSet<NodeId>) -> Result<(), ChangeError> {
        let mut members = BTreeMap::new();
        for id in voters {
            let address = self.config.peers.address(id);
            let address = address.ok_or_else(|| ChangeError(format!("node {id} is not a peer")))?;
            members.insert(id, BasicNode::new(address));
        }
        match self.raft.initialize(members).await {
            Ok(()) => {
                self.gate.open_as_founder();
                Ok(())
            }
            Err(RaftError::APIError(InitializeError::NotAllowed(_))) => Ok(()),
            Err(e) => Err(ChangeError(e.to_string())),
        }
    }

    /// Makes `voters` the voters of the group if it exists nowhere yet: the way a node founds a
    /// group, where [`Self::initialize_voters`] would make a second group beside one that
    /// exists (a node joining the cluster, or one whose data was lost). Asks every other peer
    /// whether it holds the group; founds it only once none does and enough answered that
    /// any `replicas` of the peers, this node among them or not, include another that
    /// answered (so a group of that size that exists would have been seen).
    pub async fn found(
        &self,
        voters: BTreeSet<NodeId>,
        replicas: usize,
    ) -> Result<Founding, ChangeError> {
        if !self.status().voters.is_empty() {
            return Ok(Founding::Exists);
        }
        let others = self.config.peers.len().saturating_sub(1);
        let needed = (others + 2)
            .saturating_sub(replicas)
            .clamp(1, others.max(1));
        let mut answered = 0;
        for (id, address) in self.config.peers.iter() {
            if id == self.config.node_id {
                continue;
            }
            match network::initialized(&self.config, id, address, &self.name).await {
                Ok(true) => return Ok(Founding::Exists),
                Ok(false) => answered += 1,
                Err(e) => tracing::debug!(group = %self.name, "replication: node {id}: {e}"),
            }
        }
        if others > 0 && answered < needed {
            return Ok(Founding::Undecided);
        }
        self.initialize_voters(voters).await?;
        Ok(Founding::Founded)
    }

    /// Proposes one batch. Returns its log index once it is in the log of a majority of the
    /// group (fsynced there when the group fsyncs) and applied on this node.
    ///
    /// openraft 0.9 keeps a proposal's answer under its log index until that index is applied
    /// or cut from the log. A deposed leader that installs the next leader's snapshot over its
    /// log does neither for the indexes the snapshot covers, and their answers never come; so
    /// a snapshot installed while the proposal waits answers it with
    /// [`ProposeError::Superseded`] (`docs/decisions/0029-unanswered-proposals.md`).
    pub async fn propose(&self, command: Command) -> Result<u64, ProposeError> {
        let mut installs = self.machine.installs();
        let written = tokio::select! {
            biased;
            written = self.raft.client_write(command) => written,
            () = installs.next() => {
                tracing::info!(group = %self.name, "replication: a proposal outstanding when this node installed the leader's snapshot is answered as superseded");
                return Err(ProposeError::Superseded);
            }
        };
        match written {
            Ok(written) => Ok(written.log_id.index),
            Err(RaftError::APIError(ClientWriteError::ForwardToLeader(to))) => {
                let leader = to.leader_id.zip(to.leader_node.map(|n| n.addr));
                Err(ProposeError::NotLeader { leader })
            }
            Err(RaftError::APIError(e)) => Err(ProposeError::Refused(e.to_string())),
            Err(RaftError::Fatal(e)) => Err(ProposeError::Stopped(e.to_string())),
        }
    }

    /// Where the group stands on this node.
    pub fn status(&self) -> GroupStatus {
        let metrics = self.raft.metrics();
        let m = metrics.borrow();
        GroupStatus {
            leader: m.current_leader,
            is_leader: m.state == ServerState::Leader,
            term: m.current_term,
            last_log_index: m.last_log_index,
            last_applied: m.last_applied.map(|l| l.index),
            snapshot: m.snapshot.map(|l| l.index),
            voters: m.membership_config.membership().voter_ids().collect(),
            applied_in_term: m
                .last_applied
                .is_some_and(|l| l.leader_id.term == m.current_term),
            matched: m
                .replication
                .iter()
                .flatten()
                .filter(|(id, _)| **id != self.config.node_id)
                .map(|(id, matched)| (*id, matched.map(|l| l.index)))
                .collect(),
        }
    }

    /// The index of the last entry this node knows committed (None: none yet), as its Raft
    /// instance holds it.
    pub async fn commit_index(&self) -> Result<Option<u64>, ProposeError> {
        self.raft
            .with_raft_state(|st| st.committed.map(|l| l.index))
            .await
            .map_err(|e| ProposeError::Stopped(e.to_string()))
    }

    /// Sends a publish batch to node `leader` (this group's leader, as far as this node knows)
    /// and waits until that node has committed it: [`crate::forward`].
    pub async fn forward(&self, leader: NodeId, batch: Unstamped) -> Result<(), ForwardError> {
        self.forwarder.forward(leader, batch).await
    }

    /// Follows the group's status ([`Self::status`] says where it stands).
    pub fn watch(&self) -> StatusWatch {
        StatusWatch(self.raft.metrics())
    }

    /// Calls `f` with the group's replicated state as applied on this node.
    pub fn state<T>(&self, f: impl FnOnce(&TopicState) -> T) -> T {
        self.machine.with_state(f)
    }

    /// Calls `f` with the state and the index of the last entry applied to it, read together.
    pub fn state_at<T>(&self, f: impl FnOnce(&TopicState, Option<u64>) -> T) -> T {
        self.machine.with_state_at(f)
    }

    /// Adds `id` (at `address`) as a learner: it receives the log without voting, until
    /// [`Self::change_voters`] makes it a voter. Waits until it caught up.
    pub async fn add_learner(&self, id: NodeId, address: &str) -> Result<(), ChangeError> {
        self.raft
            .add_learner(id, BasicNode::new(address), true)
            .await
            .map(drop)
            .map_err(|e| ChangeError(e.to_string()))
    }

    /// Makes `voters` the group's voters (joint consensus: safe at every step). A voter
    /// removed stays a learner unless `keep_removed` is false.
    pub async fn change_voters(
        &self,
        voters: BTreeSet<NodeId>,
        keep_removed: bool,
    ) -> Result<(), ChangeError> {
        self.raft
            .change_membership(ChangeMembers::ReplaceAllVoters(voters), keep_removed)
            .await
            .map(drop)
            .map_err(|e| ChangeError(e.to_string()))
    }

    /// Builds a snapshot now (and purges the log behind it), instead of waiting for the
    /// next `snapshot_every` entries.
    pub async fn snapshot(&self) -> Result<(), ProposeError> {
        self.raft
            .trigger()
            .snapshot()
            .await
            .map_err(|e| ProposeError::Stopped(e.to_string()))
    }

    /// Stops serving the group on this node and stops its Raft instance. Its files stay: the
    /// group opens again from them.
    pub async fn shutdown(self) {
        self.elector.stop();
        self.server.unregister(&self.name);
        for wait in &self.space {
            wait.close();
        }
        if let Err(e) = self.raft.shutdown().await {
            tracing::warn!(group = %self.name, "replication: shutdown: {e}");
        }
    }
}
