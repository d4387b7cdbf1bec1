//! What a node serves of a replicated topic around a takeover (`docs/replication.md`, "Taking
//! over"): three nsqrd processes with `--mem-queue-size=10`, so a channel's backlog is mostly
//! in its disk queue.
//!
//! - A node that does not lead delivers nothing of what its broker kept from an earlier run
//!   (its channels' disk queues): here its group cannot open at all, so nothing ever empties
//!   that copy, and a consumer there must still get nothing.
//! - An ordered channel whose backlog is on disk keeps publish order across a takeover: the old
//!   leader restarted with its disk queue, a consumer subscribed there at once, and messages
//!   published after the takeover, first delivered after every earlier one.
//! - A channel made on the next leader before it takes over (a consumer's SUB, an HTTP
//!   `/channel/create`) stays through the takeover and is replicated.

use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::cluster_channels::wait_committed;
use crate::cluster_replicated::{
    consume_from_leader, start_cluster, start_cluster_with, wait_for_leader, Cluster, PATIENCE,
};
use crate::common::*;

/// Publishes `bodies` in one MPUB to the leader of `topic` and waits until its channel
/// `channel` holds `depth` messages there (the overflow written to its disk queue).
fn publish_backlog(cluster: &Cluster, leader: usize, topic: &str, channel: &str, depth: i64) {
    let s = cluster.nodes[leader - 1].as_ref().expect("leader");
    let bodies: Vec<String> = (0..depth - 1).map(|i| format!("a-{i:03}")).collect();
    let refs: Vec<&[u8]> = bodies.iter().map(|b| b.as_bytes()).collect();
    let mut p = s.connect();
    p.cmd_body(&format!("MPUB {topic}"), &mpub_body(&refs));
    p.expect_ok();
    let queued = wait_until(PATIENCE, || {
        s.channel_stat(topic, channel, "depth") == Some(depth)
    });
    assert!(queued, "{topic}/{channel} never held {depth} messages");
}

