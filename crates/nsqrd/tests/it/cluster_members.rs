//! Adding and removing a node of a running cluster (`docs/replication.md`, "Adding and
//! removing a node"): three nsqrd processes replicate a topic while a publisher publishes
//! through every step; a fourth node joins (every node restarted in turn with the new
//! `--cluster-peers`), then node 1 leaves (the others restarted without it, node 1 stopped).
//! The fourth node, though first in the topic's order, founds no second group; it replaces
//! node 1 as a voter (nodes 3 and 4 alone still commit), and every acknowledged message is
//! delivered. And a topic's `replicas` changed from 3 to 5 and back on five nodes: the
//! leader moves the voters each time while publishes go on.

use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nsqr_replication::Peers;

use crate::cluster_replicated::{configure, consume_from_leader, PATIENCE};
use crate::common::*;

/// Four nodes' cluster ports and secret; nodes are started and restarted with a peer list.
struct Nodes {
    ports: Vec<u16>,
    secret: PathBuf,
    /// Node `i + 1` is `running[i]`.
    running: Vec<Option<Server>>,
    /// Every running node's HTTP address, for the publisher.
    http: Arc<Mutex<Vec<Option<SocketAddr>>>>,
    /// What each node logged, across its restarts.
    logs: Vec<Vec<String>>,
}

impl Nodes {
    fn new(n: usize) -> Nodes {
        let ports = (0..n).map(|_| nsqr_testkit::free_port()).collect();
        let secret = temp_dir().join("secret");
        std::fs::write(&secret, "membership test secret\n").expect("secret");
        Nodes {
            ports,
            secret,
            running: (0..n).map(|_| None).collect(),
            http: Arc::new(Mutex::new(vec![None; n])),
            logs: vec![Vec::new(); n],
        }
    }

