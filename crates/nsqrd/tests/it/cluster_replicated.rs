//! Replicated topics across three nsqrd processes on 127.0.0.1 (`docs/replication.md`): a
//! publish the leader acknowledged, or a follower acknowledged after forwarding it, is
//! consumed from the new leader after the old one is SIGKILLed; a publish while no leader can
//! be elected fails with `E_PUB_FAILED`; `/stats` and `/metrics` show each node's view of the
//! group; a topic with `replicas = 1` on a cluster node behaves as on nsqd; and `replicas`
//! without a cluster is refused. Every wait is bounded; every process is killed when its
//! `Server` drops.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::common::*;

/// How long an election or a commit may take on a loaded machine before the test fails.
pub(crate) const PATIENCE: Duration = Duration::from_secs(60);

pub(crate) struct Cluster {
    /// Node `i + 1` is `nodes[i]`; None once killed.
    pub(crate) nodes: Vec<Option<Server>>,
    /// Each node's flags, to restart it on the same cluster port.
    args: Vec<Vec<String>>,
    _secret_dir: PathBuf,
}

/// Three nodes; cluster ports are picked free just before the nodes start.
pub(crate) fn start_cluster() -> Cluster {
    start_cluster_with(&[])
}

/// Three nodes started with `extra` flags too.
pub(crate) fn start_cluster_with(extra: &[&str]) -> Cluster {
    start_cluster_of(3, extra)
}

/// `n` nodes started with `extra` flags too.
pub(crate) fn start_cluster_of(n: usize, extra: &[&str]) -> Cluster {
    let ports: Vec<u16> = (0..n).map(|_| nsqr_testkit::free_port()).collect();
    let secret_dir = temp_dir();
    let secret = secret_dir.join("secret");
    std::fs::write(&secret, "replication test secret\n").expect("secret");
    let peers: Vec<String> = ports
        .iter()
        .enumerate()
        .map(|(i, p)| format!("{}@127.0.0.1:{p}", i + 1))
        .collect();
    let args: Vec<Vec<String>> = ports
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut args = vec![
                format!("--cluster-node-id={}", i + 1),
                format!("--cluster-address=127.0.0.1:{p}"),
                format!("--cluster-peers={}", peers.join(",")),
                format!("--cluster-secret-file={}", secret.display()),
            ];
            args.extend(extra.iter().map(|a| a.to_string()));
            args
        })
        .collect();
    let nodes = args
        .iter()
        .map(|a| {
            let a: Vec<&str> = a.iter().map(String::as_str).collect();
            Some(Server::start(&a))
        })
        .collect();
    Cluster {
        nodes,
        args,
        _secret_dir: secret_dir,
    }
}

impl Cluster {
    /// Starts node `n` again on `data_path` (its own, kept), with the same flags.
    pub(crate) fn restart(&mut self, n: usize, data_path: PathBuf) {
        let a: Vec<&str> = self.args[n - 1].iter().map(String::as_str).collect();
        self.nodes[n - 1] = Some(Server::start_in(data_path, &a));
    }

    /// Node `n`'s `--cluster-address`.
    pub(crate) fn cluster_address(&self, n: usize) -> &str {
        self.args[n - 1]
            .iter()
            .find_map(|a| a.strip_prefix("--cluster-address="))
            .expect("a cluster address")
    }

    pub(crate) fn live(&self) -> impl Iterator<Item = (usize, &Server)> + Clone {
        self.nodes
            .iter()
            .enumerate()
            .filter_map(|(i, n)| n.as_ref().map(|s| (i + 1, s)))
    }

