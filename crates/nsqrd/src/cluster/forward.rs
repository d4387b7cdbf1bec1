//! Where a replicated topic's publish goes (`docs/replication.md`, "A publish on a follower").
//!
//! On the topic's leader a publish is one proposal, acknowledged once committed. On any other
//! node it is forwarded to the leader over the cluster transport
//! (`nsqr_replication::forward`): the leader's broker stamps it as a publish of its own, so
//! every id in the log is the leader's, and answers once it is committed, so the `OK` the
//! publisher gets from this node means what it means from the leader. While no leader is
//! known (an election), or the one known cannot be reached or has just lost the lead, the
//! publish waits for the group to settle, up to [`LEADER_WAIT`], then fails with the
//! `E_PUB_FAILED` (HTTP 503 `NOT_LEADER`) NSQ clients already handle by retrying.

use std::cell::Cell;
use std::sync::{Arc, Weak};
use std::time::Duration;

use nsqr_broker::{BrokerError, Commitment, DiskError, PutOptions, ReplicaMessage};
use nsqr_replication::{
    Command, ForwardError, ForwardHandler, ForwardRefused, Forwarded, ProposeError, ReplicatedLog,
    StatusWatch, Unstamped,
};
use tokio::time::Instant;

use super::Cluster;

/// How long a publish waits for a leader to take it: a lost leader is missed after 1.5-2 s
/// and an election takes one to three rounds (`docs/replication.md`, "Failover").
const LEADER_WAIT: Duration = Duration::from_secs(5);
/// How often a publish waiting for a leader looks again when the group's status does not
/// change (a leader known but unreachable).
const RETRY_EVERY: Duration = Duration::from_millis(100);

thread_local! {
    /// Set while this thread publishes a batch a peer forwarded: a node that lost the lead
    /// meanwhile refuses it rather than forwarding it on (the peer asks the new leader).
    static FORWARDED: Cell<bool> = const { Cell::new(false) };
}

/// True while the publish being made on this thread was forwarded by a peer.
pub(super) fn is_forwarded() -> bool {
    FORWARDED.with(Cell::get)
}

/// What became of one attempt to get a batch committed.
enum Attempt {
    Committed,
    /// Nothing was proposed (no leader known, the node asked was not the leader, or could not
    /// be reached): the batch can be tried again.
    Retry,
    Failed(String),
}

/// Gets `batch` (stamped by this node's broker) committed through the group's leader and
/// completes `commitment` accordingly. A group still opening on this node (its topic was just
/// made replicated) counts as one with no leader yet.
pub(super) async fn publish(
    cluster: Arc<Cluster>,
    topic: String,
    batch: Vec<ReplicaMessage>,
    commitment: Commitment,
) {
    let deadline = Instant::now() + LEADER_WAIT;
    let mut group: Option<(Arc<ReplicatedLog>, StatusWatch)> = None;
    loop {
        if group.is_none() {
            group = cluster.log(&topic).ok().map(|log| {
                let status = log.watch();
                (log, status)
            });
        }
        let attempt = match &group {
            Some((log, _)) => attempt(&cluster, log, &topic, &batch).await,
            None => Attempt::Retry,
        };
        match attempt {
            Attempt::Committed => return commitment.committed(),
            Attempt::Failed(reason) => return commitment.failed(reason),
            Attempt::Retry if Instant::now() >= deadline => {
                let e = match &group {
                    Some((log, _)) => BrokerError::NotLeader {
                        leader: cluster.leader_name(log),
                        topic,
                    },
                    None => cluster.opening(&topic),
                };
                return commitment.not_leader(e.to_string());
            }
            Attempt::Retry => {
                let pause = deadline.min(Instant::now() + RETRY_EVERY);
                match &mut group {
                    Some((_, status)) => {
                        let _ = tokio::time::timeout_at(pause, status.changed()).await;
                    }
                    None => tokio::time::sleep_until(pause).await,
                }
            }
        }
    }
}

