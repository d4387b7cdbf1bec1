//! Command-line interface: `nsqr bench <mode> [flags]` and `nsqr floor [flags]`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "nsqr",
    version,
    about = "nsqr tools: publish, tail, watch and save topics; benchmark nsqd-compatible servers"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Publish lines (or whole files) from stdin or files to a topic, like NSQ's to_nsq.
    Pub(crate::tools::publish::PubArgs),
    /// Print a topic's messages, like NSQ's nsq_tail.
    Tail(crate::tools::tail::TailArgs),
    /// A live per-interval view of a channel's rates and depths, like NSQ's nsq_stat.
    Stat(crate::tools::stat::StatArgs),
    /// Write topics to rolling files, like NSQ's nsq_to_file.
    ToFile(crate::tools::to_file::ToFileArgs),
    /// Measure an nsqd-compatible server (nsqrd or nsqd) over its TCP protocol.
    Bench(Box<BenchArgs>),
    /// Serve publishes and keep their bytes, doing no broker work: the floor of any server's
    /// CPU per published message on this machine (`nsqr bench compare --floor` runs it); with
    /// `--http-address`, the same for HTTP requests.
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
    /// Start nsqrd and a reference nsqd in turn (A B A B ...) and compare them side by side;
    /// with --kv-reference, nsqrd's keyspace against redis-server.
    Compare,
    /// The embedded broker, no sockets: publish and consume in this process for each of
    /// --sizes (--count messages each, default by size), --rounds times, timed at the receiver.
    Inproc,
    /// N nodes and a lookupd (started, or given): nsq's bench.py run (--mode pub or pubsub)
    /// summed over the nodes, with exact loss and duplicate counts per node.
    Cluster,
    /// The keyspace (or any Redis-protocol server) at --kv-address: redis-benchmark SET/GET,
    /// nubmq's workload, expiry lateness, RSS per key (--kv-phases).
    Kv,
    /// nsqrd's HTTP queues: pre-fill (TCP, --count), then --http-consumers long-polling
    /// /channel/receive for --http-batch messages each and acknowledging by receipt.
    HttpConsume,
    /// nsqrd's HTTP queues: pre-fill (TCP, --count), then one /channel/stream (server-sent
    /// events, --rdy in flight) acknowledged by receipt.
    Sse,
    /// nsqrd's ordered channels: --count messages over --keys ordering keys (HTTP /mpub), then
    /// an ordered and a plain channel each consumed over TCP; per-key order checked.
    Ordered,
    /// The transport matrix against libzmq (ServerLink's method): pubsub, reqrep and fanout
    /// over tcp and unix (through an nsqrd it starts) and inproc (the embedded broker), each
    /// of --sizes, --reps times, timed at the receiver, exact counts checked.
    Transports,
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
            Mode::Cluster => "cluster",
            Mode::Kv => "kv",
            Mode::HttpConsume => "http-consume",
            Mode::Sse => "sse",
            Mode::Ordered => "ordered",
            Mode::Transports => "transports",
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

    /// <addr>:<port> of the server's HTTP listener (http-consume, sse, ordered).
    #[arg(long, default_value = "127.0.0.1:4151")]
    pub nsqd_http_address: String,

    /// http-consume: long-polling HTTP consumers.
    #[arg(long, default_value_t = 100)]
    pub http_consumers: usize,

    /// http-consume: messages per receive; ordered: messages per /mpub (one key each).
    #[arg(long, default_value_t = 10)]
    pub http_batch: usize,

    /// ordered: ordering keys.
    #[arg(long, default_value_t = 1000)]
    pub keys: usize,

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

    /// RDY count per consuming connection [default: 2500, bench_reader's; cluster: 10000,
    /// bench.py's, with --max-rdy-count at this value for the nodes it starts].
    #[arg(long)]
    pub rdy: Option<u32>,

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

    /// compare: the reference nsqd-compatible binary; cluster: the nodes' binary (instead of
    /// nsqrd).
    #[arg(long)]
    pub reference: Option<PathBuf>,

    /// compare and cluster: the nsqrd binary (default: nsqrd next to this executable, else
    /// target/release).
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

    /// compare and cluster: --mem-queue-size given to the servers they start [default: compare
    /// 1000000, as nsq's bench.sh; cluster 10000000, as bench.py].
    #[arg(long)]
    pub mem_queue_size: Option<u64>,

    /// compare: also run nsq's own bench_writer and bench_reader (found in this directory)
    /// against each server as nsq's bench.sh does, and against the floor as their ceiling.
    #[arg(long, value_name = "DIR")]
    pub nsq_bench: Option<PathBuf>,

    /// compare and cluster: an extra flag for the servers they start (repeatable), e.g.
    /// --server-arg=--log-level=warn.
    #[arg(long, allow_hyphen_values = true)]
    pub server_arg: Vec<String>,

    /// Print the results as JSON on stdout.
    #[arg(long)]
    pub json: bool,

    /// kv: <addr>:<port> of the Redis-protocol server.
    #[arg(long, default_value = "127.0.0.1:6379")]
    pub kv_address: String,

    /// kv and compare --kv-reference: the workloads, comma-separated.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "setget,pipelined,nubmq,expiry,rss"
    )]
    pub kv_phases: Vec<crate::kv::Phase>,

    /// kv: requests per redis-benchmark test (-n).
    #[arg(long, default_value_t = 1_000_000)]
    pub kv_requests: u64,

    /// kv: redis-benchmark clients (-c).
    #[arg(long, default_value_t = 100)]
    pub kv_clients: usize,

    /// kv: requests in flight per client in the pipelined phase (-P).
    #[arg(long, default_value_t = 16)]
    pub kv_pipeline: usize,

    /// kv: random keys of redis-benchmark (-r).
    #[arg(long, default_value_t = 1_000_000)]
    pub kv_keyspace: u64,

    /// kv: connections of nubmq's workload.
    #[arg(long, default_value_t = 50)]
    pub nubmq_connections: usize,

    /// kv: SETs (then as many GETs) per connection of nubmq's workload.
    #[arg(long, default_value_t = 20_000)]
    pub nubmq_ops: usize,

    /// kv: keys holding a 1-hour TTL in the expiry phase.
    #[arg(long, default_value_t = 100_000)]
    pub expiry_volatile: usize,

    /// kv: keys sharing one deadline in the expiry phase.
    #[arg(long, default_value_t = 1000)]
    pub expiry_shared: usize,

    /// kv: how long after the shared deadline to wait for its expired events.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub expiry_timeout: Duration,

    /// kv: keys (32-byte values) written to measure RSS per key.
    #[arg(long, default_value_t = 1_000_000)]
    pub rss_keys: usize,

    /// kv: the redis-benchmark binary (Debian's redis-tools).
    #[arg(long, default_value = "redis-benchmark")]
    pub redis_benchmark: PathBuf,

    /// kv: the server's pid, for CPU and RSS (default: INFO's process_id if it runs here).
    #[arg(long)]
    pub kv_pid: Option<u32>,

    /// compare: a redis-server binary to compare nsqrd's keyspace with.
    #[arg(long)]
    pub kv_reference: Option<PathBuf>,

    #[command(flatten)]
    pub cluster: ClusterArgs,

    #[command(flatten)]
    pub transports: crate::transports::TransportsArgs,
}

