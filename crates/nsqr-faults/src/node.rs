//! One nsqrd node of the cluster under test: its ports (fixed for the run, so a restarted
//! node comes back where its peers expect it), its directory (data, and a log that outlives
//! wipes and restarts), its process, and the faults a process can suffer: SIGKILL, SIGSTOP /
//! SIGCONT, its data directory wiped.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

use crate::disk::Tmpfs;
use crate::history::NodeNum;

/// How long a node may take to start listening before the run fails.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// Why a node could not be run.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    #[error("node {node}: {what}: {source}")]
    Io {
        node: NodeNum,
        what: &'static str,
        source: std::io::Error,
    },
    #[error("node {node}: not listening on {addr} within {START_TIMEOUT:?}")]
    StartTimeout { node: NodeNum, addr: SocketAddr },
    #[error("node {node}: exited at start ({status}); see {log}")]
    Exited {
        node: NodeNum,
        status: ExitStatus,
        log: String,
    },
    #[error("node {node}: a configuration request answered {answer:?}")]
    Configure { node: NodeNum, answer: String },
}

/// Ports below Linux's default range for outgoing connections (32768-60999): a node's port
/// must stay free while the node is down, and an outgoing connection of anyone on the machine
/// can take a free port of that range.
const PORTS: std::ops::Range<u16> = 20_000..32_768;

/// A free port on 127.0.0.1 (bound, then released for the node to take): a random one of
/// `PORTS`, or one the kernel picks if none of 100 tries is free.
pub fn free_port() -> std::io::Result<SocketAddr> {
    for _ in 0..100 {
        if let Ok(l) = TcpListener::bind(("127.0.0.1", fastrand::u16(PORTS))) {
            return l.local_addr();
        }
    }
    TcpListener::bind("127.0.0.1:0")?.local_addr()
}

pub struct Node {
    pub num: NodeNum,
    pub tcp: SocketAddr,
    pub http: SocketAddr,
    /// The node's own cluster listener (its peers reach it through the proxy).
    pub cluster: SocketAddr,
    dir: PathBuf,
    /// Declared before `disk`: dropped (and so killed) before the disk is unmounted.
    child: Option<Child>,
    /// The data directory's own file system, when the run fills disks.
    disk: Option<Tmpfs>,
    /// Whether the disk was made full (until the heal frees it).
    full: bool,
    stopped: bool,
}

impl Node {
    pub fn new(num: NodeNum, run_dir: &Path) -> Result<Node, NodeError> {
        let io = |what| {
            move |source| NodeError::Io {
                node: num,
                what,
                source,
            }
        };
        let dir = run_dir.join(format!("node-{num}"));
        std::fs::create_dir_all(dir.join("data")).map_err(io("create its directory"))?;
        Ok(Node {
            num,
            tcp: free_port().map_err(io("pick a port"))?,
            http: free_port().map_err(io("pick a port"))?,
            cluster: free_port().map_err(io("pick a port"))?,
            dir,
            child: None,
            disk: None,
            full: false,
            stopped: false,
        })
    }

    /// Gives the node's data directory a tmpfs of `mib` MiB of its own (the node must not
    /// have started); the error says why not.
    pub fn mount_disk(&mut self, mib: u64) -> Result<(), String> {
        self.disk = Some(Tmpfs::mount(&self.dir.join("data"), mib)?);
        Ok(())
    }

    /// Fills the node's disk; the ballast's size.
    pub fn fill_disk(&mut self) -> Result<u64, NodeError> {
        let Some(disk) = &self.disk else {
            return Err(NodeError::Io {
                node: self.num,
                what: "fill its disk",
                source: std::io::Error::other("no tmpfs of its own"),
            });
        };
        self.full = true;
        disk.fill().map_err(|source| NodeError::Io {
            node: self.num,
            what: "fill its disk",
            source,
        })
    }

    /// Gives the space back if the disk was made full; whether it was.
    pub fn free_disk(&mut self) -> Result<bool, NodeError> {
        let (Some(disk), true) = (&self.disk, self.full) else {
            return Ok(false);
        };
        disk.free().map_err(|source| NodeError::Io {
            node: self.num,
            what: "free its disk",
            source,
        })?;
        self.full = false;
        Ok(true)
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.join("nsqrd.log")
    }

    /// The panics the node's log shows (over all its runs): a task that panicked (a Raft
    /// group's core, say) can leave the process up but the group dead.
    pub fn panics(&self) -> Vec<String> {
        let log = std::fs::read(self.log_path()).unwrap_or_default();
        let log = String::from_utf8_lossy(&log);
        let mut lines = log.lines();
        let mut out = Vec::new();
        while let Some(line) = lines.next() {
            if line.contains("panicked at") {
                out.push(format!("{line} {}", lines.next().unwrap_or("")));
            }
        }
        out
    }

    pub fn is_up(&self) -> bool {
        self.child.is_some()
    }