/// Creates channel `channel` of `topic` on `s` over HTTP.
pub(crate) fn create_channel(s: &Server, topic: &str, channel: &str) {
    let r = s.post(
        &format!("/channel/create?topic={topic}&channel={channel}"),
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
}

/// Makes the group directory `dir` a plain file, so the group cannot open there.
fn break_group_dir(dir: &Path) {
    std::fs::remove_dir_all(dir).expect("remove the group directory");
    std::fs::write(dir, b"not a directory").expect("a file in its place");
}

#[test]
fn a_node_that_does_not_lead_delivers_nothing_its_broker_kept() {
    let mut cluster = start_cluster_with(&["--mem-queue-size=10"]);
    let leader = cluster.replicate("kept");
    create_channel(
        cluster.nodes[leader - 1].as_ref().expect("leader"),
        "kept",
        "c",
    );
    // "first" (the topic's backlog, taken by its first channel) and 299 more.
    publish_backlog(&cluster, leader, "kept", "c", 300);

    let dir = cluster.nodes[leader - 1]
        .take()
        .expect("leader")
        .kill_keep();
    break_group_dir(&dir.join("cluster").join("kept"));
    cluster.restart(leader, dir);
    let s = cluster.nodes[leader - 1].as_mut().expect("restarted");
    let startup = s.startup_lines();
    let s = cluster.nodes[leader - 1].as_ref().expect("restarted");
    let refusal = |l: &String| l.contains("ERROR: cluster: topic kept:");
    let refused =
        startup.iter().any(refusal) || wait_until(PATIENCE, || s.log_lines().iter().any(refusal));
    assert!(refused, "the group opened anyway");

    let mut c = s.connect();
    c.sub("kept", "c");
    c.rdy(100);
    if let Some(m) = c.message_within(Duration::from_secs(3)) {
        panic!(
            "a node that does not lead delivered {:?} from its old copy",
            String::from_utf8_lossy(&m.body)
        );
    }
}

/// The first delivery of each body, in the order of `delivered`.
fn first_deliveries(delivered: &[String]) -> Vec<String> {
    let mut seen = HashSet::new();
    delivered
        .iter()
        .filter(|b| seen.insert(b.as_str()))
        .cloned()
        .collect()
}

#[test]
fn an_ordered_channel_keeps_publish_order_across_a_takeover_of_its_disk_backlog() {
    let mut cluster = start_cluster_with(&["--mem-queue-size=10"]);
    let leader = cluster.replicate("ord");
    let s = cluster.nodes[leader - 1].as_ref().expect("leader");
    create_channel(s, "ord", "c");
    let r = s.post(
        "/channel/config?topic=ord&channel=c",
        br#"{"ordered":true}"#,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    publish_backlog(&cluster, leader, "ord", "c", 300);
    wait_committed(&cluster, leader, "ord", "marker");

    // The leader is killed with most of the backlog in its channel's disk queue, another
    // node takes over, and the old one comes back as a follower with that disk queue, a
    // consumer subscribing there as soon as it listens.
    let dir = cluster.nodes[leader - 1]
        .take()
        .expect("leader")
        .kill_keep();
    wait_for_leader(cluster.live(), "ord");
    cluster.restart(leader, dir);
    let mut delivered = Vec::new();
    {
        let s = cluster.nodes[leader - 1].as_ref().expect("restarted");
        let mut c = s.connect();
        c.sub("ord", "c");
        c.rdy(100);
        while let Some(m) = c.message_within(Duration::from_secs(2)) {
            delivered.push(String::from_utf8_lossy(&m.body).into_owned());
        }
    }

    let after: Vec<String> = (0..10).map(|i| format!("b-{i:03}")).collect();
    for body in &after {
        cluster.publish_to_leader("ord", body);
    }
    let mut publish_order = vec!["first".to_string()];
    publish_order.extend((0..299).map(|i| format!("a-{i:03}")));
    publish_order.extend(after);
    let want: HashSet<String> = publish_order.iter().cloned().collect();
    let live: Vec<(usize, &Server)> = cluster.live().collect();
    delivered.extend(consume_from_leader(&live, "ord", "c", &want));
    let firsts = first_deliveries(&delivered);
    let position = |b: &String| publish_order.iter().position(|p| p == b);
    let late: Vec<&String> = firsts
        .windows(2)
        .filter(|w| position(&w[1]) < position(&w[0]))
        .map(|w| &w[1])
        .collect();
    assert!(
        late.is_empty(),
        "first delivered after a later message: {late:?}"
    );
}

#[test]
fn a_channel_made_on_the_next_leader_before_it_takes_over_stays_and_is_replicated() {
    let mut cluster = start_cluster();
    let leader = cluster.replicate("made");
    create_channel(
        cluster.nodes[leader - 1].as_ref().expect("leader"),
        "made",
        "c",
    );
    wait_committed(&cluster, leader, "made", "marker");

    // Whichever follower takes over has a consumer's channel and an HTTP-made one that the
    // replicated state lacks.
    let mut consumers = Vec::new();
    for (n, f) in cluster.live().filter(|(n, _)| *n != leader) {
        let mut c = f.connect();
        c.sub("made", "sub");
        c.rdy(10);
        create_channel(f, "made", "http");
        consumers.push((n, c));
    }
    let dir = cluster.nodes[leader - 1]
        .take()
        .expect("leader")
        .kill_keep();
    cluster.publish_to_leader("made", "after");
    let (new_leader, _) = wait_for_leader(cluster.live(), "made");

    // Its consumer is still subscribed and gets what was published once it led.
    let (_, c) = consumers
        .iter_mut()
        .find(|(n, _)| *n == new_leader)
        .expect("a consumer on the new leader");
    let m = c
        .message_within(PATIENCE)
        .expect("a delivery on the kept channel");
    assert_eq!(m.body, b"after");

    // Replicated: the old leader, restarted, creates both as it follows the state.
    cluster.restart(leader, dir);
    let s = cluster.nodes[leader - 1].as_ref().expect("restarted");
    let deadline = Instant::now() + PATIENCE;
    for channel in ["sub", "http"] {
        while s.channel_stats("made", channel).is_none() {
            assert!(
                Instant::now() < deadline,
                "channel {channel} not replicated to node {leader}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    let leader_now = cluster.leader_of("made");
    let l = cluster.nodes[leader_now - 1].as_ref().expect("leader");
    for channel in ["c", "sub", "http"] {
        assert!(
            l.channel_stats("made", channel).is_some(),
            "node {leader_now} leads without channel {channel}"
        );
    }
}
