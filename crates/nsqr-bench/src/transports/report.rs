//! The matrix's report: per cell, each side's median and spread over the repetitions, CPU
//! per message, and nsqr / libzmq; printed as a table or as JSON (`--json`).

use serde::Serialize;

use super::cells::{Cell, Pattern, Sample};
use crate::machine::Machine;
use crate::report::{short, Render, Table};
use crate::stats::{median, sorted};

/// Everything one run measured.
#[derive(Debug, Serialize)]
pub struct Report {
    pub machine: Machine,
    /// "libzmq 4.3.4", or why there is no libzmq side.
    pub libzmq: String,
    pub libzmq_built_in: bool,
    /// The nsqrd binary of the tcp and unix cells (its `--version`).
    pub nsqrd: Option<String>,
    pub reps: usize,
    /// Untimed repetitions per cell and side before the timed ones.
    pub warmup: usize,
    pub cells: Vec<CellReport>,
    /// Every cell of both sides received exactly its messages.
    pub ok: bool,
}

/// One cell, both sides.
#[derive(Debug, Serialize)]
pub struct CellReport {
    #[serde(flatten)]
    pub cell: Cell,
    pub nsqr: Side,
    pub libzmq: Option<Side>,
    /// nsqr's median rate / libzmq's.
    pub ratio: Option<f64>,
}

/// One side's repetitions of a cell.
#[derive(Debug, Default, Serialize)]
pub struct Side {
    /// Repetitions that received exactly N messages at every receiver.
    pub reps_ok: usize,
    /// Messages each receiver got in every good repetition (= the cell's count).
    pub received: u64,
    /// Messages received per second, summed over the receivers: median, min, max.
    pub msgs_per_sec: f64,
    pub msgs_per_sec_min: f64,
    pub msgs_per_sec_max: f64,
    pub mb_per_sec: f64,
    /// This process's CPU time per message (sender, receivers and, in process, the
    /// broker), median.
    pub cpu_us_per_msg: f64,
    /// nsqrd's CPU time per message (tcp and unix), median.
    pub server_cpu_us_per_msg: Option<f64>,
    /// Why repetitions failed (count mismatches, timeouts, errors).
    pub errors: Vec<String>,
}

impl Side {
    /// Summarise the good samples and the errors of one side.
    pub fn of(cell: &Cell, samples: &[Sample], errors: Vec<String>) -> Side {
        let msgs = (cell.count * cell.receivers as u64) as f64;
        let rates = sorted(samples.iter().map(|s| msgs / s.secs.max(1e-9)));
        let cpu = sorted(samples.iter().map(|s| s.cpu.as_secs_f64() * 1e6 / msgs));
        let server = sorted(
            samples
                .iter()
                .filter_map(|s| s.server_cpu)
                .map(|c| c.as_secs_f64() * 1e6 / msgs),
        );
        let rate = median(&rates);
        Side {
            reps_ok: samples.len(),
            received: if samples.is_empty() { 0 } else { cell.count },
            msgs_per_sec: rate,
            msgs_per_sec_min: rates.first().copied().unwrap_or(0.0),
            msgs_per_sec_max: rates.last().copied().unwrap_or(0.0),
            mb_per_sec: rate * cell.size as f64 / 1e6,
            cpu_us_per_msg: median(&cpu),
            server_cpu_us_per_msg: (!server.is_empty()).then(|| median(&server)),
            errors,
        }
    }

    pub fn ok(&self) -> bool {
        self.errors.is_empty() && self.reps_ok > 0
    }
}

impl CellReport {
    pub fn new(cell: Cell, nsqr: Side, libzmq: Option<Side>) -> CellReport {
        let ratio = libzmq
            .as_ref()
            .filter(|z| z.ok() && nsqr.ok() && z.msgs_per_sec > 0.0)
            .map(|z| nsqr.msgs_per_sec / z.msgs_per_sec);
        CellReport {
            cell,
            nsqr,
            libzmq,
            ratio,
        }
    }

    pub fn ok(&self) -> bool {
        self.nsqr.ok() && self.libzmq.as_ref().is_none_or(Side::ok)
    }
}

