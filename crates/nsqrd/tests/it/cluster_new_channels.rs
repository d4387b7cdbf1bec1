//! What a channel made on a replicated topic starts with, on the leader's broker and in the
//! replicated state alike (`docs/replication.md`, "Taking over"): three nsqrd processes, a
//! channel made at the wrong moment, the leader SIGKILLed, and every message that channel
//! had unfinished on the old leader delivered again by the new one.
//!
//! - A channel made on the leader while a publish is being committed: the publish is proposed
//!   first, so the state gives it to the channels that existed then; the leader's broker must
//!   not give it to the new channel either. The followers are stopped (SIGSTOP) so the publish
//!   and the channel's creation are both proposed before either commits.
//! - Two channels made on the next leader while it takes over a topic without channels: only
//!   the first gets the topic's backlog, in the broker as in the state, also the part of it the
//!   broker reads back from its disk queue (`--mem-queue-size=10`) once both receive.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use crate::cluster_channels::{signal, stop_all_but_the_leader, wait_committed};
use crate::cluster_replicated::{
    consume_from_leader, group, start_cluster, start_cluster_with, wait_for_leader, PATIENCE,
};
use crate::cluster_takeover::create_channel;
use crate::common::*;

/// The index of the last entry of `topic`'s log on `s`.
fn last_log_index(s: &Server, topic: &str) -> u64 {
    group(s, topic)
        .and_then(|g| g["last_log_index"].as_u64())
        .unwrap_or(0)
}

/// Waits until `topic`'s log on `s` has an entry after `index`; returns the new last index.
fn wait_appended(s: &Server, topic: &str, index: u64) -> u64 {
    let appended = wait_until(PATIENCE, || last_log_index(s, topic) > index);
    assert!(
        appended,
        "nothing appended to {topic}'s log after entry {index}"
    );
    last_log_index(s, topic)
}

/// Subscribes to `topic`/`channel` on `s` and reads, without FINning, until `last` arrives;
/// returns every body delivered (they stay unfinished while the connection lives).
fn unfinished_until(s: &Server, topic: &str, channel: &str, last: &str) -> (Conn, HashSet<String>) {
    let mut c = s.connect();
    c.sub(topic, channel);
    c.rdy(100);
    let mut got = HashSet::new();
    let deadline = Instant::now() + PATIENCE;
    while !got.contains(last) {
        assert!(
            Instant::now() < deadline,
            "{topic}/{channel} never delivered {last}; got {got:?}"
        );
        if let Some(m) = c.message_within(Duration::from_secs(1)) {
            got.insert(String::from_utf8_lossy(&m.body).into_owned());
        }
    }
    (c, got)
}

/// Fails with what `old` (a leader) delivered unfinished and `new` (the next) never did.
fn assert_none_lost(old: &HashSet<String>, new: &HashSet<String>) {
    let lost: Vec<&String> = old.difference(new).collect();
    assert!(
        lost.is_empty(),
        "delivered unfinished by the old leader, never by the new one: {lost:?}"
    );
}

#[test]
fn a_channel_made_while_a_publish_commits_starts_alike_in_broker_and_state() {
    let mut cluster = start_cluster();
    let leader = cluster.replicate("racing");
    let s = cluster.nodes[leader - 1].as_ref().expect("leader");
    create_channel(s, "racing", "a");
    wait_committed(&cluster, leader, "racing", "marker");

    // Nothing commits while the followers are stopped: the publish is proposed, then the
    // channel's creation, and both commit in that order once they run again.
    let (leader, stopped) = stop_all_but_the_leader(&cluster, "racing", "a", 1);
    let s = cluster.nodes[leader - 1].as_ref().expect("leader");
    let before = last_log_index(s, "racing");
    let mut p = s.connect();
    p.set_timeout(PATIENCE);
    p.cmd_body("PUB racing", b"during");
    let published = wait_appended(s, "racing", before);
    create_channel(s, "racing", "late");
    wait_appended(s, "racing", published);
    stopped.iter().for_each(|f| signal(f, "CONT"));
    p.expect_ok();

    // What the leader's channel holds, left unfinished.
    let leader = cluster.publish_to_leader("racing", "next");
    let s = cluster.nodes[leader - 1].as_ref().expect("leader");
    let (c, on_old) = unfinished_until(s, "racing", "late", "next");
    drop(c);

    cluster.nodes[leader - 1] = None;
    let new_leader = cluster.publish_to_leader("racing", "after");
    assert_ne!(new_leader, leader);
    let s = cluster.nodes[new_leader - 1].as_ref().expect("new leader");
    let (_c, on_new) = unfinished_until(s, "racing", "late", "after");
    assert_none_lost(&on_old, &on_new);

    // The channels that existed when it was published have it.
    let want: HashSet<String> = ["first", "during", "next", "after"]
        .into_iter()
        .map(String::from)
        .collect();
    let live: Vec<(usize, &Server)> = cluster.live().collect();
    consume_from_leader(&live, "racing", "a", &want);
}

#[test]
fn of_two_channels_made_while_taking_over_only_the_first_gets_the_backlog() {
    let mut cluster = start_cluster_with(&["--mem-queue-size=10"]);
    let leader = cluster.replicate("orphan");
    let bodies: Vec<String> = (0..40).map(|i| format!("b-{i:02}")).collect();
    let refs: Vec<&[u8]> = bodies.iter().map(|b| b.as_bytes()).collect();
    let mut p = cluster.nodes[leader - 1]
        .as_ref()
        .expect("leader")
        .connect();
    p.set_timeout(PATIENCE);
    p.cmd_body("MPUB orphan", &mpub_body(&refs));
    p.expect_ok();
    let mut backlog: HashSet<String> = bodies.into_iter().collect();
    backlog.insert("first".to_string());

    // Whichever follower takes over has both channels, made before it leads.
    for (_, f) in cluster.live().filter(|(n, _)| *n != leader) {
        create_channel(f, "orphan", "x");
        create_channel(f, "orphan", "y");
    }
    let dir = cluster.nodes[leader - 1]
        .take()
        .expect("leader")
        .kill_keep();
    let (second, _) = wait_for_leader(cluster.live(), "orphan");
    let s = cluster.nodes[second - 1].as_ref().expect("second leader");
    let took = wait_until(PATIENCE, || {
        s.channel_stat("orphan", "x", "depth") == Some(backlog.len() as i64)
    });
    assert!(took, "channel x never took the backlog on node {second}");
    let second = cluster.publish_to_leader("orphan", "next");
    let s = cluster.nodes[second - 1].as_ref().expect("second leader");
    let (c, on_second) = unfinished_until(s, "orphan", "y", "next");
    drop(c);

    // A third leader: the first node back, the second killed.
    cluster.restart(leader, dir);
    cluster.nodes[second - 1] = None;
    let third = cluster.publish_to_leader("orphan", "after");
    assert_ne!(third, second);
    let s = cluster.nodes[third - 1].as_ref().expect("third leader");
    let (_c, on_third) = unfinished_until(s, "orphan", "y", "after");
    assert_none_lost(&on_second, &on_third);

    let mut want = backlog;
    want.extend(["next".to_string(), "after".to_string()]);
    let live: Vec<(usize, &Server)> = cluster.live().collect();
    consume_from_leader(&live, "orphan", "x", &want);
}
