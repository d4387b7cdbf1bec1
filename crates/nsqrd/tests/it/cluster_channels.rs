//! Channel state of replicated topics across a failover (`docs/replication.md`, "Channel
//! state" and "Taking over"): three nsqrd processes, a topic with `replicas = 3`, consumers on
//! the leader, the leader SIGKILLed, and what the new leader delivers: exactly the unfinished
//! messages, in publish order, a requeued message at its due time, a paused channel paused, a
//! channel created on the old leader present; and lookupd listing the leader only.
//!
//! The leader proposes channel operations a pass at a time, in the order they happened, and a
//! follower creates the leader's channels as their creation commits. So once a follower lists
//! a channel created after the FINs, the FINs are committed: the tests wait for that before
//! killing the leader, which makes "no finished message is redelivered" exact.

use std::collections::{BTreeSet, HashSet};
use std::time::{Duration, Instant};

use crate::cluster_replicated::{
    consume_from_leader, group, start_cluster, start_cluster_with, wait_for_leader, Cluster,
    PATIENCE,
};
use crate::common::*;
use crate::lookupd_late_start::{free_addr, lookupd_bin, Lookupd};

/// Creates channel `marker` on the leader and waits until every other live node has it: the
/// channel operations gathered before it are committed.
pub(crate) fn wait_committed(cluster: &Cluster, leader: usize, topic: &str, marker: &str) {
    let s = cluster.nodes[leader - 1].as_ref().expect("leader");
    let r = s.post(
        &format!("/channel/create?topic={topic}&channel={marker}"),
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    for (n, f) in cluster.live().filter(|(n, _)| *n != leader) {
        let seen = wait_until(PATIENCE, || f.channel_stats(topic, marker).is_some());
        assert!(seen, "node {n} never listed channel {marker}");
    }
}

/// SIGKILLs the leader and returns the new one (found by publishing `after`).
fn fail_over(cluster: &mut Cluster, leader: usize, topic: &str) -> usize {
    cluster.nodes[leader - 1] = None;
    let new_leader = cluster.publish_to_leader(topic, "after");
    assert_ne!(new_leader, leader);
    new_leader
}

/// Consumes `topic`/`channel` on `s`, FINning everything, until every body of `want` arrived
/// and then 2 s pass without a message; returns the bodies in the order they came.
fn drain(s: &Server, topic: &str, channel: &str, want: &HashSet<String>) -> Vec<String> {
    let mut c = s.connect();
    c.sub(topic, channel);
    c.cmd("RDY 1000");
    let mut got = Vec::new();
    let deadline = Instant::now() + PATIENCE;
    loop {
        let seen: HashSet<String> = got.iter().cloned().collect();
        let wait = if want.is_subset(&seen) {
            Duration::from_secs(2)
        } else {
            Duration::from_secs(1)
        };
        match c.message_within(wait) {
            Some(m) => {
                c.fin(&m.id_str());
                got.push(String::from_utf8_lossy(&m.body).into_owned());
            }
            None if want.is_subset(&seen) => return got,
            None => assert!(
                Instant::now() < deadline,
                "missing after failover: {:?}",
                want.difference(&seen).collect::<Vec<_>>()
            ),
        }
    }
}

#[test]
fn the_new_leader_delivers_exactly_the_unfinished_messages_in_order() {
    let mut cluster = start_cluster();
    let leader = cluster.replicate("orders");
    let s = cluster.nodes[leader - 1].as_ref().expect("leader");
    let mut c = s.connect();
    c.sub("orders", "c");
    c.cmd("RDY 200");
    let bodies: Vec<String> = (0..100).map(|i| format!("m-{i:03}")).collect();
    let refs: Vec<&[u8]> = bodies.iter().map(|b| b.as_bytes()).collect();
    let mut p = s.connect();
    p.cmd_body("MPUB orders", &mpub_body(&refs));
    p.expect_ok();

    // "first" and the 100: FIN "first" and every even one, hold the odd ones in flight.
    let mut finished = HashSet::new();
    let mut unfinished = HashSet::new();
    for m in c.expect_messages(101) {
        let body = String::from_utf8_lossy(&m.body).into_owned();
        let odd = body
            .strip_prefix("m-")
            .and_then(|n| n.parse::<u32>().ok())
            .is_some_and(|n| n % 2 == 1);
        if odd {
            unfinished.insert(body);
        } else {
            c.fin(&m.id_str());
            finished.insert(body);
        }
    }
    assert_eq!((finished.len(), unfinished.len()), (51, 50));
    wait_committed(&cluster, leader, "orders", "marker");

    drop(p);
    let new_leader = fail_over(&mut cluster, leader, "orders");
    let s = cluster.nodes[new_leader - 1].as_ref().expect("new leader");
    let mut want = unfinished.clone();
    want.insert("after".to_string());
    let got = drain(s, "orders", "c", &want);
    let again: Vec<&String> = got.iter().filter(|b| finished.contains(*b)).collect();
    assert!(again.is_empty(), "finished messages redelivered: {again:?}");
    assert_eq!(got.len(), want.len(), "each once: {got:?}");
    let odd: Vec<&String> = got.iter().filter(|b| unfinished.contains(*b)).collect();
    let mut sorted = odd.clone();
    sorted.sort();
    assert_eq!(odd, sorted, "unfinished messages in publish order");
    // The marker channel, created on the old leader after the messages, has only "after".
    assert_eq!(
        drain(s, "orders", "marker", &HashSet::from(["after".into()])),
        ["after"]
    );
}

#[test]
fn requeue_delays_pauses_and_channels_survive_a_failover() {
    let mut cluster = start_cluster();
    let leader = cluster.replicate("jobs");
    let s = cluster.nodes[leader - 1].as_ref().expect("leader");
    let mut c = s.connect();
    c.sub("jobs", "c");
    c.cmd("RDY 10");
    let mut p = s.connect();
    p.publish("jobs", b"late");
    let mut requeued_at = None;
    for m in c.expect_messages(2) {
        if m.body == b"late" {
            c.req(&m.id_str(), 6000);
            requeued_at = Some(Instant::now());
        } else {
            c.fin(&m.id_str());
        }
    }
    let requeued_at = requeued_at.expect("late was delivered");
    for path in ["/channel/create", "/channel/pause"] {
        let r = s.post(&format!("{path}?topic=jobs&channel=held"), b"");
        assert_eq!(r.status, 200, "{path}: {}", r.text());
    }
    wait_committed(&cluster, leader, "jobs", "marker");

    drop(p);
    let new_leader = fail_over(&mut cluster, leader, "jobs");
    let s = cluster.nodes[new_leader - 1].as_ref().expect("new leader");
    let held = s
        .channel_stats("jobs", "held")
        .expect("channel held on the new leader");
    assert_eq!(held["paused"], true, "{held}");
    let channels: BTreeSet<String> = s.topic_stats("jobs").expect("topic")["channels"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|c| c["channel_name"].as_str())
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        channels,
        BTreeSet::from(["c", "held", "marker"].map(String::from))
    );

    // "late" is due 6 s after its REQ on the old leader, not earlier.
    let mut c = s.connect();
    c.sub("jobs", "c");
    c.cmd("RDY 10");
    let mut got = Vec::new();
    let deadline = Instant::now() + PATIENCE;
    while got.len() < 2 {
        assert!(Instant::now() < deadline, "got only {got:?}");
        if let Some(m) = c.message_within(Duration::from_secs(1)) {
            c.fin(&m.id_str());
            let body = String::from_utf8_lossy(&m.body).into_owned();
            if body == "late" {
                let waited = requeued_at.elapsed();
                assert!(
                    waited >= Duration::from_millis(5500),
                    "late after {waited:?}"
                );
            }
            got.push(body);
        }
    }
    assert_eq!(
        got,
        ["after", "late"],
        "after is due at once, late at its time"
    );
}

