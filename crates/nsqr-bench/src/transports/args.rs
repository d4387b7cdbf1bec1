//! `transports`' own flags (flattened into `TransportsCmd` beside `--sizes` and `--nsqrd`).
//! Ranges are checked as the flags are parsed; `check` holds the rules relating several values.

use std::time::Duration;

use clap::Args;

use crate::cli::{at_least, within};

use super::cells::{Pattern, Transport};

#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Transports")]
pub struct TransportsArgs {
    /// The patterns, comma-separated.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "pubsub,reqrep,fanout"
    )]
    pub patterns: Vec<Pattern>,

    /// Where messages travel: tcp (through nsqrd / tcp://), unix (nsqrd's unix
    /// socket / ipc://), inproc (the embedded broker / inproc://).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "tcp,unix,inproc"
    )]
    pub transports: Vec<Transport>,

    /// Messages per size, in --sizes' order [default: ServerLink's 100000 for
    /// 64 B, 50000 for 1 KB, 10000 for 8 KB, 1000 for 64 KB].
    #[arg(long, value_delimiter = ',', value_parser = at_least(1u64))]
    pub counts: Vec<u64>,

    /// Multiply every count (and the fan-out's) by this.
    #[arg(long, default_value_t = 1.0, value_parser = scale)]
    pub scale: f64,

    /// Repetitions per cell, nsqr and libzmq alternating.
    #[arg(long, default_value_t = 5, value_parser = within(1usize, 1000))]
    pub reps: usize,

    /// Untimed repetitions per cell before the timed ones, each side: they warm
    /// the heap and the senders' pool (a failure among them fails the cell).
    #[arg(long, default_value_t = 2, value_parser = within(0usize, 100))]
    pub warmup: usize,

    /// The fan-out cells' subscriber counts.
    #[arg(long, value_delimiter = ',', default_value = "2,4,8", value_parser = within(1usize, 64))]
    pub fanout_subscribers: Vec<usize>,

    /// Messages of a fan-out cell.
    #[arg(long, default_value_t = 10_000, value_parser = at_least(1u64))]
    pub fanout_count: u64,

    /// Message size of the fan-out cells.
    #[arg(long, default_value_t = 64, value_parser = crate::cli::msg_size)]
    pub fanout_size: usize,

    /// How long one repetition of a cell may take before it fails.
    #[arg(long, default_value = "60s", value_parser = cell_timeout)]
    pub cell_timeout: Duration,

    /// Measure nsqr only, even with libzmq built in.
    #[arg(long)]
    pub no_libzmq: bool,
}

impl TransportsArgs {
    /// The rules relating several values (`sizes`: `--sizes`).
    pub fn check(&self, sizes: &[usize]) -> Result<(), String> {
        if twice(&self.patterns) || twice(&self.transports) {
            return Err("--patterns and --transports name each at most once".into());
        }
        if !self.counts.is_empty() && self.counts.len() != sizes.len() {
            return Err(format!(
                "--counts needs one count per size of --sizes ({} given for {} sizes)",
                self.counts.len(),
                sizes.len()
            ));
        }
        if twice(&self.fanout_subscribers) {
            return Err("--fanout-subscribers needs distinct counts in 1..=64".into());
        }
        Ok(())
    }
}

/// Whether a list names something twice.
fn twice<T: PartialEq>(v: &[T]) -> bool {
    crate::cli::has_duplicates(v)
}

/// A factor in (0, 1000].
fn scale(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 && x <= 1000.0 => Ok(x),
        _ => Err(format!("--scale must be in (0, 1000], not {s:?}")),
    }
}

/// A positive duration.
fn cell_timeout(s: &str) -> Result<Duration, String> {
    let d = crate::cli::parse_duration(s)?;
    if d.is_zero() {
        return Err("--cell-timeout must be positive".into());
    }
    Ok(d)
}
