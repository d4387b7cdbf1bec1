//! How every mode hands back its results: one [`Render`] value per run, printed by [`emit`]
//! as JSON (`--json`) or as the mode's human form, so no mode writes its own JSON; the
//! formatting helpers the human forms share (sizes, ratios, microseconds, short rates); and
//! the TCP modes' results (publishing, consuming, latency, the size matrix).

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::fail::Result;
use crate::progress::{group, si};
use crate::publisher::PubOutcome;
use crate::stats::{mean, nearest_rank, rate};
use crate::subscriber::SubOutcome;

/// A mode's results: serialized for `--json`, else printed for a person.
pub trait Render: Serialize {
    /// The human form on stdout.
    fn print_human(&self);
}

/// Print `r` as pretty JSON (`json`) or in its human form.
pub fn emit<R: Render + ?Sized>(r: &R, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(r)?);
    } else {
        r.print_human();
    }
    Ok(())
}

/// The publishing side of a run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PubStats {
    pub connections: usize,
    pub size: usize,
    pub batch_size: usize,
    pub pipeline: usize,
    pub sent: u64,
    pub acked: u64,
    pub elapsed_s: f64,
    pub msgs_per_sec: f64,
    pub mb_per_sec: f64,
}

impl PubStats {
    pub fn new(
        o: &PubOutcome,
        connections: usize,
        size: usize,
        batch: usize,
        pipeline: usize,
    ) -> Self {
        let secs = o.elapsed.as_secs_f64();
        PubStats {
            connections,
            size,
            batch_size: batch,
            pipeline,
            sent: o.sent,
            acked: o.acked,
            elapsed_s: secs,
            msgs_per_sec: rate(o.acked, secs),
            mb_per_sec: rate(o.acked * size as u64, secs) / 1e6,
        }
    }
}

/// The consuming side of a run. Rates are timed at the receiver: from the start of consuming
/// (RDY sent) to the arrival of the last message.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SubStats {
    pub connections: usize,
    pub rdy: u32,
    pub expected: u64,
    pub received: u64,
    pub finned: u64,
    pub unique: u64,
    pub duplicates: u64,
    pub lost: u64,
    pub foreign: u64,
    pub fin_errors: u64,
    pub redelivered: u64,
    pub elapsed_s: f64,
    pub msgs_per_sec: f64,
    pub mb_per_sec: f64,
}

impl SubStats {
    pub fn new(
        o: &SubOutcome,
        pubs: &PubOutcome,
        start: Instant,
        size: usize,
        connections: usize,
        rdy: u32,
    ) -> Self {
        let secs = o
            .last_recv
            .map(|l| l.saturating_duration_since(start))
            .unwrap_or(Duration::ZERO)
            .as_secs_f64();
        SubStats {
            connections,
            rdy,
            expected: pubs.acked,
            received: o.received,
            finned: o.finned,
            unique: o.tracker.unique,
            duplicates: o.tracker.duplicates,
            lost: o.tracker.lost(&pubs.acked_by_publisher),
            foreign: o.tracker.foreign,
            fin_errors: o.fin_errors,
            redelivered: o.redelivered,
            elapsed_s: secs,
            msgs_per_sec: rate(o.received, secs),
            mb_per_sec: rate(o.received * size as u64, secs) / 1e6,
        }
    }
}

/// Publish-to-deliver latency percentiles, in microseconds.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LatencyStats {
    pub rate: f64,
    pub samples: u64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
    pub mean_us: f64,
}