/// bench.py's two runs: publishing only, or publishing and consuming at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClusterMode {
    /// Publish for --duration (no channel, as bench.py), then drain every topic through
    /// lookupd to count loss and duplicates (the drain is reported apart).
    Pub,
    /// Consumers subscribed through lookupd first, then publish for --duration and drain.
    Pubsub,
}

/// `nsqr bench cluster`'s flags. Defaults are nsq's bench.py's: 3 topics (one per load host),
/// a bench_writer with 2 connections (GOMAXPROCS=2) per node and topic, a bench_reader with 8
/// (GOMAXPROCS=8) per node and topic, i.e. 8 clients per channel on every node.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Cluster")]
pub struct ClusterArgs {
    /// cluster: how many nodes to start (ignored with --nsqd-tcp-addresses).
    #[arg(long, default_value_t = 3)]
    pub nodes: usize,

    /// cluster: bench.py's mode.
    #[arg(long = "mode", value_enum, default_value = "pubsub")]
    pub cluster_mode: ClusterMode,

    /// cluster: topics (bench.py: one per load host, 3).
    #[arg(long, default_value_t = 3)]
    pub topics: usize,

    /// cluster: publishing connections per node and topic (bench.py: bench_writer, 2).
    #[arg(long, default_value_t = 2)]
    pub writers: usize,

