//! The nodes of a `cluster` run and their lookupd: started here (nsqrd or `--reference`, with
//! nsqrlookupd or `--lookupd-bin`), on loopback or in network namespaces, or given by address.
//! Started processes are killed, and their directories and namespaces removed, when the
//! [`Cluster`] is dropped.

use std::path::{Path, PathBuf};

use super::netns::Netns;
use crate::cli::ClusterCmd;
use crate::fail::{err, Result};
use crate::procstat::{cpu_time, status_bytes};
use crate::server::{find_binary, find_nsqrd, nsqd_flags, temp_dir, version, Launch, Server};

/// One node as the benchmark sees it.
#[derive(Debug, Clone)]
pub struct Node {
    /// Its TCP address, as it registers with lookupd (`broadcast_address:tcp_port`).
    pub tcp: String,
    /// Its process, when known (started here, or `--nsqd-pids`): CPU and memory come from it.
    pub pid: Option<u32>,
}

impl Node {
    /// CPU time used so far, in seconds.
    pub fn cpu_s(&self) -> Result<Option<f64>> {
        self.pid
            .map(|p| cpu_time(p).map(|d| d.as_secs_f64()).map_err(err))
            .transpose()
    }

    /// A `Vm*` field of its /proc status in MB (VmRSS, VmHWM).
    pub fn mem_mb(&self, field: &str) -> Option<f64> {
        let pid = self.pid?;
        status_bytes(pid, field).ok().map(|b| b as f64 / 1e6)
    }
}

/// What the report says about the servers.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Setup {
    pub server: String,
    pub server_path: Option<PathBuf>,
    pub lookupd: String,
    pub lookupd_path: Option<PathBuf>,
    pub lookupd_http_address: String,
    /// "loopback", "netns" (with its shaping) or "given".
    pub network: String,
    pub server_args: Vec<String>,
}

/// The server (nsqrd, or `--reference`) and lookupd binaries to start; both must exist.
fn binaries(a: &ClusterCmd) -> Result<(PathBuf, PathBuf)> {
    let server = match &a.reference {
        Some(p) => p.clone(),
        None => find_nsqrd(a.nsqrd.as_deref())?,
    };
    let lookupd = find_binary(
        "nsqrlookupd",
        "--lookupd-bin",
        a.cluster.lookupd_bin.as_deref(),
    )?;
    for p in [&server, &lookupd] {
        if !p.is_file() {
            return Err(err(format!("{} does not exist", p.display())));
        }
    }
    Ok((server, lookupd))
}

/// Start lookupd listening on `ip`, ports chosen by the system.
async fn start_lookupd(bin: &Path, ip: &str) -> Result<Server> {
    Server::launch(Launch {
        program: bin.to_path_buf(),
        args: vec![
            format!("--tcp-address={ip}:0"),
            format!("--http-address={ip}:0"),
            format!("--broadcast-address={ip}"),
        ],
        http: true,
        ..Default::default()
    })
    .await
    .map_err(|e| err(format!("lookupd: {e}")))
}

/// Nodes and lookupd. Field order is drop order: the servers stop before the namespaces they
/// run in are removed.
pub struct Cluster {
    pub nodes: Vec<Node>,
    pub setup: Setup,
    servers: Vec<Server>,
    lookupd: Option<Server>,
    netns: Option<Netns>,
}

