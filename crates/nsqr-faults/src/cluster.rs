//! The cluster under test: its nodes, the proxy in front of each node's cluster listener
//! (`--cluster-peers` names the proxies, so partitions are cuts in the proxy), the shared
//! secret, and the replicated topic configured on every node each time it starts (a wiped
//! node has lost its `nsqd.dat`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::history::NodeNum;
use crate::node::{Metrics, Node, NodeError};
use crate::proxy::{self, Links};

pub struct Cluster {
    pub nodes: Vec<Node>,
    pub links: Arc<Links>,
    pub topic: String,
    bin: PathBuf,
    flags: Vec<String>,
    /// Nodes that exited on their own: `node N: <status>`.
    pub crashes: Vec<String>,
}

/// Whether each node gets a file system of its own (for the disk faults), and its size.
pub enum Disks {
    /// The nodes' data directories stay on the run directory's file system.
    Shared,
    /// A tmpfs of this many MiB per node.
    Tmpfs(u64),
}

impl Cluster {
    /// Picks the ports, starts the proxies and writes the secret; no node runs yet. With
    /// [`Disks::Tmpfs`], mounts each node's file system; if that cannot be done the nodes
    /// share the run directory's and the second value says why.
    pub async fn new(
        bin: &Path,
        n: usize,
        run_dir: &Path,
        topic: &str,
        disks: Disks,
    ) -> Result<(Cluster, Option<String>), NodeError> {
        let io = |what| {
            move |source| NodeError::Io {
                node: 0,
                what,
                source,
            }
        };
        let mut nodes = (1..=n)
            .map(|num| Node::new(num, run_dir))
            .collect::<Result<Vec<_>, _>>()?;
        let mut no_disks = None;
        if let Disks::Tmpfs(mib) = disks {
            for node in &mut nodes {
                if let Err(why) = node.mount_disk(mib) {
                    no_disks = Some(why);
                    break;
                }
            }
            if no_disks.is_some() {
                nodes = (1..=n)
                    .map(|num| Node::new(num, run_dir))
                    .collect::<Result<Vec<_>, _>>()?;
            }
        }
        let links = Links::new();
        let mut peers = Vec::new();
        for node in &nodes {
            let addr = proxy::start(Arc::clone(&links), node.num, node.cluster)
                .await
                .map_err(io("start a proxy"))?;
            peers.push(format!("{}@{addr}", node.num));
        }
        let secret = run_dir.join("cluster-secret");
        std::fs::write(&secret, "nsqr-faults cluster secret\n").map_err(io("write the secret"))?;
        let cluster = Cluster {
            nodes,
            links,
            topic: topic.to_string(),
            bin: bin.to_path_buf(),
            flags: vec![
                format!("--cluster-peers={}", peers.join(",")),
                format!("--cluster-secret-file={}", secret.display()),
            ],
            crashes: Vec::new(),
        };
        Ok((cluster, no_disks))
    }

    pub fn node(&mut self, num: NodeNum) -> &mut Node {
        &mut self.nodes[num - 1]
    }

    /// Starts node `num` and gives it the topic's `replicas`.
    pub async fn start(&mut self, num: NodeNum) -> Result<(), NodeError> {
        let replicas = self.nodes.len();
        let (bin, flags, topic) = (self.bin.clone(), self.flags.clone(), self.topic.clone());
        let node = self.node(num);
        node.start(&bin, &flags).await?;
        node.configure(&topic, &format!(r#"{{"replicas":{replicas}}}"#))
            .await
    }

    /// Records every node that exited without being killed (restarted by `heal`).
    pub fn check_crashes(&mut self, at: &str) {
        for node in &mut self.nodes {
            if let Some(status) = node.exited() {
                let line = format!(
                    "node {} exited on its own ({status}) {at}; log: {}",
                    node.num,
                    node.log_path().display()
                );
                println!("CRASH: {line}");
                self.crashes.push(line);
            }
        }
    }

    /// Records every panic in the nodes' logs.
    pub fn check_panics(&mut self) {
        for node in &self.nodes {
            for p in node.panics() {
                let line = format!("node {} panicked: {p}", node.num);
                println!("CRASH: {line}");
                self.crashes.push(line);
            }
        }
    }

    /// Fills node `num`'s disk; what was done, for the log.
    pub fn fill_disk(&mut self, num: NodeNum) -> Result<String, NodeError> {
        let ballast = self.node(num).fill_disk()?;
        Ok(format!(
            "filled node {num}'s disk (a ballast of {:.1} MiB)",
            ballast as f64 / f64::from(1 << 20)
        ))
    }

    /// Every link restored, every disk given its space back, every paused node continued,
    /// every stopped node started. Returns the nodes whose disk was full.
    pub async fn heal(&mut self) -> Result<Vec<NodeNum>, NodeError> {
        self.links.heal();
        let mut freed = Vec::new();
        for num in 1..=self.nodes.len() {
            if self.node(num).free_disk()? {
                freed.push(num);
            }
            if self.node(num).is_paused() {
                self.node(num).pause(false).await;
            }
            if !self.node(num).is_up() {
                self.start(num).await?;
            }
        }
        Ok(freed)
    }

    /// Waits (up to `limit`) until node `num` has applied every entry committed when the
    /// wait began (the highest commit index any node reports); how long that took.
    pub async fn catch_up(&self, num: NodeNum, limit: Duration) -> Option<Duration> {
        let start = tokio::time::Instant::now();
        let mut target = None;
        for node in &self.nodes {
            if let Some(m) = Metrics::get(node.http).await {
                target = target.max(m.sample("nsqr_topic_commit_index", &self.topic));
            }
        }
        let target = target?;
        let http = self.nodes[num - 1].http;
        while start.elapsed() < limit {
            let applied = Metrics::get(http)
                .await
                .and_then(|m| m.sample("nsqr_topic_applied_index", &self.topic));
            if applied.is_some_and(|a| a >= target) {
                return Some(start.elapsed());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        None
    }

    /// Kills every node.
    pub async fn shutdown(&mut self) {
        for node in &mut self.nodes {
            node.kill().await;
        }
    }
}
