//! Command-line interface: `nsqr bench <mode> [flags]` and `nsqr floor [flags]`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "nsqr",
    version,
    about = "nsqr tools: benchmarks for nsqd-compatible servers"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Measure an nsqd-compatible server (nsqrd or nsqd) over its TCP protocol.
    Bench(Box<BenchArgs>),
    /// Serve publishes and keep their bytes, doing no broker work: the floor of any server's
    /// CPU per published message on this machine (`nsqr bench compare --floor` runs it).
    Floor(crate::floor::FloorArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// N connections publishing MPUB batches for --duration (like nsq's bench_writer).
    Pub,
    /// Pre-fill a topic (--count messages, or for --duration), then consume it with SUB, RDY
    /// and a FIN per message (like nsq's bench_reader), timed at the receiver.
    Sub,
    /// Publish and consume at once for --duration, then drain.
    Pubsub,
    /// Publish at a fixed --rate; publish-to-deliver latency percentiles.
    Latency,
    /// Publish+consume for each of --sizes (64 B, 1 KB, 8 KB, 64 KB), timed at the receiver.
    Matrix,
    /// Start nsqrd and a reference nsqd in turn (A B A B ...) and compare them side by side.
    Compare,
    /// The embedded broker, no sockets: publish and consume in this process for each of
    /// --sizes (--count messages each, default by size), --rounds times, timed at the receiver.
    Inproc,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Pub => "pub",
            Mode::Sub => "sub",
            Mode::Pubsub => "pubsub",
            Mode::Latency => "latency",
            Mode::Matrix => "matrix",
            Mode::Compare => "compare",
            Mode::Inproc => "inproc",
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    #[arg(value_enum)]
    pub mode: Mode,

    /// <addr>:<port> of the server's TCP listener (not used by compare).
    #[arg(long, default_value = "127.0.0.1:4150")]
    pub nsqd_tcp_address: String,

    /// How long to publish, Go-style (3s, 500ms, 1m).
    #[arg(long, default_value = "3s", value_parser = parse_duration)]
    pub duration: Duration,

    /// Message body size in bytes (at least 16: sequence number and send time).
    #[arg(long, default_value_t = 200)]
    pub size: usize,

    /// Messages per MPUB (capped so a batch fits nsqd's default 5 MiB --max-body-size).
    #[arg(long, default_value_t = 200)]
    pub batch_size: usize,

    /// Connections for publishing and for consuming (each side).
    #[arg(long, default_value_t = 1)]
    pub connections: usize,

    /// Publishing connections (overrides --connections).
    #[arg(long)]
    pub pub_connections: Option<usize>,

    /// Consuming connections (overrides --connections).
    #[arg(long)]
    pub sub_connections: Option<usize>,

    /// MPUB batches in flight per connection before waiting for an OK (1 = bench_writer).
    #[arg(long, default_value_t = 1)]
    pub pipeline: usize,

    /// RDY count per consuming connection (bench_reader's default).
    #[arg(long, default_value_t = 2500)]
    pub rdy: u32,

    /// Topic name (default: a new one per run, so leftovers never mix in).
    #[arg(long)]
    pub topic: Option<String>,

    /// Channel name.
    #[arg(long, default_value = "ch")]
    pub channel: String,

    /// pub and sub: publish exactly this many messages (default: publish for --duration).
    #[arg(long)]
    pub count: Option<u64>,

    /// latency: messages per second (compare uses --latency-rates).
    #[arg(long, default_value_t = 10_000.0)]
    pub rate: f64,

    /// compare: publish rates (msgs/s) for the latency phase, one run each: comma-separated or
    /// repeated; `k` and `M` suffixes allowed (10k = 10000).
    #[arg(long, value_delimiter = ',', default_value = "1000,10000", value_parser = parse_rate)]
    pub latency_rates: Vec<u64>,

    /// Stop consuming when no message arrived for this long (the rest counts as lost).
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub drain_timeout: Duration,

    /// IDENTIFY output_buffer_size for consumers (bytes; -1 = unbuffered; default: server's).
    #[arg(long, allow_negative_numbers = true)]
    pub output_buffer_size: Option<i64>,

    /// IDENTIFY output_buffer_timeout for consumers (ms; -1 = no timed flush; default: server's).
    #[arg(long, allow_negative_numbers = true)]
    pub output_buffer_timeout: Option<i64>,

    /// matrix, and compare with --matrix: message sizes in bytes.
    #[arg(long, value_delimiter = ',', default_value = "64,1024,8192,65536")]
    pub sizes: Vec<usize>,

    /// compare: also run the size matrix (pubsub for each of --sizes) on a fresh server.
    #[arg(long)]
    pub matrix: bool,

    /// compare: rounds of A B (medians are reported); inproc: rounds per size.
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,

    /// compare: the reference nsqd-compatible binary.
    #[arg(long)]
    pub reference: Option<PathBuf>,

    /// compare: the nsqrd binary (default: nsqrd next to this executable, else target/release).
    #[arg(long)]
    pub nsqrd: Option<PathBuf>,

    /// compare: messages queued (and never consumed) to measure RSS per queued message.
    #[arg(long, default_value_t = 200_000)]
    pub rss_messages: u64,

    /// compare: also publish to a topic with this many channels (fan-out), 0 = skip.
    #[arg(long, default_value_t = 0)]
    pub fanout_channels: usize,

    /// compare: also run pub and sub with this many idle consumer connections open, 0 = skip.
    #[arg(long, default_value_t = 0)]
    pub idle_connections: usize,

    /// compare: also measure `nsqr floor` each round (a publish phase only): the CPU per
    /// message of reading, keeping and answering a publish, with no broker work.
    #[arg(long)]
    pub floor: bool,

    /// compare: --mem-queue-size given to both servers (nsq's bench.sh uses 1000000).
    #[arg(long, default_value_t = 1_000_000)]
    pub mem_queue_size: u64,

    /// compare: an extra flag for both servers (repeatable), e.g. --server-arg=--log-level=warn.
    #[arg(long, allow_hyphen_values = true)]
    pub server_arg: Vec<String>,

    /// Print the results as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

impl BenchArgs {
    pub fn pub_connections(&self) -> usize {
        self.pub_connections.unwrap_or(self.connections)
    }

    pub fn sub_connections(&self) -> usize {
        self.sub_connections.unwrap_or(self.connections)
    }

    /// Reject values the benchmark cannot honour.
    pub fn validate(&self) -> Result<(), String> {
        use crate::body::{DEFAULT_MAX_MSG_SIZE, HEADER_LEN, MAX_PUBLISHERS};
        let uses_sizes = matches!(self.mode, Mode::Matrix | Mode::Inproc)
            || (self.mode == Mode::Compare && self.matrix);
        // matrix mode uses only --sizes; compare uses --size, and --sizes with --matrix.
        let mut sizes = if matches!(self.mode, Mode::Matrix | Mode::Inproc) {
            Vec::new()
        } else {
            vec![self.size]
        };
        if uses_sizes {
            if self.sizes.is_empty() {
                return Err("--sizes needs at least one size".into());
            }
            if has_duplicates(&self.sizes) {
                return Err("--sizes has the same size twice".into());
            }
            sizes.extend_from_slice(&self.sizes);
        }
        for s in sizes {
            if !(HEADER_LEN..=DEFAULT_MAX_MSG_SIZE).contains(&s) {
                return Err(format!(
                    "message size {s} out of range {HEADER_LEN}..={DEFAULT_MAX_MSG_SIZE}"
                ));
            }
        }
        if self.batch_size == 0 {
            return Err("--batch-size must be at least 1".into());
        }
        for (name, n) in [
            ("publishing", self.pub_connections()),
            ("consuming", self.sub_connections()),
        ] {
            if n == 0 || n > MAX_PUBLISHERS {
                return Err(format!("{name} connections must be 1..={MAX_PUBLISHERS}"));
            }
        }
        if self.pipeline == 0 {
            return Err("--pipeline must be at least 1".into());
        }
        if self.rdy == 0 {
            return Err("--rdy must be at least 1".into());
        }
        if !(self.rate.is_finite() && self.rate > 0.0) {
            return Err("--rate must be positive".into());
        }
        if let Some(t) = &self.topic {
            if !nsq_wire::names::is_valid_name(t.as_bytes()) {
                return Err(format!("invalid topic name {t:?}"));
            }
        }
        if !nsq_wire::names::is_valid_name(self.channel.as_bytes()) {
            return Err(format!("invalid channel name {:?}", self.channel));
        }
        if self.mode == Mode::Compare {
            if self.reference.is_none() {
                return Err("compare needs --reference PATH (an nsqd-compatible binary)".into());
            }
            if self.rounds == 0 {
                return Err("--rounds must be at least 1".into());
            }
            if self.rss_messages == 0 {
                return Err("--rss-messages must be at least 1".into());
            }
            if self.latency_rates.is_empty() {
                return Err("--latency-rates needs at least one rate".into());
            }
            if has_duplicates(&self.latency_rates) {
                return Err("--latency-rates has the same rate twice".into());
            }
        }
        Ok(())
    }
}

/// A Go duration (`3s`, `500ms`, `1m30s`, `1.5h`, `250us`), as nsq's tools take them; surrounding
/// spaces are ignored and negative durations refused.
fn parse_duration(s: &str) -> Result<Duration, String> {
    nsq_common::duration::parse(s.trim())
        .map_err(|_| format!("invalid duration {s:?} (examples: 3s, 500ms, 1m30s)"))
}

fn has_duplicates<T: PartialEq>(v: &[T]) -> bool {
    v.iter().enumerate().any(|(i, x)| v[..i].contains(x))
}

/// A whole number of messages per second, at least 1: `1000`, `10k`, `2.5k`, `1M`.
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = if let Some(n) = t.strip_suffix('k') {
        (n, 1e3)
    } else if let Some(n) = t.strip_suffix('M') {
        (n, 1e6)
    } else {
        (t, 1.0)
    };
    let bad = || format!("invalid rate {s:?} (msgs/s: a whole number like 1000, 10k or 2.5k)");
    let x = num.parse::<f64>().map_err(|_| bad())? * mult;
    if !(1.0..=1e12).contains(&x) || x.fract() != 0.0 {
        return Err(bad());
    }
    Ok(x as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> BenchArgs {
        let mut v = vec!["nsqr", "bench"];
        v.extend_from_slice(args);
        match Cli::try_parse_from(v).unwrap().command {
            Command::Bench(b) => *b,
            Command::Floor(_) => panic!("parsed as floor"),
        }
    }

    #[test]
    fn floor_takes_the_flags_compare_starts_servers_with() {
        let v = [
            "nsqr",
            "floor",
            "--tcp-address=127.0.0.1:0",
            "--http-address=127.0.0.1:0",
            "--https-address=",
            "--broadcast-address=127.0.0.1",
            "--data-path=/tmp/x",
        ];
        match Cli::try_parse_from(v).unwrap().command {
            Command::Floor(f) => assert_eq!(f.tcp_address, "127.0.0.1:0"),
            Command::Bench(_) => panic!("parsed as bench"),
        }
        assert!(Cli::try_parse_from(["nsqr", "floor", "--no-such-flag"]).is_err());
    }

    #[test]
    fn defaults_and_flags() {
        let b = parse(&["pub"]);
        assert_eq!(b.mode, Mode::Pub);
        assert_eq!(b.duration, Duration::from_secs(3));
        assert_eq!((b.size, b.batch_size, b.connections), (200, 200, 1));
        assert!(b.validate().is_ok());
        let b = parse(&[
            "matrix",
            "--duration",
            "500ms",
            "--sizes",
            "64,1024",
            "--json",
        ]);
        assert_eq!(b.sizes, vec![64, 1024]);
        assert_eq!(b.duration, Duration::from_millis(500));
        assert!(b.json);
        let b = parse(&["sub", "--output-buffer-size", "-1", "--sub-connections=2"]);
        assert_eq!(b.output_buffer_size, Some(-1));
        assert_eq!((b.pub_connections(), b.sub_connections()), (1, 2));
    }

    #[test]
    fn durations_parse_as_go_does() {
        assert_eq!(parse_duration("3s"), Ok(Duration::from_secs(3)));
        assert_eq!(parse_duration(" 1m30s "), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("250µs"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        for bad in ["", "3", "s", "-1s", "3x", "1.2.3s", "ms5"] {
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            parse_duration("3x"),
            Err("invalid duration \"3x\" (examples: 3s, 500ms, 1m30s)".to_string())
        );
    }

    #[test]
    fn rates_parse_with_suffixes() {
        assert_eq!(parse_rate("1000"), Ok(1000));
        assert_eq!(parse_rate("10k"), Ok(10_000));
        assert_eq!(parse_rate("2.5k"), Ok(2500));
        assert_eq!(parse_rate("1M"), Ok(1_000_000));
        assert_eq!(parse_rate(" 500 "), Ok(500));
        for bad in ["", "0", "-5", "1.5", "k", "10x", "1m", "inf", "NaN", "1e13"] {
            assert!(parse_rate(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn latency_rates_and_matrix_flags() {
        let b = parse(&["compare", "--reference", "/bin/true"]);
        assert_eq!(b.latency_rates, vec![1000, 10_000]);
        assert!(!b.matrix);
        let b = parse(&[
            "compare",
            "--reference",
            "/bin/true",
            "--latency-rates",
            "2k,5000",
            "--latency-rates=20k",
            "--matrix",
            "--sizes",
            "64,1024",
        ]);
        assert_eq!(b.latency_rates, vec![2000, 5000, 20_000]);
        assert!(b.matrix);
        assert!(b.validate().is_ok());
        assert!(Cli::try_parse_from(["nsqr", "bench", "compare", "--latency-rates", "0"]).is_err());
    }

    #[test]
    fn validation() {
        assert!(parse(&["compare"]).validate().is_err());
        assert!(parse(&["pub", "--size", "8"]).validate().is_err());
        assert!(parse(&["pub", "--topic", "bad topic"]).validate().is_err());
        assert!(parse(&["compare", "--reference", "/bin/true"])
            .validate()
            .is_ok());
        let compare = |extra: &[&str]| {
            let mut v = vec!["compare", "--reference", "/bin/true"];
            v.extend_from_slice(extra);
            parse(&v).validate()
        };
        assert!(compare(&["--latency-rates", "1k,1000"]).is_err());
        // --sizes is checked only when the matrix runs.
        assert!(compare(&["--sizes", "8"]).is_ok());
        assert!(compare(&["--matrix", "--sizes", "8"]).is_err());
        assert!(compare(&["--matrix", "--sizes", "64,64"]).is_err());
        assert!(compare(&["--matrix", "--sizes", "64,1048576"]).is_ok());
        assert!(parse(&["matrix", "--sizes", "64,2000000"])
            .validate()
            .is_err());
    }
}
