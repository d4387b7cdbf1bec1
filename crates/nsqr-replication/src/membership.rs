//! Who is in the cluster: `--cluster-node-id`, `--cluster-address` and
//! `--cluster-peers=<n>@<host:port>,...` (every member, itself included), and where a group's
//! leader should be.
//!
//! Placement is rendezvous hashing of the group's name over the node ids: every node computes
//! the same preferred leader for a group without talking to the others, the groups spread
//! evenly, and losing a node moves only its own groups. A group keeps its voters while they
//! stay peers: one dropped from `--cluster-peers` is replaced by the next peer in the group's
//! order ([`Peers::voters_for`]), so changing the peers moves only the groups that must move.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;

use crate::error::MembershipError;
use crate::network::ClusterTls;
use crate::types::NodeId;

/// Every member of the cluster, by node id, with its replication address (`host:port`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peers(BTreeMap<NodeId, String>);

impl Peers {
    /// The peers of a map of node id to address.
    pub fn new(peers: BTreeMap<NodeId, String>) -> Result<Self, MembershipError> {
        if peers.is_empty() {
            return Err(MembershipError::NoPeers);
        }
        Ok(Peers(peers))
    }

    /// The address of a member.
    pub fn address(&self, id: NodeId) -> Option<&str> {
        self.0.get(&id).map(String::as_str)
    }

    /// True if `id` is a member.
    pub fn contains(&self, id: NodeId) -> bool {
        self.0.contains_key(&id)
    }

    /// The members, by id.
    pub fn iter(&self) -> impl Iterator<Item = (NodeId, &str)> {
        self.0.iter().map(|(id, addr)| (*id, addr.as_str()))
    }

    /// How many members.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Never true for parsed peers; here for completeness of `len`.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The member that should lead `group`: the highest rendezvous hash of (group, node id).
    pub fn preferred_leader(&self, group: &str) -> NodeId {
        self.ranked(group).first().copied().unwrap_or_default()
    }

    /// Every member by decreasing rendezvous hash of (group, node id): the preferred leader
    /// first. A group of `n` replicas has the first `n` as its voters.
    pub fn ranked(&self, group: &str) -> Vec<NodeId> {
        let mut ids: Vec<NodeId> = self.0.keys().copied().collect();
        ids.sort_by_key(|id| std::cmp::Reverse(rendezvous(group, *id)));
        ids
    }

    /// The voters `group` should have with `replicas` of them, given its voters `now`: those
    /// still peers, completed (or cut) to `replicas` in the group's rendezvous order. A new
    /// group (`now` empty) gets the first `replicas` peers.
    pub fn voters_for(
        &self,
        group: &str,
        replicas: usize,
        now: &BTreeSet<NodeId>,
    ) -> BTreeSet<NodeId> {
        let ranked = self.ranked(group);
        let kept = ranked.iter().filter(|id| now.contains(id));
        let others = ranked.iter().filter(|id| !now.contains(id));
        kept.chain(others).take(replicas).copied().collect()
    }
}

/// FNV-1a over the group name and the node id: stable across processes and versions.
fn rendezvous(group: &str, id: NodeId) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in group.bytes().chain(id.to_le_bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    // FNV's low bits mix poorly for short inputs: finish with a 64-bit avalanche.
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xff51_afd7_ed55_8ccd);
    hash ^ (hash >> 33)
}

impl FromStr for Peers {
    type Err = MembershipError;

    /// `--cluster-peers`' syntax: `<node-id>@<host:port>` separated by commas.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let mut peers = BTreeMap::new();
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let bad = || MembershipError::BadPeer(item.to_owned());
            let (id, address) = item.split_once('@').ok_or_else(bad)?;
            let id: NodeId = id.parse().map_err(|_| bad())?;
            let (host, port) = address.rsplit_once(':').ok_or_else(bad)?;
            if host.is_empty() || port.parse::<u16>().is_err() {
                return Err(bad());
            }
            if peers.insert(id, address.to_owned()).is_some() {
                return Err(MembershipError::DuplicatePeer(id));
            }
        }
        Peers::new(peers)
    }
}

impl fmt::Display for Peers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (id, address)) in self.iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            write!(f, "{sep}{id}@{address}")?;
        }
        Ok(())
    }
}

/// A node's cluster settings.
#[derive(Clone)]
pub struct ClusterConfig {
    /// `--cluster-node-id`.
    pub node_id: NodeId,
    /// `--cluster-address`: where this node's replication listener binds.
    pub address: String,
    /// `--cluster-peers`: every member, this node included.
    pub peers: Peers,
    /// The secret every member shares; a connection that cannot prove it knows it is refused.
    pub secret: Vec<u8>,
    /// Mutual TLS between the nodes, when they have certificates; plain TCP otherwise.
    pub tls: Option<ClusterTls>,
}