/// The nodes' TCP ports lookupd lists as producers of `topic`.
fn producers(lookupd: &Lookupd, topic: &str) -> BTreeSet<u64> {
    let r = http_request(
        lookupd.http,
        "GET",
        &format!("/lookup?topic={topic}"),
        &[],
        b"",
    );
    if r.status != 200 {
        return BTreeSet::new();
    }
    r.json()["producers"]
        .as_array()
        .map(|a| a.iter().filter_map(|p| p["tcp_port"].as_u64()).collect())
        .unwrap_or_default()
}

#[test]
fn lookupd_lists_the_leader_only_and_follows_a_failover() {
    let tcp = free_addr();
    let lookupd = Lookupd::start(&lookupd_bin(), tcp);
    let flag = format!("--lookupd-tcp-address={tcp}");
    let mut cluster = start_cluster_with(&[&flag]);
    let leader = cluster.replicate("events");
    let port = |n: usize| u64::from(cluster.nodes[n - 1].as_ref().expect("node").tcp.port());
    let only_leader = BTreeSet::from([port(leader)]);
    let listed = wait_until(PATIENCE, || producers(&lookupd, "events") == only_leader);
    assert!(listed, "lookupd lists {:?}", producers(&lookupd, "events"));

    let new_leader = fail_over(&mut cluster, leader, "events");
    let port = u64::from(
        cluster.nodes[new_leader - 1]
            .as_ref()
            .expect("node")
            .tcp
            .port(),
    );
    let listed = wait_until(PATIENCE, || {
        producers(&lookupd, "events") == BTreeSet::from([port])
    });
    assert!(listed, "lookupd lists {:?}", producers(&lookupd, "events"));
}

