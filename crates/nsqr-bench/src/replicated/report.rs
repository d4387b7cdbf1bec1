//! `replicated`'s results: one [`SideRun`] per side and round, each side's medians, and the
//! replicated side's ratios to the single node (rates, and CPU per message against the
//! single node's times the number of replicas, since every replica does a node's work).

use std::collections::BTreeMap;
use std::time::Instant;

use serde::Serialize;

use super::args::{Durability, ReplicatedCmd};
use crate::machine::Machine;
use crate::publisher::PubOutcome;
use crate::report::{fmt_ratio, fmt_value, Render, Table};
use crate::stats::{median, nearest_rank, rate, sorted};
use crate::subscriber::SubOutcome;

/// One side of one round.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SideRun {
    pub round: usize,
    /// 1: the single unreplicated nsqrd; else the replicated topic's node count.
    pub nodes: usize,
    /// The nodes' process ids, the leader's first.
    pub pids: Vec<u32>,
    pub acked: u64,
    pub publish_msgs_per_sec: f64,
    pub consume_msgs_per_sec: f64,
    /// Publish-to-`OK` of an MPUB, nearest rank, in milliseconds.
    pub publish_p50_ms: f64,
    pub publish_p99_ms: f64,
    /// The nodes' CPU summed, per message published (publish phase) and consumed (consume
    /// phase), in microseconds.
    pub publish_cpu_us_per_msg: f64,
    pub consume_cpu_us_per_msg: f64,
    pub received: u64,
    pub lost: u64,
    pub duplicates: u64,
    pub foreign: u64,
}

impl SideRun {
    pub fn new(
        p: &PubOutcome,
        c: &SubOutcome,
        consume_start: Instant,
        cpu_pub_s: f64,
        cpu_sub_s: f64,
    ) -> SideRun {
        let lat = sorted(p.batch_latency_ns.iter().map(|&n| n as f64 / 1e6));
        let pick = |q| nearest_rank(&lat, q, lat.len()).unwrap_or(0.0);
        let consume_s = c
            .last_recv
            .map(|l| l.saturating_duration_since(consume_start).as_secs_f64())
            .unwrap_or(0.0);
        SideRun {
            acked: p.acked,
            publish_msgs_per_sec: rate(p.acked, p.elapsed.as_secs_f64()),
            consume_msgs_per_sec: rate(c.received, consume_s),
            publish_p50_ms: pick(0.5),
            publish_p99_ms: pick(0.99),
            publish_cpu_us_per_msg: cpu_pub_s * 1e6 / p.acked.max(1) as f64,
            consume_cpu_us_per_msg: cpu_sub_s * 1e6 / c.received.max(1) as f64,
            received: c.received,
            // The leader probe is the one acknowledged message beyond the publishers'.
            lost: c.tracker.lost(&p.acked_by_publisher),
            duplicates: c.tracker.duplicates,
            foreign: c.tracker.foreign,
            ..Default::default()
        }
    }

    fn clean(&self) -> bool {
        self.lost == 0 && self.duplicates == 0 && self.foreign == 0
    }
}

/// A side's medians over its rounds.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SideMedian {
    pub nodes: usize,
    pub rounds: usize,
    pub publish_msgs_per_sec: f64,
    pub consume_msgs_per_sec: f64,
    pub publish_p50_ms: f64,
    pub publish_p99_ms: f64,
    pub publish_cpu_us_per_msg: f64,
    pub consume_cpu_us_per_msg: f64,
}

impl SideMedian {
    fn of(nodes: usize, runs: &[SideRun]) -> SideMedian {
        let mine: Vec<&SideRun> = runs.iter().filter(|r| r.nodes == nodes).collect();
        let m = |f: fn(&SideRun) -> f64| median(&sorted(mine.iter().map(|r| f(r))));
        SideMedian {
            nodes,
            rounds: mine.len(),
            publish_msgs_per_sec: m(|r| r.publish_msgs_per_sec),
            consume_msgs_per_sec: m(|r| r.consume_msgs_per_sec),
            publish_p50_ms: m(|r| r.publish_p50_ms),
            publish_p99_ms: m(|r| r.publish_p99_ms),
            publish_cpu_us_per_msg: m(|r| r.publish_cpu_us_per_msg),
            consume_cpu_us_per_msg: m(|r| r.consume_cpu_us_per_msg),
        }
    }
}

/// Replicated over single: rates (target >= 1/3) and CPU per message over the single node's
/// times the replicas (1.0: replication costs no more than the copies themselves).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Ratios {
    pub publish_rate: f64,
    pub consume_rate: f64,
    pub publish_cpu_vs_n_singles: f64,
    pub consume_cpu_vs_n_singles: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ReplicatedReport {
    pub server: String,
    pub machine: Machine,
    pub settings: BTreeMap<&'static str, String>,
    pub durability: Durability,
    pub runs: Vec<SideRun>,
    pub replicated: SideMedian,
    pub single: Option<SideMedian>,
    pub ratios: Option<Ratios>,
    pub ok: bool,
}