impl ClusterConfig {
    /// Checks that the node is one of the peers and that there is a secret.
    pub fn new(
        node_id: NodeId,
        address: String,
        peers: Peers,
        secret: Vec<u8>,
    ) -> Result<Self, MembershipError> {
        if !peers.contains(node_id) {
            return Err(MembershipError::SelfNotAPeer(node_id));
        }
        if secret.is_empty() {
            return Err(MembershipError::EmptySecret);
        }
        Ok(ClusterConfig {
            node_id,
            address,
            peers,
            secret,
            tls: None,
        })
    }

    /// The same settings, with every cluster connection in mutual TLS.
    pub fn with_tls(mut self, tls: ClusterTls) -> Self {
        self.tls = Some(tls);
        self
    }
}

impl fmt::Debug for ClusterConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClusterConfig")
            .field("node_id", &self.node_id)
            .field("address", &self.address)
            .field("peers", &self.peers)
            .field("secret", &"<hidden>")
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_parse_and_print() {
        let text = "1@127.0.0.1:4250,2@node-b:4250,3@[::1]:4251";
        let peers: Peers = text.parse().expect("valid peers");
        assert_eq!(peers.len(), 3);
        assert_eq!(peers.address(3), Some("[::1]:4251"));
        assert_eq!(peers.to_string(), text);
    }

    #[test]
    fn bad_peers_are_refused() {
        for (text, want) in [
            ("", MembershipError::NoPeers),
            ("1@host", MembershipError::BadPeer("1@host".into())),
            ("x@host:1", MembershipError::BadPeer("x@host:1".into())),
            (
                "1@host:99999",
                MembershipError::BadPeer("1@host:99999".into()),
            ),
            ("1@:80", MembershipError::BadPeer("1@:80".into())),
            ("1@a:1,1@b:2", MembershipError::DuplicatePeer(1)),
        ] {
            assert_eq!(text.parse::<Peers>(), Err(want), "{text:?}");
        }
    }

    #[test]
    fn a_node_must_be_a_peer_and_have_a_secret() {
        let peers: Peers = "1@a:1,2@b:2".parse().expect("valid peers");
        let err = ClusterConfig::new(3, "c:3".into(), peers.clone(), b"s".to_vec()).err();
        assert_eq!(err, Some(MembershipError::SelfNotAPeer(3)));
        let err = ClusterConfig::new(1, "a:1".into(), peers, Vec::new()).err();
        assert_eq!(err, Some(MembershipError::EmptySecret));
    }

    #[test]
    fn voters_stay_while_they_are_peers() {
        let four: Peers = "1@a:1,2@b:2,3@c:3,4@d:4".parse().expect("valid peers");
        let ranked = four.ranked("t");
        let first3: BTreeSet<NodeId> = ranked[..3].iter().copied().collect();
        assert_eq!(four.voters_for("t", 3, &BTreeSet::new()), first3);
        // Voters that are still peers stay, even where the order now puts another first.
        let old: BTreeSet<NodeId> = ranked[1..].iter().copied().collect();
        assert_eq!(four.voters_for("t", 3, &old), old);
        // A voter no longer a peer is replaced by the next peer in the order.
        let gone = ranked[1];
        let three = Peers::new(
            four.iter()
                .filter(|(id, _)| *id != gone)
                .map(|(id, a)| (id, a.to_owned()))
                .collect(),
        )
        .expect("peers");
        let want: BTreeSet<NodeId> = [ranked[0], ranked[2], ranked[3]].into_iter().collect();
        assert_eq!(three.voters_for("t", 3, &old), want);
        // More replicas take the next peers; fewer keep the first voters in the order.
        let one: BTreeSet<NodeId> = [ranked[3]].into_iter().collect();
        let two: BTreeSet<NodeId> = [ranked[3], ranked[0]].into_iter().collect();
        assert_eq!(four.voters_for("t", 2, &one), two);
        let cut: BTreeSet<NodeId> = [ranked[1]].into_iter().collect();
        assert_eq!(four.voters_for("t", 1, &old), cut);
    }

    #[test]
    fn leaders_spread_over_the_nodes() {
        let peers: Peers = "1@a:1,2@b:2,3@c:3".parse().expect("valid peers");
        let mut counts = BTreeMap::new();
        for n in 0..300 {
            *counts
                .entry(peers.preferred_leader(&format!("topic-{n}")))
                .or_insert(0) += 1;
        }
        assert_eq!(counts.len(), 3, "{counts:?}");
        assert!(counts.values().all(|c| *c >= 60), "{counts:?}");
        assert_eq!(peers.preferred_leader("t"), peers.preferred_leader("t"));
        let ranked = peers.ranked("t");
        assert_eq!(ranked.len(), 3);
        assert_eq!(ranked[0], peers.preferred_leader("t"));
    }
}