    /// Starts node `id` on `data_path` with `peers` as its `--cluster-peers`.
    fn start(&mut self, id: usize, data_path: PathBuf, peers: &[usize]) {
        let peers: Vec<String> = peers
            .iter()
            .map(|p| format!("{p}@127.0.0.1:{}", self.ports[p - 1]))
            .collect();
        let args = [
            format!("--cluster-node-id={id}"),
            format!("--cluster-address=127.0.0.1:{}", self.ports[id - 1]),
            format!("--cluster-peers={}", peers.join(",")),
            format!("--cluster-secret-file={}", self.secret.display()),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut server = Server::start_in(data_path, &args);
        self.logs[id - 1].extend(server.startup_lines());
        self.http.lock().expect("lock")[id - 1] = Some(server.http);
        self.running[id - 1] = Some(server);
    }

    /// Stops node `id` (SIGTERM); returns its data directory.
    fn stop(&mut self, id: usize) -> PathBuf {
        self.http.lock().expect("lock")[id - 1] = None;
        self.collect_logs();
        let server = self.running[id - 1].take().expect("running");
        let (status, dir) = server.terminate_keep();
        assert_eq!(status, Some(0), "node {id} exits cleanly");
        dir
    }

    /// Restarts node `id` with `peers`, keeping its data.
    fn restart(&mut self, id: usize, peers: &[usize]) {
        let dir = self.stop(id);
        self.start(id, dir, peers);
    }

    fn node(&self, id: usize) -> &Server {
        self.running[id - 1].as_ref().expect("running")
    }

    /// Adds what the running nodes logged since the last look to `logs`.
    fn collect_logs(&mut self) {
        for (log, node) in self.logs.iter_mut().zip(&self.running) {
            if let Some(node) = node {
                log.extend(node.log_lines());
            }
        }
    }

    /// True if node `id` ever logged a line containing `text`.
    fn has_logged(&mut self, id: usize, text: &str) -> bool {
        self.collect_logs();
        self.logs[id - 1].iter().any(|l| l.contains(text))
    }

    /// Waits until some node logged a line containing `text`.
    fn logged(&mut self, text: &str) {
        let deadline = Instant::now() + PATIENCE;
        while !(1..=self.logs.len()).any(|id| self.has_logged(id, text)) {
            assert!(Instant::now() < deadline, "no node logged {text:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// A failing test shows what every running node logged.
impl Drop for Nodes {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.collect_logs();
            for (i, log) in self.logs.iter().enumerate() {
                eprintln!("---- node {} log ----\n{}", i + 1, log.join("\n"));
            }
        }
    }
}

/// One HTTP publish to `addr`: the status, or None when the node cannot be reached.
fn try_publish(addr: SocketAddr, topic: &str, body: &str) -> Option<u16> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(PATIENCE)).ok()?;
    let request = format!(
        "POST /pub?topic={topic} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(request.as_bytes()).ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    let text = String::from_utf8_lossy(&raw);
    text.split(' ').nth(1)?.parse().ok()
}

/// Publishes `last` through one of `ids` (a follower forwards it), retrying until one takes it.
fn publish_last(nodes: &Nodes, ids: &[usize], topic: &str) {
    let http = nodes.http.lock().expect("lock").clone();
    let deadline = Instant::now() + PATIENCE;
    while !ids
        .iter()
        .any(|id| http[id - 1].is_some_and(|a| try_publish(a, topic, "last") == Some(200)))
    {
        assert!(Instant::now() < deadline, "no node took the last publish");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Publishes to whichever node accepts, until stopped; records what was acknowledged.
struct Publisher {
    stop: Arc<AtomicBool>,
    acked: Arc<Mutex<Vec<String>>>,
    thread: Option<JoinHandle<()>>,
}

impl Publisher {
    fn start(topic: &str, http: Arc<Mutex<Vec<Option<SocketAddr>>>>) -> Publisher {
        let stop = Arc::new(AtomicBool::new(false));
        let acked = Arc::new(Mutex::new(Vec::new()));
        let (s, a, topic) = (stop.clone(), acked.clone(), topic.to_string());
        let thread = std::thread::spawn(move || {
            let mut next = 0;
            while !s.load(Ordering::Relaxed) {
                let body = format!("m-{next}");
                let nodes: Vec<SocketAddr> = http
                    .lock()
                    .expect("lock")
                    .iter()
                    .flatten()
                    .copied()
                    .collect();
                if nodes
                    .into_iter()
                    .any(|addr| try_publish(addr, &topic, &body) == Some(200))
                {
                    a.lock().expect("lock").push(body);
                    next += 1;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        Publisher {
            stop,
            acked,
            thread: Some(thread),
        }
    }

    fn acked(&self) -> usize {
        self.acked.lock().expect("lock").len()
    }

    /// Waits until `n` more publishes are acknowledged: the topic has a working leader.
    fn progress(&self, n: usize, what: &str) {
        let want = self.acked() + n;
        let deadline = Instant::now() + PATIENCE;
        while self.acked() < want {
            assert!(Instant::now() < deadline, "no publish acknowledged {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn finish(mut self) -> HashSet<String> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().expect("publisher");
        }
        self.acked.lock().expect("lock").iter().cloned().collect()
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// A topic name whose rendezvous order over nodes 1-4 puts node 4 first.
fn topic_led_by_4() -> String {
    let peers: Peers = "1@a:1,2@a:2,3@a:3,4@a:4".parse().expect("peers");
    (0..1000)
        .map(|k| format!("orders{k}"))
        .find(|t| peers.preferred_leader(t) == 4)
        .expect("a topic node 4 leads")
}

#[test]
fn a_node_is_added_and_another_removed_while_publishing() {
    let topic = topic_led_by_4();
    let mut nodes = Nodes::new(4);
    for id in 1..=3 {
        nodes.start(id, temp_dir(), &[1, 2, 3]);
        let r = configure(nodes.node(id), &topic, r#"{"replicas":3}"#);
        assert_eq!(r.status, 200, "node {id}: {}", r.text());
    }
    let publisher = Publisher::start(&topic, nodes.http.clone());
    publisher.progress(10, "by the first three nodes");

    // Node 4 joins: every member learns of it, one restart at a time, then it starts.
    for id in 1..=3 {
        nodes.restart(id, &[1, 2, 3, 4]);
        publisher.progress(5, &format!("after node {id} restarted"));
    }
    nodes.start(4, temp_dir(), &[1, 2, 3, 4]);
    let r = configure(nodes.node(4), &topic, r#"{"replicas":3}"#);
    assert_eq!(r.status, 200, "node 4: {}", r.text());
    publisher.progress(10, "with node 4 running");
    let founded = "founded its replicated log";
    assert!(
        !nodes.has_logged(4, founded),
        "node 4 founded a second group"
    );

    // Node 1 leaves: the others forget it, one restart at a time; node 4 replaces it.
    for id in 2..=4 {
        nodes.restart(id, &[2, 3, 4]);
        publisher.progress(5, &format!("after node {id} restarted without node 1"));
    }
    nodes.logged(&format!("cluster: topic {topic}: voters 2,3,4"));
    nodes.stop(1);
    publisher.progress(20, "once node 1 stopped");
    assert!(
        !nodes.has_logged(4, founded),
        "node 4 founded a second group"
    );

    // Node 4 votes: with nodes 1 and 2 gone, nodes 3 and 4 are a majority.
    nodes.stop(2);
    publisher.progress(20, "with nodes 3 and 4 only");
    let acked = publisher.finish();
    publish_last(&nodes, &[3, 4], &topic);
    let mut want = acked;
    want.insert("last".to_string());
    // A follower forwards a publish, so the consumer goes to the node that says it leads.
    let running = [(3, nodes.node(3)), (4, nodes.node(4))];
    consume_from_leader(&running, &topic, "c", &want);
}

#[test]
fn a_replicas_change_moves_the_voters() {
    let topic = "resized";
    let all = [1, 2, 3, 4, 5];
    let mut nodes = Nodes::new(5);
    for id in all {
        nodes.start(id, temp_dir(), &all);
        let r = configure(nodes.node(id), topic, r#"{"replicas":3}"#);
        assert_eq!(r.status, 200, "node {id}: {}", r.text());
    }
    let peers: Peers = "1@a:1,2@a:2,3@a:3,4@a:4,5@a:5".parse().expect("peers");
    let mut first3: Vec<u64> = peers.ranked(topic)[..3].to_vec();
    first3.sort_unstable();
    let first3: Vec<String> = first3.iter().map(u64::to_string).collect();
    let first3 = first3.join(",");
    let publisher = Publisher::start(topic, nodes.http.clone());
    publisher.progress(10, "with three voters");

    // Five replicas: the two other nodes catch up as learners, then vote.
    let resize = |nodes: &Nodes, replicas: u8| {
        for id in all {
            let body = format!(r#"{{"replicas":{replicas}}}"#);
            let r = configure(nodes.node(id), topic, &body);
            assert_eq!(r.status, 200, "node {id}: {}", r.text());
        }
    };
    resize(&nodes, 5);
    nodes.logged(&format!(
        "cluster: topic {topic}: changed voters {first3} -> 1,2,3,4,5"
    ));
    publisher.progress(10, "with five voters");

    // Back to three: the first three in the topic's order.
    resize(&nodes, 3);
    nodes.logged(&format!(
        "cluster: topic {topic}: changed voters 1,2,3,4,5 -> {first3}"
    ));
    publisher.progress(10, "with three voters again");

    let mut want = publisher.finish();
    publish_last(&nodes, &all, topic);
    want.insert("last".to_string());
    let running: Vec<(usize, &Server)> = all.into_iter().map(|id| (id, nodes.node(id))).collect();
    consume_from_leader(&running, topic, "c", &want);
}
