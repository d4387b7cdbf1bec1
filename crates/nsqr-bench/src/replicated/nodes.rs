//! The servers of one side of a round: `replicas` nsqrd nodes joined by the `--cluster-*`
//! flags (cluster ports picked free on 127.0.0.1 just before they start, one shared secret)
//! with the topic set to `replicas` on each, or one nsqrd without any cluster flag. The
//! topic's leader is the node whose `/stats` says so, once a first publish is acknowledged (a
//! follower forwards a publish to the leader, so whoever acknowledges it may not lead).
//! Dropping a [`Side`] kills its processes and removes its directories.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::fail::{err, Result};
use crate::procstat::cpu_time;
use crate::queues::HttpConn;
use crate::server::{nsqd_flags, temp_dir, Launch, Server};

/// How long a new group may take to elect its leader on a loaded machine.
const ELECTION_TIMEOUT: Duration = Duration::from_secs(60);

/// One side's running nodes.
pub struct Side {
    servers: Vec<Server>,
    /// Index in `servers` of the topic's leader (0 for a single node).
    pub leader: usize,
    secret_dir: Option<PathBuf>,
}

impl Drop for Side {
    fn drop(&mut self) {
        self.servers.clear();
        if let Some(d) = &self.secret_dir {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

impl Side {
    /// `nodes` nodes of `bin` with `args`; more than one are joined as a cluster with
    /// `topic` at `replicas = nodes` on each.
    pub async fn start(bin: &Path, nodes: usize, args: &[String], topic: &str) -> Result<Side> {
        let mut side = Side {
            servers: Vec::new(),
            leader: 0,
            secret_dir: None,
        };
        let cluster = if nodes > 1 {
            let dir = temp_dir()?;
            side.secret_dir = Some(dir.clone());
            cluster_flags(nodes, &dir)?
        } else {
            vec![Vec::new()]
        };
        for (k, own) in cluster.into_iter().enumerate() {
            let dir = temp_dir()?;
            let mut all = nsqd_flags("127.0.0.1", &dir);
            all.extend(own);
            all.extend(args.iter().cloned());
            let srv = Server::launch(Launch {
                program: bin.to_path_buf(),
                args: all,
                data_dir: Some(dir),
                http: true,
                ..Default::default()
            })
            .await
            .map_err(|e| err(format!("node {}: {e}", k + 1)))?;
            side.servers.push(srv);
        }
        let body = format!("{{\"replicas\":{nodes}}}");
        for k in (0..side.servers.len()).filter(|_| nodes > 1) {
            let path = format!("/topic/config?topic={topic}");
            side.http(k)
                .await?
                .call("POST", &path, Bytes::from(body.clone()))
                .await?;
        }
        Ok(side)
    }

    async fn http(&self, k: usize) -> Result<HttpConn> {
        let addr = self.servers[k]
            .http
            .as_deref()
            .ok_or_else(|| err(format!("node {} logged no HTTP address", k + 1)))?;
        HttpConn::connect(addr).await
    }

    /// Publish `probe` over HTTP to each node in turn until one acknowledges it, then find the
    /// node whose `/stats` says it leads the topic (a single node leads it).
    pub async fn find_leader(&mut self, topic: &str, probe: Bytes) -> Result<()> {
        let deadline = Instant::now() + ELECTION_TIMEOUT;
        let path = format!("/pub?topic={topic}");
        let mut refusals = Vec::new();
        'published: loop {
            for k in 0..self.servers.len() {
                match self.http(k).await?.call("POST", &path, probe.clone()).await {
                    Ok(_) => break 'published,
                    Err(e) => refusals.push(format!("node {}: {e}", k + 1)),
                }
            }
            if Instant::now() >= deadline {
                return Err(err(format!(
                    "no leader of {topic} took a publish within {ELECTION_TIMEOUT:?}: {}",
                    refusals.join("; ")
                )));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        if self.servers.len() == 1 {
            self.leader = 0;
            return Ok(());
        }
        let stats = format!("/stats?format=json&topic={topic}");
        loop {
            for k in 0..self.servers.len() {
                let body = self
                    .http(k)
                    .await?
                    .call("GET", &stats, Bytes::new())
                    .await?;
                let doc: serde_json::Value = serde_json::from_slice(&body)
                    .map_err(|e| err(format!("node {} /stats: {e}", k + 1)))?;
                if doc["topics"][0]["replication"]["role"] == "leader" {
                    self.leader = k;
                    return Ok(());
                }
            }
            if Instant::now() >= deadline {
                return Err(err(format!(
                    "no node says it leads {topic} within {ELECTION_TIMEOUT:?}"
                )));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The leader's TCP address.
    pub fn leader_tcp(&self) -> &str {
        &self.servers[self.leader].tcp
    }

    /// Process ids of the nodes, the leader first (for `perf record -p`).
    pub fn pids(&self) -> Vec<u32> {
        let leader = self.servers[self.leader].pid;
        std::iter::once(leader)
            .chain(self.servers.iter().map(|s| s.pid).filter(|&p| p != leader))
            .collect()
    }

    /// CPU seconds used so far by all nodes together.
    pub fn cpu_s(&self) -> Result<f64> {
        self.servers
            .iter()
            .map(|s| cpu_time(s.pid).map(|d| d.as_secs_f64()).map_err(err))
            .sum()
    }

    /// An error with the log tail of every node that has exited.
    pub fn explain(&mut self, e: crate::fail::Error) -> crate::fail::Error {
        let mut msg = e.to_string();
        for (k, s) in self.servers.iter_mut().enumerate() {
            if let Some(st) = s.exited() {
                msg += &format!("\nnode {} exited ({st}); its log:\n{}", k + 1, s.log_tail());
            }
        }
        err(msg)
    }
}

/// The `--cluster-*` flags of `nodes` nodes on free 127.0.0.1 ports, their secret in `dir`.
fn cluster_flags(nodes: usize, dir: &Path) -> Result<Vec<Vec<String>>> {
    let secret = dir.join("cluster-secret");
    std::fs::write(&secret, format!("nsqr-bench {:x}\n", std::process::id()))?;
    let ports = (0..nodes)
        .map(|_| Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port()))
        .collect::<Result<Vec<u16>>>()?;
    let peers: Vec<String> = ports
        .iter()
        .enumerate()
        .map(|(i, p)| format!("{}@127.0.0.1:{p}", i + 1))
        .collect();
    Ok(ports
        .iter()
        .enumerate()
        .map(|(i, p)| {
            vec![
                format!("--cluster-node-id={}", i + 1),
                format!("--cluster-address=127.0.0.1:{p}"),
                format!("--cluster-peers={}", peers.join(",")),
                format!("--cluster-secret-file={}", secret.display()),
            ]
        })
        .collect())
}