#[test]
fn nodes_restarted_after_snapshots_deliver_the_unfinished_messages_once() {
    let mut cluster = start_cluster_with(&["--cluster-snapshot-every=5"]);
    let leader = cluster.replicate("snap");
    let follower = (1..=3).find(|n| *n != leader).expect("a follower");
    let (_, follower_dir) = cluster.nodes[follower - 1]
        .take()
        .expect("follower")
        .terminate_keep();

    // 30 entries while the follower is away: the others snapshot and purge their logs.
    let s = cluster.nodes[leader - 1].as_ref().expect("leader");
    let mut c = s.connect();
    c.sub("snap", "c");
    c.cmd("RDY 100");
    let mut p = s.connect();
    for i in 0..30 {
        p.publish("snap", format!("m-{i:02}").as_bytes());
    }
    let (mut finished, mut unfinished) = (HashSet::new(), HashSet::new());
    for (i, m) in c.expect_messages(31).into_iter().enumerate() {
        let body = String::from_utf8_lossy(&m.body).into_owned();
        if i % 2 == 0 {
            c.fin(&m.id_str());
            finished.insert(body);
        } else {
            unfinished.insert(body);
        }
    }

    // The follower comes back behind the purge point: it installs a snapshot, and lists the
    // channel created after the FINs once it has them.
    cluster.restart(follower, follower_dir);
    wait_committed(&cluster, leader, "snap", "marker");
    for (n, s) in cluster.live() {
        let snapshot = s.data_path.join("cluster").join("snap").join("snapshot");
        assert!(snapshot.exists(), "node {n} has no snapshot");
    }

    // Every node stops (the old leader's broker writes its queues to disk) and restarts.
    drop((c, p));
    let dirs: Vec<(usize, std::path::PathBuf)> = (1..=3)
        .map(|n| {
            let node = cluster.nodes[n - 1].take().expect("node");
            (n, node.terminate_keep().1)
        })
        .collect();
    for (n, dir) in dirs {
        cluster.restart(n, dir);
    }
    let new_leader = cluster.publish_to_leader("snap", "after");
    let s = cluster.nodes[new_leader - 1].as_ref().expect("leader");
    let mut want = unfinished.clone();
    want.insert("after".to_string());
    let got = drain(s, "snap", "c", &want);
    let again: Vec<&String> = got.iter().filter(|b| finished.contains(*b)).collect();
    assert!(again.is_empty(), "finished messages redelivered: {again:?}");
    assert_eq!(got.len(), want.len(), "each once: {got:?}");
}

#[test]
fn a_dead_letter_is_not_redelivered_after_a_failover() {
    let mut cluster = start_cluster();
    let leader = cluster.replicate("dlq");
    let s = cluster.nodes[leader - 1].as_ref().expect("leader");
    let r = s.post("/channel/create?topic=dlq&channel=c", b"");
    assert_eq!(r.status, 200, "{}", r.text());
    let settings = br#"{"max_attempts":1,"dead_letter_topic":"dlq.dead"}"#;
    let r = s.post("/channel/config?topic=dlq&channel=c", settings);
    assert_eq!(r.status, 200, "{}", r.text());
    let mut c = s.connect();
    c.sub("dlq", "c");
    c.cmd("RDY 10");
    let m = c.expect_message();
    assert_eq!(m.body, b"first");
    c.req(&m.id_str(), 0);
    let dead = wait_until(PATIENCE, || {
        s.topic_stat("dlq.dead", "message_count") == Some(1)
    });
    assert!(dead, "the dead-letter topic never got the message");
    wait_committed(&cluster, leader, "dlq", "marker");

    drop(c);
    let new_leader = fail_over(&mut cluster, leader, "dlq");
    let s = cluster.nodes[new_leader - 1].as_ref().expect("new leader");
    let want = HashSet::from(["after".to_string()]);
    assert_eq!(drain(s, "dlq", "c", &want), ["after"]);
}