fn rate_cell(s: &Side) -> String {
    if !s.ok() {
        return "FAILED".into();
    }
    format!(
        "{} ({}-{})",
        short(s.msgs_per_sec),
        short(s.msgs_per_sec_min),
        short(s.msgs_per_sec_max)
    )
}

fn what(c: &Cell) -> String {
    match c.pattern {
        Pattern::Fanout => format!("fanout x{}", c.receivers),
        p => p.name().to_string(),
    }
}

impl Render for Report {
    /// The table printed for a person, then any errors.
    fn print_human(&self) {
        println!(
            "nsqr vs {} ({} reps per cell after {} untimed, median (min-max) msgs/s received, timed at the receiver)",
            self.libzmq, self.reps, self.warmup
        );
        println!(
            "machine: {} cpus, {}; load {} -> {}",
            self.machine.cpus,
            self.machine.model,
            self.machine.load_before,
            self.machine.load_after
        );
        if let Some(v) = &self.nsqrd {
            println!("nsqrd: {v}");
        }
        let mut t = Table::new([
            "pattern",
            "via",
            "size",
            "count",
            "nsqr msgs/s",
            "libzmq msgs/s",
            "ratio",
            "cpu us",
            "nsqrd us",
            "zmq us",
        ])
        .left(2);
        for c in &self.cells {
            t.row(vec![
                what(&c.cell),
                c.cell.transport.name().to_string(),
                c.cell.size.to_string(),
                c.cell.count.to_string(),
                rate_cell(&c.nsqr),
                c.libzmq.as_ref().map_or_else(|| "-".into(), rate_cell),
                c.ratio.map_or_else(|| "-".into(), |r| format!("{r:.2}")),
                format!("{:.3}", c.nsqr.cpu_us_per_msg),
                c.nsqr
                    .server_cpu_us_per_msg
                    .map_or_else(|| "-".into(), |u| format!("{u:.3}")),
                c.libzmq
                    .as_ref()
                    .map_or_else(|| "-".into(), |z| format!("{:.3}", z.cpu_us_per_msg)),
            ]);
        }
        t.print();
        for c in &self.cells {
            let sides = [
                Some(("nsqr", &c.nsqr)),
                c.libzmq.as_ref().map(|z| ("libzmq", z)),
            ];
            for (name, side) in sides.into_iter().flatten() {
                for e in &side.errors {
                    println!(
                        "FAILED {name} {} {} {} B: {e}",
                        what(&c.cell),
                        c.cell.transport.name(),
                        c.cell.size
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transports::cells::Transport;
    use std::time::Duration;

    fn sample(secs: f64) -> Sample {
        Sample {
            secs,
            cpu: Duration::from_millis(10),
            server_cpu: Some(Duration::from_millis(20)),
        }
    }

    #[test]
    fn medians_spread_and_ratio() {
        let cell = Cell {
            pattern: Pattern::Pubsub,
            transport: Transport::Tcp,
            size: 64,
            count: 1000,
            receivers: 1,
        };
        let nsqr = Side::of(&cell, &[sample(1.0), sample(0.5), sample(0.25)], vec![]);
        assert_eq!(
            (
                nsqr.msgs_per_sec,
                nsqr.msgs_per_sec_min,
                nsqr.msgs_per_sec_max
            ),
            (2000.0, 1000.0, 4000.0)
        );
        assert!((nsqr.cpu_us_per_msg - 10.0).abs() < 1e-9);
        assert_eq!(nsqr.server_cpu_us_per_msg, Some(20.0));
        let zmq = Side::of(&cell, &[sample(1.0), sample(0.5)], vec![]);
        assert_eq!(zmq.msgs_per_sec, 1500.0);
        let c = CellReport::new(cell, nsqr, Some(zmq));
        assert!(c.ok());
        assert!((c.ratio.unwrap_or(0.0) - 2000.0 / 1500.0).abs() < 1e-9);
        let failed = Side::of(&cell, &[], vec!["lost".into()]);
        assert!(!failed.ok());
        assert!(!CellReport::new(cell, failed, None).ok());
    }
}
