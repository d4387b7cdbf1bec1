use std::collections::BTreeSet;

use nsqr_replication::{ChannelOp, Command, MessageId, NodeId};

use crate::harness::{batch, eventually, message, Cluster};

fn ids(first: u64, n: u64) -> BTreeSet<MessageId> {
    (first..first + n).map(|i| message(i).id).collect()
}

fn pending_ids(cluster: &Cluster, id: NodeId) -> BTreeSet<MessageId> {
    let state = cluster.node(id).state().expect("running");
    let pending = state.pending("ch").unwrap_or_default();
    pending.into_iter().map(|(id, _)| id).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_the_leader_loses_nothing_acknowledged() {
    let mut cluster = Cluster::start(3, |_| {}).await;
    let create = Command::Channels(vec![ChannelOp::Create {
        channel: "ch".into(),
    }]);
    cluster.propose(create).await;
    let mut acked = BTreeSet::new();
    for b in 0..20 {
        cluster.propose(batch(b * 10, 10)).await;
        acked.extend(ids(b * 10, 10));
    }

    let old = cluster.leader().await;
    cluster.stop(old).await;
    let new = cluster.leader().await;
    assert_ne!(new, old, "a survivor leads");
    let survivors: Vec<NodeId> = (1..=3).filter(|i| *i != old).collect();

    // Every acknowledged message is on every survivor once it applied what it has.
    let last = cluster
        .node(new)
        .log()
        .and_then(|l| l.status().last_log_index);
    let last = last.expect("the new leader has a log");
    eventually("the survivors to apply their log", || {
        survivors
            .iter()
            .all(|i| cluster.node(*i).last_applied() >= last)
    })
    .await;
    for id in &survivors {
        let held = pending_ids(&cluster, *id);
        let missing: Vec<_> = acked.difference(&held).collect();
        assert!(
            missing.is_empty(),
            "node {id} lost {} acknowledged messages",
            missing.len()
        );
    }

    // The new leader takes proposals, and the old one catches up from its own log and the
    // leader's once it is back.
    cluster.propose(batch(1000, 5)).await;
    acked.extend(ids(1000, 5));
    let finish = Command::Channels(vec![ChannelOp::Finish {
        channel: "ch".into(),
        ids: ids(0, 10).into_iter().collect(),
    }]);
    let index = cluster.propose(finish).await;
    let expected: BTreeSet<MessageId> = acked.difference(&ids(0, 10)).copied().collect();
    cluster.restart(old).await;
    eventually("the old leader to catch up", || {
        cluster.node(old).last_applied() >= index
    })
    .await;
    for id in 1..=3 {
        eventually("every node to apply the FIN", || {
            cluster.node(id).last_applied() >= index
        })
        .await;
        assert_eq!(pending_ids(&cluster, id), expected, "node {id}");
    }
    cluster.shutdown().await;
}

/// A follower that lost its disk comes back empty while the only other survivor missed the
/// last commits: its vote would elect that survivor, which overwrites them. It takes no part
/// until the leader, back, admits it; it votes again once it caught up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_lost_its_disk_does_not_elect_a_node_that_missed_commits() {
    let mut cluster = Cluster::start(3, |_| {}).await;
    let create = Command::Channels(vec![ChannelOp::Create {
        channel: "ch".into(),
    }]);
    cluster.propose(create).await;
    cluster.propose(batch(0, 10)).await;
    let leader = cluster.leader().await;
    let mut followers = (1..=3).filter(|i| *i != leader);
    let (wiped, behind) = (
        followers.next().expect("two"),
        followers.next().expect("two"),
    );

    // `behind` misses the next commits, made by the leader and `wiped`.
    cluster.stop(behind).await;
    cluster.propose(batch(100, 10)).await;
    cluster.stop(leader).await;
    cluster.wipe(wiped).await;
    cluster.restart(behind).await;

    // Without the leader, `behind` cannot win: `wiped` abstains.
    let start = tokio::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(5) {
        let status = cluster.node(behind).log().map(|l| l.status());
        assert!(
            !status.is_some_and(|s| s.is_leader),
            "node {behind}, which missed commits, was elected with the vote of a node that lost its disk"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }

    // The leader comes back: nothing acknowledged is lost, and the wiped node catches up as a
    // learner and becomes a voter again.
    cluster.restart(leader).await;
    let index = cluster.propose(batch(200, 1)).await;
    let acked: BTreeSet<MessageId> = ids(0, 10)
        .into_iter()
        .chain(ids(100, 10))
        .chain(ids(200, 1))
        .collect();
    let now = cluster.leader().await;
    eventually("the leader to apply", || {
        cluster.node(now).last_applied() >= index
    })
    .await;
    assert_eq!(pending_ids(&cluster, now), acked, "node {now} leads");
    eventually("the wiped node to catch up", || {
        cluster.node(wiped).last_applied() >= index
    })
    .await;
    assert_eq!(pending_ids(&cluster, wiped), acked);
    let voters = cluster.node(now).log().map(|l| l.status().voters);
    assert_eq!(voters, Some((1..=3).collect()), "the voters never changed");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_far_behind_catches_up_from_a_snapshot() {
    let mut cluster = Cluster::start(3, |g| {
        g.snapshot_every = 20;
        g.fsync = true;
    })
    .await;
    cluster
        .propose(Command::Channels(vec![ChannelOp::Create {
            channel: "ch".into(),
        }]))
        .await;
    let leader = cluster.leader().await;
    let behind = (1..=3).find(|i| *i != leader).expect("a follower");
    cluster.stop(behind).await;

    let mut last = 0;
    for b in 0..120 {
        last = cluster.propose(batch(b * 4, 4)).await;
    }
    let leader = cluster.leader().await;
    eventually("the leader to snapshot and purge its log", || {
        let status = cluster.node(leader).log().map(|l| l.status());
        status.and_then(|s| s.snapshot).is_some_and(|s| s > 40)
    })
    .await;

    cluster.restart(behind).await;
    eventually("the restarted node to catch up", || {
        cluster.node(behind).last_applied() >= last
    })
    .await;
    eventually("the leader to apply everything", || {
        cluster.node(leader).last_applied() >= last
    })
    .await;
    assert_eq!(pending_ids(&cluster, behind), ids(0, 480));
    assert_eq!(cluster.node(behind).state(), cluster.node(leader).state());
    // The purged log cannot be replayed: the node was sent a snapshot.
    eventually("the broker told of the installed snapshot", || {
        cluster.node(behind).restored()
    })
    .await;
    cluster.shutdown().await;
}

/// A node restarting replays its committed entries after its snapshot into the channel the
/// broker reads, before `open_group` returns the receiver: more of them than `apply_buffer`
/// must not stop the open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_restarts_with_more_committed_entries_than_its_apply_buffer() {
    let mut cluster = Cluster::start(3, |g| g.apply_buffer = 4).await;
    let mut last = 0;
    for b in 0..40 {
        last = cluster.propose(batch(b * 2, 2)).await;
    }
    let leader = cluster.leader().await;
    let follower = (1..=3).find(|i| *i != leader).expect("a follower");
    eventually("the follower to apply every entry", || {
        cluster.node(follower).last_applied() >= last
    })
    .await;
    cluster.stop(follower).await;
    let before = cluster.node(follower).committed.lock().expect("lock").len();
    tokio::time::timeout(
        std::time::Duration::from_secs(60),
        cluster.restart(follower),
    )
    .await
    .expect("the restarted node opens its group");
    eventually("the replay to reach the broker", || {
        let after = cluster.node(follower).committed.lock().expect("lock").len();
        after >= before + 40
    })
    .await;
    cluster.shutdown().await;
}