async fn attempt(
    cluster: &Cluster,
    log: &ReplicatedLog,
    topic: &str,
    batch: &[ReplicaMessage],
) -> Attempt {
    let status = log.status();
    if status.is_leader {
        // After the creation of every channel made so far, so they all get it (`ops.rs`); a
        // group that does not settle in time gets the publish anyway.
        if let Some(pass) = cluster.pass(topic) {
            let _ = tokio::time::timeout(LEADER_WAIT, pass.ready_to_publish(log)).await;
        }
        // Stamped by this node's broker, which leads: its ids are the leader's.
        let command = Command::Publish(batch.iter().cloned().map(super::to_log).collect());
        return match log.propose(command).await {
            Ok(_) => Attempt::Committed,
            Err(ProposeError::NotLeader { .. }) => Attempt::Retry,
            Err(e) => Attempt::Failed(e.to_string()),
        };
    }
    let me = cluster.node.config().node_id;
    let targets = match status.leader {
        Some(leader) => vec![leader],
        // A node that is not one of the group's voters (`replicas` below the cluster's size)
        // hears from no leader: it asks the group's nodes in turn, and the leader takes it.
        None if !status.voters.contains(&me) => cluster.node.config().peers.ranked(topic),
        None => Vec::new(),
    };
    for target in targets.into_iter().filter(|t| *t != me) {
        match log.forward(target, unstamped(batch)).await {
            Ok(()) => return Attempt::Committed,
            Err(ForwardError::Refused(ForwardRefused::NotLeader) | ForwardError::Unsent { .. }) => {
            }
            Err(e) => return Attempt::Failed(e.to_string()),
        }
    }
    Attempt::Retry
}

/// The batch as the leader gets it: bodies and due time, without this node's stamps.
fn unstamped(batch: &[ReplicaMessage]) -> Unstamped {
    Unstamped {
        deliver_at_ms: batch.first().and_then(|m| m.deliver_at_ms),
        bodies: batch.iter().map(|m| m.body.clone()).collect(),
    }
}

/// The leader's side: a batch a peer forwarded, published to this node's broker as a publish
/// of its own.
pub(super) struct Handler(pub(super) Weak<Cluster>);

impl ForwardHandler for Handler {
    fn publish(&self, group: &str, batch: Unstamped) -> Forwarded {
        let published = self.0.upgrade().map(|c| put(&c, group, &batch));
        Box::pin(async move {
            let ticket = published.unwrap_or_else(|| Err(refused("the node is stopping")))?;
            ticket.wait().await.map_err(|e| match e {
                // Lost the lead before proposing, and no other leader took it: the peer
                // tries again itself.
                DiskError::NotLeader(_) => ForwardRefused::NotLeader,
                e => ForwardRefused::Failed(e.to_string()),
            })
        })
    }
}

fn refused(reason: &str) -> ForwardRefused {
    ForwardRefused::Failed(reason.to_string())
}

/// Publishes `batch` to the broker's topic `group`, if this node leads its group.
fn put(
    cluster: &Cluster,
    group: &str,
    batch: &Unstamped,
) -> Result<nsqr_broker::Ticket, ForwardRefused> {
    if cluster.leading(group).is_err() {
        return Err(ForwardRefused::NotLeader);
    }
    let broker = cluster.broker.borrow().clone();
    let topic = broker
        .and_then(|b| b.topic(group))
        .filter(|t| t.settings().replicas.unwrap_or(1) > 1)
        .ok_or_else(|| refused("no such replicated topic on the leader"))?;
    let bodies = nsq_wire::Bodies::concat(batch.bodies.iter().map(|b| &b[..]))
        .map_err(|e| ForwardRefused::Failed(e.to_string()))?;
    let opts = PutOptions::default().defer(until(batch.deliver_at_ms));
    FORWARDED.with(|f| f.set(true));
    let put = topic.put_with(std::slice::from_ref(&bodies), &opts);
    FORWARDED.with(|f| f.set(false));
    put.map_err(|e| match e {
        BrokerError::NotLeader { .. } => ForwardRefused::NotLeader,
        e => ForwardRefused::Failed(e.to_string()),
    })
}

/// The time left until `deliver_at_ms` (milliseconds since the Unix epoch), zero if past.
fn until(deliver_at_ms: Option<u64>) -> Duration {
    let Some(at) = deliver_at_ms else {
        return Duration::ZERO;
    };
    let now_ms = u64::try_from(nsqr_broker::now_unix_nanos() / 1_000_000).unwrap_or(0);
    Duration::from_millis(at.saturating_sub(now_ms))
}