impl LatencyStats {
    pub fn new(rate: f64, mut ns: Vec<u64>) -> Self {
        ns.sort_unstable();
        let pick =
            |q: f64| -> f64 { nearest_rank(&ns, q, ns.len()).map_or(0.0, |v| v as f64 / 1e3) };
        let mean = mean(ns.iter().map(|&v| v as f64)) / 1e3;
        LatencyStats {
            rate,
            samples: ns.len() as u64,
            p50_us: pick(0.50),
            p99_us: pick(0.99),
            p999_us: pick(0.999),
            max_us: ns.last().map(|&v| v as f64 / 1e3).unwrap_or(0.0),
            mean_us: mean,
        }
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct MatrixRow {
    pub size: usize,
    pub publish: PubStats,
    pub consume: SubStats,
}

/// Everything one `nsqr-bench <mode>` run measured.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub mode: String,
    pub nsqd_tcp_address: String,
    pub topic: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub publish: Option<PubStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consume: Option<SubStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencyStats>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub matrix: Vec<MatrixRow>,
    /// Loss, duplicates, foreign messages, unacknowledged publishes.
    pub problems: Vec<String>,
    /// False when messages were lost.
    pub ok: bool,
}

impl Report {
    /// Fill `problems` and `ok` from the counts.
    pub fn check(&mut self) {
        let mut problems = Vec::new();
        let mut lost = 0;
        let mut check_pair = |label: &str, p: Option<&PubStats>, s: Option<&SubStats>| {
            if let Some(p) = p {
                if p.sent != p.acked {
                    problems.push(format!(
                        "{label}{} published but not acknowledged",
                        p.sent - p.acked
                    ));
                }
            }
            if let Some(s) = s {
                if s.lost > 0 {
                    lost += s.lost;
                    problems.push(format!("{label}LOST {} acknowledged messages", s.lost));
                }
                if s.duplicates > 0 {
                    problems.push(format!("{label}{} duplicate deliveries", s.duplicates));
                }
                if s.foreign > 0 {
                    problems.push(format!("{label}{} messages not from this run", s.foreign));
                }
                if s.redelivered > 0 {
                    problems.push(format!(
                        "{label}{} redeliveries (attempts > 1)",
                        s.redelivered
                    ));
                }
                if s.fin_errors > 0 {
                    problems.push(format!("{label}{} FIN errors", s.fin_errors));
                }
            }
        };
        check_pair("", self.publish.as_ref(), self.consume.as_ref());
        for r in &self.matrix {
            check_pair(
                &format!("{} B: ", r.size),
                Some(&r.publish),
                Some(&r.consume),
            );
        }
        self.ok = lost == 0;
        self.problems = problems;
    }
}

impl Render for Report {
    fn print_human(&self) {
        println!(
            "nsqr-bench {}  ({}, topic {})",
            self.mode, self.nsqd_tcp_address, self.topic
        );
        if let Some(p) = &self.publish {
            print_pub(p);
        }
        if let Some(s) = &self.consume {
            print_sub(s);
        }
        if let Some(l) = &self.latency {
            println!(
                "  latency  {} samples at {}/s: p50 {}  p99 {}  p99.9 {}  max {}  (mean {})",
                group(l.samples),
                si(l.rate),
                us(l.p50_us),
                us(l.p99_us),
                us(l.p999_us),
                us(l.max_us),
                us(l.mean_us)
            );
        }
        if !self.matrix.is_empty() {
            let mut t = Table::new([
                "size",
                "batch",
                "pub msgs/s",
                "pub MB/s",
                "recv msgs/s",
                "recv MB/s",
                "acked",
                "received",
                "lost",
            ]);
            for r in &self.matrix {
                t.row(vec![
                    size_label(r.size),
                    r.publish.batch_size.to_string(),
                    format!("{:.0}", r.publish.msgs_per_sec),
                    format!("{:.1}", r.publish.mb_per_sec),
                    format!("{:.0}", r.consume.msgs_per_sec),
                    format!("{:.1}", r.consume.mb_per_sec),
                    r.publish.acked.to_string(),
                    r.consume.received.to_string(),
                    r.consume.lost.to_string(),
                ]);
            }
            t.print();
        }
        if self.problems.is_empty() {
            println!("  counts ok: nothing lost or duplicated");
        }
        for p in &self.problems {
            println!("  PROBLEM: {p}");
        }
    }
}

fn print_pub(p: &PubStats) {
    println!(
        "  publish  {} conn x batch {} x {} B, pipeline {}: sent {}  acked {}  in {:.3}s",
        p.connections,
        p.batch_size,
        p.size,
        p.pipeline,
        group(p.sent),
        group(p.acked),
        p.elapsed_s
    );
    println!(
        "           {:.0} msgs/s  {:.2} MB/s",
        p.msgs_per_sec, p.mb_per_sec
    );
}

fn print_sub(s: &SubStats) {
    println!(
        "  consume  {} conn, RDY {}: expected {}  received {}  FIN'd {}  unique {}  in {:.3}s",
        s.connections,
        s.rdy,
        group(s.expected),
        group(s.received),
        group(s.finned),
        group(s.unique),
        s.elapsed_s
    );
    println!(
        "           {:.0} msgs/s  {:.2} MB/s",
        s.msgs_per_sec, s.mb_per_sec
    );
}

pub fn size_label(size: usize) -> String {
    if size >= 1024 && size.is_multiple_of(1024) {
        format!("{} KB", size / 1024)
    } else {
        format!("{size} B")
    }
}

/// Microseconds, shown as µs or ms.
pub fn us(v: f64) -> String {
    if v >= 1000.0 {
        format!("{:.2}ms", v / 1000.0)
    } else {
        format!("{v:.0}µs")
    }
}

/// A markdown table as every mode prints one: each column as wide as its widest cell, the
/// first `left` columns (names) aligned left and the rest (numbers) right.
pub struct Table {
    head: Vec<String>,
    rows: Vec<Vec<String>>,
    left: usize,
}

impl Table {
    pub fn new<S: Into<String>>(head: impl IntoIterator<Item = S>) -> Table {
        Table {
            head: head.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
            left: 1,
        }
    }