impl ReplicatedReport {
    pub fn new(a: &ReplicatedCmd, server: String, machine: Machine, runs: Vec<SideRun>) -> Self {
        let replicated = SideMedian::of(a.replicas, &runs);
        let single = (!a.no_single).then(|| SideMedian::of(1, &runs));
        let n = a.replicas as f64;
        let div = |x: f64, y: f64| if y > 0.0 { x / y } else { 0.0 };
        let ratios = single.as_ref().map(|s| Ratios {
            publish_rate: div(replicated.publish_msgs_per_sec, s.publish_msgs_per_sec),
            consume_rate: div(replicated.consume_msgs_per_sec, s.consume_msgs_per_sec),
            publish_cpu_vs_n_singles: div(
                replicated.publish_cpu_us_per_msg,
                n * s.publish_cpu_us_per_msg,
            ),
            consume_cpu_vs_n_singles: div(
                replicated.consume_cpu_us_per_msg,
                n * s.consume_cpu_us_per_msg,
            ),
        });
        let mut settings = BTreeMap::new();
        settings.insert("replicas", a.replicas.to_string());
        settings.insert("publishers", a.publishers.to_string());
        settings.insert("batch_size", a.batch_size.to_string());
        settings.insert("pipeline", a.pipeline.to_string());
        settings.insert("size", a.body.size.to_string());
        settings.insert("count", a.count.to_string());
        settings.insert("consumers", a.consumers.to_string());
        settings.insert("rdy", a.rdy.to_string());
        settings.insert("rounds", a.rounds.to_string());
        ReplicatedReport {
            server,
            machine,
            settings,
            durability: a.durability,
            ok: runs.iter().all(SideRun::clean),
            runs,
            replicated,
            single,
            ratios,
        }
    }
}

fn side_name(nodes: usize) -> String {
    if nodes == 1 {
        "single".into()
    } else {
        format!("replicas={nodes}")
    }
}

fn row(name: String, r: &SideMedian) -> Vec<String> {
    vec![
        name,
        fmt_value(r.publish_msgs_per_sec, 0),
        fmt_value(r.consume_msgs_per_sec, 0),
        fmt_value(r.publish_p50_ms, 2),
        fmt_value(r.publish_p99_ms, 2),
        fmt_value(r.publish_cpu_us_per_msg, 2),
        fmt_value(r.consume_cpu_us_per_msg, 2),
    ]
}

impl Render for ReplicatedReport {
    fn print_human(&self) {
        let s = |k: &str| self.settings.get(k).cloned().unwrap_or_default();
        println!(
            "nsqr-bench replicated: {} ({} CPUs, {}; load {} -> {}), {}",
            self.server,
            self.machine.cpus,
            self.machine.model,
            self.machine.load_before,
            self.machine.load_after,
            self.durability.flag()
        );
        println!(
            "{} x {} B per side and round, MPUB of {} from {} publishers (pipeline {}) to the leader, then {} consumers (RDY {}); {} rounds A B",
            s("count"),
            s("size"),
            s("batch_size"),
            s("publishers"),
            s("pipeline"),
            s("consumers"),
            s("rdy"),
            s("rounds")
        );
        let mut t = Table::new([
            "round",
            "side",
            "pub msg/s",
            "sub msg/s",
            "p50 ms",
            "p99 ms",
            "pub CPU us/msg",
            "sub CPU us/msg",
            "lost",
            "dup",
        ])
        .left(2);
        for r in &self.runs {
            t.row(vec![
                r.round.to_string(),
                side_name(r.nodes),
                fmt_value(r.publish_msgs_per_sec, 0),
                fmt_value(r.consume_msgs_per_sec, 0),
                fmt_value(r.publish_p50_ms, 2),
                fmt_value(r.publish_p99_ms, 2),
                fmt_value(r.publish_cpu_us_per_msg, 2),
                fmt_value(r.consume_cpu_us_per_msg, 2),
                r.lost.to_string(),
                r.duplicates.to_string(),
            ]);
        }
        t.print();
        println!("\nmedians:");
        let mut m = Table::new([
            "side",
            "pub msg/s",
            "sub msg/s",
            "p50 ms",
            "p99 ms",
            "pub CPU us/msg",
            "sub CPU us/msg",
        ])
        .left(1);
        m.row(row(side_name(self.replicated.nodes), &self.replicated));
        if let Some(single) = &self.single {
            m.row(row(side_name(1), single));
        }
        m.print();
        if let Some(r) = &self.ratios {
            println!(
                "replicated / single: publish {}, consume {}; CPU per message / ({} x single): publish {}, consume {}",
                fmt_ratio(r.publish_rate),
                fmt_ratio(r.consume_rate),
                self.replicated.nodes,
                fmt_ratio(r.publish_cpu_vs_n_singles),
                fmt_ratio(r.consume_cpu_vs_n_singles)
            );
        }
        if !self.ok {
            println!("MESSAGES LOST, DUPLICATED OR FOREIGN: see the lost and dup columns");
        }
    }
}
