//! `nsqr-bench compare`: nsqrd against a reference nsqd-compatible binary. Each round starts
//! nsqrd, then the reference (A B A B ...), each on a fresh data directory and ephemeral ports,
//! runs the same phases against it, and kills it. The table shows the median over rounds of
//! each metric and the ratio nsqrd / reference.
//!
//! Per server and round: a fresh server measures RSS per queued message (VmRSS after queueing
//! `--rss-messages` messages on a channel nobody reads, minus VmRSS before, divided by the
//! count); a second fresh server runs pub (for `--duration`), sub (consuming what pub
//! published, as nsq's bench.sh does), pubsub and latency at each of `--latency-rates`, with
//! the server's CPU time (utime + stime) sampled around each phase and its peak RSS (VmHWM)
//! read at the end; fan-out, idle connections and the size matrix (`--matrix`) each get a
//! fresh server of their own when asked for (`phases`).
//!
//! With `--floor`, each round first measures `nsqr-bench floor` (this executable's do-nothing server)
//! with the pub phase and the sub phase that consumes it: the least CPU per published and per
//! delivered message any server that keeps its backlog in memory can spend here. The table
//! gets a floor column, and the report puts both servers' pub and sub CPU against it.
//!
//! With `--nsq-bench DIR`, every server (and the floor, as their ceiling) is also measured with
//! nsq's own bench_writer and bench_reader as bench.sh runs them (`nsq_bench`), in rows of the
//! same table, so their ratios and the project's client's can be read side by side.
//!
//! The rows depend on the flags (one latency block per rate, one matrix block per size), so
//! they are built per run (`metrics`); medians, ratios, the JSON and the table all follow
//! that list, and a value no round measured is left out.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::cli::CompareArgs;
use crate::fail::{err, Result};
use crate::machine::Machine;
use crate::report::{emit, fmt_ratio, fmt_value, size_label, Render, Table};
use crate::server::{find_nsqrd, version};
use crate::stats::{median, sorted};

mod metrics;
mod nsq_bench;
mod phases;

use metrics::{rate_label, rows_for, Metric};
use phases::{measure, measure_floor, server_args};

/// One round's values, by metric key (see `metrics`).
type Metrics = BTreeMap<String, f64>;

/// One side of a comparison: the binary, every round's values and their medians (also the
/// keyspace comparison's, `kv/compare.rs`).
#[derive(Debug, Serialize)]
pub(crate) struct ServerResult {
    pub name: String,
    pub path: PathBuf,
    pub version: String,
    pub rounds: Vec<Metrics>,
    pub median: Metrics,
}

/// The head of a comparison's table (also the keyspace comparison's): which binary is A and
/// which B, and the machine, then a blank line.
pub(crate) fn print_sides(a: &ServerResult, b: &ServerResult, m: &Machine) {
    println!("A: {} ({})", a.version, a.path.display());
    println!("B: {} ({})", b.version, b.path.display());
    println!(
        "machine: {} CPUs, {}, {:.1} GiB; load {} before, {} after\n",
        m.cpus, m.model, m.mem_total_gib, m.load_before, m.load_after
    );
}

#[derive(Debug, Serialize)]
struct CompareReport {
    machine: Machine,
    settings: BTreeMap<&'static str, String>,
    nsqrd: ServerResult,
    reference: ServerResult,
    /// `nsqr-bench floor`, with `--floor`: the pub and sub phases (and nsq's tools, with
    /// `--nsq-bench`).
    #[serde(skip_serializing_if = "Option::is_none")]
    floor: Option<ServerResult>,
    /// nsqrd median / reference median, per metric.
    ratio: BTreeMap<String, f64>,
    ok: bool,
    /// The table's rows, in order.
    #[serde(skip)]
    rows: Vec<Metric>,
    /// The flags the table's heading names.
    #[serde(skip)]
    latency_rates: Vec<u64>,
    #[serde(skip)]
    matrix_sizes: Vec<usize>,
}

