//! `nsqr bench compare`: nsqrd against a reference nsqd-compatible binary. Each round starts
//! nsqrd, then the reference (A B A B ...), each on a fresh data directory and ephemeral ports,
//! runs the same phases against it, and kills it. The table shows the median over rounds of
//! each metric and the ratio nsqrd / reference.
//!
//! Per server and round: a fresh server measures RSS per queued message (VmRSS after queueing
//! `--rss-messages` messages on a channel nobody reads, minus VmRSS before, divided by the
//! count); a second fresh server runs pub (for `--duration`), sub (consuming what pub
//! published, as nsq's bench.sh does), pubsub and latency, with the server's CPU time
//! (utime + stime) sampled around each phase and its peak RSS (VmHWM) read at the end.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::cli::BenchArgs;
use crate::client::{err, Result};
use crate::machine::Machine;
use crate::modes::{self, topic_name, Workload};
use crate::procstat::{cpu_time, status_bytes};
use crate::progress::Counters;
use crate::publisher::Stop;
use crate::server::{find_nsqrd, version, Server};
use crate::subscriber::SubGroup;

/// How a metric is shown and which direction is better.
struct Metric {
    key: &'static str,
    label: &'static str,
    higher_is_better: bool,
    decimals: usize,
}

const fn m(
    key: &'static str,
    label: &'static str,
    higher_is_better: bool,
    decimals: usize,
) -> Metric {
    Metric {
        key,
        label,
        higher_is_better,
        decimals,
    }
}

const METRICS: &[Metric] = &[
    m("pub_msgs_per_sec", "pub msgs/s", true, 0),
    m("pub_mb_per_sec", "pub MB/s", true, 1),
    m("pub_cpu_us_per_msg", "pub server CPU µs/msg", false, 3),
    m("sub_msgs_per_sec", "sub msgs/s", true, 0),
    m("sub_mb_per_sec", "sub MB/s", true, 1),
    m("sub_cpu_us_per_msg", "sub server CPU µs/msg", false, 3),
    m("pubsub_msgs_per_sec", "pubsub msgs/s (received)", true, 0),
    m("pubsub_mb_per_sec", "pubsub MB/s (received)", true, 1),
    m(
        "pubsub_cpu_us_per_msg",
        "pubsub server CPU µs/msg",
        false,
        3,
    ),
    m("latency_p50_us", "latency p50 µs", false, 0),
    m("latency_p99_us", "latency p99 µs", false, 0),
    m("latency_p999_us", "latency p99.9 µs", false, 0),
    m("latency_max_us", "latency max µs", false, 0),
    m("peak_rss_mb", "peak RSS MB", false, 1),
    m("rss_bytes_per_queued_msg", "RSS B per queued msg", false, 0),
    m(
        "rss_after_drain_ratio",
        "RSS after drain / before",
        false,
        2,
    ),
    m("fanout_pub_msgs_per_sec", "fan-out pub msgs/s", true, 0),
    m(
        "fanout_pub_cpu_us_per_msg",
        "fan-out pub CPU µs/msg",
        false,
        3,
    ),
    m("idle_pub_msgs_per_sec", "pub msgs/s, idle conns", true, 0),
    m("idle_sub_msgs_per_sec", "sub msgs/s, idle conns", true, 0),
    m("lost", "lost messages", false, 0),
    m("duplicates", "duplicate deliveries", false, 0),
];

type Metrics = BTreeMap<&'static str, f64>;

#[derive(Debug, Serialize)]
struct ServerResult {
    name: String,
    path: PathBuf,
    version: String,
    rounds: Vec<Metrics>,
    median: Metrics,
}

#[derive(Debug, Serialize)]
struct CompareReport {
    machine: Machine,
    settings: BTreeMap<&'static str, String>,
    nsqrd: ServerResult,
    reference: ServerResult,
    /// nsqrd median / reference median, per metric.
    ratio: BTreeMap<&'static str, f64>,
    ok: bool,
}

