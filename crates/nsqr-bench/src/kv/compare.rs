//! `nsqr-bench compare --kv-reference <redis-server>`: nsqrd's keyspace against redis-server,
//! side by side. Each round starts nsqrd (`--kv-address=127.0.0.1:0`), then redis-server
//! (`--save "" --appendonly no`, a free loopback port), A B A B ...: one fresh server runs the
//! throughput, nubmq and expiry phases, and each memory phase (RSS per key, per element of
//! each data shape) its own fresh one (so its baseline is an empty server). The table shows medians over rounds and the ratio nsqrd / redis-server.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::conn::RespConn;
use super::phases::{Metrics, Spec, Target};
use super::{cell, measure, rows, Phase};
use crate::cli::CompareArgs;
use crate::compare::{print_sides, ServerResult};
use crate::fail::{err, Result};
use crate::machine::Machine;
use crate::report::{emit, Render, Table};
use crate::server::{find_nsqrd, version, Server};
use crate::stats::{middle, sorted};

/// A redis-server for the comparison; killed and its directory removed when dropped.
struct Redis {
    child: Child,
    pid: u32,
    addr: String,
    dir: PathBuf,
}

impl Redis {
    async fn start(bin: &Path) -> Result<Redis> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let dir =
            std::env::temp_dir().join(format!("nsqr-bench-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let child = Command::new(bin)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .arg("--dir")
            .arg(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| err(format!("cannot start {}: {e}", bin.display())))?;
        let r = Redis {
            pid: child.id(),
            child,
            addr: format!("127.0.0.1:{port}"),
            dir,
        };
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Ok(mut c) = RespConn::connect(&r.addr).await {
                if c.cmd(&["PING"]).await.is_ok() {
                    return Ok(r);
                }
            }
            if Instant::now() > deadline {
                return Err(err(format!(
                    "{} did not answer PING within 15s",
                    bin.display()
                )));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Which server a round starts.
#[derive(Clone, Copy)]
enum Kind {
    Nsqrd,
    Redis,
}

/// A running server of either kind.
enum Running {
    Nsqrd(Server),
    Redis(Redis),
}

impl Running {
    fn target(&self) -> Target {
        match self {
            Running::Nsqrd(s) => Target {
                addr: s.kv.clone(),
                pid: Some(s.pid),
            },
            Running::Redis(r) => Target {
                addr: r.addr.clone(),
                pid: Some(r.pid),
            },
        }
    }
}

async fn start(kind: Kind, bin: &Path, extra: &[String]) -> Result<Running> {
    match kind {
        Kind::Nsqrd => {
            let mut args = vec!["--kv-address=127.0.0.1:0".to_string()];
            args.extend_from_slice(extra);
            let s = Server::start(bin, &args).await?;
            if s.kv.is_empty() {
                return Err(err(format!(
                    "{} did not report \"KV: listening on\"",
                    bin.display()
                )));
            }
            Ok(Running::Nsqrd(s))
        }
        Kind::Redis => Ok(Running::Redis(Redis::start(bin).await?)),
    }
}

/// One round on one server: the throughput phases on a fresh server, then each memory phase
/// (RSS and the data shapes) on a fresh one of its own.
async fn round(kind: Kind, bin: &Path, a: &CompareArgs, s: &Spec) -> Result<Metrics> {
    let (alone, work): (Vec<Phase>, Vec<Phase>) =
        a.kv.kv_phases.iter().copied().partition(|p| p.alone());
    let mut m = Metrics::new();
    if !work.is_empty() {
        let srv = start(kind, bin, &a.server_arg).await?;
        m = measure(&srv.target(), s, &work).await?;
    }
    for p in alone {
        let srv = start(kind, bin, &a.server_arg).await?;
        m.extend(measure(&srv.target(), s, &[p]).await?);
    }
    Ok(m)
}

#[derive(Debug, Serialize)]
struct Report {
    machine: Machine,
    nsqrd: ServerResult,
    reference: ServerResult,
    /// nsqrd median / reference median.
    ratio: Metrics,
    /// The settings line over the table.
    #[serde(skip)]
    heading: String,
    #[serde(skip)]
    timeout_ms: f64,
}

/// The middle of the rounds' values (a NaN, events that never came, sorts after every
/// number and is never averaged into a neighbour).
fn median(rounds: &[Metrics], key: &str) -> Option<f64> {
    middle(&sorted(rounds.iter().filter_map(|m| m.get(key).copied())))
}

fn side(name: &str, path: &Path, rounds: Vec<Metrics>) -> ServerResult {
    let median = rows()
        .filter_map(|r| Some((r.key.to_string(), median(&rounds, r.key)?)))
        .collect();
    ServerResult {
        name: name.to_string(),
        path: path.to_path_buf(),
        version: version(path),
        rounds,
        median,
    }
}

pub async fn run(a: &CompareArgs) -> Result<bool> {
    let nsqrd = find_nsqrd(a.nsqrd.as_deref())?;
    let redis = a
        .kv_reference
        .clone()
        .ok_or_else(|| err("compare needs --kv-reference PATH (a redis-server binary)"))?;
    let s = Spec::from_args(&a.kv);
    let mut machine = Machine::probe();
    let mut results: [Vec<Metrics>; 2] = [Vec::new(), Vec::new()];
    for r in 1..=a.rounds {
        for (i, (kind, bin, name)) in [
            (Kind::Nsqrd, &nsqrd, "nsqrd"),
            (Kind::Redis, &redis, "redis-server"),
        ]
        .into_iter()
        .enumerate()
        {
            eprintln!("round {r}/{}: {name} ...", a.rounds);
            let m = round(kind, bin, a, &s)
                .await
                .map_err(|e| err(format!("{name} (round {r}): {e}")))?;
            results[i].push(m);
        }
    }
    machine.load_after = crate::machine::load();
    let [ours, theirs] = results;
    let report = Report {
        machine,
        nsqrd: side("nsqrd", &nsqrd, ours),
        reference: side("redis-server", &redis, theirs),
        ratio: Metrics::new(),
        heading: heading(a),
        timeout_ms: a.kv.expiry_timeout.as_millis() as f64,
    };
    let ratio = rows()
        .filter_map(|r| {
            let (x, y) = (
                report.nsqrd.median.get(r.key)?,
                report.reference.median.get(r.key)?,
            );
            Some((r.key.to_string(), x / y))
        })
        .collect();
    let report = Report { ratio, ..report };
    emit(&report, a.json)?;
    Ok(true)
}

fn heading(a: &CompareArgs) -> String {
    let k = &a.kv;
    format!(
        "nsqr-bench compare (keyspace): {} rounds (A B alternating); redis-benchmark -n {} -r {} -c {} (-P {}); nubmq {} conn x {} SET + {} GET; expiry {} shared among {} volatile; RSS with {} keys, {} elements per shape",
        a.rounds, k.kv_requests, k.kv_keyspace, k.kv_clients, k.kv_pipeline, k.nubmq_connections,
        k.nubmq_ops, k.nubmq_ops, k.expiry_shared, k.expiry_volatile, k.rss_keys, k.mem_elements
    )
}

impl Render for Report {
    fn print_human(&self) {
        print_table(self);
    }
}

fn print_table(r: &Report) {
    let timeout = r.timeout_ms;
    println!("{}", r.heading);
    print_sides(&r.nsqrd, &r.reference, &r.machine);
    let mut t = Table::new([
        format!("metric (median of {})", r.nsqrd.rounds.len()),
        "nsqrd".into(),
        "redis-server".into(),
        "nsqrd/redis".into(),
        "better".into(),
    ]);
    for row in rows().filter(|row| r.nsqrd.median.contains_key(row.key)) {
        let ratio = r.ratio.get(row.key).copied().filter(|v| v.is_finite());
        let better = match (
            ratio,
            r.nsqrd.median.get(row.key),
            r.reference.median.get(row.key),
        ) {
            (Some(1.0), ..) => "same",
            (Some(x), ..) if (x > 1.0) == row.higher_is_better => "nsqrd",
            (Some(_), ..) => "redis",
            // A NaN is an event that never came: the other side is better.
            (None, Some(a), Some(b)) if a.is_nan() && !b.is_nan() => "redis",
            (None, Some(a), Some(b)) if b.is_nan() && !a.is_nan() => "nsqrd",
            _ => "-",
        };
        t.row(vec![
            row.label.to_string(),
            cell(&r.nsqrd.median, row.key, timeout),
            cell(&r.reference.median, row.key, timeout),
            ratio.map_or("-".to_string(), |v| format!("{v:.2}x")),
            better.to_string(),
        ]);
    }
    t.print();
}
