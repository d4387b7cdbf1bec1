//! The nemeses: each fault is injected, held for a while, then healed by `Cluster::heal`.
//! The leader is the node whose `/metrics` says it leads the topic (`run::current_leader`).

use std::fmt;

use crate::cluster::Cluster;
use crate::history::NodeNum;
use crate::node::NodeError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Fault {
    /// `kill -9` of a node that does not lead the topic; restarted at heal.
    KillFollower,
    /// `kill -9` of the leader; restarted at heal.
    KillLeader,
    /// `kill -9` of a majority, the leader among them; restarted at heal.
    KillMajority,
    /// SIGSTOP of the leader; SIGCONT at heal.
    PauseLeader,
    /// SIGSTOP of a follower; SIGCONT at heal.
    PauseFollower,
    /// The leader cut off from every other node.
    IsolateLeader,
    /// The nodes shuffled and split into two halves (the smaller one a minority).
    RandomHalves,
    /// Each node linked to its two neighbours only, so with 5 nodes none sees a majority of
    /// the same others. With 3 nodes a ring keeps every link, so one link is cut instead
    /// (the leader's to one follower: a bridge through the third node).
    Ring,
    /// `kill -9` of a node, its data directory wiped, the node restarted empty.
    WipeNode,
    /// The leader's disk (its own tmpfs) made full; the space given back at heal.
    FullDiskLeader,
    /// A follower's disk made full; the space given back at heal.
    FullDiskFollower,
}

impl Fault {
    pub const ALL: [Fault; 11] = [
        Fault::KillFollower,
        Fault::KillLeader,
        Fault::KillMajority,
        Fault::PauseLeader,
        Fault::PauseFollower,
        Fault::IsolateLeader,
        Fault::RandomHalves,
        Fault::Ring,
        Fault::WipeNode,
        Fault::FullDiskLeader,
        Fault::FullDiskFollower,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Fault::KillFollower => "kill-follower",
            Fault::KillLeader => "kill-leader",
            Fault::KillMajority => "kill-majority",
            Fault::PauseLeader => "pause-leader",
            Fault::PauseFollower => "pause-follower",
            Fault::IsolateLeader => "isolate-leader",
            Fault::RandomHalves => "random-halves",
            Fault::Ring => "ring",
            Fault::WipeNode => "wipe-node",
            Fault::FullDiskLeader => "full-disk-leader",
            Fault::FullDiskFollower => "full-disk-follower",
        }
    }

    pub fn parse(name: &str) -> Option<Fault> {
        Fault::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Whether the fault takes the leader away (its time to recover is a failover).
    pub fn loses_leader(self) -> bool {
        matches!(
            self,
            Fault::KillLeader | Fault::PauseLeader | Fault::IsolateLeader | Fault::FullDiskLeader
        )
    }

    /// Whether the fault fills a node's disk (it needs the nodes on a tmpfs each).
    pub fn fills_disk(self) -> bool {
        matches!(self, Fault::FullDiskLeader | Fault::FullDiskFollower)
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Injects `fault` with `leader` as the topic's leader; returns what was done, for the log.
pub async fn inject(
    cluster: &mut Cluster,
    fault: Fault,
    leader: NodeNum,
    rng: &mut fastrand::Rng,
) -> Result<String, NodeError> {
    let n = cluster.nodes.len();
    let all: Vec<NodeNum> = (1..=n).collect();
    let followers: Vec<NodeNum> = all.iter().copied().filter(|&x| x != leader).collect();
    let follower = followers[rng.usize(..followers.len())];
    Ok(match fault {
        Fault::KillFollower => {
            cluster.node(follower).kill().await;
            format!("killed node {follower}")
        }
        Fault::KillLeader => {
            cluster.node(leader).kill().await;
            format!("killed node {leader}")
        }
        Fault::KillMajority => {
            let mut victims = vec![leader];
            let mut rest = followers.clone();
            rng.shuffle(&mut rest);
            victims.extend(rest.into_iter().take(n / 2));
            for &v in &victims {
                cluster.node(v).kill().await;
            }
            format!("killed nodes {victims:?}")
        }
        Fault::PauseLeader => {
            cluster.node(leader).pause(true).await;
            format!("paused node {leader}")
        }
        Fault::PauseFollower => {
            cluster.node(follower).pause(true).await;
            format!("paused node {follower}")
        }
        Fault::IsolateLeader => {
            let cuts: Vec<_> = followers.iter().map(|&f| (leader, f)).collect();
            cluster.links.cut(&cuts);
            format!("isolated node {leader}")
        }
        Fault::RandomHalves => {
            let mut shuffled = all.clone();
            rng.shuffle(&mut shuffled);
            let (a, b) = shuffled.split_at(n / 2);
            let cuts: Vec<_> = a
                .iter()
                .flat_map(|&x| b.iter().map(move |&y| (x, y)))
                .collect();
            cluster.links.cut(&cuts);
            format!("split {a:?} from {b:?}")
        }
        Fault::Ring => {
            let cuts = if n >= 5 {
                let mut order = all.clone();
                rng.shuffle(&mut order);
                ring_cuts(&order)
            } else {
                vec![(leader, follower)]
            };
            cluster.links.cut(&cuts);
            format!("cut links {cuts:?}")
        }
        Fault::WipeNode => {
            let victim = all[rng.usize(..n)];
            cluster.node(victim).kill().await;
            cluster.node(victim).wipe()?;
            cluster.start(victim).await?;
            format!("wiped node {victim} and restarted it empty")
        }
        Fault::FullDiskLeader => cluster.fill_disk(leader)?,
        Fault::FullDiskFollower => cluster.fill_disk(follower)?,
    })
}

/// The links to cut so that each node of `order` keeps only its two neighbours (in a circle).
fn ring_cuts(order: &[NodeNum]) -> Vec<(NodeNum, NodeNum)> {
    let n = order.len();
    let mut cuts = Vec::new();
    for i in 0..n {
        for j in i + 1..n {
            let d = j - i;
            if d != 1 && d != n - 1 {
                cuts.push((order[i], order[j]));
            }
        }
    }
    cuts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_a_ring_of_five_no_node_sees_a_majority_of_the_same_others() {
        let order = [3, 1, 5, 2, 4];
        let cuts = ring_cuts(&order);
        assert_eq!(cuts.len(), 5, "10 links, 5 kept");
        let sees = |x: NodeNum| -> Vec<NodeNum> {
            (1..=5)
                .filter(|&y| y != x && !cuts.contains(&(x, y)) && !cuts.contains(&(y, x)))
                .collect()
        };
        for x in 1..=5 {
            assert_eq!(sees(x).len(), 2, "node {x} sees two neighbours");
        }
        // Node 3 and its neighbour 1 see different third nodes.
        assert_eq!(sees(3), vec![1, 4]);
        assert_eq!(sees(1), vec![3, 5]);
    }

    #[test]
    fn names_round_trip() {
        for f in Fault::ALL {
            assert_eq!(Fault::parse(f.name()), Some(f));
        }
        assert_eq!(Fault::parse("nope"), None);
    }
}
