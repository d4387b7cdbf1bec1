//! Replicated topics in the daemon (`docs/replication.md`): this node's place in the cluster
//! (`--cluster-*`, the cluster listener) and one replicated log per topic whose `replicas` is
//! above 1. The broker has no sockets, so it reaches the log through the
//! [`nsqr_broker::Replicate`] hook implemented here: a publish on the topic's leader becomes
//! one proposal, acknowledged once a majority has it; every node (the leader included) hands
//! each committed batch back to its broker, which queues it with the leader's ids.
//!
//! A group is opened on every node when its topic gets `replicas` above 1 (the config file,
//! `nsqd.dat`, `/topic/config`); its voters are the first `replicas` peers in the topic's
//! rendezvous order, and the first of them initializes it, which makes it the first leader.
//! A publish on a node that does not lead the topic is refused with the leader's name
//! (`BrokerError::NotLeader`); nothing is forwarded.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use nsqr_broker::{Broker, BrokerError, Commitment, ReplicaMessage, Replicate, Ticket, Topic};
use nsqr_replication::{
    ClusterConfig, ClusterNode, Command, Committed, GroupConfig, Message, MessageId, ReplicatedLog,
};
use parking_lot::Mutex;
use tokio::sync::{mpsc, watch};

/// A topic's replicated log on this node.
enum Group {
    /// Being opened (its files read, its listener registration made).
    Opening,
    Open(Arc<ReplicatedLog>),
}