pub async fn run(a: &CompareArgs) -> Result<bool> {
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
    if let Some(dir) = &a.nsq_bench {
        nsq_bench::check_dir(dir)?;
    }
    let rows = rows_for(a);
    let mut machine = Machine::probe();
    let mut servers = [
        new_result("nsqrd", &nsqrd),
        new_result(&short_name(&reference), &reference),
    ];
    let mut floor = if a.floor {
        Some(new_result("floor", &floor_exe()?))
    } else {
        None
    };
    for round in 1..=a.rounds {
        if let Some(f) = floor.as_mut() {
            eprintln!("round {round}/{}: floor ...", a.rounds);
            let m = measure_floor(&f.path, a)
                .await
                .map_err(|e| err(format!("floor (round {round}): {e}")))?;
            eprintln!("round {round}/{}: floor {}", a.rounds, floor_summary(&m));
            f.rounds.push(m);
        }
        for s in servers.iter_mut() {
            eprintln!("round {round}/{}: {} ...", a.rounds, s.name);
            let m = measure(&s.path, a)
                .await
                .map_err(|e| err(format!("{} (round {round}): {e}", s.name)))?;
            eprintln!("round {round}/{}: {} {}", a.rounds, s.name, summary(&m, a));
            s.rounds.push(m);
        }
    }
    machine.load_after = crate::machine::load();
    let [mut ours, mut theirs] = servers;
    ours.median = medians(&rows, &ours.rounds);
    theirs.median = medians(&rows, &theirs.rounds);
    if let Some(f) = floor.as_mut() {
        f.median = medians(&rows, &f.rounds);
    }
    let ratio = ratios_of(&rows, &ours.median, &theirs.median);
    let lost = |r: &ServerResult| {
        r.rounds
            .iter()
            .map(|m| m.get("lost").copied().unwrap_or(0.0))
            .sum::<f64>()
    };
    let ok = lost(&ours) == 0.0 && lost(&theirs) == 0.0 && floor.iter().all(|f| lost(f) == 0.0);
    let report = CompareReport {
        machine,
        settings: settings(a),
        nsqrd: ours,
        reference: theirs,
        floor,
        ratio,
        ok,
        rows,
        latency_rates: a.latency_rates.clone(),
        matrix_sizes: if a.matrix {
            a.sizes.clone()
        } else {
            Vec::new()
        },
    };
    emit(&report, a.json)?;
    Ok(ok)
}

/// `nsqr-bench floor` is this executable.
fn floor_exe() -> Result<PathBuf> {
    std::env::current_exe()
        .map_err(|e| err(format!("cannot find this executable for --floor: {e}")))
}

fn floor_summary(m: &Metrics) -> String {
    let g = |k: &str| m.get(k).copied().unwrap_or(0.0);
    format!(
        "pub {:.0}/s, {:.3} µs CPU/msg; sub {:.0}/s, {:.3} µs CPU/msg; lost {}",
        g("pub_msgs_per_sec"),
        g("pub_cpu_us_per_msg"),
        g("sub_msgs_per_sec"),
        g("sub_cpu_us_per_msg"),
        g("lost")
    )
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

fn summary(m: &Metrics, a: &CompareArgs) -> String {
    let g = |k: &str| m.get(k).copied().unwrap_or(0.0);
    let p99: Vec<String> = a
        .latency_rates
        .iter()
        .map(|&r| {
            let v = g(&metrics::latency_key("p99", r));
            format!("{v:.0}µs@{}/s", rate_label(r))
        })
        .collect();
    format!(
        "pub {:.0}/s, sub {:.0}/s, pubsub {:.0}/s, p99 {}, {:.0} B/queued msg, lost {}",
        g("pub_msgs_per_sec"),
        g("sub_msgs_per_sec"),
        g("pubsub_msgs_per_sec"),
        p99.join(" "),
        g("rss_bytes_per_queued_msg"),
        g("lost")
    )
}

/// Medians of the metrics measured in at least one round (optional phases may be absent).
fn medians(rows: &[Metric], rounds: &[Metrics]) -> Metrics {
    rows.iter()
        .filter_map(|mt| {
            let vals: Vec<f64> = rounds
                .iter()
                .filter_map(|r| r.get(&mt.key).copied())
                .collect();
            (!vals.is_empty()).then(|| (mt.key.clone(), median(&sorted(vals))))
        })
        .collect()
}

/// ours / theirs for every row both have, where theirs is not zero.
fn ratios_of(rows: &[Metric], ours: &Metrics, theirs: &Metrics) -> BTreeMap<String, f64> {
    rows.iter()
        .filter_map(|mt| {
            let (x, y) = (ours.get(&mt.key)?, theirs.get(&mt.key)?);
            (*y != 0.0).then(|| (mt.key.clone(), x / y))
        })
        .collect()
}

fn settings(a: &CompareArgs) -> BTreeMap<&'static str, String> {
    let mut s = BTreeMap::new();
    s.insert("duration", nsq_common::duration::format(a.publish.duration));
    s.insert("rounds", a.rounds.to_string());
    s.insert("size", a.body.size.to_string());
    s.insert("batch_size", a.publish.batch_size.to_string());
    s.insert("pub_connections", a.publish.pub_connections().to_string());
    s.insert(
        "sub_connections",
        a.consume.sub_connections(&a.publish).to_string(),
    );
    s.insert("pipeline", a.publish.pipeline.to_string());
    s.insert("rdy", a.consume.rdy().to_string());
    s.insert("latency_rates", join(&a.latency_rates, |r| r.to_string()));
    s.insert(
        "matrix_sizes",
        if a.matrix {
            join(&a.sizes, |s| s.to_string())
        } else {
            String::new()
        },
    );
    s.insert("rss_messages", a.rss_messages.to_string());
    s.insert("fanout_channels", a.fanout_channels.to_string());
    s.insert("idle_connections", a.idle_connections.to_string());
    s.insert("server_args", server_args(a).join(" "));
    s.insert("floor", a.floor.to_string());
    s.insert(
        "nsq_bench",
        a.nsq_bench
            .as_ref()
            .map(|d| d.display().to_string())
            .unwrap_or_default(),
    );
    if a.nsq_bench.is_some() {
        s.insert("nsq_bench_gomaxprocs", nsq_bench::gomaxprocs());
    }
    s
}

