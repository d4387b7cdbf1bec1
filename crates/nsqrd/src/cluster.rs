//! Replicated topics in the daemon (`docs/replication.md`): this node's place in the cluster
//! (`--cluster-*`, the cluster listener) and one replicated log per topic whose `replicas` is
//! above 1. The broker has no sockets, so it reaches the log through the
//! [`nsqr_broker::Replicate`] hook implemented here: a publish on the topic's leader becomes
//! one proposal, acknowledged once a majority has it; the leader hands each committed batch
//! back to its broker, which queues it with the ids it assigned (followers keep it in the
//! replicated state until they take over).
//!
//! A group is opened on every node when its topic gets `replicas` above 1 (the config file,
//! `nsqd.dat`, `/topic/config`); its first voters are the first `replicas` peers in the
//! topic's rendezvous order, and the first of them founds it, which makes it the first leader.
//! `members.rs` founds groups and, on a group's leader, keeps its voters in line with
//! `--cluster-peers` and `replicas` (adding and removing nodes). A publish on a node that does
//! not lead the topic is forwarded to the leader, which stamps and proposes it (`forward.rs`);
//! with no leader to take it in time, it is refused with the leader's name
//! (`BrokerError::NotLeader`).
//!
//! Channel state: the leader's broker reports each change to the topic's channels, which
//! `ops.rs` gathers and proposes a pass at a time; `follow.rs` keeps the broker's copy of the
//! topic in line with the group's leadership (rebuilt from the replicated state on taking
//! over, emptied on losing the lead).

mod follow;
mod forward;
mod members;
mod ops;
mod stats;

pub use stats::GroupStats;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use nsqr_broker::{Broker, BrokerError, Commitment, ReplicaMessage, ReplicaOp, Replicate, Ticket};
use nsqr_replication::{ClusterConfig, ClusterNode, GroupConfig, Message, ReplicatedLog};
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use ops::Pass;

/// A topic's replicated log on this node.
enum Group {
    /// Being opened (its files read, its listener registration made).
    Opening,
    Open(OpenGroup),
}

/// An open group: its log, its channel-operation pass and the tasks that serve them.
struct OpenGroup {
    log: Arc<ReplicatedLog>,
    pass: Arc<Pass>,
    /// The topic's `replicas`, for its voters.
    replicas: watch::Sender<u8>,
    tasks: Vec<JoinHandle<()>>,
}

/// This node of the cluster and the replicated logs it serves.
pub struct Cluster {
    node: ClusterNode,
    /// Where each group's directory goes: `<data-path>/cluster/<topic>`.
    dir: PathBuf,
    /// `--durability=strict`: entries count once fsynced on each node.
    fsync: bool,
    /// `--cluster-snapshot-every`.
    snapshot_every: u64,
    runtime: tokio::runtime::Handle,
    /// The broker committed batches are handed to, once it has started.
    broker: watch::Sender<Option<Broker>>,
    groups: Mutex<HashMap<String, Group>>,
}

impl Cluster {
    /// Binds `--cluster-address` and serves peers; no group is open yet.
    pub async fn start(
        config: ClusterConfig,
        data_path: PathBuf,
        fsync: bool,
        snapshot_every: u64,
    ) -> Result<Arc<Cluster>, String> {
        let node = ClusterNode::start(config)
            .await
            .map_err(|e| format!("cluster: {e}"))?;
        tracing::info!(
            "cluster: node {} listening on {}",
            node.config().node_id,
            node.local_addr()
        );
        let cluster = Arc::new(Cluster {
            node,
            dir: data_path.join("cluster"),
            fsync,
            snapshot_every,
            runtime: tokio::runtime::Handle::current(),
            broker: watch::channel(None).0,
            groups: Mutex::new(HashMap::new()),
        });
        let forwards = forward::Handler(Arc::downgrade(&cluster));
        cluster.node.take_forwards(Arc::new(forwards));
        Ok(cluster)
    }

    /// The broker is running: committed batches can be queued.
    pub fn attach(&self, broker: Broker) {
        self.broker.send_replace(Some(broker));
    }

    /// Stops every group and the listener; the groups' files stay.
    pub async fn shutdown(&self) {
        let open: Vec<OpenGroup> = self
            .groups
            .lock()
            .drain()
            .filter_map(|(_, g)| match g {
                Group::Open(open) => Some(open),
                Group::Opening => None,
            })
            .collect();
        for group in open {
            for task in group.tasks {
                task.abort();
                let _ = task.await;
            }
            match Arc::try_unwrap(group.log) {
                Ok(log) => log.shutdown().await,
                Err(log) => tracing::warn!("cluster: group {} still in use at exit", log.name()),
            }
        }
        self.node.shutdown();
    }

    fn open(self: &Arc<Self>, topic: &str, replicas: u8) {
        {
            let mut groups = self.groups.lock();
            if let Some(group) = groups.get(topic) {
                if let Group::Open(open) = group {
                    open.replicas
                        .send_if_modified(|r| std::mem::replace(r, replicas) != replicas);
                }
                return;
            }
            groups.insert(topic.to_string(), Group::Opening);
        }
        let cluster = Arc::clone(self);
        let topic = topic.to_string();
        self.runtime.spawn(async move {
            if let Err(e) = cluster.open_group(&topic, replicas).await {
                tracing::error!("cluster: topic {topic}: {e}");
                cluster.groups.lock().remove(&topic);
            }
        });
    }