pub async fn run(a: &BenchArgs) -> Result<bool> {
    let nsqrd = find_nsqrd(a.nsqrd.as_deref())?;
    let reference = a
        .reference
        .clone()
        .ok_or_else(|| err("compare needs --reference PATH"))?;
    for p in [&nsqrd, &reference] {
        if !p.is_file() {
            return Err(err(format!("{} does not exist", p.display())));
        }
    }
    let mut machine = Machine::probe();
    let mut servers = [
        new_result("nsqrd", &nsqrd),
        new_result(&short_name(&reference), &reference),
    ];
    for round in 1..=a.rounds {
        for s in servers.iter_mut() {
            eprintln!("round {round}/{}: {} ...", a.rounds, s.name);
            let m = measure(&s.path, a)
                .await
                .map_err(|e| err(format!("{} (round {round}): {e}", s.name)))?;
            eprintln!("round {round}/{}: {} {}", a.rounds, s.name, summary(&m));
            s.rounds.push(m);
        }
    }
    machine.load_after = crate::machine::load();
    let [mut ours, mut theirs] = servers;
    ours.median = medians(&ours.rounds);
    theirs.median = medians(&theirs.rounds);
    let ratio = METRICS
        .iter()
        .filter_map(|mt| {
            let (x, y) = (ours.median.get(mt.key)?, theirs.median.get(mt.key)?);
            (*y != 0.0).then(|| (mt.key, x / y))
        })
        .collect();
    let lost = |r: &ServerResult| {
        r.rounds
            .iter()
            .map(|m| m.get("lost").copied().unwrap_or(0.0))
            .sum::<f64>()
    };
    let ok = lost(&ours) == 0.0 && lost(&theirs) == 0.0;
    let report = CompareReport {
        machine,
        settings: settings(a),
        nsqrd: ours,
        reference: theirs,
        ratio,
        ok,
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_table(&report);
    }
    Ok(ok)
}

fn new_result(name: &str, path: &Path) -> ServerResult {
    ServerResult {
        name: name.to_string(),
        path: path.to_path_buf(),
        version: version(path),
        rounds: Vec::new(),
        median: Metrics::new(),
    }
}

fn short_name(p: &Path) -> String {
    p.file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| "reference".into())
}

fn server_args(a: &BenchArgs) -> Vec<String> {
    let mut v = vec![format!("--mem-queue-size={}", a.mem_queue_size)];
    v.extend(a.server_arg.iter().cloned());
    v
}

/// One server, one round: the RSS probe on one fresh server, the phases on another.
async fn measure(bin: &Path, a: &BenchArgs) -> Result<Metrics> {
    let mut m = Metrics::new();
    let extra = server_args(a);
    {
        let mut srv = Server::start(bin, &extra).await?;
        let r = rss_per_queued_message(&srv, a).await;
        let (per_msg, drain_ratio) = with_log(&mut srv, r)?;
        m.insert("rss_bytes_per_queued_msg", per_msg);
        m.insert("rss_after_drain_ratio", drain_ratio);
    }
    let mut srv = Server::start(bin, &extra).await?;
    let r = phases(&srv, a, &mut m).await;
    with_log(&mut srv, r)?;
    if a.fanout_channels > 0 {
        let mut srv = Server::start(bin, &extra).await?;
        let r = fanout_phase(&srv, a, &mut m).await;
        with_log(&mut srv, r)?;
    }
    if a.idle_connections > 0 {
        let mut srv = Server::start(bin, &extra).await?;
        let r = idle_phase(&srv, a, &mut m).await;
        with_log(&mut srv, r)?;
    }
    Ok(m)
}

/// Add the server's log tail to an error when the server died.
fn with_log<T>(srv: &mut Server, r: Result<T>) -> Result<T> {
    r.map_err(|e| match srv.exited() {
        Some(st) => err(format!(
            "{e}\nserver exited ({st}); its log:\n{}",
            srv.log_tail()
        )),
        None => e,
    })
}

/// RSS per queued message, and RSS after that backlog is consumed relative to before it.
async fn rss_per_queued_message(srv: &Server, a: &BenchArgs) -> Result<(f64, f64)> {
    let w = Workload::from_args(a, &srv.tcp);
    let topic = topic_name(&w, "rss");
    // A subscribed consumer that never sends RDY: the channel exists and nobody consumes.
    let idle = SubGroup::connect(&w.sub_spec(&topic, false), &Counters::new()).await?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = status_bytes(srv.pid, "VmRSS")?;
    let (_, published) =
        modes::publish_phase(&w, &topic, w.size, Stop::Count(a.rss_messages), "rss").await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = status_bytes(srv.pid, "VmRSS")?;
    idle.finish(0, Duration::ZERO).await?;
    // Then consume the backlog and see how much memory the server gives back.
    modes::subscribe::consume(&w, &topic, &published).await?;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let drained = status_bytes(srv.pid, "VmRSS")?;
    Ok((
        after.saturating_sub(before) as f64 / published.acked.max(1) as f64,
        drained as f64 / before.max(1) as f64,
    ))
}

