//! A cluster of nodes in one process, each on its own ephemeral port on 127.0.0.1, all serving
//! one group in its own directory; nodes can be stopped and started again on the same port and
//! directory. Waits poll with a generous bound and fail with what they waited for.

use std::collections::BTreeMap;
use std::future::Future;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use nsqr_replication::{
    ClusterConfig, ClusterNode, ClusterTls, Command, Committed, GroupConfig, Message, MessageId,
    NodeId, Peers, ProposeError, ReplicatedLog, TopicState,
};
use tokio::net::TcpListener;

/// How long any wait may take before the test fails: generous, the machine is shared.
pub const PATIENCE: Duration = Duration::from_secs(60);

pub const GROUP: &str = "topic-a";
pub const SECRET: &[u8] = b"cluster secret";

/// Log lines of every test of this binary, from [`logs`] on.
#[derive(Clone, Default)]
pub struct Logs(Arc<Mutex<Vec<u8>>>);

impl Logs {
    pub fn contains(&self, text: &str) -> bool {
        let bytes = self.0.lock().expect("lock");
        String::from_utf8_lossy(&bytes).contains(text)
    }
}

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Logs {
    type Writer = Logs;

    fn make_writer(&'a self) -> Logs {
        self.clone()
    }
}

/// Captures what the crate logs (info and above), process-wide.
pub fn logs() -> &'static Logs {
    static LOGS: OnceLock<Logs> = OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = Logs::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(logs.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
        logs
    })
}

