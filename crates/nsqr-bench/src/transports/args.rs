//! `nsqr bench transports`' own flags (flattened into `nsqr bench`'s), and their checks. The
//! sizes come from the shared `--sizes`, nsqrd from `--nsqrd`.

use std::time::Duration;

use clap::Args;

use super::cells::{Pattern, Transport};

#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Transports")]
pub struct TransportsArgs {
    /// transports: the patterns, comma-separated.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "pubsub,reqrep,fanout"
    )]
    pub patterns: Vec<Pattern>,

    /// transports: where messages travel: tcp (through nsqrd / tcp://), unix (nsqrd's unix
    /// socket / ipc://), inproc (the embedded broker / inproc://).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "tcp,unix,inproc"
    )]
    pub transports: Vec<Transport>,

    /// transports: messages per size, in --sizes' order [default: ServerLink's 100000 for
    /// 64 B, 50000 for 1 KB, 10000 for 8 KB, 1000 for 64 KB].
    #[arg(long, value_delimiter = ',')]
    pub counts: Vec<u64>,

    /// transports: multiply every count (and the fan-out's) by this.
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,

    /// transports: repetitions per cell, nsqr and libzmq alternating.
    #[arg(long, default_value_t = 5)]
    pub reps: usize,

    /// transports: untimed repetitions per cell before the timed ones, each side: they warm
    /// the heap and the senders' pool (a failure among them fails the cell).
    #[arg(long, default_value_t = 2)]
    pub warmup: usize,

    /// transports: the fan-out cells' subscriber counts.
    #[arg(long, value_delimiter = ',', default_value = "2,4,8")]
    pub fanout_subscribers: Vec<usize>,

    /// transports: messages of a fan-out cell.
    #[arg(long, default_value_t = 10_000)]
    pub fanout_count: u64,

    /// transports: message size of the fan-out cells.
    #[arg(long, default_value_t = 64)]
    pub fanout_size: usize,

    /// transports: how long one repetition of a cell may take before it fails.
    #[arg(long, default_value = "60s", value_parser = crate::cli::parse_duration)]
    pub cell_timeout: Duration,

    /// transports: measure nsqr only, even with libzmq built in.
    #[arg(long)]
    pub no_libzmq: bool,
}

impl TransportsArgs {
    /// Reject values the matrix cannot honour (`sizes`: `--sizes`, already range-checked).
    pub fn validate(&self, sizes: &[usize]) -> Result<(), String> {
        if self.patterns.is_empty() || self.transports.is_empty() {
            return Err("--patterns and --transports need at least one each".into());
        }
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
        if self.counts.contains(&0) || self.fanout_count == 0 {
            return Err("--counts and --fanout-count must be at least 1".into());
        }
        if !(self.scale.is_finite() && self.scale > 0.0 && self.scale <= 1000.0) {
            return Err("--scale must be in (0, 1000]".into());
        }
        if !(1..=1000).contains(&self.reps) {
            return Err("--reps must be 1..=1000".into());
        }
        if self.warmup > 100 {
            return Err("--warmup must be 0..=100".into());
        }
        if self.fanout_subscribers.is_empty()
            || twice(&self.fanout_subscribers)
            || self
                .fanout_subscribers
                .iter()
                .any(|&k| !(1..=64).contains(&k))
        {
            return Err("--fanout-subscribers needs distinct counts in 1..=64".into());
        }
        let max = crate::body::DEFAULT_MAX_MSG_SIZE;
        if !(crate::body::HEADER_LEN..=max).contains(&self.fanout_size) {
            return Err(format!("--fanout-size must be 16..={max}"));
        }
        if self.cell_timeout.is_zero() {
            return Err("--cell-timeout must be positive".into());
        }
        Ok(())
    }
}

/// Whether a list names something twice.
fn twice<T: PartialEq>(v: &[T]) -> bool {
    v.iter().enumerate().any(|(i, x)| v[..i].contains(x))
}