fn join<T>(v: &[T], f: impl Fn(&T) -> String) -> String {
    v.iter().map(f).collect::<Vec<_>>().join(",")
}

impl Render for CompareReport {
    fn print_human(&self) {
        print_table(self);
    }
}

fn print_table(r: &CompareReport) {
    let s = &r.settings;
    let get = |k: &str| s.get(k).cloned().unwrap_or_default();
    let rates: Vec<String> = r.latency_rates.iter().map(|&x| rate_label(x)).collect();
    let matrix = if r.matrix_sizes.is_empty() {
        String::new()
    } else {
        let sizes: Vec<String> = r.matrix_sizes.iter().map(|&x| size_label(x)).collect();
        format!(", matrix {}", sizes.join(", "))
    };
    println!(
        "nsqr-bench compare: {} rounds (A B alternating), {} per phase, {} B messages, batch {}, {} pub + {} sub conn, pipeline {}, RDY {}, latency at {} msgs/s{}",
        get("rounds"), get("duration"), get("size"), get("batch_size"), get("pub_connections"),
        get("sub_connections"), get("pipeline"), get("rdy"), rates.join(", "), matrix
    );
    println!("servers started with: {}", get("server_args"));
    print_sides(&r.nsqrd, &r.reference, &r.machine);
    print_rows(r, &r.rows);
    if let Some(f) = &r.floor {
        print_floor(f, &r.nsqrd, &r.reference);
    }
    if !r.ok {
        println!("\nPROBLEM: messages were lost (see the `lost` row; --json has every round)");
    }
}

/// The table: a row per metric measured, nsqrd and the reference side by side, and with
/// `--floor` the floor's figure where it has one.
fn print_rows(r: &CompareReport, rows: &[Metric]) {
    let floor = r.floor.as_ref();
    let mut head = vec![
        format!("metric (median of {})", r.nsqrd.rounds.len()),
        "nsqrd".into(),
        r.reference.name.clone(),
    ];
    if floor.is_some() {
        head.push("floor".into());
    }
    head.extend(["nsqrd/ref".into(), "better".into()]);
    let mut t = Table::new(head);
    let value = |res: &ServerResult, mt: &Metric| {
        res.median
            .get(&mt.key)
            .map_or_else(|| "-".to_string(), |&v| fmt_value(v, mt.decimals))
    };
    for mt in rows.iter().filter(|mt| {
        r.nsqrd.median.contains_key(&mt.key) || r.reference.median.contains_key(&mt.key)
    }) {
        let mut line = vec![
            mt.label.clone(),
            value(&r.nsqrd, mt),
            value(&r.reference, mt),
        ];
        if let Some(f) = floor {
            line.push(value(f, mt));
        }
        line.push(
            r.ratio
                .get(&mt.key)
                .map_or_else(|| "-".to_string(), |&x| fmt_ratio(x)),
        );
        line.push(
            if mt.higher_is_better {
                "higher"
            } else {
                "lower"
            }
            .into(),
        );
        t.row(line);
    }
    t.print();
}

