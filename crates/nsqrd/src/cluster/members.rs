//! Who votes in a group, from this node's side (`docs/replication.md`, "Adding and removing a
//! node"): the group's preferred leader founds it, once no peer holds it (a node joining a
//! running cluster must not found a second group beside the one that exists); the group's
//! leader keeps its voters in line with `--cluster-peers` and `replicas`
//! (`Peers::voters_for`): voters stay while they are peers, one dropped from the peers is
//! replaced by the next peer in the group's order, which first catches up as a learner. So
//! adding or removing a node is changing every node's `--cluster-peers`, one restart at a
//! time; each change of voters is joint consensus, safe at every step.

use std::collections::BTreeSet;
use std::sync::Weak;
use std::time::Duration;

use nsqr_replication::{Founding, NodeId, Peers, ReplicatedLog};
use tokio::sync::watch;

/// How often the group's voters are looked at (and a founding not yet decided is tried again).
const EVERY: Duration = Duration::from_secs(1);
/// How long a new voter may take to catch up as a learner before the change is tried again.
const CATCH_UP: Duration = Duration::from_secs(60);

/// This node's view of the cluster, for one group.
pub(super) struct Members {
    pub(super) topic: String,
    pub(super) peers: Peers,
    pub(super) me: NodeId,
    /// The topic's `replicas`, as its settings change.
    pub(super) replicas: watch::Receiver<u8>,
}

/// Founds the group if this node should, then keeps its voters in line while this node leads
/// it, and logs the voters as they change; returns once the group is closed.
pub(super) async fn run(mut members: Members, log: Weak<ReplicatedLog>) {
    let mut last_failure = None;
    let mut voters = BTreeSet::new();
    loop {
        let Some(group) = log.upgrade() else { return };
        let outcome = members.step(&group).await;
        let now = group.status().voters;
        drop(group);
        if now != voters && !now.is_empty() {
            tracing::info!("cluster: topic {}: voters {}", members.topic, ids(&now));
            voters = now;
        }
        match outcome {
            Err(failure) if last_failure.as_ref() != Some(&failure) => {
                tracing::warn!("cluster: topic {}: {failure}", members.topic);
                last_failure = Some(failure);
            }
            Err(_) => {}
            Ok(()) => last_failure = None,
        }
        tokio::select! {
            _ = tokio::time::sleep(EVERY) => {}
            _ = members.replicas.changed() => {}
        }
    }
}

impl Members {
    /// One look at the group: founds it, or changes its voters, if this node should.
    async fn step(&self, log: &ReplicatedLog) -> Result<(), String> {
        let replicas = usize::from(*self.replicas.borrow());
        let status = log.status();
        if status.voters.is_empty() {
            return self.found(log, replicas).await;
        }
        if !status.is_leader || !status.applied_in_term {
            return Ok(());
        }
        let want = self.peers.voters_for(&self.topic, replicas, &status.voters);
        if want == status.voters {
            return Ok(());
        }
        for id in want.difference(&status.voters) {
            let address = self.peers.address(*id).unwrap_or_default();
            match tokio::time::timeout(CATCH_UP, log.add_learner(*id, address)).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(format!("adding node {id}: {e}")),
                Err(_) => {
                    return Err(format!(
                        "node {id} did not catch up within {CATCH_UP:?} (is the topic \
                         replicated there?): trying again"
                    ))
                }
            }
        }
        log.change_voters(want.clone(), false)
            .await
            .map_err(|e| format!("voters {} -> {}: {e}", ids(&status.voters), ids(&want)))?;
        tracing::info!(
            "cluster: topic {}: changed voters {} -> {}",
            self.topic,
            ids(&status.voters),
            ids(&want)
        );
        Ok(())
    }

    /// Founds the group on its preferred leader, once no peer holds it.
    async fn found(&self, log: &ReplicatedLog, replicas: usize) -> Result<(), String> {
        if self.peers.preferred_leader(&self.topic) != self.me {
            return Ok(());
        }
        let voters = self
            .peers
            .voters_for(&self.topic, replicas, &BTreeSet::new());
        match log.found(voters.clone(), replicas).await {
            Ok(Founding::Founded) => {
                tracing::info!(
                    "cluster: topic {}: founded its replicated log, voters {}",
                    self.topic,
                    ids(&voters)
                );
                Ok(())
            }
            Ok(Founding::Exists | Founding::Undecided) => Ok(()),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// Node ids as a comma-separated list.
fn ids(voters: &BTreeSet<NodeId>) -> String {
    let ids: Vec<String> = voters.iter().map(NodeId::to_string).collect();
    ids.join(",")
}