/// Polls `check` until it holds, failing the test after [`PATIENCE`].
pub async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !check() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Retries `attempt` until it yields a value, failing the test after [`PATIENCE`].
pub async fn retry<T, F, Fut>(what: &str, mut attempt: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        if let Some(value) = attempt().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A publish batch of `n` messages with ids from `first` on.
pub fn batch(first: u64, n: u64) -> Command {
    Command::Publish((first..first + n).map(message).collect())
}

pub fn message(n: u64) -> Message {
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(&n.to_be_bytes());
    Message {
        id: MessageId(id),
        timestamp_ns: n as i64,
        deliver_at_ms: None,
        body: Bytes::from(format!("message {n}")),
    }
}

struct Running {
    node: ClusterNode,
    log: Arc<ReplicatedLog>,
}

/// One node of the test cluster.
pub struct TestNode {
    pub id: NodeId,
    pub address: SocketAddr,
    dir: PathBuf,
    running: Option<Running>,
    /// Indexes of the entries the broker was handed, in order, across restarts.
    pub committed: Arc<Mutex<Vec<Committed>>>,
}

impl TestNode {
    pub fn log(&self) -> Option<&ReplicatedLog> {
        self.running.as_ref().map(|r| &*r.log)
    }

    /// The node's log, for a task that outlives a borrow of the cluster; dropped before the
    /// node is stopped.
    pub fn shared_log(&self) -> Option<Arc<ReplicatedLog>> {
        self.running.as_ref().map(|r| Arc::clone(&r.log))
    }

    pub fn cluster_node(&self) -> Option<&ClusterNode> {
        self.running.as_ref().map(|r| &r.node)
    }

    pub fn last_applied(&self) -> u64 {
        self.log()
            .and_then(|l| l.status().last_applied)
            .unwrap_or(0)
    }

    /// True once the broker was told of a snapshot installed from the leader.
    pub fn restored(&self) -> bool {
        let handed = self.committed.lock().expect("lock");
        handed
            .iter()
            .any(|c| matches!(c, Committed::Restored { .. }))
    }

    pub fn state(&self) -> Option<TopicState> {
        self.log().map(|l| l.state(TopicState::clone))
    }
}

/// The cluster.
pub struct Cluster {
    _tmp: tempfile::TempDir,
    pub peers: Peers,
    pub nodes: Vec<TestNode>,
    template: GroupConfig,
    /// Each node's TLS settings, for a cluster in mutual TLS.
    tls: BTreeMap<NodeId, ClusterTls>,
}

impl Cluster {
    /// Starts `n` nodes and initializes the group from node 1. `tune` adjusts the group's
    /// settings (fsync, snapshot interval).
    pub async fn start(n: u64, tune: impl Fn(&mut GroupConfig)) -> Cluster {
        Cluster::start_some(n, n, tune).await
    }

    /// Configures `n` peers, starts the first `started` of them and makes those the group's
    /// voters; the others can be started later with [`Cluster::restart`].
    pub async fn start_some(n: u64, started: u64, tune: impl Fn(&mut GroupConfig)) -> Cluster {
        Cluster::start_with(n, started, tune, |_| None).await
    }

    /// As [`Cluster::start_some`], each node in mutual TLS with the settings `tls` gives it.
    pub async fn start_with(
        n: u64,
        started: u64,
        tune: impl Fn(&mut GroupConfig),
        tls: impl Fn(NodeId) -> Option<ClusterTls>,
    ) -> Cluster {
        let tmp = tempfile::tempdir().expect("temp dir");
        let mut listeners = Vec::new();
        let mut peers = BTreeMap::new();
        for id in 1..=n {
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let address = listener.local_addr().expect("local addr");
            peers.insert(id, address.to_string());
            listeners.push((id, address, listener));
        }
        let peers = Peers::new(peers).expect("peers");
        let mut template = GroupConfig::new(GROUP, tmp.path());
        template.heartbeat_ms = 50;
        template.election_timeout_ms = (300, 600);
        tune(&mut template);
        let mut cluster = Cluster {
            peers,
            nodes: Vec::new(),
            template,
            tls: (1..=n).filter_map(|id| Some((id, tls(id)?))).collect(),
            _tmp: tmp,
        };
        for (id, address, listener) in listeners {
            let dir = cluster._tmp.path().join(format!("node-{id}"));
            let committed = Arc::default();
            let mut node = TestNode {
                id,
                address,
                dir,
                running: None,
                committed,
            };
            if id <= started {
                node.running = Some(cluster.launch(&node, listener, SECRET).await);
            }
            cluster.nodes.push(node);
        }
        cluster.nodes[0]
            .log()
            .expect("node 1 runs")
            .initialize_voters((1..=started).collect())
            .await
            .expect("initialize");
        cluster
    }

    async fn launch(&self, node: &TestNode, listener: TcpListener, secret: &[u8]) -> Running {
        let mut config = ClusterConfig::new(
            node.id,
            node.address.to_string(),
            self.peers.clone(),
            secret.to_vec(),
        )
        .expect("cluster config");
        if let Some(tls) = self.tls.get(&node.id) {
            config = config.with_tls(tls.clone());
        }
        let cluster_node = ClusterNode::start_on(config, listener)
            .await
            .expect("start node");
        let mut group = self.template.clone();
        group.dir = node.dir.clone();
        let (log, mut rx) = cluster_node.open_group(group).await.expect("open group");
        let committed = node.committed.clone();
        tokio::spawn(async move {
            while let Some(event) = rx.recv().await {
                committed.lock().expect("lock").push(event);
            }
        });
        Running {
            node: cluster_node,
            log: Arc::new(log),
        }
    }

    pub fn node(&self, id: NodeId) -> &TestNode {
        &self.nodes[(id - 1) as usize]
    }

    /// Stops node `id`: its group and its listener.
    pub async fn stop(&mut self, id: NodeId) {
        let running = self.nodes[(id - 1) as usize].running.take();
        if let Some(running) = running {
            let log = Arc::into_inner(running.log).expect("no task holds the node's log");
            log.shutdown().await;
            running.node.shutdown();
        }
    }

    /// Starts node `id` again on its port and directory.
    pub async fn restart(&mut self, id: NodeId) {
        self.restart_with_secret(id, SECRET).await;
    }

    /// Starts node `id` again with another cluster secret: the nodes with the same secret
    /// reach each other, the others refuse them (a partition).
    pub async fn restart_with_secret(&mut self, id: NodeId, secret: &[u8]) {
        let address = self.node(id).address;
        let listener = retry("the port to be free again", || async move {
            TcpListener::bind(address).await.ok()
        })
        .await;
        let running = self.launch(self.node(id), listener, secret).await;
        self.nodes[(id - 1) as usize].running = Some(running);
    }

    /// Stops node `id`, empties its directory (a lost disk) and starts it again, empty.
    pub async fn wipe(&mut self, id: NodeId) {
        self.stop(id).await;
        let dir = self.node(id).dir.clone();
        std::fs::remove_dir_all(&dir).expect("wipe the node's directory");
        self.restart(id).await;
    }

    /// The leader every running voter agrees on, once there is one.
    pub async fn leader(&self) -> NodeId {
        let all: Vec<NodeId> = self.nodes.iter().map(|n| n.id).collect();
        self.leader_among(&all).await
    }

    /// The leader the running voters among `nodes` agree on, once there is one.
    pub async fn leader_among(&self, nodes: &[NodeId]) -> NodeId {
        retry("a leader all running voters agree on", || async {
            // A node not yet added to the group knows of no leader: only voters count.
            let mut leaders = self
                .nodes
                .iter()
                .filter(|n| nodes.contains(&n.id))
                .filter_map(|n| n.log().map(|l| (n.id, l.status())))
                .filter(|(id, s)| s.voters.contains(id))
                .map(|(_, s)| s);
            let first = leaders.next()?;
            let leader = first.leader?;
            let agreed = leaders.all(|s| s.leader == Some(leader));
            let leads = self
                .node(leader)
                .log()
                .is_some_and(|l| l.status().is_leader);
            (agreed && leads && nodes.contains(&leader)).then_some(leader)
        })
        .await
    }

    /// Proposes `command` on the leader, following leader changes; returns its index.
    pub async fn propose(&self, command: Command) -> u64 {
        let all: Vec<NodeId> = self.nodes.iter().map(|n| n.id).collect();
        self.propose_among(&all, command).await
    }

    /// Proposes `command` on the leader of the running voters among `nodes`; returns its index.
    pub async fn propose_among(&self, nodes: &[NodeId], command: Command) -> u64 {
        retry("a proposal to be committed", || {
            let command = command.clone();
            async move {
                let leader = self.leader_among(nodes).await;
                let log = self.node(leader).log()?;
                match log.propose(command).await {
                    Ok(index) => Some(index),
                    Err(ProposeError::NotLeader { .. }) => None,
                    Err(e) => panic!("proposal failed: {e}"),
                }
            }
        })
        .await
    }

    /// Shuts every running node down.
    pub async fn shutdown(mut self) {
        for id in 1..=self.nodes.len() as NodeId {
            self.stop(id).await;
        }
    }
}