/// This node of the cluster and the replicated logs it serves.
pub struct Cluster {
    node: ClusterNode,
    /// Where each group's directory goes: `<data-path>/cluster/<topic>`.
    dir: PathBuf,
    /// `--durability=strict`: entries count once fsynced on each node.
    fsync: bool,
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
    ) -> Result<Arc<Cluster>, String> {
        let node = ClusterNode::start(config)
            .await
            .map_err(|e| format!("cluster: {e}"))?;
        tracing::info!(
            "cluster: node {} listening on {}",
            node.config().node_id,
            node.local_addr()
        );
        Ok(Arc::new(Cluster {
            node,
            dir: data_path.join("cluster"),
            fsync,
            runtime: tokio::runtime::Handle::current(),
            broker: watch::channel(None).0,
            groups: Mutex::new(HashMap::new()),
        }))
    }

    /// The broker is running: committed batches can be queued.
    pub fn attach(&self, broker: Broker) {
        self.broker.send_replace(Some(broker));
    }

    /// Stops every group and the listener; the groups' files stay.
    pub async fn shutdown(&self) {
        let open: Vec<Arc<ReplicatedLog>> = self
            .groups
            .lock()
            .drain()
            .filter_map(|(_, g)| match g {
                Group::Open(log) => Some(log),
                Group::Opening => None,
            })
            .collect();
        for log in open {
            match Arc::try_unwrap(log) {
                Ok(log) => log.shutdown().await,
                Err(log) => tracing::warn!("cluster: group {} still in use at exit", log.name()),
            }
        }
        self.node.shutdown();
    }

    fn open(self: &Arc<Self>, topic: &str, replicas: u8) {
        {
            let mut groups = self.groups.lock();
            if groups.contains_key(topic) {
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
        let (log, committed) = self
            .node
            .open_group(group)
            .await
            .map_err(|e| e.to_string())?;
        let log = Arc::new(log);
        self.groups
            .lock()
            .insert(topic.to_string(), Group::Open(Arc::clone(&log)));
        tokio::spawn(apply(topic.to_string(), committed, self.broker.subscribe()));
        let peers = &self.node.config().peers;
        let voters: BTreeSet<u64> = peers
            .ranked(topic)
            .into_iter()
            .take(usize::from(replicas))
            .collect();
        if peers.preferred_leader(topic) == self.node.config().node_id {
            log.initialize_voters(voters)
                .await
                .map_err(|e| e.to_string())?;
        }
        tracing::info!("cluster: topic {topic}: replicated log open ({replicas} replicas)");
        Ok(())
    }

    /// The log of `topic` if it is open here and this node leads it; else why not.
    fn leading(&self, topic: &str) -> Result<Arc<ReplicatedLog>, BrokerError> {
        let not_leader = |leader: String| BrokerError::NotLeader {
            topic: topic.to_string(),
            leader,
        };
        let log = match self.groups.lock().get(topic) {
            Some(Group::Open(log)) => Arc::clone(log),
            _ => return Err(not_leader("unknown: its log is opening".to_string())),
        };
        let status = log.status();
        if status.is_leader {
            return Ok(log);
        }
        let leader = match status.leader {
            Some(id) => match self.node.config().peers.address(id) {
                Some(address) => format!("node {id} at {address}"),
                None => format!("node {id}"),
            },
            None => "unknown: an election is under way".to_string(),
        };
        Err(not_leader(leader))
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
        let log = self.0.leading(topic)?;
        let (commitment, ticket) = Commitment::pending();
        let command = Command::Publish(batch.into_iter().map(to_log).collect());
        self.0.runtime.spawn(async move {
            match log.propose(command).await {
                Ok(_) => commitment.committed(),
                Err(e) => commitment.failed(e.to_string()),
            }
        });
        Ok(ticket)
    }
}

fn to_log(m: ReplicaMessage) -> Message {
    Message {
        id: MessageId(m.id.to_hex()),
        timestamp_ns: m.timestamp_ns,
        deliver_at_ms: m.deliver_at_ms,
        body: m.body,
    }
}

fn from_log(m: &Message) -> Option<ReplicaMessage> {
    Some(ReplicaMessage {
        id: nsqr_broker::MessageId::from_hex(&m.id.0)?,
        timestamp_ns: m.timestamp_ns,
        deliver_at_ms: m.deliver_at_ms,
        body: m.body.clone(),
    })
}

/// Queues each committed batch of `topic` in the local broker, in log order.
async fn apply(
    topic: String,
    mut committed: mpsc::Receiver<Committed>,
    mut broker: watch::Receiver<Option<Broker>>,
) {
    let broker = match broker.wait_for(Option::is_some).await {
        Ok(b) => b.clone(),
        Err(_) => return,
    };
    let Some(broker) = broker else { return };
    let mut local: Option<Arc<Topic>> = None;
    while let Some(entry) = committed.recv().await {
        match entry {
            Committed::Entry {
                index,
                command: Command::Publish(messages),
            } => {
                let batch: Vec<ReplicaMessage> = messages.iter().filter_map(from_log).collect();
                if batch.len() != messages.len() {
                    tracing::error!("cluster: topic {topic}: entry {index} has unreadable ids");
                }
                if let Err(e) = put(&broker, &topic, &mut local, &batch).await {
                    tracing::error!("cluster: topic {topic}: entry {index} not queued: {e}");
                }
            }
            Committed::Entry {
                command: Command::Channels(_),
                ..
            } => {}
            Committed::Restored { index } => {
                tracing::warn!(
                    "cluster: topic {topic}: state restored from a snapshot at {index}; \
                     the messages it holds are not queued on this node (not done yet)"
                );
            }
        }
    }
}

async fn put(
    broker: &Broker,
    name: &str,
    local: &mut Option<Arc<Topic>>,
    batch: &[ReplicaMessage],
) -> Result<(), BrokerError> {
    let topic = match local.as_ref().filter(|t| !t.is_deleted()) {
        Some(t) => Arc::clone(t),
        None => {
            let b = broker.clone();
            let n = name.to_string();
            let t = tokio::task::spawn_blocking(move || b.get_or_create_topic(&n))
                .await
                .map_err(|_| BrokerError::Exiting)??;
            *local = Some(Arc::clone(&t));
            t
        }
    };
    let mut ticket = topic.put_committed(batch)?;
    ticket.ready().await;
    match ticket.try_result() {
        Some(Err(e)) => Err(BrokerError::Disk(e)),
        _ => Ok(()),
    }
}