/// Publish to a topic with `n` channels, each held by an idle consumer (RDY 0).
async fn fanout_phase(srv: &Server, a: &BenchArgs, m: &mut Metrics) -> Result<()> {
    let w = Workload::from_args(a, &srv.tcp);
    let topic = topic_name(&w, "fanout");
    let mut holders = Vec::new();
    for i in 0..a.fanout_channels {
        let mut spec = w.sub_spec(&topic, false);
        spec.channel = format!("fan{i}");
        spec.connections = 1;
        holders.push(SubGroup::connect(&spec, &Counters::new()).await?);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let c0 = cpu_time(srv.pid).map_err(err)?;
    let (p, _) =
        modes::publish_phase(&w, &topic, w.size, Stop::After(w.duration), "fanout").await?;
    let c1 = cpu_time(srv.pid).map_err(err)?;
    m.insert("fanout_pub_msgs_per_sec", p.msgs_per_sec);
    m.insert(
        "fanout_pub_cpu_us_per_msg",
        (c1 - c0).as_secs_f64() * 1e6 / p.acked.max(1) as f64,
    );
    for h in holders {
        h.finish(0, Duration::ZERO).await?;
    }
    Ok(())
}

/// Pub then sub with `n` idle consumer connections (RDY 0, another topic) open throughout.
async fn idle_phase(srv: &Server, a: &BenchArgs, m: &mut Metrics) -> Result<()> {
    let w = Workload::from_args(a, &srv.tcp);
    let mut spec = w.sub_spec(&topic_name(&w, "idle"), false);
    spec.connections = a.idle_connections;
    let idle = SubGroup::connect(&spec, &Counters::new()).await?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let topic = topic_name(&w, "idlepub");
    let (p, published) =
        modes::publish_phase(&w, &topic, w.size, Stop::After(w.duration), "idlepub").await?;
    m.insert("idle_pub_msgs_per_sec", p.msgs_per_sec);
    let s = modes::subscribe::consume(&w, &topic, &published).await?;
    m.insert("idle_sub_msgs_per_sec", s.msgs_per_sec);
    idle.finish(0, Duration::ZERO).await?;
    Ok(())
}

async fn phases(srv: &Server, a: &BenchArgs, m: &mut Metrics) -> Result<()> {
    let w = Workload::from_args(a, &srv.tcp);
    let cpu = || cpu_time(srv.pid).map_err(err);
    let per_msg = |d: Duration, n: u64| d.as_secs_f64() * 1e6 / n.max(1) as f64;
    let settle = || tokio::time::sleep(Duration::from_millis(200));

    let topic = topic_name(&w, "pub");
    let c0 = cpu()?;
    let (p, published) =
        modes::publish_phase(&w, &topic, w.size, Stop::After(w.duration), "pub").await?;
    let c1 = cpu()?;
    m.insert("pub_msgs_per_sec", p.msgs_per_sec);
    m.insert("pub_mb_per_sec", p.mb_per_sec);
    m.insert("pub_cpu_us_per_msg", per_msg(c1 - c0, p.acked));
    settle().await;

    let c1 = cpu()?;
    let s = modes::subscribe::consume(&w, &topic, &published).await?;
    let c2 = cpu()?;
    m.insert("sub_msgs_per_sec", s.msgs_per_sec);
    m.insert("sub_mb_per_sec", s.mb_per_sec);
    m.insert("sub_cpu_us_per_msg", per_msg(c2 - c1, s.received));
    settle().await;

    let c2 = cpu()?;
    let (_, ps) = modes::pubsub::run(&w, &topic_name(&w, "pubsub"), w.size).await?;
    let c3 = cpu()?;
    m.insert("pubsub_msgs_per_sec", ps.msgs_per_sec);
    m.insert("pubsub_mb_per_sec", ps.mb_per_sec);
    m.insert("pubsub_cpu_us_per_msg", per_msg(c3 - c2, ps.received));
    settle().await;

    let (_, ls, lat) = modes::latency::run(&w, &topic_name(&w, "latency")).await?;
    m.insert("latency_p50_us", lat.p50_us);
    m.insert("latency_p99_us", lat.p99_us);
    m.insert("latency_p999_us", lat.p999_us);
    m.insert("latency_max_us", lat.max_us);

    m.insert("peak_rss_mb", status_bytes(srv.pid, "VmHWM")? as f64 / 1e6);
    m.insert("lost", (s.lost + ps.lost + ls.lost) as f64);
    m.insert(
        "duplicates",
        (s.duplicates + ps.duplicates + ls.duplicates) as f64,
    );
    Ok(())
}

fn summary(m: &Metrics) -> String {
    let g = |k: &str| m.get(k).copied().unwrap_or(0.0);
    format!(
        "pub {:.0}/s, sub {:.0}/s, pubsub {:.0}/s, p99 {:.0}µs, {:.0} B/queued msg, lost {}",
        g("pub_msgs_per_sec"),
        g("sub_msgs_per_sec"),
        g("pubsub_msgs_per_sec"),
        g("latency_p99_us"),
        g("rss_bytes_per_queued_msg"),
        g("lost")
    )
}

pub fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Medians of the metrics measured in at least one round (optional phases may be absent).
fn medians(rounds: &[Metrics]) -> Metrics {
    METRICS
        .iter()
        .filter_map(|mt| {
            let vals: Vec<f64> = rounds
                .iter()
                .filter_map(|r| r.get(mt.key).copied())
                .collect();
            (!vals.is_empty()).then(|| (mt.key, median(vals)))
        })
        .collect()
}

fn settings(a: &BenchArgs) -> BTreeMap<&'static str, String> {
    let mut s = BTreeMap::new();
    s.insert("duration", crate::duration::format(a.duration));
    s.insert("rounds", a.rounds.to_string());
    s.insert("size", a.size.to_string());
    s.insert("batch_size", a.batch_size.to_string());
    s.insert("pub_connections", a.pub_connections().to_string());
    s.insert("sub_connections", a.sub_connections().to_string());
    s.insert("pipeline", a.pipeline.to_string());
    s.insert("rdy", a.rdy.to_string());
    s.insert("latency_rate", a.rate.to_string());
    s.insert("rss_messages", a.rss_messages.to_string());
    s.insert("fanout_channels", a.fanout_channels.to_string());
    s.insert("idle_connections", a.idle_connections.to_string());
    s.insert("server_args", server_args(a).join(" "));
    s
}

