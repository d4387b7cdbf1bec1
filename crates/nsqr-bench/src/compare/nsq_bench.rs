//! `compare --nsq-bench DIR`: nsq's own benchmark tools beside the project's. Users measure
//! with `bench_writer` and `bench_reader` as nsq's `bench.sh` runs them, so the report shows
//! what those tools see too: on a fresh server, the topic and its channel are created first
//! (bench.sh does it over HTTP; here a `SUB` over TCP, so the floor can be measured the same
//! way), `bench_writer` publishes for `--duration`, then `bench_reader` consumes for
//! `--duration` (both with `--size`, `--batch-size` and `--rdy`; their connection count is
//! Go's GOMAXPROCS, the number of CPUs unless set). Each tool prints its own rate; the server's
//! CPU is sampled around each. Against `nsqr-bench floor` the same run gives each tool's ceiling on
//! this machine: what it reaches against a server that does nothing.
//!
//! The tools count what they did, not what arrived: there is no loss check here, and
//! `bench_reader` counts for the whole `--duration` whether or not the backlog ran out.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::Metrics;
use crate::cli::CompareArgs;
use crate::fail::{err, Result};
use crate::procstat::cpu_time;
use crate::server::Server;

/// bench.sh's topic and channel.
const TOPIC: &str = "sub_bench";
const CHANNEL: &str = "ch";
/// How much longer than `--duration` a tool may take before it is killed.
const GRACE: Duration = Duration::from_secs(60);

/// What one tool printed on its last line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ToolResult {
    pub duration: Duration,
    pub ops_per_sec: f64,
}

impl ToolResult {
    pub fn messages(&self) -> f64 {
        self.ops_per_sec * self.duration.as_secs_f64()
    }
}

/// `... duration: 5.001234s - 580.989mb/s - 3046056.030ops/s - 0.328us/op`.
pub fn parse_tool_output(out: &str) -> Option<ToolResult> {
    let line = out.lines().rev().find(|l| l.contains("duration: "))?;
    let rest = &line[line.find("duration: ")? + "duration: ".len()..];
    let mut parts = rest.split(" - ");
    let duration = nsq_common::duration::parse(parts.next()?.trim()).ok()?;
    let ops = parts
        .find_map(|p| p.trim().strip_suffix("ops/s"))?
        .parse::<f64>()
        .ok()?;
    Some(ToolResult {
        duration,
        ops_per_sec: ops,
    })
}

/// Kills the tool if the measurement is abandoned (error, Ctrl-C).
struct Tool(Child);

impl Drop for Tool {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Run `dir/name args`, bounded by `--duration` plus a grace period; its result line.
async fn run_tool(dir: &Path, name: &str, args: &[String], limit: Duration) -> Result<ToolResult> {
    let bin = dir.join(name);
    let child = Command::new(&bin)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| err(format!("cannot start {}: {e}", bin.display())))?;
    let mut tool = Tool(child);
    // Read both pipes while it runs, so a chatty tool never blocks on a full pipe.
    let readers: Vec<_> = [
        tool.0
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
        tool.0
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .flatten()
    .map(|mut p| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = p.read_to_string(&mut s);
            s
        })
    })
    .collect();
    let deadline = Instant::now() + limit;
    while tool.0.try_wait()?.is_none() {
        if Instant::now() >= deadline {
            return Err(err(format!("{name} did not finish within {limit:?}")));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let out: String = readers.into_iter().filter_map(|r| r.join().ok()).collect();
    let status = tool.0.wait()?;
    if !status.success() {
        return Err(err(format!("{name} failed ({status}):\n{out}")));
    }
    parse_tool_output(&out).ok_or_else(|| err(format!("{name}: no result line in:\n{out}")))
}

/// Create the topic and channel as bench.sh does before publishing.
async fn create_channel(addr: &str) -> Result<()> {
    let config = crate::publisher::bench_config();
    crate::subscriber::create_channel(addr, TOPIC, CHANNEL, &config).await
}

/// bench_writer then bench_reader against `srv`, with the server's CPU around each.
pub(super) async fn measure(srv: &Server, a: &CompareArgs, dir: &Path) -> Result<Metrics> {
    create_channel(&srv.tcp).await?;
    let runfor = nsq_common::duration::format(a.publish.duration);
    let common = [
        format!("--nsqd-tcp-address={}", srv.tcp),
        format!("--topic={TOPIC}"),
        format!("--size={}", a.body.size),
        format!("--runfor={runfor}"),
    ];
    let limit = a.publish.duration + GRACE;
    let mut m = Metrics::new();
    let mut writer_args = common.to_vec();
    writer_args.push(format!("--batch-size={}", a.publish.batch_size));
    let c0 = cpu_time(srv.pid).map_err(err)?;
    let w = run_tool(dir, "bench_writer", &writer_args, limit).await?;
    let c1 = cpu_time(srv.pid).map_err(err)?;
    insert(&mut m, "pub", &w, c1 - c0, a.body.size);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut reader_args = common.to_vec();
    reader_args.extend([
        format!("--channel={CHANNEL}"),
        format!("--rdy={}", a.consume.rdy()),
    ]);
    let c2 = cpu_time(srv.pid).map_err(err)?;
    let r = run_tool(dir, "bench_reader", &reader_args, limit).await?;
    let c3 = cpu_time(srv.pid).map_err(err)?;
    insert(&mut m, "sub", &r, c3 - c2, a.body.size);
    Ok(m)
}

fn insert(m: &mut Metrics, side: &str, r: &ToolResult, cpu: Duration, size: usize) {
    m.insert(format!("nsq_bench_{side}_msgs_per_sec"), r.ops_per_sec);
    m.insert(
        format!("nsq_bench_{side}_mb_per_sec"),
        r.ops_per_sec * size as f64 / 1e6,
    );
    m.insert(
        format!("nsq_bench_{side}_cpu_us_per_msg"),
        cpu.as_secs_f64() * 1e6 / r.messages().max(1.0),
    );
}

/// Both tools must be in `dir`.
pub fn check_dir(dir: &Path) -> Result<()> {
    for t in ["bench_writer", "bench_reader"] {
        if !dir.join(t).is_file() {
            return Err(err(format!(
                "--nsq-bench: no {t} in {} (build nsq's bench/bench_writer and bench/bench_reader)",
                dir.display()
            )));
        }
    }
    Ok(())
}

/// GOMAXPROCS as the tools will see it: the environment's, else the CPU count.
pub fn gomaxprocs() -> String {
    std::env::var("GOMAXPROCS").unwrap_or_else(|_| {
        std::thread::available_parallelism()
            .map(|n| n.get().to_string())
            .unwrap_or_default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_tools_last_line() {
        let out = "[bench_writer] 2026/11/24 04:13:33 sleeping\n[bench_writer] 2026/11/24 04:13:34 duration: 1.001557414s - 580.989mb/s - 3046056.030ops/s - 0.328us/op\n";
        let r = parse_tool_output(out).unwrap();
        assert_eq!(r.duration, Duration::from_nanos(1_001_557_414));
        assert_eq!(r.ops_per_sec, 3046056.030);
        assert!((r.messages() - 3_050_800.0).abs() < 10.0);
        let r = parse_tool_output("duration: 1m0.5s - 1.0mb/s - 10.000ops/s - 1us/op").unwrap();
        assert_eq!(r.duration, Duration::from_millis(60_500));
        assert_eq!(parse_tool_output("panic: E_BAD_TOPIC"), None);
        assert_eq!(parse_tool_output("duration: 1s - 2mb/s"), None);
    }
}