    /// cluster: consumer clients per topic's channel; each finds every node through lookupd
    /// and holds a connection to each (bench.py: bench_reader, 8 per node).
    #[arg(long, default_value_t = 8)]
    pub readers: usize,

    /// cluster: use these running nodes (comma-separated, as they register with lookupd)
    /// instead of starting them; needs --lookupd-http-address.
    #[arg(long, value_delimiter = ',')]
    pub nsqd_tcp_addresses: Vec<String>,

    /// cluster: process ids of the given nodes (same order), for their CPU and memory.
    #[arg(long, value_delimiter = ',')]
    pub nsqd_pids: Vec<u32>,

    /// cluster: the lookupd the given nodes register with.
    #[arg(long)]
    pub lookupd_http_address: Option<String>,

    /// cluster: the lookupd binary to start [default: nsqrlookupd next to this executable,
    /// else target/release/nsqrlookupd].
    #[arg(long)]
    pub lookupd_bin: Option<PathBuf>,

    /// cluster: put each node in a network namespace of its own, reached over a veth pair
    /// (needs root and iproute2; created here and removed on exit).
    #[arg(long)]
    pub netns: bool,

    /// cluster --netns: bandwidth of each node's link, each way (100mbit, 1gbit, 2.5gbit).
    #[arg(long)]
    pub netns_rate: Option<String>,

    /// cluster --netns: delay added to each node's link, each way (tc's syntax: 100us, 1ms;
    /// needs the kernel's netem qdisc).
    #[arg(long)]
    pub netns_delay: Option<String>,
}

impl BenchArgs {
    pub fn pub_connections(&self) -> usize {
        self.pub_connections.unwrap_or(self.connections)
    }

    pub fn sub_connections(&self) -> usize {
        self.sub_connections.unwrap_or(self.connections)
    }

    /// `--rdy`, or the mode's default: bench_reader's 2500; for a cluster it starts, bench.py's
    /// 10000 (its nodes get `--max-rdy-count` to match); for given nodes 2500 again, nsqd's
    /// default `--max-rdy-count`.
    pub fn rdy(&self) -> u32 {
        let starts_nodes = self.mode == Mode::Cluster && self.cluster.nsqd_tcp_addresses.is_empty();
        self.rdy.unwrap_or(if starts_nodes { 10_000 } else { 2500 })
    }

    /// `--mem-queue-size`, or the mode's default (bench.sh's 1000000, bench.py's 10000000).
    pub fn mem_queue_size(&self) -> u64 {
        self.mem_queue_size
            .unwrap_or(if self.mode == Mode::Cluster {
                10_000_000
            } else {
                1_000_000
            })
    }

