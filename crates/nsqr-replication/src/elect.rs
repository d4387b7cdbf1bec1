//! When a voter stands for election without a candidacy of its own under way: a timeout
//! drawn anew for every round, and no back-off left over from an earlier failover.
//!
//! openraft 0.9 draws each node's election timeout once, and a candidate refused for its
//! shorter log waits twice the range's upper end more on its next candidacy; that back-off is
//! cleared only when the node next stands, so a node refused in one failover stands that much
//! late in the next one, often with the longer log, and the election takes two or three
//! rounds (`docs/decisions/0030-failover-time.md`). This task leaves openraft's timer running
//! and, on a voter that follows a leader (its vote committed) or voted for another candidate,
//! calls openraft's own election trigger once the same wait openraft would apply without the
//! back-off has passed: the leader's lease, for a committed vote, plus a timeout drawn from the
//! election timeout range since the vote last changed or was renewed by the leader. A node
//! whose own candidacy is under way (its vote for itself, not committed) is left to openraft,
//! back-off included: that is the case the back-off is for. Votes, terms and logs stay
//! openraft's: the trigger only starts a candidacy, which a voter still refuses during its
//! lease or for a shorter log.

use std::sync::Arc;
use std::time::Duration;

use openraft::{Config, ServerState, TokioRuntime};
use tokio::time::Instant;

use crate::rejoin::Gate;
use crate::types::{NodeId, Raft};

/// How often the task looks at the group (one request to its Raft core): a fraction of the
/// election timeout's lower end (openraft's own timer looks every one and a half heartbeats).
const LOOK_EVERY: Duration = Duration::from_millis(50);

/// What the task reads of the group's Raft state at each look.
#[derive(Clone, Copy, Debug)]
struct Seen {
    /// The vote's last change or renewal by the leader (None: never).
    since: Option<Instant>,
    /// The vote is committed: this node follows (or led) an elected leader.
    committed: bool,
    /// Whether the task may stand this node at all (a voter of several, not leading, not
    /// standing for itself already).
    may_stand: bool,
}

impl Seen {
    fn read(st: &openraft::RaftState<NodeId, openraft::BasicNode, Instant>, id: NodeId) -> Seen {
        let vote = st.vote_ref();
        let membership = st.membership_state.effective();
        let voters = membership.voter_ids().count();
        let for_itself = !vote.is_committed() && vote.leader_id().voted_for() == Some(id);
        Seen {
            since: st.vote_last_modified(),
            committed: vote.is_committed(),
            may_stand: st.server_state != ServerState::Leader
                && voters > 1
                && membership.voter_ids().any(|v| v == id)
                && !for_itself,
        }
    }

    /// When this node stands, with `timeout` drawn for this round and the leader's `lease`
    /// (None: the task leaves it alone).
    fn stands_at(&self, timeout: Duration, lease: Duration) -> Option<Instant> {
        let since = self.since.filter(|_| self.may_stand)?;
        Some(
            since
                + if self.committed {
                    lease + timeout
                } else {
                    timeout
                },
        )
    }
}

/// The task of one group on this node; it ends with the group's Raft instance, or when this is
/// dropped.
pub(crate) struct Elector(tokio::task::JoinHandle<()>);

impl Elector {
    /// Starts watching `raft`, node `id`'s instance of a group with `config`, standing only
    /// while the group's `gate` (`rejoin.rs`) is open.
    pub(crate) fn start(raft: Raft, id: NodeId, config: Arc<Config>, gate: Gate) -> Elector {
        Elector(tokio::spawn(watch(raft, id, config, gate)))
    }

    /// Stops the task (before the group's Raft instance stops).
    pub(crate) fn stop(&self) {
        self.0.abort();
    }
}

impl Drop for Elector {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn watch(raft: Raft, id: NodeId, config: Arc<Config>, gate: Gate) {
    let lease = Duration::from_millis(config.election_timeout_max);
    let heartbeat = Duration::from_millis(config.heartbeat_interval);
    // The timeout drawn for the vote as last seen (its time of change or renewal).
    let mut drawn: Option<(Instant, Duration)> = None;
    let mut looked = Instant::now();
    let mut hold_until = looked;
    loop {
        tokio::time::sleep(LOOK_EVERY).await;
        // Woken late (the process stopped, or starved of CPU): what the leader sent meanwhile
        // may not be read yet, so give it one heartbeat before standing.
        let now = Instant::now();
        if now.duration_since(looked) > heartbeat {
            hold_until = now + heartbeat;
        }
        looked = now;
        let Ok(seen) = raft.with_raft_state(move |st| Seen::read(st, id)).await else {
            return;
        };
        // A new draw whenever the vote changed or the leader renewed it.
        let timeout = match (drawn, seen.since) {
            (Some((at, timeout)), Some(since)) if at == since => timeout,
            (_, since) => {
                let ms = config.new_rand_election_timeout::<TokioRuntime>();
                let timeout = Duration::from_millis(ms);
                drawn = since.map(|since| (since, timeout));
                timeout
            }
        };
        let now = Instant::now();
        let due = seen.stands_at(timeout, lease).is_some_and(|at| now >= at);
        if due && now >= hold_until && gate.is_open() {
            tracing::info!("replication: election timeout passed; standing for election");
            if raft.trigger().elect().await.is_err() {
                return;
            }
            drawn = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEASE: Duration = Duration::from_millis(1000);
    const TIMEOUT: Duration = Duration::from_millis(700);

    fn seen(committed: bool, may_stand: bool) -> (Instant, Seen) {
        let since = Instant::now();
        let seen = Seen {
            since: Some(since),
            committed,
            may_stand,
        };
        (since, seen)
    }

    #[test]
    fn a_follower_stands_after_the_lease_and_the_round_s_timeout() {
        let (since, follower) = seen(true, true);
        assert_eq!(
            follower.stands_at(TIMEOUT, LEASE),
            Some(since + LEASE + TIMEOUT)
        );
    }

    #[test]
    fn a_voter_for_another_candidate_stands_after_the_round_s_timeout_alone() {
        let (since, voter) = seen(false, true);
        assert_eq!(voter.stands_at(TIMEOUT, LEASE), Some(since + TIMEOUT));
    }

    #[test]
    fn a_leader_a_lone_voter_or_a_candidate_for_itself_is_left_to_openraft() {
        let (_, left) = seen(false, false);
        assert_eq!(left.stands_at(TIMEOUT, LEASE), None);
        let never_voted = Seen {
            since: None,
            committed: false,
            may_stand: true,
        };
        assert_eq!(never_voted.stands_at(TIMEOUT, LEASE), None);
    }
}
