//! The cluster under test: its nodes, the proxy in front of each node's cluster listener
//! (`--cluster-peers` names the proxies, so partitions are cuts in the proxy), the shared
//! secret, and the replicated topic configured on every node each time it starts (a wiped
//! node has lost its `nsqd.dat`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::history::NodeNum;
use crate::node::{Node, NodeError};
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

impl Cluster {
    /// Picks the ports, starts the proxies and writes the secret; no node runs yet.
    pub async fn new(
        bin: &Path,
        n: usize,
        run_dir: &Path,
        topic: &str,
    ) -> Result<Cluster, NodeError> {
        let io = |what| {
            move |source| NodeError::Io {
                node: 0,
                what,
                source,
            }
        };
        let nodes = (1..=n)
            .map(|num| Node::new(num, run_dir))
            .collect::<Result<Vec<_>, _>>()?;
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
        Ok(Cluster {
            nodes,
            links,
            topic: topic.to_string(),
            bin: bin.to_path_buf(),
            flags: vec![
                format!("--cluster-peers={}", peers.join(",")),
                format!("--cluster-secret-file={}", secret.display()),
            ],
            crashes: Vec::new(),
        })
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

    /// Every link restored, every paused node continued, every stopped node started.
    pub async fn heal(&mut self) -> Result<(), NodeError> {
        self.links.heal();
        for num in 1..=self.nodes.len() {
            if self.node(num).is_paused() {
                self.node(num).pause(false).await;
            }
            if !self.node(num).is_up() {
                self.start(num).await?;
            }
        }
        Ok(())
    }

    /// Kills every node.
    pub async fn shutdown(&mut self) {
        for node in &mut self.nodes {
            node.kill().await;
        }
    }
}
