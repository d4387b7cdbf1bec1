use std::collections::BTreeMap;

use nsqr_replication::{probe, ClusterConfig, NetError, Peers};

use crate::harness::{batch, eventually, logs, Cluster, GROUP, SECRET};

/// The settings of a node that tries to reach node 1 as node `id`, knowing `secret`.
fn stranger(cluster: &Cluster, id: u64, secret: &[u8]) -> ClusterConfig {
    let mut peers: BTreeMap<u64, String> = cluster
        .peers
        .iter()
        .map(|(i, a)| (i, a.to_owned()))
        .collect();
    peers.entry(id).or_insert_with(|| "127.0.0.1:1".to_owned());
    let peers = Peers::new(peers).expect("peers");
    ClusterConfig::new(id, "127.0.0.1:1".into(), peers, secret.to_vec()).expect("config")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strangers_are_refused() {
    let logs = logs();
    let cluster = Cluster::start(3, |_| {}).await;
    cluster.propose(batch(0, 1)).await;
    let node1 = cluster.node(1).address.to_string();

    let member = stranger(&cluster, 2, SECRET);
    probe(&member, 1, &node1, GROUP)
        .await
        .expect("a member is accepted");

    let wrong_secret = stranger(&cluster, 2, b"guessed");
    match probe(&wrong_secret, 1, &node1, GROUP).await {
        Err(NetError::Refused(reason)) => assert!(reason.contains("secret"), "{reason}"),
        other => panic!("wrong secret: {other:?}"),
    }

    let unknown_id = stranger(&cluster, 9, SECRET);
    match probe(&unknown_id, 1, &node1, GROUP).await {
        Err(NetError::Refused(reason)) => {
            assert!(reason.contains("not a configured peer"), "{reason}")
        }
        other => panic!("unknown id: {other:?}"),
    }

    // Node 1 is not node 3: the client notices before it proves anything.
    match probe(&member, 3, &node1, GROUP).await {
        Err(NetError::BadPeer(reason)) => assert!(reason.contains("node 1"), "{reason}"),
        other => panic!("wrong node: {other:?}"),
    }

    match probe(&member, 1, &node1, "no-such-group").await {
        Err(NetError::Refused(reason)) => assert!(reason.contains("no group"), "{reason}"),
        other => panic!("unknown group: {other:?}"),
    }

    for refusal in [
        "cluster: refused a connection: node 2 does not know the cluster secret",
        "cluster: refused a connection: node 9 is not a configured peer",
    ] {
        eventually(refusal, || logs.contains(refusal)).await;
    }

    // The cluster is untouched: the same voters, and it still commits.
    let voters = cluster.node(1).log().map(|l| l.status().voters);
    assert_eq!(voters, Some([1, 2, 3].into_iter().collect()));
    cluster.propose(batch(1, 1)).await;
    cluster.shutdown().await;
}