    async fn open_group(self: &Arc<Self>, topic: &str, replicas: u8) -> Result<(), String> {
        let mut group = GroupConfig::new(topic, self.dir.join(topic));
        group.fsync = self.fsync;
        group.snapshot_every = self.snapshot_every;
        let (log, committed) = self
            .node
            .open_group(group)
            .await
            .map_err(|e| e.to_string())?;
        let log = Arc::new(log);
        let pass = Arc::new(Pass::new(self.node.config().node_id));
        let (replicas_tx, replicas_rx) = watch::channel(replicas);
        let members = members::Members {
            topic: topic.to_string(),
            peers: self.node.config().peers.clone(),
            me: self.node.config().node_id,
            replicas: replicas_rx,
        };
        let tasks = vec![
            tokio::spawn(follow::follow(
                topic.to_string(),
                Arc::clone(&log),
                Arc::clone(&pass),
                committed,
                self.broker.subscribe(),
            )),
            tokio::spawn(ops::run(
                topic.to_string(),
                Arc::clone(&pass),
                Arc::downgrade(&log),
            )),
            tokio::spawn(members::run(members, Arc::downgrade(&log))),
        ];
        let open = OpenGroup {
            log: Arc::clone(&log),
            pass,
            replicas: replicas_tx,
            tasks,
        };
        self.groups
            .lock()
            .insert(topic.to_string(), Group::Open(open));
        tracing::info!("cluster: topic {topic}: replicated log open ({replicas} replicas)");
        Ok(())
    }

    /// The channel-operation pass of `topic`'s group, if it is open here.
    fn pass(&self, topic: &str) -> Option<Arc<Pass>> {
        match self.groups.lock().get(topic) {
            Some(Group::Open(open)) => Some(Arc::clone(&open.pass)),
            _ => None,
        }
    }

    /// The log of `topic` if it is open here; else why a publish cannot go to it.
    fn log(&self, topic: &str) -> Result<Arc<ReplicatedLog>, BrokerError> {
        match self.groups.lock().get(topic) {
            Some(Group::Open(open)) => Ok(Arc::clone(&open.log)),
            _ => Err(self.opening(topic)),
        }
    }

    /// The refusal of a publish to `topic` while its log is not open here.
    fn opening(&self, topic: &str) -> BrokerError {
        BrokerError::NotLeader {
            topic: topic.to_string(),
            leader: "unknown: its log is opening".to_string(),
        }
    }

    /// The log of `topic` if it is open here and this node leads it; else why not.
    fn leading(&self, topic: &str) -> Result<Arc<ReplicatedLog>, BrokerError> {
        let log = self.log(topic)?;
        if log.status().is_leader {
            return Ok(log);
        }
        Err(BrokerError::NotLeader {
            topic: topic.to_string(),
            leader: self.leader_name(&log),
        })
    }

    /// The group's leader as errors name it: `node 2 at 10.0.0.2:4250`, or why it is unknown.
    fn leader_name(&self, log: &ReplicatedLog) -> String {
        match log.status().leader {
            Some(id) => match self.node.config().peers.address(id) {
                Some(address) => format!("node {id} at {address}"),
                None => format!("node {id}"),
            },
            None => "unknown: an election is under way".to_string(),
        }
    }
}

/// The broker's hook: a clone of the node's [`Cluster`].
pub struct Hook(pub Arc<Cluster>);

impl Replicate for Hook {
    fn cluster_size(&self) -> usize {
        self.0.node.config().peers.len()
    }

    fn topic_replicated(&self, topic: &str, replicas: u8) {
        self.0.open(topic, replicas);
    }

    fn publish(&self, topic: &str, batch: Vec<ReplicaMessage>) -> Result<Ticket, BrokerError> {
        if forward::is_forwarded() {
            self.0.leading(topic)?;
        }
        let (commitment, ticket) = Commitment::pending();
        let cluster = Arc::clone(&self.0);
        let topic = topic.to_string();
        self.0
            .runtime
            .spawn(forward::publish(cluster, topic, batch, commitment));
        Ok(ticket)
    }

    fn channel_op(&self, topic: &str, channel: Option<&str>, op: ReplicaOp) {
        if let Some(Group::Open(open)) = self.0.groups.lock().get(topic) {
            open.pass.push(channel, op);
        }
    }

    /// Only the node that leads the topic's group, once its copy is rebuilt (`ops.rs`): a
    /// group still opening, or that could not open, has no leader here.
    fn may_deliver(&self, topic: &str) -> bool {
        match self.0.groups.lock().get(topic) {
            Some(Group::Open(open)) => open.pass.may_deliver(),
            _ => false,
        }
    }
}

fn to_log(m: ReplicaMessage) -> Message {
    Message {
        id: ops::to_log(m.id),
        timestamp_ns: m.timestamp_ns,
        deliver_at_ms: m.deliver_at_ms,
        body: m.body,
    }
}
