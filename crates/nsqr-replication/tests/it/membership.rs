use std::collections::BTreeSet;

use nsqr_replication::{ChannelOp, Command, Founding, MessageId, NodeId};

use crate::harness::{batch, eventually, message, Cluster};

fn pending(cluster: &Cluster, id: NodeId) -> Vec<MessageId> {
    let state = cluster.node(id).state().expect("running");
    let pending = state.pending("ch").unwrap_or_default();
    pending.into_iter().map(|(id, _)| id).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_is_added_and_another_removed() {
    // Four peers configured, three of them voters; node 4 joins, node 1 leaves.
    let mut cluster = Cluster::start_some(4, 3, |_| {}).await;
    let create = Command::Channels(vec![ChannelOp::Create {
        channel: "ch".into(),
    }]);
    cluster.propose(create).await;
    cluster.propose(batch(0, 10)).await;

    cluster.restart(4).await;
    let leader = cluster.leader().await;
    let log = cluster.node(leader).log().expect("leader runs");
    let address = cluster.node(4).address.to_string();
    log.add_learner(4, &address).await.expect("add node 4");
    let voters: BTreeSet<NodeId> = [2, 3, 4].into_iter().collect();
    log.change_voters(voters.clone(), false)
        .await
        .expect("change voters");

    cluster.stop(1).await;
    let index = cluster.propose(batch(10, 10)).await;
    for id in [2, 3, 4] {
        eventually("the new voters to apply", || {
            cluster.node(id).last_applied() >= index
        })
        .await;
        let status = cluster.node(id).log().map(|l| l.status().voters);
        assert_eq!(status, Some(voters.clone()), "node {id}");
        let want: Vec<MessageId> = (0..20).map(|n| message(n).id).collect();
        assert_eq!(pending(&cluster, id), want, "node {id}");
    }
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_joining_node_does_not_found_a_group_that_exists() {
    // Nodes 1-3 hold the group; node 4 starts empty and asks before founding it.
    let mut cluster = Cluster::start_some(4, 3, |_| {}).await;
    cluster.propose(batch(0, 1)).await;
    cluster.restart(4).await;
    let log = cluster.node(4).log().expect("node 4 runs");
    let voters: BTreeSet<NodeId> = [4, 1, 2].into_iter().collect();
    assert_eq!(log.found(voters, 3).await.expect("asked"), Founding::Exists);
    assert!(log.status().voters.is_empty(), "node 4 founded a group");
    // The group goes on with its own voters.
    cluster.propose(batch(1, 1)).await;
    let voters = cluster.node(1).log().map(|l| l.status().voters);
    assert_eq!(voters, Some([1, 2, 3].into_iter().collect()));
    cluster.shutdown().await;
}
