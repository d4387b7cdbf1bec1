//! What a `cluster` run reports: per node and in total, messages in (acknowledged publishes)
//! and out (deliveries), their rates, the node's CPU per message and memory, and the exact
//! counts (lost, duplicated, from elsewhere) that must all be 0.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use super::load::Phase;
use super::nodes::{Node, Setup};
use crate::machine::Machine;
use crate::progress::group;
use crate::publisher::PubOutcome;
use crate::report::{Render, Table};
use crate::stats::rate;
use crate::subscriber::SubOutcome;

/// One node's figures, or the sum over nodes (`node` None).
#[derive(Debug, Clone, Default, Serialize)]
pub struct NodeStats {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<usize>,
    pub tcp_address: String,
    pub pid: Option<u32>,
    pub sent: u64,
    pub acked: u64,
    pub received: u64,
    pub finned: u64,
    pub unique: u64,
    pub lost: u64,
    pub duplicates: u64,
    pub foreign: u64,
    pub redelivered: u64,
    pub fin_errors: u64,
    pub in_msgs_per_sec: f64,
    pub in_mb_per_sec: f64,
    pub out_msgs_per_sec: f64,
    pub out_mb_per_sec: f64,
    /// Server CPU (utime + stime) over bench.py's phase, per message: per acknowledged publish
    /// in `pub` mode, per delivery in `pubsub` (covering its publish and its delivery).
    pub cpu_s: Option<f64>,
    pub cpu_us_per_msg: Option<f64>,
    /// `pub` mode: server CPU over the drain that follows, per delivered message.
    pub drain_cpu_s: Option<f64>,
    pub drain_cpu_us_per_msg: Option<f64>,
    /// VmRSS and VmHWM at the end.
    pub rss_mb: Option<f64>,
    pub peak_rss_mb: Option<f64>,
}

/// CPU seconds per node over a phase (None where the pid is unknown).
pub type CpuSpan = Vec<Option<f64>>;

/// Everything one run measured.
#[derive(Debug, Serialize)]
pub struct ClusterReport {
    pub mode: &'static str,
    pub machine: Machine,
    pub setup: Setup,
    pub settings: BTreeMap<&'static str, String>,
    pub topics: Vec<String>,
    /// Seconds: publishing (start to the last OK), consuming (start to the last arrival;
    /// `pub` mode: the drain).
    pub publish_s: f64,
    pub consume_s: f64,
    pub nodes: Vec<NodeStats>,
    pub total: NodeStats,
    /// This process's CPU over the whole run (all publishing and consuming clients) per
    /// acknowledged message, each of which it published and consumed once.
    pub client_cpu_us_per_msg: f64,
    pub problems: Vec<String>,
    /// False when a message was lost, duplicated, or came from elsewhere.
    pub ok: bool,
}

/// The inputs of [`build`].
pub struct Measured<'a> {
    pub nodes: &'a [Node],
    pub size: usize,
    pub published: &'a Phase<PubOutcome>,
    pub consumed: &'a Phase<SubOutcome>,
    /// CPU over bench.py's phase, and over `pub` mode's drain.
    pub cpu: CpuSpan,
    pub drain_cpu: Option<CpuSpan>,
    /// Whether bench.py's phase is publishing only (CPU per acknowledged message).
    pub pub_only: bool,
}