    /// Starts nsqrd with the cluster flags and waits until its TCP port answers.
    pub async fn start(&mut self, bin: &Path, cluster_flags: &[String]) -> Result<(), NodeError> {
        let num = self.num;
        let io = |what| {
            move |source| NodeError::Io {
                node: num,
                what,
                source,
            }
        };
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .map_err(io("open its log"))?;
        let log2 = log.try_clone().map_err(io("open its log"))?;
        let child = Command::new(bin)
            .arg(format!("--data-path={}", self.dir.join("data").display()))
            .arg(format!("--tcp-address={}", self.tcp))
            .arg(format!("--http-address={}", self.http))
            .arg(format!("--cluster-node-id={num}"))
            .arg(format!("--cluster-address={}", self.cluster))
            .args(cluster_flags)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            .kill_on_drop(true)
            .spawn()
            .map_err(io("spawn nsqrd"))?;
        self.child = Some(child);
        self.stopped = false;
        let deadline = tokio::time::Instant::now() + START_TIMEOUT;
        loop {
            if TcpStream::connect(self.tcp).await.is_ok() {
                return Ok(());
            }
            if let Some(status) = self.exited() {
                return Err(NodeError::Exited {
                    node: num,
                    status,
                    log: self.log_path().display().to_string(),
                });
            }
            if tokio::time::Instant::now() > deadline {
                return Err(NodeError::StartTimeout {
                    node: num,
                    addr: self.tcp,
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The exit status if the process ended on its own (a crash: the harness only kills).
    pub fn exited(&mut self) -> Option<ExitStatus> {
        let status = self.child.as_mut()?.try_wait().ok()??;
        self.child = None;
        Some(status)
    }

    /// SIGKILL, and reap.
    pub async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.start_kill();
            let _ = child.wait().await;
        }
        self.stopped = false;
    }

    /// SIGSTOP (`pause = true`) or SIGCONT.
    pub async fn pause(&mut self, pause: bool) {
        let Some(pid) = self.child.as_ref().and_then(Child::id) else {
            return;
        };
        let signal = if pause { "-STOP" } else { "-CONT" };
        let _ = Command::new("kill")
            .args([signal, &pid.to_string()])
            .status()
            .await;
        self.stopped = pause;
    }

    pub fn is_paused(&self) -> bool {
        self.stopped
    }

    /// Removes everything in the data directory (the node must be down).
    pub fn wipe(&self) -> Result<(), NodeError> {
        let io = |what| {
            move |source| NodeError::Io {
                node: self.num,
                what,
                source,
            }
        };
        if let Some(disk) = &self.disk {
            return disk.wipe().map_err(io("wipe its data"));
        }
        let data = self.dir.join("data");
        std::fs::remove_dir_all(&data).map_err(io("wipe its data"))?;
        std::fs::create_dir_all(&data).map_err(io("recreate its data directory"))
    }

    /// Whether this node's `/stats` lists every one of `channels` of `topic` (a follower
    /// lists a channel once its creation is committed).
    pub async fn lists_channels(&self, topic: &str, channels: &[&str]) -> bool {
        let path = format!("/stats?format=json&topic={topic}");
        let Ok(stats) = http(self.http, "GET", &path, "").await else {
            return false;
        };
        channels
            .iter()
            .all(|c| stats.contains(&format!("\"channel_name\":\"{c}\"")))
    }

    /// The Raft term in which this node leads `topic`'s group, from its `/metrics`; None when
    /// it does not lead it (or does not answer).
    pub async fn leads(&self, topic: &str) -> Option<u64> {
        leads_at(self.http, topic).await
    }

    /// `POST /topic/config?topic=<topic>` with `body`, retried while the node starts.
    pub async fn configure(&self, topic: &str, body: &str) -> Result<(), NodeError> {
        self.post_until_ok(&format!("/topic/config?topic={topic}"), body)
            .await
    }

    /// `POST <path>` with `body`, retried (10 s at most) until it answers 200.
    pub async fn post_until_ok(&self, path: &str, body: &str) -> Result<(), NodeError> {
        let mut answer = String::new();
        for _ in 0..50 {
            match http_post(self.http, path, body).await {
                Ok(a) if a.starts_with("HTTP/1.1 200") => return Ok(()),
                Ok(a) => answer = a,
                Err(e) => answer = e.to_string(),
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Err(NodeError::Configure {
            node: self.num,
            answer,
        })
    }
}

/// One HTTP/1.1 POST with `Connection: close`; the whole answer as text.
async fn http_post(addr: SocketAddr, path: &str, body: &str) -> std::io::Result<String> {
    http(addr, "POST", path, body).await
}

/// One HTTP/1.1 request with `Connection: close`; the whole answer as text.
async fn http(addr: SocketAddr, method: &str, path: &str, body: &str) -> std::io::Result<String> {
    let exchange = async {
        let mut s = TcpStream::connect(addr).await?;
        let req = format!(
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        s.write_all(req.as_bytes()).await?;
        let mut out = Vec::new();
        s.read_to_end(&mut out).await?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    };
    tokio::time::timeout(Duration::from_secs(5), exchange)
        .await
        .unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into()))
}

/// [`Node::leads`] of the node whose HTTP address is `addr`.
pub async fn leads_at(addr: SocketAddr, topic: &str) -> Option<u64> {
    let metrics = Metrics::get(addr).await?;
    (metrics.sample("nsqr_topic_is_leader", topic) == Some(1))
        .then(|| metrics.sample("nsqr_topic_raft_term", topic))
        .flatten()
}

/// A node's `/metrics` page.
pub struct Metrics(String);

impl Metrics {
    /// The page of the node whose HTTP address is `addr`; None if it does not answer.
    pub async fn get(addr: SocketAddr) -> Option<Metrics> {
        http(addr, "GET", "/metrics", "").await.ok().map(Metrics)
    }

    /// The value of `name{topic="<topic>"}`.
    pub fn sample(&self, name: &str, topic: &str) -> Option<u64> {
        let prefix = format!("{name}{{topic=\"{topic}\"}} ");
        self.0
            .lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .and_then(|v| v.trim().parse::<u64>().ok())
    }
}
