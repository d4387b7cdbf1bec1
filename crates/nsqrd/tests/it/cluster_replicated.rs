//! Replicated topics across three nsqrd processes on 127.0.0.1 (`docs/replication.md`): a
//! publish the leader acknowledged is consumed from the new leader after the old one is
//! SIGKILLed; a publish to a follower gets the error naming the leader; a topic with
//! `replicas = 1` on a cluster node behaves as on nsqd; and `replicas` without a cluster is
//! refused. Every wait is bounded; every process is killed when its `Server` drops.

use std::collections::HashSet;
use std::net::TcpListener;
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
    let ports: Vec<u16> = (0..3)
        .map(|_| {
            TcpListener::bind("127.0.0.1:0")
                .expect("bind")
                .local_addr()
                .expect("addr")
                .port()
        })
        .collect();
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

    pub(crate) fn live(&self) -> impl Iterator<Item = (usize, &Server)> {
        self.nodes
            .iter()
            .enumerate()
            .filter_map(|(i, n)| n.as_ref().map(|s| (i + 1, s)))
    }

    /// HTTP-publishes `body` to each live node in turn until one (the leader) accepts it;
    /// returns that node's number.
    pub(crate) fn publish_to_leader(&self, topic: &str, body: &str) -> usize {
        let deadline = Instant::now() + PATIENCE;
        loop {
            for (n, s) in self.live() {
                let r = s.post(&format!("/pub?topic={topic}"), body.as_bytes());
                if r.status == 200 {
                    return n;
                }
                // 503 from a follower; 500 from a leader that lost the lead while proposing.
                let refused = match r.status {
                    503 => r.text().contains("NOT_LEADER"),
                    500 => r.text().contains("PUB_FAILED: not the leader"),
                    _ => false,
                };
                assert!(refused, "node {n}: {} {}", r.status, r.text());
            }
            assert!(
                Instant::now() < deadline,
                "no leader for {topic} within {PATIENCE:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
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

/// Reads messages from a consumer of `topic`/`c` on `s` until every body of `want` arrived.
pub(crate) fn consume_all(s: &Server, topic: &str, want: &HashSet<String>) {
    let mut c = s.connect();
    c.sub(topic, "c");
    c.cmd("RDY 1000");
    let mut seen = HashSet::new();
    let deadline = Instant::now() + PATIENCE;
    while !want.is_subset(&seen) {
        assert!(
            Instant::now() < deadline,
            "missing after failover: {:?}",
            want.difference(&seen).collect::<Vec<_>>()
        );
        if let Some(m) = c.message_within(Duration::from_secs(1)) {
            c.cmd(&format!("FIN {}", m.id_str()));
            seen.insert(String::from_utf8_lossy(&m.body).into_owned());
        }
    }
}

#[test]
fn an_acknowledged_publish_survives_the_leader_killed() {
    let mut cluster = start_cluster();
    for (n, s) in cluster.live() {
        let r = configure(s, "orders", r#"{"replicas":3}"#);
        assert_eq!(r.status, 200, "node {n}: {}", r.text());
    }
    let mut acked = HashSet::new();
    let leader = cluster.publish_to_leader("orders", "first");
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

    // A follower refuses, naming the leader.
    let (f, follower) = cluster
        .live()
        .find(|(n, _)| *n != leader)
        .expect("a follower");
    let mut q = follower.connect();
    q.cmd_body("PUB orders", b"to a follower");
    let err = match q.read_non_heartbeat() {
        Frame::Error(e) => e,
        other => panic!("node {f}: expected an error, got {other:?}"),
    };
    let want = format!(
        "E_PUB_FAILED PUB failed not the leader of replicated topic orders (leader: node {leader} at 127.0.0.1:"
    );
    assert!(err.starts_with(&want), "node {f}: {err:?}");
    assert!(
        q.expect_closed(),
        "E_PUB_FAILED closes the connection, as nsqd's"
    );

    // SIGKILL the leader; a new one takes over and delivers everything acknowledged.
    drop(p);
    cluster.nodes[leader - 1] = None;
    let new_leader = cluster.publish_to_leader("orders", "after");
    assert_ne!(new_leader, leader);
    acked.insert("after".to_string());
    let s = cluster.nodes[new_leader - 1].as_ref().expect("new leader");
    consume_all(s, "orders", &acked);
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