/// The floor's figures, and each server's CPU per message as a multiple of the floor's; with
/// nsq's tools, what share of each tool's ceiling (its rate against the floor) a server reaches.
fn print_floor(f: &ServerResult, ours: &ServerResult, theirs: &ServerResult) {
    let get = |r: &ServerResult, k: &str| r.median.get(k).copied().filter(|&x| x > 0.0);
    println!();
    println!(
        "floor (`nsqr-bench floor`: keeps each publish in memory as read and answers OK; writes the messages from there as RDY allows and counts FINs; no broker work; median of {}):",
        f.rounds.len()
    );
    for (side, what) in [("pub", "published"), ("sub", "delivered")] {
        let key = format!("{side}_cpu_us_per_msg");
        let Some(floor) = get(f, &key) else { continue };
        let rate = get(f, &format!("{side}_msgs_per_sec")).unwrap_or(0.0);
        println!(
            "  {side}: {} msgs/s, {floor:.3} µs CPU per {what} message",
            fmt_value(rate, 0)
        );
        for r in [ours, theirs] {
            if let Some(c) = get(r, &key) {
                println!(
                    "    {}: {c:.3} µs = {} the floor",
                    r.name,
                    fmt_ratio(c / floor)
                );
            }
        }
        if let Some(c) = get(theirs, &key) {
            println!(
                "    floor / {}: {} (no server that keeps its backlog in memory spends less than the floor)",
                theirs.name,
                fmt_ratio(floor / c)
            );
        }
    }
    for (side, tool) in [("pub", "bench_writer"), ("sub", "bench_reader")] {
        let key = format!("nsq_bench_{side}_msgs_per_sec");
        let Some(ceiling) = get(f, &key) else {
            continue;
        };
        let shares: Vec<String> = [ours, theirs]
            .iter()
            .filter_map(|r| get(r, &key).map(|v| format!("{} {:.0}%", r.name, 100.0 * v / ceiling)))
            .collect();
        println!(
            "  {tool}'s ceiling (against the floor): {} msgs/s; reached: {}",
            fmt_value(ceiling, 0),
            shares.join(", ")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_ratios_cover_dynamic_rows() {
        let rows = metrics::rows(&[1000, 10_000], &[64]);
        let round = |lat: f64, mx: f64| -> Metrics {
            [
                ("pub_msgs_per_sec".to_string(), 100.0),
                ("latency_p99_us_at_10000".to_string(), lat),
                ("matrix_64_sub_msgs_per_sec".to_string(), mx),
                ("not_a_row".to_string(), 1.0),
            ]
            .into_iter()
            .collect()
        };
        let ours = medians(
            &rows,
            &[round(10.0, 5.0), round(30.0, 7.0), round(20.0, 9.0)],
        );
        assert_eq!(ours.get("latency_p99_us_at_10000"), Some(&20.0));
        assert_eq!(ours.get("matrix_64_sub_msgs_per_sec"), Some(&7.0));
        // Rows no round measured, and values without a row, are left out.
        assert_eq!(ours.get("latency_p99_us_at_1000"), None);
        assert_eq!(ours.get("not_a_row"), None);
        let mut theirs = medians(&rows, &[round(40.0, 14.0)]);
        theirs.insert("pub_msgs_per_sec".into(), 0.0);
        let r = ratios_of(&rows, &ours, &theirs);
        assert_eq!(r.get("latency_p99_us_at_10000"), Some(&0.5));
        assert_eq!(r.get("matrix_64_sub_msgs_per_sec"), Some(&0.5));
        assert_eq!(r.get("pub_msgs_per_sec"), None);
    }
}