impl Cluster {
    /// Start the nodes and their lookupd, or take the given ones.
    pub async fn start(a: &ClusterCmd) -> Result<Cluster> {
        let c = &a.cluster;
        if !c.nsqd_tcp_addresses.is_empty() {
            return Ok(Self::given(a));
        }
        let (server, lookupd_bin) = binaries(a)?;
        let netns = if c.netns {
            Some(Netns::create(
                c.nodes,
                c.netns_rate.as_deref(),
                c.netns_delay.as_deref(),
            )?)
        } else {
            None
        };
        let lookupd_ip = netns
            .as_ref()
            .map(|n| n.lookupd_ip().to_string())
            .unwrap_or_else(|| "127.0.0.1".into());
        let lookupd = start_lookupd(&lookupd_bin, &lookupd_ip).await?;
        let server_args = node_args(a, &lookupd.tcp);
        let mut cluster = Cluster {
            nodes: Vec::new(),
            setup: Setup {
                server: version(&server),
                server_path: Some(server.clone()),
                lookupd: version(&lookupd_bin),
                lookupd_path: Some(lookupd_bin),
                lookupd_http_address: lookupd.http.clone().unwrap_or_default(),
                network: match &netns {
                    Some(n) if n.shaping.is_empty() => "netns".into(),
                    Some(n) => format!("netns ({})", n.shaping),
                    None => "loopback".into(),
                },
                server_args: server_args.clone(),
            },
            servers: Vec::new(),
            lookupd: Some(lookupd),
            netns,
        };
        for k in 0..c.nodes {
            cluster.start_node(k, &server, &server_args).await?;
        }
        Ok(cluster)
    }

    /// Start node `k` of `server` with `server_args`, in its namespace if there are any.
    async fn start_node(&mut self, k: usize, server: &Path, server_args: &[String]) -> Result<()> {
        let (host, wrapper) = match &self.netns {
            Some(n) => (n.links[k].node_ip.clone(), n.wrapper(k)),
            None => ("127.0.0.1".to_string(), Vec::new()),
        };
        let dir = temp_dir()?;
        let mut args = nsqd_flags(&host, &dir);
        args.extend(server_args.iter().cloned());
        let srv = Server::launch(Launch {
            program: server.to_path_buf(),
            wrapper,
            args,
            data_dir: Some(dir),
            http: false,
        })
        .await
        .map_err(|e| err(format!("node {k}: {e}")))?;
        self.nodes.push(Node {
            tcp: srv.tcp.clone(),
            pid: Some(srv.pid),
        });
        self.servers.push(srv);
        Ok(())
    }

    fn given(a: &ClusterCmd) -> Cluster {
        let c = &a.cluster;
        let nodes = c
            .nsqd_tcp_addresses
            .iter()
            .enumerate()
            .map(|(i, tcp)| Node {
                tcp: tcp.clone(),
                pid: c.nsqd_pids.get(i).copied(),
            })
            .collect();
        Cluster {
            nodes,
            setup: Setup {
                server: "given".into(),
                server_path: None,
                lookupd: "given".into(),
                lookupd_path: None,
                lookupd_http_address: c.lookupd_http_address.clone().unwrap_or_default(),
                network: "given".into(),
                server_args: Vec::new(),
            },
            servers: Vec::new(),
            lookupd: None,
            netns: None,
        }
    }

    /// An error with the log tail of any started process that has exited.
    pub fn explain(&mut self, e: crate::fail::Error) -> crate::fail::Error {
        let mut msg = e.to_string();
        let procs = self
            .servers
            .iter_mut()
            .enumerate()
            .map(|(k, s)| (format!("node {k}"), s))
            .chain(self.lookupd.iter_mut().map(|s| ("lookupd".to_string(), s)));
        for (name, s) in procs {
            if let Some(st) = s.exited() {
                msg += &format!("\n{name} exited ({st}); its log:\n{}", s.log_tail());
            }
        }
        err(msg)
    }
}

/// The flags every started node gets besides its listeners: its lookupd, and bench.py's
/// `--mem-queue-size` and `--max-rdy-count`, then any `--server-arg`.
fn node_args(a: &ClusterCmd, lookupd_tcp: &str) -> Vec<String> {
    let mut v = vec![
        format!("--lookupd-tcp-address={lookupd_tcp}"),
        format!("--mem-queue-size={}", a.mem_queue_size),
        format!("--max-rdy-count={}", a.rdy()),
    ];
    v.extend(a.server_arg.iter().cloned());
    v
}