fn fmt_value(v: f64, decimals: usize) -> String {
    if decimals == 0 {
        crate::progress::group(v.round().max(0.0) as u64)
    } else {
        format!("{v:.decimals$}")
    }
}

/// 2.04x, 0.53x, 0.027x: at least two significant digits down to 0.001.
fn fmt_ratio(x: f64) -> String {
    if x >= 0.1 || x == 0.0 {
        format!("{x:.2}x")
    } else if x >= 0.001 {
        format!("{x:.3}x")
    } else {
        format!("{x:.1e}x")
    }
}

fn print_table(r: &CompareReport) {
    let s = &r.settings;
    let get = |k: &str| s.get(k).cloned().unwrap_or_default();
    println!(
        "nsqr bench compare: {} rounds (A B alternating), {} per phase, {} B messages, batch {}, {} pub + {} sub conn, pipeline {}, RDY {}, latency at {} msgs/s",
        get("rounds"), get("duration"), get("size"), get("batch_size"), get("pub_connections"),
        get("sub_connections"), get("pipeline"), get("rdy"), get("latency_rate")
    );
    println!("servers started with: {}", get("server_args"));
    println!("A: {} ({})", r.nsqrd.version, r.nsqrd.path.display());
    println!(
        "B: {} ({})",
        r.reference.version,
        r.reference.path.display()
    );
    println!(
        "machine: {} CPUs, {}, {:.1} GiB; load {} before, {} after",
        r.machine.cpus,
        r.machine.model,
        r.machine.mem_total_gib,
        r.machine.load_before,
        r.machine.load_after
    );
    println!();
    println!(
        "| {:<26} | {:>14} | {:>14} | {:>9} | {:<6} |",
        format!("metric (median of {})", r.nsqrd.rounds.len()),
        "nsqrd",
        r.reference.name,
        "nsqrd/ref",
        "better"
    );
    println!(
        "|{:-<28}|{:->16}|{:->16}|{:->11}|{:-<8}|",
        "", "", "", "", ""
    );
    for mt in METRICS
        .iter()
        .filter(|mt| r.nsqrd.median.contains_key(mt.key) || r.reference.median.contains_key(mt.key))
    {
        let (a, b) = (
            r.nsqrd.median.get(mt.key).copied().unwrap_or(0.0),
            r.reference.median.get(mt.key).copied().unwrap_or(0.0),
        );
        let ratio = r
            .ratio
            .get(mt.key)
            .map(|&x| fmt_ratio(x))
            .unwrap_or_else(|| "-".into());
        println!(
            "| {:<26} | {:>14} | {:>14} | {:>9} | {:<6} |",
            mt.label,
            fmt_value(a, mt.decimals),
            fmt_value(b, mt.decimals),
            ratio,
            if mt.higher_is_better {
                "higher"
            } else {
                "lower"
            }
        );
    }
    if !r.ok {
        println!("\nPROBLEM: messages were lost (see the `lost` row; --json has every round)");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios() {
        assert_eq!(fmt_ratio(4.371), "4.37x");
        assert_eq!(fmt_ratio(0.0271), "0.027x");
        assert_eq!(fmt_ratio(0.00012), "1.2e-4x");
    }

    #[test]
    fn medians_of_odd_and_even() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(vec![]), 0.0);
    }

    #[test]
    fn every_metric_has_a_unique_key() {
        let mut keys: Vec<_> = METRICS.iter().map(|m| m.key).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), METRICS.len());
    }
}