/// Sends `signal` (STOP, CONT) to `s`'s process.
pub(crate) fn signal(s: &Server, signal: &str) {
    let status = std::process::Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(s.pid().to_string())
        .status()
        .expect("kill");
    assert!(status.success(), "kill -{signal}");
}

#[test]
fn deliveries_wait_while_channel_operations_are_at_their_cap() {
    const TOTAL: usize = 20_000;
    let cluster = start_cluster();
    let leader = cluster.replicate("capped");
    let s = cluster.nodes[leader - 1].as_ref().expect("leader");
    let r = s.post("/channel/create?topic=capped&channel=c", b"");
    assert_eq!(r.status, 200, "{}", r.text());
    let mut want: HashSet<String> = HashSet::from(["first".to_string(), "after".to_string()]);
    let mut p = s.connect();
    for batch in 0..TOTAL / 5_000 {
        let bodies: Vec<String> = (0..5_000).map(|i| format!("{batch}-{i}")).collect();
        let refs: Vec<&[u8]> = bodies.iter().map(|b| b.as_bytes()).collect();
        p.cmd_body("MPUB capped", &mpub_body(&refs));
        p.expect_ok();
        want.extend(bodies);
    }

    // No follower answers: the FINs' first pass cannot commit, the next one fills up to its
    // cap, and then the channel delivers nothing more.
    let (leader, followers) = stop_all_but_the_leader(&cluster, "capped", "c", TOTAL + 1);
    let s = cluster.nodes[leader - 1].as_ref().expect("leader");
    let mut c = s.connect();
    c.sub("capped", "c");
    c.cmd("RDY 1000");
    let mut got = HashSet::new();
    while let Some(m) = c.message_within(Duration::from_secs(5)) {
        c.fin(&m.id_str());
        got.insert(String::from_utf8_lossy(&m.body).into_owned());
    }
    followers.iter().for_each(|f| signal(f, "CONT"));
    assert!(
        (8_192..TOTAL).contains(&got.len()),
        "{} delivered while the operations could not commit",
        got.len()
    );

    // The followers answer again (and may elect one of them, more than once on a loaded
    // machine): the rest is delivered by whichever node leads, each message at least once.
    drop((c, p));
    cluster.publish_to_leader("capped", "after");
    let rest: HashSet<String> = want.difference(&got).cloned().collect();
    let live: Vec<(usize, &Server)> = cluster.live().collect();
    consume_from_leader(&live, "capped", "c", &rest);
}

/// Stops (SIGSTOP) every node but the one leading `topic` with all `queued` messages in its
/// channel `channel`: no other node can then be elected, so it keeps leading. The lead may
/// move before the others are stopped (an election on a loaded machine): then they run
/// again and the test looks again. Returns the leader and the stopped nodes.
pub(crate) fn stop_all_but_the_leader<'a>(
    cluster: &'a Cluster,
    topic: &str,
    channel: &str,
    queued: usize,
) -> (usize, Vec<&'a Server>) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        assert!(Instant::now() < deadline, "no settled leader of {topic}");
        let (leader, term) = wait_for_leader(cluster.live(), topic);
        let s = cluster.nodes[leader - 1].as_ref().expect("leader");
        let depth = s
            .channel_stats(topic, channel)
            .and_then(|c| c["depth"].as_u64());
        if depth != Some(queued as u64) {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        }
        let others: Vec<&Server> = cluster
            .live()
            .filter(|(n, _)| *n != leader)
            .map(|(_, f)| f)
            .collect();
        others.iter().for_each(|f| signal(f, "STOP"));
        let still = group(s, topic).is_some_and(|g| g["role"] == "leader" && g["term"] == term);
        if still {
            return (leader, others);
        }
        others.iter().for_each(|f| signal(f, "CONT"));
    }
}