    /// Reject values the benchmark cannot honour.
    pub fn validate(&self) -> Result<(), String> {
        use crate::body::{DEFAULT_MAX_MSG_SIZE, HEADER_LEN, MAX_PUBLISHERS};
        let sizes_only = matches!(self.mode, Mode::Matrix | Mode::Inproc | Mode::Transports);
        let uses_sizes = sizes_only || (self.mode == Mode::Compare && self.matrix);
        // matrix mode uses only --sizes; compare uses --size, and --sizes with --matrix.
        let mut sizes = if sizes_only {
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
        if !(1..=1000).contains(&self.http_batch) {
            return Err("--http-batch must be 1..=1000".into());
        }
        if !(1..=10_000).contains(&self.http_consumers) {
            return Err("--http-consumers must be 1..=10000".into());
        }
        if self.keys == 0 {
            return Err("--keys must be at least 1".into());
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
        if self.rdy() == 0 {
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
        if self.mode == Mode::Kv || self.kv_reference.is_some() {
            self.validate_kv()?;
        }
        if self.mode == Mode::Compare && self.reference.is_none() && self.kv_reference.is_some() {
            if self.rounds == 0 {
                return Err("--rounds must be at least 1".into());
            }
            return Ok(());
        }
        if self.mode == Mode::Compare {
            if self.reference.is_none() {
                return Err("compare needs --reference PATH (an nsqd-compatible binary), or --kv-reference PATH (redis-server)".into());
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
        if self.mode == Mode::Cluster {
            self.cluster.validate()?;
        }
        if self.mode == Mode::Transports {
            self.transports.validate(&self.sizes)?;
        }
        Ok(())
    }
}

impl ClusterArgs {
    /// The number of nodes: the given ones, else `--nodes`.
    pub fn node_count(&self) -> usize {
        if self.nsqd_tcp_addresses.is_empty() {
            self.nodes
        } else {
            self.nsqd_tcp_addresses.len()
        }
    }

    fn validate(&self) -> Result<(), String> {
        use crate::body::MAX_PUBLISHERS;
        let nodes = self.node_count();
        if !(1..=64).contains(&nodes) {
            return Err("--nodes must be 1..=64".into());
        }
        if !(1..=64).contains(&self.topics) {
            return Err("--topics must be 1..=64".into());
        }
        if self.writers == 0 || self.writers > MAX_PUBLISHERS {
            return Err(format!("--writers must be 1..={MAX_PUBLISHERS}"));
        }
        if self.readers == 0 {
            return Err("--readers must be at least 1".into());
        }
        let given = !self.nsqd_tcp_addresses.is_empty();
        if given && self.lookupd_http_address.is_none() {
            return Err("--nsqd-tcp-addresses needs --lookupd-http-address (the lookupd the nodes register with)".into());
        }
        if !given && self.lookupd_http_address.is_some() {
            return Err("--lookupd-http-address is for given nodes (--nsqd-tcp-addresses); started nodes get a lookupd of their own".into());
        }
        if !self.nsqd_pids.is_empty() && self.nsqd_pids.len() != self.nsqd_tcp_addresses.len() {
            return Err("--nsqd-pids needs one pid per --nsqd-tcp-addresses entry".into());
        }
        if self.netns && given {
            return Err("--netns places the nodes it starts; it cannot move given nodes".into());
        }
        if (self.netns_rate.is_some() || self.netns_delay.is_some()) && !self.netns {
            return Err("--netns-rate and --netns-delay need --netns".into());
        }
        if let Some(r) = &self.netns_rate {
            if crate::cluster::rate_bits(r).is_none() {
                return Err(format!(
                    "invalid --netns-rate {r:?} (bits per second, at least 8kbit: 100mbit, 1gbit, 2.5gbit)"
                ));
            }
        }
        if let Some(d) = &self.netns_delay {
            if d.is_empty() || !d.chars().all(|c| c.is_ascii_alphanumeric() || c == '.') {
                return Err(format!(
                    "invalid --netns-delay {d:?} (tc's syntax: 100us, 1ms)"
                ));
            }
        }
        Ok(())
    }
}

impl BenchArgs {
    fn validate_kv(&self) -> Result<(), String> {
        if self.kv_phases.is_empty() || has_duplicates(&self.kv_phases) {
            return Err("--kv-phases needs each phase at most once".into());
        }
        for (name, n) in [
            ("--kv-requests", self.kv_requests as usize),
            ("--kv-clients", self.kv_clients),
            ("--kv-pipeline", self.kv_pipeline),
            ("--kv-keyspace", self.kv_keyspace as usize),
            ("--nubmq-connections", self.nubmq_connections),
            ("--nubmq-ops", self.nubmq_ops),
            ("--expiry-shared", self.expiry_shared),
            ("--rss-keys", self.rss_keys),
        ] {
            if n == 0 {
                return Err(format!("{name} must be at least 1"));
            }
        }
        Ok(())
    }
}

/// A Go duration (`3s`, `500ms`, `1m30s`, `1.5h`, `250us`), as nsq's tools take them; surrounding
/// spaces are ignored and negative durations refused.
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
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
            other => panic!("parsed as {other:?}"),
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
            other => panic!("parsed as {other:?}"),
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
    fn kv_flags() {
        let b = parse(&["kv", "--kv-phases", "setget,rss", "--kv-requests", "10"]);
        assert_eq!(
            b.kv_phases,
            vec![crate::kv::Phase::Setget, crate::kv::Phase::Rss]
        );
        assert!(b.validate().is_ok());
        assert!(parse(&["kv", "--kv-phases", "rss,rss"]).validate().is_err());
        assert!(parse(&["kv", "--nubmq-ops", "0"]).validate().is_err());
        // compare with only --kv-reference needs no nsqd reference.
        assert!(
            parse(&["compare", "--kv-reference", "/usr/bin/redis-server"])
                .validate()
                .is_ok()
        );
    }

    #[test]
    fn cluster_flags() {
        let b = parse(&["cluster"]);
        assert_eq!(b.cluster.cluster_mode, ClusterMode::Pubsub);
        assert_eq!(
            (
                b.cluster.nodes,
                b.cluster.topics,
                b.cluster.writers,
                b.cluster.readers
            ),
            (3, 3, 2, 8)
        );
        assert_eq!((b.rdy(), b.mem_queue_size()), (10_000, 10_000_000));
        assert!(b.validate().is_ok());
        let b = parse(&["cluster", "--mode", "pub", "--nodes=2", "--rdy=300"]);
        assert_eq!(b.cluster.cluster_mode, ClusterMode::Pub);
        assert_eq!((b.cluster.node_count(), b.rdy()), (2, 300));
        let given = parse(&[
            "cluster",
            "--nsqd-tcp-addresses=127.0.0.1:1,127.0.0.1:2",
            "--lookupd-http-address=127.0.0.1:3",
        ]);
        assert_eq!((given.cluster.node_count(), given.rdy()), (2, 2500));
        assert!(given.validate().is_ok());
        // Other modes keep their defaults.
        let b = parse(&["sub"]);
        assert_eq!((b.rdy(), b.mem_queue_size()), (2500, 1_000_000));
        let bad = |extra: &[&str]| {
            let mut v = vec!["cluster"];
            v.extend_from_slice(extra);
            parse(&v).validate().unwrap_err()
        };
        assert!(bad(&["--nodes=0"]).contains("--nodes"));
        assert!(bad(&["--writers=0"]).contains("--writers"));
        assert!(bad(&["--readers=0"]).contains("--readers"));
        assert!(bad(&["--nsqd-tcp-addresses=a:1"]).contains("--lookupd-http-address"));
        assert!(bad(&["--lookupd-http-address=a:1"]).contains("given nodes"));
        assert!(bad(&["--netns-rate=1gbit"]).contains("need --netns"));
        assert!(bad(&["--netns", "--netns-rate=fast"]).contains("--netns-rate"));
        assert!(bad(&["--netns", "--netns-delay=1 ms"]).contains("--netns-delay"));
        assert!(bad(&[
            "--netns",
            "--nsqd-tcp-addresses=a:1",
            "--lookupd-http-address=b:2"
        ])
        .contains("cannot move"));
        assert!(bad(&[
            "--nsqd-tcp-addresses=a:1",
            "--lookupd-http-address=b:2",
            "--nsqd-pids=1,2"
        ])
        .contains("one pid"));
    }

    #[test]
    fn transports_flags() {
        let b = parse(&["transports"]);
        assert_eq!(b.transports.reps, 5);
        assert!(b.transports.counts.is_empty());
        assert!(b.validate().is_ok());
        let b = parse(&["transports", "--counts", "200,100,50,20", "--reps=1"]);
        assert_eq!(b.transports.counts, vec![200, 100, 50, 20]);
        assert!(b.validate().is_ok());
        let bad = |extra: &[&str]| {
            let mut v = vec!["transports"];
            v.extend_from_slice(extra);
            parse(&v).validate().unwrap_err()
        };
        assert!(bad(&["--counts=1,2"]).contains("one count per size"));
        assert!(bad(&["--reps=0"]).contains("--reps"));
        assert!(bad(&["--scale=0"]).contains("--scale"));
        assert!(bad(&["--fanout-subscribers=2,2"]).contains("distinct"));
        assert!(bad(&["--transports=unix,unix"]).contains("at most once"));
        assert!(bad(&["--sizes=8"]).contains("out of range"));
        assert!(
            Cli::try_parse_from(["nsqr", "bench", "transports", "--patterns", "nope"]).is_err()
        );
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
