//! A node that lost its log of a group (its data directory wiped, its disk replaced) must not
//! come back as the voter it was. It forgot the entries it acknowledged and the votes it cast:
//! its vote could elect a node that lacks entries the group committed (the new leader then
//! overwrites them), and its acknowledgements could help a deposed leader commit. So a node
//! that opens a group with a pristine store (no vote, no entry) starts behind a gate
//! ([`Gate`]) that its server applies to its peers' requests:
//!
//! 1. **Closed**: it answers no vote, append or snapshot, and asks its peers, every
//!    [`ASK_EVERY`], whether it may take part.
//! 2. **Catching up**, once the group's leader, its leadership confirmed by a quorum, answered
//!    with its term and its last log index (its last entry is of that term): the node takes
//!    appends and snapshots of that term or a later one (never a deposed leader's), votes only
//!    for a candidate whose log is at least that leader's (such a log holds every entry the
//!    group had committed then, as Raft's election rule argues), and does not stand itself.
//! 3. **Open** once its own log reached that index: it holds every entry the group had
//!    committed when it lost its log, so its votes are as safe as they were. Open at once
//!    when the group is new (a peer holds nothing beyond the founding membership, and no peer
//!    that answered holds more), and on the node that founds the group.
//!
//! The voters never change for this: the node counts as a voter throughout, a slow one while
//! its gate is shut. The "new group" rule trusts the peers that answer: a group that
//! committed entries with this node and one other while a third member never heard of them
//! (partitioned since the founding) looks new if only that third member answers. Losing the
//! logs of a majority of a group's voters loses what only they held; nothing brings it back.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::network::{self, SharedConfig};
use crate::types::Raft;

/// How long a peer may take to answer: the leader confirms its leadership first.
pub(crate) const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the leader waits for a quorum to confirm its leadership.
const CONFIRM_LEADERSHIP: Duration = Duration::from_secs(2);
/// How often a node behind a closed gate asks its peers again.
const ASK_EVERY: Duration = Duration::from_millis(250);

/// A peer's answer to a node that opened the group with a pristine store.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rejoining {
    /// The peer holds nothing beyond the group's founding membership.
    Empty,
    /// The peer holds entries and is not the group's confirmed leader: ask the leader.
    NotLeader,
    /// The confirmed leader of `term`, whose log ends at `last_index` (an entry of `term`).
    Admitted { term: u64, last_index: u64 },
}

/// Where a node's gate stands for one group (see the module's notes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Closed,
    CatchingUp { term: u64, until: u64 },
    Open,
}

/// What the gate lets through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Request {
    /// A vote for a candidate whose log ends at (term, index) (None: an empty log).
    Vote { last_log: Option<(u64, u64)> },
    /// An append or a snapshot, from the leader of `term`.
    Replicate { term: u64 },
}

/// A group's gate on this node, shared by the group's asking task, its server side and its
/// elector: a node behind a shut gate does not stand for election either (its own vote would
/// count like any other), so openraft's elections are off until the gate opens.
#[derive(Clone)]
pub(crate) struct Gate(Arc<Shared>);

struct Shared {
    stage: Mutex<Stage>,
    /// The group's Raft instance, whose elections the gate turns back on when it opens.
    raft: Option<Raft>,
}

impl Gate {
    /// The gate of `raft`'s group: closed (and openraft's elections off) when its store is
    /// `pristine`, else open.
    pub(crate) fn new(raft: &Raft, pristine: bool) -> Self {
        if pristine {
            raft.runtime_config().elect(false);
        }
        Gate::with(Some(raft.clone()), pristine)
    }

    fn with(raft: Option<Raft>, pristine: bool) -> Self {
        let stage = if pristine { Stage::Closed } else { Stage::Open };
        Gate(Arc::new(Shared {
            stage: Mutex::new(stage),
            raft,
        }))
    }

    pub(crate) fn is_closed(&self) -> bool {
        *self.stage() == Stage::Closed
    }

    /// Whether this node may stand for election.
    pub(crate) fn is_open(&self) -> bool {
        *self.stage() == Stage::Open
    }

    /// Whether the server may hand `request` to the group, whose log now ends at
    /// `last_index`; opens the gate once a catching-up log reached its mark.
    pub(crate) fn lets_through(&self, request: Request, last_index: u64) -> bool {
        let mut stage = self.stage();
        match (*stage, request) {
            (Stage::Open, _) => true,
            (Stage::Closed, _) => false,
            (Stage::CatchingUp { until, .. }, _) if last_index >= until => {
                self.open(&mut stage);
                true
            }
            (Stage::CatchingUp { term, until }, Request::Vote { last_log }) => {
                last_log.is_some_and(|log| log >= (term, until))
            }
            (Stage::CatchingUp { term, .. }, Request::Replicate { term: of }) => of >= term,
        }
    }

    /// Opens the gate of a node that founded the group: it has no past in it to forget.
    pub(crate) fn open_as_founder(&self) {
        self.move_to(Stage::Open);
    }

    fn move_to(&self, next: Stage) {
        let mut stage = self.stage();
        match next {
            Stage::Open => self.open(&mut stage),
            _ => *stage = next,
        }
    }

    fn open(&self, stage: &mut Stage) {
        *stage = Stage::Open;
        if let Some(raft) = &self.0.raft {
            raft.runtime_config().elect(true);
        }
    }