    /// Configures `replicas = 3` on every node and returns the leader (found by publishing
    /// `first`, which goes to the topic's backlog: no channel exists yet) once every node
    /// applied it: a node that opened the group after its leader was elected takes part only
    /// once that leader admitted it (`rejoin.rs` in nsqr-replication), and the tests that
    /// lose the leader next need every node in.
    pub(crate) fn replicate(&self, topic: &str) -> usize {
        for (n, s) in self.live() {
            let r = configure(s, topic, r#"{"replicas":3}"#);
            assert_eq!(r.status, 200, "node {n}: {}", r.text());
        }
        self.publish_to_leader(topic, "first");
        let leader = self.leader_of(topic);
        let s = self.nodes[leader - 1].as_ref().expect("the leader is live");
        let committed = group(s, topic).and_then(|g| g["commit_index"].as_u64());
        let committed = committed.expect("the leader committed `first`");
        // Every other member, as the leader sees it, holds that entry.
        let all_hold = || {
            group(s, topic).is_some_and(|g| {
                let followers = g["followers"].as_array().cloned().unwrap_or_default();
                followers.len() == 2
                    && followers
                        .iter()
                        .all(|f| f["matched_index"].as_u64().is_some_and(|m| m >= committed))
            })
        };
        assert!(
            wait_until(PATIENCE, all_hold),
            "not every member of {topic}'s group holds entry {committed} within {PATIENCE:?}"
        );
        leader
    }

    /// The node that says, in `/stats`, it leads `topic`'s group, in the highest term if
    /// several do (an old leader may not know yet); waits for one.
    pub(crate) fn leader_of(&self, topic: &str) -> usize {
        wait_for_leader(self.live(), topic).0
    }

    /// Reads `topic`/`c` from whichever live node leads until every body of `want` arrived
    /// (`consume_from_leader`).
    pub(crate) fn consume(&self, topic: &str, want: &HashSet<String>) {
        let live: Vec<(usize, &Server)> = self.live().collect();
        consume_from_leader(&live, topic, "c", want);
    }

    /// PUBs `body` to the node leading `topic` until it accepts it; returns the leader once
    /// it is committed (a node that lost the lead meanwhile forwarded it). Over TCP, whose
    /// answer may take a commit's time on a loaded machine, waited for with `PATIENCE`.
    pub(crate) fn publish_to_leader(&self, topic: &str, body: &str) -> usize {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let n = self.leader_of(topic);
            let s = self.nodes[n - 1].as_ref().expect("the leader is live");
            let mut p = s.connect();
            p.set_timeout(PATIENCE);
            p.cmd_body(&format!("PUB {topic}"), body.as_bytes());
            match p.read_non_heartbeat() {
                Frame::Response(r) if r == b"OK" => return self.leader_of(topic),
                // No leader took it in time (an election), or the leader lost the lead while
                // proposing.
                Frame::Error(e) if e.contains("not the leader") => {}
                other => panic!("node {n}: {other:?}"),
            }
            assert!(
                Instant::now() < deadline,
                "no leader took a publish to {topic} within {PATIENCE:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// The node among `nodes` that says, in `/stats`, it leads `topic`'s group, and its term: the
/// highest term if several do (an old leader may not know yet).
pub(crate) fn leader_among<'a>(
    nodes: impl Iterator<Item = (usize, &'a Server)>,
    topic: &str,
) -> Option<(usize, u64)> {
    nodes
        .filter_map(|(n, s)| {
            let g = group(s, topic)?;
            (g["role"] == "leader").then(|| (g["term"].as_u64().unwrap_or(0), n))
        })
        .max()
        .map(|(term, n)| (n, term))
}

/// Waits (up to [`PATIENCE`]) until one of `nodes` leads `topic`'s group; returns it and its
/// term.
pub(crate) fn wait_for_leader<'a>(
    nodes: impl Iterator<Item = (usize, &'a Server)> + Clone,
    topic: &str,
) -> (usize, u64) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(leader) = leader_among(nodes.clone(), topic) {
            return leader;
        }
        assert!(
            Instant::now() < deadline,
            "no leader for {topic} within {PATIENCE:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `topic`'s group on `s`, from `/stats` (None: not a replicated topic there, or not yet).
pub(crate) fn group(s: &Server, topic: &str) -> Option<serde_json::Value> {
    let r = s.get(&format!("/stats?format=json&topic={topic}"));
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["topics"]
        .as_array()?
        .iter()
        .find(|t| t["topic_name"] == topic)?
        .get("replication")
        .cloned()
}

/// A failing test shows what every live node logged (their panics and Raft errors), which
/// the harness otherwise keeps to itself.
impl Drop for Cluster {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        for (n, s) in self.live() {
            eprintln!("---- node {n} log ----\n{}", s.log_lines().join("\n"));
        }
    }
}

pub(crate) fn configure(s: &Server, topic: &str, body: &str) -> HttpResponse {
    s.post(&format!("/topic/config?topic={topic}"), body.as_bytes())
}

/// Reads `topic`/`channel` from whichever of `nodes` leads the group until every body of
/// `want` arrived, FINning each message: a consumer stays on a node while it leads in the
/// same term, and moves to the new leader when the lead changes (an election under load).
/// The old leader's in-flight messages go back to the new one, so a FIN it refuses then is
/// expected; a FIN refused by a node still leading in the same term fails the test. Returns
/// every delivery's body in the order they came.
pub(crate) fn consume_from_leader(
    nodes: &[(usize, &Server)],
    topic: &str,
    channel: &str,
    want: &HashSet<String>,
) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut delivered = Vec::new();
    let deadline = Instant::now() + PATIENCE;
    while !want.is_subset(&seen) {
        let (n, term) = wait_for_leader(nodes.iter().copied(), topic);
        let s = nodes
            .iter()
            .find(|(m, _)| *m == n)
            .expect("a leader among the nodes")
            .1;
        let mut c = s.connect();
        c.sub(topic, channel);
        c.cmd("RDY 1000");
        while !want.is_subset(&seen) {
            assert!(
                Instant::now() < deadline,
                "missing after failover: {:?}",
                want.difference(&seen).collect::<Vec<_>>()
            );
            let same_lead = || leader_among(nodes.iter().copied(), topic) == Some((n, term));
            match c.frame_within(Duration::from_secs(1)) {
                Some(Frame::Message(m)) => {
                    c.fin(&m.id_str());
                    let body = String::from_utf8_lossy(&m.body).into_owned();
                    seen.insert(body.clone());
                    delivered.push(body);
                }
                Some(Frame::Error(e)) if e.starts_with("E_FIN_FAILED") => {
                    assert!(
                        !same_lead(),
                        "node {n} leads in term {term} and refused: {e}"
                    );
                    break;
                }
                Some(other) => panic!("node {n}: expected a message, got {other:?}"),
                None if same_lead() => {}
                None => break,
            }
        }
    }
    delivered
}

#[test]
fn an_acknowledged_publish_survives_the_leader_killed() {
    let mut cluster = start_cluster();
    let mut acked = HashSet::new();
    let leader = cluster.replicate("orders");
    acked.insert("first".to_string());

    // On the leader: PUB (`publish` expects its OK) and MPUB answered once a majority has
    // them.
    let s = cluster.nodes[leader - 1].as_ref().expect("leader");
    let mut p = s.connect();
    for i in 0..20 {
        let body = format!("pub-{i}");
        p.publish("orders", body.as_bytes());
        acked.insert(body);
    }
    let bodies: Vec<String> = (0..50).map(|i| format!("mpub-{i}")).collect();
    let mut mpub = Vec::new();
    mpub.extend_from_slice(&(bodies.len() as u32).to_be_bytes());
    for b in &bodies {
        mpub.extend_from_slice(&(b.len() as u32).to_be_bytes());
        mpub.extend_from_slice(b.as_bytes());
    }
    p.cmd_body("MPUB orders", &mpub);
    p.expect_ok();
    acked.extend(bodies);

    // What the log does not carry is refused, not dropped.
    let r = s.post("/pub?topic=orders&ttl=10s", b"expiring");
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(
        r.text()
            .contains("PUB_FAILED: replicated topic orders does not take ttl or ordering_key yet"),
        "{}",
        r.text()
    );

    // A follower forwards PUB, MPUB, DPUB, HTTP /pub and /mpub to the leader; its OK means
    // the leader committed them.
    let (f, follower) = cluster
        .live()
        .find(|(n, _)| *n != leader)
        .expect("a follower");
    let mut q = follower.connect();
    for i in 0..5 {
        let body = format!("via-{f}-pub-{i}");
        q.publish("orders", body.as_bytes());
        acked.insert(body);
    }
    let bodies = [b"via-mpub-a".as_slice(), b"via-mpub-b"];
    q.cmd_body("MPUB orders", &mpub_body(&bodies));
    q.expect_ok();
    q.cmd_body("DPUB orders 200", b"via-dpub");
    q.expect_ok();
    acked.extend(["via-mpub-a", "via-mpub-b", "via-dpub"].map(String::from));
    let r = follower.post("/pub?topic=orders", b"via-http-pub");
    assert_eq!(r.status, 200, "node {f}: {}", r.text());
    let r = follower.post("/mpub?topic=orders", b"via-http-mpub-a\nvia-http-mpub-b");
    assert_eq!(r.status, 200, "node {f}: {}", r.text());
    acked.extend(["via-http-pub", "via-http-mpub-a", "via-http-mpub-b"].map(String::from));
    let s = cluster.nodes[leader - 1].as_ref().expect("leader");
    // Stamped and counted by the leader, as its own publishes.
    let counted = wait_until(PATIENCE, || {
        s.topic_stat("orders", "message_count") == Some(acked.len() as i64)
    });
    assert!(counted, "{:?}", s.topic_stat("orders", "message_count"));
    assert_eq!(follower.topic_stat("orders", "message_count"), Some(0));

    // SIGKILL the leader; a new one takes over and delivers everything acknowledged.
    drop((p, q));
    cluster.nodes[leader - 1] = None;
    let new_leader = cluster.publish_to_leader("orders", "after");
    assert_ne!(new_leader, leader);
    acked.insert("after".to_string());
    cluster.consume("orders", &acked);
}

#[test]
fn a_publish_while_no_leader_can_be_elected_fails_cleanly() {
    let mut cluster = start_cluster();
    let leader = cluster.replicate("orders");
    let others: Vec<usize> = (1..=3).filter(|n| *n != leader).collect();
    let (survivor, away) = (others[0], others[1]);
    let away_dir = cluster.nodes[away - 1]
        .take()
        .expect("a follower")
        .kill_keep();
    cluster.nodes[leader - 1] = None;

    // One node of three: no majority, no leader. The publish waits, then fails with the
    // error NSQ clients retry on, and the connection closes, as nsqd's after E_PUB_FAILED.
    let s = cluster.nodes[survivor - 1].as_ref().expect("survivor");
    let mut p = s.connect();
    p.set_timeout(PATIENCE);
    p.cmd_body("PUB orders", b"no majority");
    let err = match p.read_non_heartbeat() {
        Frame::Error(e) => e,
        other => panic!("node {survivor}: expected an error, got {other:?}"),
    };
    let want = "E_PUB_FAILED PUB failed not the leader of replicated topic orders (leader: ";
    assert!(err.starts_with(want), "node {survivor}: {err:?}");
    assert!(p.expect_closed(), "E_PUB_FAILED closes the connection");
    let r = s.post("/pub?topic=orders", b"no majority either");
    assert_eq!(r.status, 503, "{}", r.text());
    assert!(
        r.text()
            .contains("NOT_LEADER: not the leader of replicated topic orders"),
        "{}",
        r.text()
    );

    // The other follower back: two of three elect a leader, and the survivor's publishes
    // go through again.
    cluster.restart(away, away_dir);
    let s = cluster.nodes[survivor - 1].as_ref().expect("survivor");
    let deadline = Instant::now() + PATIENCE;
    loop {
        let r = s.post("/pub?topic=orders", b"majority again");
        if r.status == 200 {
            break;
        }
        assert_eq!(r.status, 503, "{}", r.text());
        assert!(Instant::now() < deadline, "no leader again: {}", r.text());
    }
    cluster.consume("orders", &HashSet::from(["majority again".to_string()]));
}

#[test]
fn stats_and_metrics_show_each_node_s_view_of_the_group() {
    let cluster = start_cluster();
    let leader = cluster.replicate("orders");
    for (_, s) in cluster.live() {
        s.connect().publish("plain", b"not replicated");
    }
    let s = cluster.nodes[leader - 1].as_ref().expect("leader");
    let mut p = s.connect();
    for i in 0..10 {
        p.publish("orders", format!("m-{i}").as_bytes());
    }

    // Once every node has applied everything: the leader's log index is everyone's commit
    // and applied index, and no follower lags.
    let last = |s: &Server| group(s, "orders").map(|g| g["last_log_index"].clone());
    let settled = wait_until(PATIENCE, || {
        let Some(g) = group(s, "orders") else {
            return false;
        };
        let index = g["last_log_index"].clone();
        cluster.live().all(|(_, n)| {
            group(n, "orders")
                .is_some_and(|m| m["commit_index"] == index && m["applied_index"] == index)
        }) && g["followers"]
            .as_array()
            .is_some_and(|f| f.len() == 2 && f.iter().all(|f| f["lag"] == 0))
    });
    assert!(
        settled,
        "{:?}",
        cluster
            .live()
            .map(|(_, n)| group(n, "orders"))
            .collect::<Vec<_>>()
    );
    let index = last(s).expect("the leader's group");
    assert!(index.as_u64().is_some_and(|i| i >= 2), "{index}");
    for (n, node) in cluster.live() {
        let g = group(node, "orders").expect("a replicated topic");
        assert_eq!(g["replicas"], 3, "node {n}: {g}");
        assert_eq!(g["leader"], leader, "node {n}: {g}");
        let role = if n == leader { "leader" } else { "follower" };
        assert_eq!(g["role"], role, "node {n}: {g}");
        if n == leader {
            let mut followers: Vec<u64> = g["followers"]
                .as_array()
                .expect("followers")
                .iter()
                .map(|f| {
                    assert_eq!(f["matched_index"], index, "{f}");
                    f["node"].as_u64().expect("node")
                })
                .collect();
            followers.sort_unstable();
            let want: Vec<u64> = (1..=3).filter(|m| *m != leader as u64).collect();
            assert_eq!(followers, want);
        } else {
            assert_eq!(g["followers"], serde_json::json!([]), "node {n}: {g}");
        }
        // A topic with one replica shows what nsqd shows: no replication key.
        let plain = node.topic_stats("plain").expect("plain");
        assert!(plain.get("replication").is_none(), "node {n}: {plain}");

        let metrics = node.get("/metrics").text();
        let index = index.as_u64().expect("index");
        for line in [
            "nsqr_topic_replicas{topic=\"orders\"} 3".to_string(),
            format!("nsqr_topic_leader_node{{topic=\"orders\"}} {leader}"),
            format!(
                "nsqr_topic_is_leader{{topic=\"orders\"}} {}",
                u8::from(n == leader)
            ),
            format!("nsqr_topic_commit_index{{topic=\"orders\"}} {index}"),
            format!("nsqr_topic_applied_index{{topic=\"orders\"}} {index}"),
        ] {
            assert!(
                metrics.lines().any(|l| l == line),
                "node {n}: no {line:?} in\n{metrics}"
            );
        }
        let lags: Vec<&str> = metrics
            .lines()
            .filter(|l| l.starts_with("nsqr_topic_follower_lag{"))
            .collect();
        assert_eq!(
            lags.len(),
            if n == leader { 2 } else { 0 },
            "node {n}: {lags:?}"
        );
        assert!(lags.iter().all(|l| l.ends_with(" 0")), "{lags:?}");
        assert!(!metrics.contains("topic=\"plain\"} 3"), "node {n}");
    }
    let text = s.get("/stats?topic=orders").text();
    assert!(
        text.contains("replicated: 3 replicas, leader, term "),
        "{text}"
    );
}

/// With 3 replicas on 5 nodes, two nodes are not in the group and hear from no leader: a
/// publish there asks the group's nodes in turn, and the leader takes it.
#[test]
fn a_node_outside_the_group_forwards_to_its_leader() {
    let cluster = start_cluster_of(5, &[]);
    cluster.replicate("orders");
    let mut outside = Vec::new();
    let settled = wait_until(PATIENCE, || {
        outside = cluster
            .live()
            .filter(|(_, s)| group(s, "orders").is_some_and(|g| g["replicas"] == 0))
            .map(|(n, _)| n)
            .collect();
        outside.len() == 2
    });
    assert!(settled, "nodes outside the group: {outside:?}");
    let mut want = HashSet::from(["first".to_string()]);
    for n in outside {
        let s = cluster.nodes[n - 1].as_ref().expect("live");
        assert_eq!(
            group(s, "orders").expect("its group")["leader"],
            serde_json::Value::Null
        );
        let body = format!("via node {n}");
        s.connect().publish("orders", body.as_bytes());
        want.insert(body);
    }
    cluster.consume("orders", &want);
}

#[test]
fn a_topic_with_one_replica_behaves_as_on_nsqd() {
    let mut cluster = start_cluster();
    for (n, s) in cluster.live() {
        let body = format!("plain on node {n}");
        let mut p = s.connect();
        p.publish("plain", body.as_bytes());
        let mut c = s.connect();
        c.sub("plain", "c");
        c.cmd("RDY 1");
        let m = c.expect_message();
        assert_eq!(m.body, body.as_bytes());
    }
    // `replicas = 5` asks for more nodes than there are.
    let (_, s) = cluster.live().next().expect("a node");
    let r = configure(s, "big", r#"{"replicas":5}"#);
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(
        r.text()
            .contains("5 replicas need a cluster of at least 5 nodes"),
        "{}",
        r.text()
    );
    // A cluster node stops cleanly on SIGTERM (its groups and listener shut down).
    let node = cluster.nodes[0].take().expect("node 1");
    assert_eq!(node.terminate(), Some(0));
}

#[test]
fn replicas_without_a_cluster_are_refused() {
    let s = Server::start(&[]);
    let r = configure(&s, "orders", r#"{"replicas":3}"#);
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(
        r.text().contains("a replicated topic needs a cluster"),
        "{}",
        r.text()
    );
    let r = configure(&s, "orders", r#"{"replicas":1}"#);
    assert_eq!(r.status, 200, "{}", r.text());
}
