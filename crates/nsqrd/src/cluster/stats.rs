//! What `/stats` and `/metrics` show of each replicated topic's group on this node
//! (`docs/replication.md`, "Stats and metrics"): the group's size, its leader, this node's
//! role, the commit and applied indexes, and on the leader how far behind each other member
//! is. Read from openraft's metrics and state when asked; nothing is sampled in the
//! background.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use super::{Cluster, Group};

/// How long `/stats` and `/metrics` wait for a group's Raft instance to say its commit index.
const COMMIT_INDEX_WAIT: Duration = Duration::from_secs(1);

/// One replicated topic's group, as this node sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupStats {
    /// Voters of the group.
    pub replicas: usize,
    /// The leader's node id, if known.
    pub leader: Option<u64>,
    /// This node's role: `leader` or `follower`.
    pub role: &'static str,
    /// The Raft term this node is in.
    pub term: u64,
    /// The last log entry this node knows committed (null: none yet).
    pub commit_index: Option<u64>,
    /// The last log entry applied to the replicated state on this node.
    pub applied_index: Option<u64>,
    /// The last log entry this node holds.
    pub last_log_index: Option<u64>,
    /// On the leader, every other member; empty elsewhere.
    pub followers: Vec<FollowerStats>,
}

/// Another member of the group, as its leader sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FollowerStats {
    pub node: u64,
    /// The last entry the member is known to hold (null: nothing yet).
    pub matched_index: Option<u64>,
    /// Entries of the leader's log the member is not known to hold.
    pub lag: u64,
}

impl Cluster {
    /// Every group open on this node, by topic.
    pub async fn stats(&self) -> BTreeMap<String, GroupStats> {
        let logs: Vec<_> = self
            .groups
            .lock()
            .iter()
            .filter_map(|(topic, g)| match g {
                Group::Open(open) => Some((topic.clone(), open.log.clone())),
                Group::Opening => None,
            })
            .collect();
        let mut out = BTreeMap::new();
        for (topic, log) in logs {
            // A group stopping meanwhile, or too busy to answer in time, has no commit index
            // to show: monitoring never waits on it for long.
            let commit_index = tokio::time::timeout(COMMIT_INDEX_WAIT, log.commit_index())
                .await
                .ok()
                .and_then(Result::ok)
                .flatten();
            let s = log.status();
            let last = s.last_log_index;
            let followers = s
                .matched
                .iter()
                .map(|(node, matched)| FollowerStats {
                    node: *node,
                    matched_index: *matched,
                    lag: lag(last, *matched),
                })
                .collect();
            let stats = GroupStats {
                replicas: s.voters.len(),
                leader: s.leader,
                role: if s.is_leader { "leader" } else { "follower" },
                term: s.term,
                commit_index,
                applied_index: s.last_applied,
                last_log_index: last,
                followers,
            };
            out.insert(topic, stats);
        }
        out
    }
}

/// Entries up to `last` that a member holding up to `matched` does not have.
fn lag(last: Option<u64>, matched: Option<u64>) -> u64 {
    match (last, matched) {
        (Some(last), Some(matched)) => last.saturating_sub(matched),
        (Some(last), None) => last + 1,
        (None, _) => 0,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn lag_counts_the_entries_a_member_lacks() {
        assert_eq!(super::lag(Some(10), Some(10)), 0);
        assert_eq!(super::lag(Some(10), Some(7)), 3);
        assert_eq!(super::lag(Some(10), None), 11);
        assert_eq!(super::lag(None, None), 0);
    }
}