    fn stage(&self) -> std::sync::MutexGuard<'_, Stage> {
        self.0.stage.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A peer's side: what to tell a node that opened the group with a pristine store.
pub(crate) async fn answer(raft: &Raft) -> Rejoining {
    let (holds_entries, is_leader) = {
        let metrics = raft.metrics();
        let m = metrics.borrow();
        let holds = m.last_log_index.unwrap_or(0) > 0 || m.snapshot.is_some();
        (holds, m.state == openraft::ServerState::Leader)
    };
    if !holds_entries {
        return Rejoining::Empty;
    }
    if !is_leader {
        return Rejoining::NotLeader;
    }
    // A leader cut off from the others would speak for a term the group has left.
    match tokio::time::timeout(CONFIRM_LEADERSHIP, raft.ensure_linearizable()).await {
        Ok(Ok(_)) => {}
        _ => return Rejoining::NotLeader,
    }
    let metrics = raft.metrics();
    let m = metrics.borrow();
    Rejoining::Admitted {
        term: m.current_term,
        last_index: m.last_log_index.unwrap_or(0),
    }
}

/// What the answers of one round allow: the stage the gate moves to, if it moves.
fn decide(answers: &[Option<Rejoining>]) -> Option<Stage> {
    let answered = || answers.iter().flatten();
    let admitted = answered().find_map(|a| match a {
        Rejoining::Admitted { term, last_index } => Some(Stage::CatchingUp {
            term: *term,
            until: *last_index,
        }),
        _ => None,
    });
    let new_group = answered().next().is_some() && answered().all(|a| *a == Rejoining::Empty);
    admitted.or(new_group.then_some(Stage::Open))
}

/// The closed gate's side: asks every peer, every [`ASK_EVERY`], until one answer lets the
/// gate move. Returns early once the group is closed (its server dropped the gate).
pub(crate) async fn run(config: SharedConfig, group: String, gate: Gate) {
    let gate: Weak<Shared> = Arc::downgrade(&gate.0);
    tracing::info!(%group, "replication: this node holds no log of the group: it votes and takes entries only once a peer says it may");
    loop {
        let mut asks = tokio::task::JoinSet::new();
        for (id, address) in config.peers.iter().filter(|(id, _)| *id != config.node_id) {
            let (config, group, address) = (config.clone(), group.clone(), address.to_owned());
            asks.spawn(async move {
                match network::rejoin(&config, id, &address, &group).await {
                    Ok(answer) => answer,
                    Err(e) => {
                        tracing::debug!(%group, "replication: node {id}: {e}");
                        None
                    }
                }
            });
        }
        let answers: Vec<Option<Rejoining>> = asks.join_all().await;
        let Some(shared) = gate.upgrade() else { return };
        if let Some(next) = decide(&answers) {
            match next {
                Stage::CatchingUp { term, until } => {
                    tracing::info!(%group, "replication: the leader of term {term} admitted this node: it votes for a log at least that leader's, and stands once its own reaches entry {until}")
                }
                _ => tracing::info!(%group, "replication: the group is new: this node takes part"),
            }
            Gate(shared).move_to(next);
            return;
        }
        drop(shared);
        tokio::time::sleep(ASK_EVERY).await;
    }
}

#[cfg(test)]
mod tests {
    use super::Rejoining::{Admitted, Empty, NotLeader};
    use super::*;

    #[test]
    fn a_node_takes_part_once_admitted_or_the_group_is_new() {
        let admitted = Admitted {
            term: 4,
            last_index: 90,
        };
        let catching_up = Some(Stage::CatchingUp { term: 4, until: 90 });
        assert_eq!(decide(&[Some(admitted), Some(NotLeader)]), catching_up);
        assert_eq!(decide(&[Some(Empty), None]), Some(Stage::Open));
        assert_eq!(decide(&[Some(Empty), Some(Empty)]), Some(Stage::Open));
        // A peer holds entries: the group has a history this node may have been part of.
        assert_eq!(decide(&[Some(Empty), Some(NotLeader)]), None);
        // Nobody answered.
        assert_eq!(decide(&[None, None]), None);
        assert_eq!(decide(&[]), None);
    }

    #[test]
    fn the_gate_takes_the_admitting_term_and_votes_once_caught_up() {
        let gate = Gate::with(None, true);
        assert!(gate.is_closed());
        assert!(!gate.lets_through(Request::Replicate { term: 9 }, 0));
        gate.move_to(Stage::CatchingUp { term: 4, until: 90 });
        assert!(!gate.is_open() && !gate.is_closed());
        assert!(
            !gate.lets_through(Request::Replicate { term: 3 }, 10),
            "a deposed leader"
        );
        assert!(gate.lets_through(Request::Replicate { term: 4 }, 10));
        assert!(gate.lets_through(Request::Replicate { term: 5 }, 10));
        // A candidate whose log is at least the admitting leader's gets the vote.
        let vote = |last_log| Request::Vote { last_log };
        assert!(!gate.lets_through(vote(None), 10));
        assert!(!gate.lets_through(vote(Some((4, 89))), 10));
        assert!(!gate.lets_through(vote(Some((3, 500))), 10));
        assert!(gate.lets_through(vote(Some((4, 90))), 10));
        assert!(gate.lets_through(vote(Some((5, 2))), 10));
        assert!(!gate.is_open(), "it does not stand before it caught up");
        assert!(gate.lets_through(vote(None), 90));
        // Open for good.
        assert!(gate.is_open());
        assert!(gate.lets_through(Request::Replicate { term: 1 }, 0));
        assert!(Gate::with(None, false).is_open());
    }
}
