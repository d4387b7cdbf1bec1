use nsqr_replication::{ChannelOp, Command, Committed};

use crate::harness::{batch, eventually, Cluster};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acknowledged_proposal_is_applied_on_a_majority() {
    for fsync in [false, true] {
        let cluster = Cluster::start(3, |g| g.fsync = fsync).await;
        let create = Command::Channels(vec![ChannelOp::Create {
            channel: "ch".into(),
        }]);
        cluster.propose(create).await;
        let publish = batch(1, 16);
        let index = cluster.propose(publish.clone()).await;

        eventually("the batch applied on a majority", || {
            cluster
                .nodes
                .iter()
                .filter(|n| n.last_applied() >= index)
                .count()
                >= 2
        })
        .await;
        eventually("the batch applied on every node", || {
            cluster.nodes.iter().all(|n| n.last_applied() >= index)
        })
        .await;
        for node in &cluster.nodes {
            let state = node.state().expect("running");
            let pending = state.pending("ch").map(|p| p.len());
            assert_eq!(pending, Some(16), "node {} fsync={fsync}", node.id);
            let entry = Committed::Entry {
                index,
                command: publish.clone(),
            };
            eventually("the batch handed to the broker", || {
                node.committed.lock().expect("lock").contains(&entry)
            })
            .await;
        }
        cluster.shutdown().await;
    }
}