/// Per node sums over its topics, rates and CPU per message.
pub fn node_stats(m: &Measured) -> Vec<NodeStats> {
    let (pub_s, sub_s) = (
        m.published.elapsed.as_secs_f64(),
        m.consumed.elapsed.as_secs_f64(),
    );
    m.nodes
        .iter()
        .enumerate()
        .map(|(k, n)| {
            let mut s = NodeStats {
                node: Some(k),
                tcp_address: n.tcp.clone(),
                pid: n.pid,
                ..Default::default()
            };
            for (p, o) in m.published.by_pair[k].iter().zip(&m.consumed.by_pair[k]) {
                s.sent += p.sent;
                s.acked += p.acked;
                s.received += o.received;
                s.finned += o.finned;
                s.unique += o.tracker.unique;
                s.lost += o.tracker.lost(&p.acked_by_publisher);
                s.duplicates += o.tracker.duplicates;
                s.foreign += o.tracker.foreign;
                s.redelivered += o.redelivered;
                s.fin_errors += o.fin_errors;
            }
            s.in_msgs_per_sec = rate(s.acked, pub_s);
            s.out_msgs_per_sec = rate(s.received, sub_s);
            s.in_mb_per_sec = s.in_msgs_per_sec * m.size as f64 / 1e6;
            s.out_mb_per_sec = s.out_msgs_per_sec * m.size as f64 / 1e6;
            let per_phase = if m.pub_only { s.acked } else { s.received };
            s.cpu_s = m.cpu[k];
            s.cpu_us_per_msg = s.cpu_s.map(|c| per_msg_us(c, per_phase));
            s.drain_cpu_s = m.drain_cpu.as_ref().and_then(|d| d[k]);
            s.drain_cpu_us_per_msg = s.drain_cpu_s.map(|c| per_msg_us(c, s.received));
            s.rss_mb = n.mem_mb("VmRSS");
            s.peak_rss_mb = n.mem_mb("VmHWM");
            s
        })
        .collect()
}

fn per_msg_us(cpu_s: f64, n: u64) -> f64 {
    cpu_s * 1e6 / n.max(1) as f64
}

/// The sum over nodes; CPU and memory only when every node has them.
pub fn total(nodes: &[NodeStats], pub_only: bool) -> NodeStats {
    let mut t = NodeStats {
        tcp_address: "total".into(),
        ..Default::default()
    };
    let sum_opt = |f: fn(&NodeStats) -> Option<f64>| -> Option<f64> {
        nodes.iter().map(f).sum::<Option<f64>>()
    };
    for n in nodes {
        t.sent += n.sent;
        t.acked += n.acked;
        t.received += n.received;
        t.finned += n.finned;
        t.unique += n.unique;
        t.lost += n.lost;
        t.duplicates += n.duplicates;
        t.foreign += n.foreign;
        t.redelivered += n.redelivered;
        t.fin_errors += n.fin_errors;
        t.in_msgs_per_sec += n.in_msgs_per_sec;
        t.in_mb_per_sec += n.in_mb_per_sec;
        t.out_msgs_per_sec += n.out_msgs_per_sec;
        t.out_mb_per_sec += n.out_mb_per_sec;
    }
    t.cpu_s = sum_opt(|n| n.cpu_s);
    let per_phase = if pub_only { t.acked } else { t.received };
    t.cpu_us_per_msg = t.cpu_s.map(|c| per_msg_us(c, per_phase));
    t.drain_cpu_s = sum_opt(|n| n.drain_cpu_s);
    t.drain_cpu_us_per_msg = t.drain_cpu_s.map(|c| per_msg_us(c, t.received));
    t.rss_mb = sum_opt(|n| n.rss_mb);
    t.peak_rss_mb = sum_opt(|n| n.peak_rss_mb);
    t
}

/// Every count that is not what it must be, per node.
pub fn problems(nodes: &[NodeStats]) -> Vec<String> {
    let mut v = Vec::new();
    for n in nodes {
        let k = n.node.unwrap_or(0);
        let mut say = |what: String| v.push(format!("node {k} ({}): {what}", n.tcp_address));
        if n.sent != n.acked {
            say(format!(
                "{} published but not acknowledged",
                n.sent - n.acked
            ));
        }
        if n.lost > 0 {
            say(format!("LOST {} acknowledged messages", n.lost));
        }
        for (count, what) in [
            (n.duplicates, "duplicate deliveries"),
            (n.foreign, "messages published to another node or topic"),
            (n.redelivered, "redeliveries (attempts > 1)"),
            (n.fin_errors, "FIN errors"),
        ] {
            if count > 0 {
                say(format!("{count} {what}"));
            }
        }
    }
    v
}

/// A table column: header and the cell of one row.
type Column = (String, Box<dyn Fn(&NodeStats) -> String>);

fn opt(v: Option<f64>, decimals: usize) -> String {
    v.map(|x| format!("{x:.decimals$}"))
        .unwrap_or_else(|| "-".into())
}

fn secs(d: f64) -> String {
    nsq_common::duration::format(Duration::from_secs_f64(d.max(0.0)))
}

