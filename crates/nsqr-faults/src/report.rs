//! What a run prints: the faults injected by kind, the checker's figures, the time each fault
//! kept publishes and deliveries away, and the verdict (a run passes with nothing lost, no
//! acknowledged message out of order on the ordered channel, no stale leader delivering beyond
//! the bound, every node whose disk was full caught up once its space came back, and no node
//! crashed; duplicates are counted, not failed: at least once is the
//! contract).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::history::{History, NodeNum, Verdict};
use crate::nemesis::Fault;
use crate::run::fmt_opt;

/// How long one fault kept the topic from publishing and delivering.
#[derive(Debug, Clone, Copy)]
pub struct Recovery {
    pub fault: Fault,
    /// From the injection to the first acknowledged publish after it (from another node
    /// than the old leader when the fault took the leader away).
    pub publish: Option<Duration>,
    /// From the injection to the first delivery after it (by another node than the old
    /// leader when the fault took the leader away).
    pub deliver: Option<Duration>,
}

impl Recovery {
    pub fn measure(fault: Fault, leader: NodeNum, at: Duration, history: &History) -> Recovery {
        let not = if fault.loses_leader() { leader } else { 0 };
        Recovery {
            fault,
            publish: history.first_ack_since(at, not).map(|t| t - at),
            deliver: history.first_delivery_since(at, not).map(|t| t - at),
        }
    }
}

/// How long a node whose disk was full took, once its space came back, to apply every entry
/// committed meanwhile (None: not within the run's recovery timeout, which fails the run).
#[derive(Debug, Clone, Copy)]
pub struct CatchUp {
    pub fault: Fault,
    pub node: NodeNum,
    pub took: Option<Duration>,
}

pub struct Report {
    pub verdict: Verdict,
    pub injected: BTreeMap<Fault, u32>,
    pub recoveries: Vec<Recovery>,
    pub catch_ups: Vec<CatchUp>,
    /// Selected faults that could not run, and why (named in the summary, never hidden).
    pub skipped: Option<(Vec<Fault>, String)>,
    pub crashes: Vec<String>,
    pub fault_phase: Duration,
}

/// The `p`-th percentile (0-1) of sorted values, nearest rank.
pub fn percentile(sorted: &[Duration], p: f64) -> Option<Duration> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.clamp(1, sorted.len()) - 1).copied()
}

impl Report {
    pub fn passed(&self) -> bool {
        let v = &self.verdict;
        v.lost.is_empty()
            && v.order.as_ref().is_some_and(|o| o.out_of_order.is_empty())
            && v.split_brain.within_bound()
            && self.catch_ups.iter().all(|c| c.took.is_some())
            && self.crashes.is_empty()
    }

    pub fn print(&self) {
        let v = &self.verdict;
        let kinds: Vec<String> = self
            .injected
            .iter()
            .map(|(f, n)| format!("{f} {n}"))
            .collect();
        let total: u32 = self.injected.values().sum();
        println!("---");
        println!("fault phase: {:.0} s", self.fault_phase.as_secs_f64());
        println!("faults injected: {total} ({})", kinds.join(", "));
        if let Some((faults, why)) = &self.skipped {
            println!(
                "faults SKIPPED: {} ({why})",
                crate::run::fault_names(faults)
            );
        }
        println!("publishes attempted: {}", v.attempted);
        println!("acknowledged: {}", v.acked);
        println!("lost: {}", v.lost.len());
        for body in v.lost.iter().take(20) {
            println!("  lost: {body}");
        }
        println!(
            "deliveries: {} ({} distinct messages, {} FINs sent)",
            v.deliveries, v.delivered_distinct, v.fins
        );
        println!("duplicates: {}", v.duplicates);
        println!("unacknowledged but delivered: {}", v.unacked_delivered);
        println!(
            "refused (not the leader) but delivered: {}",
            v.refused_but_delivered
        );
        if !v.never_published.is_empty() {
            println!("delivered but never published: {}", v.never_published.len());
        }
        println!(
            "longest unavailability: publish {:.2} s, consume {:.2} s",
            v.publish_gap.as_secs_f64(),
            v.consume_gap.as_secs_f64()
        );
        match &v.order {
            Some(o) => {
                println!(
                    "order (ordered channel, each publisher's acknowledged messages): {} checked, {} out of order",
                    o.checked,
                    o.out_of_order.len()
                );
                for body in o.out_of_order.iter().take(20) {
                    println!("  out of order: {body}");
                }
            }
            None => println!("order: not checked (the channel was never ordered)"),
        }
        let s = &v.split_brain;
        println!(
            "split brain (a node delivering while another says it leads in a later term, within {:.1} s): {} deliveries, at most {} in one episode (bound {}), longest {:.2} s",
            crate::checks::LEAD_WINDOW.as_secs_f64(),
            s.stale,
            s.most,
            s.bound,
            s.longest.as_secs_f64()
        );
        self.print_recoveries();
        for c in &self.catch_ups {
            println!(
                "{}: node {} applied every committed entry {} after its space came back",
                c.fault,
                c.node,
                c.took.map_or_else(
                    || "NOT (failing the run)".to_string(),
                    |d| format!("{:.2} s", d.as_secs_f64())
                )
            );
        }
        println!("crashes: {}", self.crashes.len());
        for c in &self.crashes {
            println!("  {c}");
        }
        println!("result: {}", if self.passed() { "PASS" } else { "FAIL" });
    }

    /// Per fault kind: how long until publishes and deliveries resumed (p50, p99, max).
    fn print_recoveries(&self) {
        println!("time from a fault to publishes / deliveries resuming (p50, p99, max):");
        for fault in self.injected.keys() {
            let of = |pick: fn(&Recovery) -> Option<Duration>| -> (Vec<Duration>, usize) {
                let all: Vec<_> = self
                    .recoveries
                    .iter()
                    .filter(|r| r.fault == *fault)
                    .collect();
                let mut got: Vec<Duration> = all.iter().filter_map(|r| pick(r)).collect();
                got.sort();
                let never = all.len() - got.len();
                (got, never)
            };
            let (publish, p_never) = of(|r| r.publish);
            let (deliver, d_never) = of(|r| r.deliver);
            let line = |d: &[Duration], never: usize| {
                let mut s = format!(
                    "{} / {} / {}",
                    fmt_opt(percentile(d, 0.5)),
                    fmt_opt(percentile(d, 0.99)),
                    fmt_opt(d.last().copied())
                );
                if never > 0 {
                    s.push_str(&format!(" ({never} never)"));
                }
                s
            };
            println!(
                "  {fault} (x{}): publish {}; deliver {}",
                publish.len() + p_never,
                line(&publish, p_never),
                line(&deliver, d_never)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_take_the_nearest_rank() {
        let ms = |v: u64| Duration::from_millis(v);
        let d: Vec<Duration> = (1..=100).map(ms).collect();
        assert_eq!(percentile(&d, 0.5), Some(ms(50)));
        assert_eq!(percentile(&d, 0.99), Some(ms(99)));
        assert_eq!(percentile(&d[..1], 0.99), Some(ms(1)));
        assert_eq!(percentile(&[], 0.5), None);
    }
}