    /// How many leading columns are aligned left (1 unless told).
    pub fn left(mut self, n: usize) -> Table {
        self.left = n;
        self
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The lines of the table: the head, the rule, the rows.
    pub fn lines(&self) -> Vec<String> {
        let widths: Vec<usize> = (0..self.head.len())
            .map(|i| {
                self.rows
                    .iter()
                    .filter_map(|r| r.get(i))
                    .chain([&self.head[i]])
                    .map(|c| c.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |vals: &[String]| {
            let parts: Vec<String> = widths
                .iter()
                .enumerate()
                .map(|(i, &w)| {
                    let v = vals.get(i).map_or("", String::as_str);
                    if i < self.left {
                        format!("{v:<w$}")
                    } else {
                        format!("{v:>w$}")
                    }
                })
                .collect();
            format!("| {} |", parts.join(" | "))
        };
        let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w + 2)).collect();
        let mut out = vec![line(&self.head), format!("|{}|", rule.join("|"))];
        out.extend(self.rows.iter().map(|r| line(r)));
        out
    }

    pub fn print(&self) {
        for l in self.lines() {
            println!("{l}");
        }
    }
}

/// 2.04x, 0.53x, 0.027x: at least two significant digits down to 0.001.
pub fn fmt_ratio(x: f64) -> String {
    if x >= 0.1 || x == 0.0 {
        format!("{x:.2}x")
    } else if x >= 0.001 {
        format!("{x:.3}x")
    } else {
        format!("{x:.1e}x")
    }
}

/// A table value: digits grouped when shown without decimals.
pub fn fmt_value(v: f64, decimals: usize) -> String {
    if decimals == 0 {
        group(v.round().max(0.0) as u64)
    } else {
        format!("{v:.decimals$}")
    }
}

/// "1.23M", "456K", "789": a rate in a few characters.
pub fn short(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.0}K", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_names_left_and_numbers_right() {
        let mut t = Table::new(["metric", "value"]);
        t.row(vec!["pub msgs/s".into(), "1,234".into()]);
        t.row(vec!["lost".into(), "0".into()]);
        assert_eq!(
            t.lines(),
            [
                "| metric     | value |",
                "|------------|-------|",
                "| pub msgs/s | 1,234 |",
                "| lost       |     0 |",
            ]
        );
    }

    #[test]
    fn ratios() {
        assert_eq!(fmt_ratio(4.371), "4.37x");
        assert_eq!(fmt_ratio(0.0271), "0.027x");
        assert_eq!(fmt_ratio(0.00012), "1.2e-4x");
        assert_eq!(short(1_234_567.0), "1.23M");
        assert_eq!(fmt_value(1234.4, 0), "1,234");
    }

    #[test]
    fn percentiles() {
        let l = LatencyStats::new(1.0, (1..=1000).map(|v| v * 1000).collect());
        assert_eq!(l.p50_us, 500.0);
        assert_eq!(l.p99_us, 990.0);
        assert_eq!(l.p999_us, 999.0);
        assert_eq!(l.max_us, 1000.0);
        assert_eq!(LatencyStats::new(1.0, vec![]).samples, 0);
    }
}