impl ClusterReport {
    /// The columns for this mode: `pub` adds the drain's rate and CPU.
    fn columns(&self) -> Vec<Column> {
        fn col(h: &str, f: impl Fn(&NodeStats) -> String + 'static) -> Column {
            (h.to_string(), Box::new(f))
        }
        let rate = |v: f64| group(v.round().max(0.0) as u64);
        let mut v = vec![
            col("node", |n| {
                n.node
                    .map(|k| k.to_string())
                    .unwrap_or_else(|| "total".into())
            }),
            col("address", |n| {
                if n.node.is_some() {
                    n.tcp_address.clone()
                } else {
                    String::new()
                }
            }),
            col("in msgs/s", move |n| rate(n.in_msgs_per_sec)),
            col("in MB/s", |n| format!("{:.1}", n.in_mb_per_sec)),
        ];
        let out = if self.mode == "pub" { "drain" } else { "out" };
        v.push(col(&format!("{out} msgs/s"), move |n| {
            rate(n.out_msgs_per_sec)
        }));
        v.push(col(&format!("{out} MB/s"), |n| {
            format!("{:.1}", n.out_mb_per_sec)
        }));
        v.push(col("CPU µs/msg", |n| opt(n.cpu_us_per_msg, 3)));
        if self.mode == "pub" {
            v.push(col("drain CPU µs/msg", |n| opt(n.drain_cpu_us_per_msg, 3)));
        }
        v.extend([
            col("RSS MB", |n| opt(n.rss_mb, 1)),
            col("peak RSS MB", |n| opt(n.peak_rss_mb, 1)),
            col("lost", |n| n.lost.to_string()),
            col("dup", |n| n.duplicates.to_string()),
        ]);
        v
    }

    /// One row per node and the total; text left (node, address), numbers right.
    fn print_table(&self) {
        let cols = self.columns();
        let mut t = Table::new(cols.iter().map(|(h, _)| h.clone())).left(2);
        for n in self.nodes.iter().chain([&self.total]) {
            t.row(cols.iter().map(|(_, f)| f(n)).collect());
        }
        t.print();
    }
}

impl Render for ClusterReport {
    fn print_human(&self) {
        let s = |k: &str| self.settings.get(k).cloned().unwrap_or_default();
        println!(
            "nsqr-bench cluster --mode {}: {} nodes ({}), lookupd {} ({}), {}",
            self.mode,
            self.nodes.len(),
            self.setup.server,
            self.setup.lookupd,
            self.setup.lookupd_http_address,
            self.setup.network
        );
        println!(
            "{} topics; per node and topic {} writers (MPUB of {} x {} B, pipeline {}) and {} reader clients via lookupd (RDY {}); {} per phase",
            self.topics.len(),
            s("writers"),
            s("batch_size"),
            s("size"),
            s("pipeline"),
            s("readers"),
            s("rdy"),
            s("duration")
        );
        if !self.setup.server_args.is_empty() {
            println!("nodes started with: {}", self.setup.server_args.join(" "));
        }
        println!(
            "machine: {} CPUs, {}, {:.1} GiB; load {} before, {} after",
            self.machine.cpus,
            self.machine.model,
            self.machine.mem_total_gib,
            self.machine.load_before,
            self.machine.load_after
        );
        println!(
            "publishing {}, {} {}",
            secs(self.publish_s),
            if self.mode == "pub" {
                "draining"
            } else {
                "consuming"
            },
            secs(self.consume_s)
        );
        println!();
        self.print_table();
        println!();
        println!(
            "CPU µs/msg: the node's CPU over the {} phase per {}; client (this process) {:.3} µs/msg",
            self.mode,
            if self.mode == "pub" {
                "acknowledged message"
            } else {
                "delivered message (its publish and its delivery)"
            },
            self.client_cpu_us_per_msg
        );
        let t = &self.total;
        if self.problems.is_empty() {
            println!(
                "counts ok: {} acknowledged, {} received once each: nothing lost or duplicated",
                group(t.acked),
                group(t.unique)
            );
        }
        for p in &self.problems {
            println!("PROBLEM: {p}");
        }
    }
}
