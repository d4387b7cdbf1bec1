//! A proposal a leader made just before it was cut off, whose place in the log a snapshot from
//! the next leader then covered: openraft 0.9 keeps its answer for an index the node never
//! applies, so `propose` must answer it itself (`docs/replication.md`, "Channel state").

use nsqr_replication::{NodeId, ProposeError};

use crate::harness::{batch, eventually, message, Cluster, PATIENCE};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proposal_a_snapshot_replaced_is_answered() {
    let mut cluster = Cluster::start(3, |g| g.snapshot_every = 10).await;
    cluster.propose(batch(0, 1)).await;
    let old = cluster.leader().await;
    let others: Vec<NodeId> = (1..=3).filter(|i| *i != old).collect();
    for id in &others {
        cluster.stop(*id).await;
    }

    // The leader, alone, appends the proposal and cannot commit it.
    let log = cluster.node(old).shared_log().expect("running");
    let before = log.status().last_log_index;
    let stranded = tokio::spawn(async move { log.propose(batch(1000, 1)).await });
    let appended = || {
        let status = cluster.node(old).log().map(|l| l.status());
        status.and_then(|s| s.last_log_index)
    };
    eventually("the leader to append the proposal", || appended() > before).await;
    let appended = appended().unwrap_or(0);

    // The others, cut off from it by another secret, elect a leader and commit far past it.
    // The follower among them purges its log behind its snapshots (openraft purges 256
    // entries at a time; a leader would keep what the old one may still need).
    for id in &others {
        cluster.restart_with_secret(*id, b"another secret").await;
    }
    let mut n = 0;
    let purged = loop {
        cluster.propose_among(&others, batch(10 + n, 1)).await;
        n += 1;
        let leader = cluster.leader_among(&others).await;
        let follower = others.iter().copied().find(|id| *id != leader);
        let follower = follower.expect("two others");
        let snapshot = cluster
            .node(follower)
            .log()
            .and_then(|l| l.status().snapshot);
        if snapshot.is_some_and(|s| s > appended + 300) {
            break (leader, follower);
        }
        assert!(
            n < 1000,
            "no snapshot past entry {appended} after {n} proposals"
        );
    };

    // The partition heals towards that follower alone: it leads, and the old leader can only
    // be sent its snapshot.
    let (leader, follower) = purged;
    cluster.stop(leader).await;
    cluster.stop(follower).await;
    cluster.restart(follower).await;
    eventually("the old leader to install a snapshot", || {
        cluster.node(old).restored()
    })
    .await;
    let answer = tokio::time::timeout(PATIENCE, stranded)
        .await
        .expect("the stranded proposal is answered")
        .expect("the proposing task");
    assert_eq!(answer, Err(ProposeError::Superseded));
    let state = cluster.node(old).state().expect("running");
    assert!(
        !state.ids.contains_key(&message(1000).id),
        "never committed"
    );
    cluster.restart(leader).await;
    cluster.shutdown().await;
}
