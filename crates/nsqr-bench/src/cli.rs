//! Command-line interface: `nsqr-bench <mode> [flags]`, one subcommand per mode.
//!
//! Each mode takes only the flags it uses; groups that several modes share (how to publish,
//! how to consume, the keyspace workloads) are structs flattened into the modes' own. Ranges
//! and names are checked by clap's value parsers as the flags are read; [`Command::check`]
//! holds the few rules that relate several values (a list naming a value twice, one count
//! per size), and reports them as clap usage errors too.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::body::{DEFAULT_MAX_MSG_SIZE, HEADER_LEN, MAX_PUBLISHERS};
use crate::cluster::ClusterArgs;
use crate::floor::FloorArgs;
use crate::http_pub::HttpPubArgs;
use crate::kv::Phase;
use crate::replicated::ReplicatedCmd;
use crate::transports::TransportsArgs;

#[derive(Debug, Parser)]
#[command(
    name = "nsqr-bench",
    version,
    about = "Measure nsqd-compatible servers (nsqrd or nsqd) and nsqrd's keyspace"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// N connections publishing MPUB batches for --duration (like nsq's bench_writer).
    Pub(PubArgs),
    /// Pre-fill a topic (--count messages, or for --duration), then consume it with SUB, RDY
    /// and a FIN per message (like nsq's bench_reader), timed at the receiver.
    Sub(PubSubArgs),
    /// Publish and consume at once for --duration, then drain.
    Pubsub(PubSubArgs),
    /// Publish at a fixed --rate; publish-to-deliver latency percentiles.
    Latency(LatencyArgs),
    /// Publish+consume for each of --sizes (64 B, 1 KB, 8 KB, 64 KB), timed at the receiver.
    Matrix(MatrixArgs),
    /// Start nsqrd and a reference nsqd in turn (A B A B ...) and compare them side by side;
    /// with --kv-reference, nsqrd's keyspace against redis-server.
    Compare(Box<CompareArgs>),
    /// The embedded broker, no sockets: publish and consume in this process for each of
    /// --sizes (--count messages each, default by size), --rounds times, timed at the receiver.
    Inproc(InprocArgs),
    /// N nodes and a lookupd (started, or given): nsq's bench.py run (--mode pub or pubsub)
    /// summed over the nodes, with exact loss and duplicate counts per node.
    Cluster(Box<ClusterCmd>),
    /// A replicated topic (--replicas nodes on 127.0.0.1, the topic's leader found, MPUBs to
    /// it, then consumed from it) beside one unreplicated nsqrd, A B A B over --rounds:
    /// rates, publish-to-OK percentiles, the nodes' summed CPU per message, ratios.
    Replicated(Box<ReplicatedCmd>),
    /// The keyspace (or any Redis-protocol server) at --kv-address: redis-benchmark SET/GET,
    /// nubmq's workload, expiry lateness, RSS per key (--kv-phases).
    Kv(KvArgs),
    /// nsqrd's HTTP queues: pre-fill (TCP, --count), then --http-consumers long-polling
    /// /channel/receive for --http-batch messages each and acknowledging by receipt.
    HttpConsume(HttpConsumeArgs),
    /// nsqrd's HTTP queues: pre-fill (TCP, --count), then one /channel/stream (server-sent
    /// events, --rdy in flight) acknowledged by receipt.
    Sse(QueueArgs),
    /// nsqrd's ordered channels: --count messages over --keys ordering keys (HTTP /mpub), then
    /// an ordered and a plain channel each consumed over TCP; per-key order checked.
    Ordered(OrderedArgs),
    /// The transport matrix against libzmq (ServerLink's method): pubsub, reqrep and fanout
    /// over tcp and unix (through an nsqrd it starts) and inproc (the embedded broker), each
    /// of --sizes, --reps times, timed at the receiver, exact counts checked.
    Transports(Box<TransportsCmd>),
    /// Serve publishes and keep their bytes, doing no broker work: the floor of any server's
    /// CPU per published message on this machine (`compare --floor` runs it); with
    /// `--http-address`, the same for HTTP requests.
    Floor(FloorArgs),
    /// wrk POSTing to `/pub` (MinMQ's HTTP load) against the HTTP floor, nsqrd, and with
    /// --baseline and --nsqd-bin another nsqrd and nsqd, A B A B, for each of --loads: req/s,
    /// server CPU per request, latency percentiles.
    HttpPub(HttpPubArgs),
}

impl Command {
    /// The mode's name, as typed.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Pub(_) => "pub",
            Command::Sub(_) => "sub",
            Command::Pubsub(_) => "pubsub",
            Command::Latency(_) => "latency",
            Command::Matrix(_) => "matrix",
            Command::Compare(_) => "compare",
            Command::Inproc(_) => "inproc",
            Command::Cluster(_) => "cluster",
            Command::Replicated(_) => "replicated",
            Command::Kv(_) => "kv",
            Command::HttpConsume(_) => "http-consume",
            Command::Sse(_) => "sse",
            Command::Ordered(_) => "ordered",
            Command::Transports(_) => "transports",
            Command::Floor(_) => "floor",
            Command::HttpPub(_) => "http-pub",
        }
    }

    /// The rules that relate several values, which clap's per-value parsers cannot see.
    pub fn check(&self) -> Result<(), String> {
        match self {
            Command::Matrix(a) => distinct_sizes(&a.sizes),
            Command::Inproc(a) => distinct_sizes(&a.sizes),
            Command::Compare(a) => {
                distinct_sizes(&a.sizes)?;
                if has_duplicates(&a.latency_rates) {
                    return Err("--latency-rates has the same rate twice".into());
                }
                a.kv.check()
            }
            Command::Kv(a) => a.workload.check(),
            Command::Cluster(a) => a.cluster.check(),
            Command::Transports(a) => {
                distinct_sizes(&a.sizes)?;
                a.transports.check(&a.sizes)
            }
            Command::Pub(_)
            | Command::Sub(_)
            | Command::Pubsub(_)
            | Command::Latency(_)
            | Command::HttpConsume(_)
            | Command::Sse(_)
            | Command::Ordered(_)
            | Command::Floor(_)
            | Command::Replicated(_)
            | Command::HttpPub(_) => Ok(()),
        }
    }
}

/// Where the server under test listens, the topic, and the output format: what every
/// single-server mode takes.
#[derive(Debug, Clone, Args)]
pub struct TargetFlags {
    /// <addr>:<port> of the server's TCP listener.
    #[arg(long, default_value = "127.0.0.1:4150")]
    pub nsqd_tcp_address: String,

    /// Topic name (default: a new one per run, so leftovers never mix in).
    #[arg(long, value_parser = topic_or_channel)]
    pub topic: Option<String>,

    /// Print the results as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `--size`: the one body size of the modes that take one.
#[derive(Debug, Clone, Copy, Args)]
pub struct BodySize {
    /// Message body size in bytes (at least 16: sequence number and send time).
    #[arg(long, default_value_t = 200, value_parser = msg_size)]
    pub size: usize,
}

/// How to publish.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Publishing")]
pub struct PublishFlags {
    /// How long to publish, Go-style (3s, 500ms, 1m).
    #[arg(long, default_value = "3s", value_parser = parse_duration)]
    pub duration: Duration,

    /// Messages per MPUB (capped so a batch fits nsqd's default 5 MiB --max-body-size).
    #[arg(long, default_value_t = 200, value_parser = at_least(1usize))]
    pub batch_size: usize,

    /// Connections for publishing and for consuming (each side).
    #[arg(long, default_value_t = 1, value_parser = connections())]
    pub connections: usize,

    /// Publishing connections (overrides --connections).
    #[arg(long, value_parser = connections())]
    pub pub_connections: Option<usize>,

    /// MPUB batches in flight per connection before waiting for an OK (1 = bench_writer).
    #[arg(long, default_value_t = 1, value_parser = at_least(1usize))]
    pub pipeline: usize,
}

impl PublishFlags {
    pub fn pub_connections(&self) -> usize {
        self.pub_connections.unwrap_or(self.connections)
    }
}

/// The consumers' defaults, shared by clap and [`ConsumeFlags::default`].
const DEFAULT_CHANNEL: &str = "ch";
const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// How to consume.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Consuming")]
pub struct ConsumeFlags {
    /// Consuming connections (overrides --connections).
    #[arg(long, value_parser = connections())]
    pub sub_connections: Option<usize>,

    /// RDY count per consuming connection [default: 2500, bench_reader's].
    #[arg(long, value_parser = at_least(1u32))]
    pub rdy: Option<u32>,

    /// Channel name.
    #[arg(long, default_value = DEFAULT_CHANNEL, value_parser = topic_or_channel)]
    pub channel: String,

    /// Stop consuming when no message arrived for this long (the rest counts as lost).
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub drain_timeout: Duration,

    /// IDENTIFY output_buffer_size for consumers (bytes; -1 = unbuffered; default: server's).
    #[arg(long, allow_negative_numbers = true)]
    pub output_buffer_size: Option<i64>,

    /// IDENTIFY output_buffer_timeout for consumers (ms; -1 = no timed flush; default: server's).
    #[arg(long, allow_negative_numbers = true)]
    pub output_buffer_timeout: Option<i64>,
}

impl Default for ConsumeFlags {
    /// What clap gives when no consuming flag is passed (for modes that only publish).
    fn default() -> Self {
        ConsumeFlags {
            sub_connections: None,
            rdy: None,
            channel: DEFAULT_CHANNEL.into(),
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
            output_buffer_size: None,
            output_buffer_timeout: None,
        }
    }
}

impl ConsumeFlags {
    /// `--sub-connections`, else `--connections`.
    pub fn sub_connections(&self, p: &PublishFlags) -> usize {
        self.sub_connections.unwrap_or(p.connections)
    }

    /// `--rdy`, else bench_reader's 2500.
    pub fn rdy(&self) -> u32 {
        self.rdy.unwrap_or(2500)
    }
}

/// `pub`'s flags.
#[derive(Debug, Clone, Args)]
pub struct PubArgs {
    #[command(flatten)]
    pub target: TargetFlags,

    #[command(flatten)]
    pub body: BodySize,

    /// Publish exactly this many messages (default: publish for --duration).
    #[arg(long, value_parser = at_least(1u64))]
    pub count: Option<u64>,

    #[command(flatten)]
    pub publish: PublishFlags,
}

/// `sub`'s and `pubsub`'s flags.
#[derive(Debug, Clone, Args)]
pub struct PubSubArgs {
    #[command(flatten)]
    pub target: TargetFlags,

    #[command(flatten)]
    pub body: BodySize,

    /// sub: publish exactly this many messages (default: publish for --duration).
    #[arg(long, value_parser = at_least(1u64))]
    pub count: Option<u64>,

    #[command(flatten)]
    pub publish: PublishFlags,

    #[command(flatten)]
    pub consume: ConsumeFlags,
}

/// `latency`'s flags.
#[derive(Debug, Clone, Args)]
pub struct LatencyArgs {
    #[command(flatten)]
    pub target: TargetFlags,

    #[command(flatten)]
    pub body: BodySize,

    /// Messages per second.
    #[arg(long, default_value_t = 10_000.0, value_parser = positive_rate)]
    pub rate: f64,

    #[command(flatten)]
    pub publish: PublishFlags,

    #[command(flatten)]
    pub consume: ConsumeFlags,
}

/// `matrix`'s flags.
#[derive(Debug, Clone, Args)]
pub struct MatrixArgs {
    #[command(flatten)]
    pub target: TargetFlags,

    /// Message sizes in bytes.
    #[arg(long, value_delimiter = ',', default_value = "64,1024,8192,65536", value_parser = msg_size)]
    pub sizes: Vec<usize>,

    #[command(flatten)]
    pub publish: PublishFlags,

    #[command(flatten)]
    pub consume: ConsumeFlags,
}

/// The HTTP queue modes' shared flags: the pre-fill over TCP, the consumers over HTTP.
#[derive(Debug, Clone, Args)]
pub struct QueueArgs {
    #[command(flatten)]
    pub target: TargetFlags,

    /// <addr>:<port> of the server's HTTP listener.
    #[arg(long, default_value = "127.0.0.1:4151")]
    pub nsqd_http_address: String,

    #[command(flatten)]
    pub body: BodySize,

    /// Messages to pre-fill [default: the mode's].
    #[arg(long, value_parser = at_least(1u64))]
    pub count: Option<u64>,

    /// The server's pid (it runs here): its CPU time over the consume phase is reported per
    /// message, beside this client's.
    #[arg(long)]
    pub server_pid: Option<u32>,

    #[command(flatten)]
    pub publish: PublishFlags,

    #[command(flatten)]
    pub consume: ConsumeFlags,
}

/// `http-consume`'s flags.
#[derive(Debug, Clone, Args)]
pub struct HttpConsumeArgs {
    #[command(flatten)]
    pub queue: QueueArgs,

    /// Long-polling HTTP consumers.
    #[arg(long, default_value_t = 100, value_parser = within(1usize, 10_000))]
    pub http_consumers: usize,

    /// Messages per receive.
    #[arg(long, default_value_t = 10, value_parser = within(1usize, 1000))]
    pub http_batch: usize,
}

/// `ordered`'s flags.
#[derive(Debug, Clone, Args)]
pub struct OrderedArgs {
    #[command(flatten)]
    pub queue: QueueArgs,

    /// Ordering keys.
    #[arg(long, default_value_t = 1000, value_parser = at_least(1usize))]
    pub keys: usize,

    /// Messages per /mpub (one key each).
    #[arg(long, default_value_t = 10, value_parser = within(1usize, 1000))]
    pub http_batch: usize,
}

/// `inproc`'s flags.
#[derive(Debug, Clone, Args)]
pub struct InprocArgs {
    /// Message sizes in bytes.
    #[arg(long, value_delimiter = ',', default_value = "64,1024,8192,65536", value_parser = msg_size)]
    pub sizes: Vec<usize>,

    /// Messages per size and round [default: by size].
    #[arg(long, value_parser = at_least(1u64))]
    pub count: Option<u64>,

    /// Rounds per size (medians are reported).
    #[arg(long, default_value_t = 3, value_parser = at_least(1usize))]
    pub rounds: usize,

    /// Messages per publish batch.
    #[arg(long, default_value_t = 200, value_parser = at_least(1usize))]
    pub batch_size: usize,

    /// Messages in flight to the consumer.
    #[arg(long, default_value_t = 2500, value_parser = at_least(1u32))]
    pub rdy: u32,

    /// Print the results as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `compare`'s flags.
#[derive(Debug, Clone, Args)]
#[command(group(
    clap::ArgGroup::new("against").required(true).multiple(true).args(["reference", "kv_reference"])
))]
pub struct CompareArgs {
    /// The reference nsqd-compatible binary.
    #[arg(long)]
    pub reference: Option<PathBuf>,

    /// A redis-server binary to compare nsqrd's keyspace with.
    #[arg(long)]
    pub kv_reference: Option<PathBuf>,

    /// The nsqrd binary (default: nsqrd next to this executable, else target/release).
    #[arg(long)]
    pub nsqrd: Option<PathBuf>,

    /// Rounds of A B (medians are reported).
    #[arg(long, default_value_t = 3, value_parser = at_least(1usize))]
    pub rounds: usize,

    #[command(flatten)]
    pub body: BodySize,

    /// Publish rates (msgs/s) for the latency phase, one run each: comma-separated or
    /// repeated; `k` and `M` suffixes allowed (10k = 10000).
    #[arg(long, value_delimiter = ',', default_value = "1000,10000", value_parser = parse_rate)]
    pub latency_rates: Vec<u64>,

    /// Also run the size matrix (pubsub for each of --sizes) on a fresh server.
    #[arg(long)]
    pub matrix: bool,

    /// With --matrix: message sizes in bytes.
    #[arg(long, value_delimiter = ',', default_value = "64,1024,8192,65536", value_parser = msg_size)]
    pub sizes: Vec<usize>,

    /// Messages queued (and never consumed) to measure RSS per queued message.
    #[arg(long, default_value_t = 200_000, value_parser = at_least(1u64))]
    pub rss_messages: u64,

    /// Also publish to a topic with this many channels (fan-out), 0 = skip.
    #[arg(long, default_value_t = 0)]
    pub fanout_channels: usize,

    /// Also run pub and sub with this many idle consumer connections open, 0 = skip.
    #[arg(long, default_value_t = 0)]
    pub idle_connections: usize,

    /// Also measure `nsqr-bench floor` each round (a publish phase only): the CPU per message
    /// of reading, keeping and answering a publish, with no broker work.
    #[arg(long)]
    pub floor: bool,

    /// The --mem-queue-size of the servers it starts (nsq's bench.sh's).
    #[arg(long, default_value_t = 1_000_000)]
    pub mem_queue_size: u64,

    /// Also run nsq's own bench_writer and bench_reader (found in this directory) against
    /// each server as nsq's bench.sh does, and against the floor as their ceiling.
    #[arg(long, value_name = "DIR")]
    pub nsq_bench: Option<PathBuf>,

    /// An extra flag for the servers it starts (repeatable), e.g. --server-arg=--log-level=warn.
    #[arg(long, allow_hyphen_values = true)]
    pub server_arg: Vec<String>,

    /// Print the results as JSON on stdout.
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub publish: PublishFlags,

    #[command(flatten)]
    pub consume: ConsumeFlags,

    #[command(
        flatten,
        next_help_heading = "Keyspace workloads (with --kv-reference)"
    )]
    pub kv: KvWorkload,
}

/// The keyspace workloads: `kv`'s, and `compare --kv-reference`'s.
#[derive(Debug, Clone, Args)]
pub struct KvWorkload {
    /// The workloads, comma-separated.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "setget,pipelined,nubmq,expiry,script,multi,rss"
    )]
    pub kv_phases: Vec<Phase>,

    /// Requests per redis-benchmark test (-n).
    #[arg(long, default_value_t = 1_000_000, value_parser = at_least(1u64))]
    pub kv_requests: u64,

    /// redis-benchmark clients (-c).
    #[arg(long, default_value_t = 100, value_parser = at_least(1usize))]
    pub kv_clients: usize,

    /// Requests in flight per client in the pipelined phase (-P).
    #[arg(long, default_value_t = 16, value_parser = at_least(1usize))]
    pub kv_pipeline: usize,

    /// Random keys of redis-benchmark (-r).
    #[arg(long, default_value_t = 1_000_000, value_parser = at_least(1u64))]
    pub kv_keyspace: u64,

    /// Connections of nubmq's workload.
    #[arg(long, default_value_t = 50, value_parser = at_least(1usize))]
    pub nubmq_connections: usize,

    /// SETs (then as many GETs) per connection of nubmq's workload.
    #[arg(long, default_value_t = 20_000, value_parser = at_least(1usize))]
    pub nubmq_ops: usize,

    /// Keys holding a 1-hour TTL in the expiry phase.
    #[arg(long, default_value_t = 100_000)]
    pub expiry_volatile: usize,

    /// Keys sharing one deadline in the expiry phase.
    #[arg(long, default_value_t = 1000, value_parser = at_least(1usize))]
    pub expiry_shared: usize,

    /// How long after the shared deadline to wait for its expired events.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub expiry_timeout: Duration,

    /// Keys (32-byte values) written to measure RSS per key.
    #[arg(long, default_value_t = 1_000_000, value_parser = at_least(1usize))]
    pub rss_keys: usize,

    /// Elements of each data shape in the memory phases (`mem-*`; the small hashes are
    /// this / 10 keys of 10 fields).
    #[arg(long, default_value_t = 1_000_000, value_parser = at_least(10usize))]
    pub mem_elements: usize,

    /// The redis-benchmark binary (Debian's redis-tools).
    #[arg(long, default_value = "redis-benchmark")]
    pub redis_benchmark: PathBuf,
}

impl KvWorkload {
    fn check(&self) -> Result<(), String> {
        if has_duplicates(&self.kv_phases) {
            return Err("--kv-phases needs each phase at most once".into());
        }
        Ok(())
    }
}

/// `kv`'s flags.
#[derive(Debug, Clone, Args)]
pub struct KvArgs {
    /// <addr>:<port> of the Redis-protocol server.
    #[arg(long, default_value = "127.0.0.1:6379")]
    pub kv_address: String,

    /// The server's pid, for CPU and RSS (default: INFO's process_id if it runs here).
    #[arg(long)]
    pub kv_pid: Option<u32>,

    /// Print the results as JSON on stdout.
    #[arg(long)]
    pub json: bool,

    #[command(flatten, next_help_heading = "Keyspace workloads")]
    pub workload: KvWorkload,
}

/// `cluster`'s flags: the cluster's shape (`ClusterArgs`), the load, and the servers it starts.
#[derive(Debug, Clone, Args)]
#[command(mut_arg("rdy", |a| a.help(
    "RDY count per consuming connection [default: 10000, bench.py's, with --max-rdy-count at \
     this value for the nodes it starts; with given nodes 2500, nsqd's --max-rdy-count]"
)))]
pub struct ClusterCmd {
    #[command(flatten)]
    pub cluster: ClusterArgs,

    /// The nodes' binary (instead of nsqrd).
    #[arg(long)]
    pub reference: Option<PathBuf>,

    /// The nsqrd binary (default: nsqrd next to this executable, else target/release).
    #[arg(long)]
    pub nsqrd: Option<PathBuf>,

    /// The --mem-queue-size of the nodes it starts (bench.py's).
    #[arg(long, default_value_t = 10_000_000)]
    pub mem_queue_size: u64,

    /// An extra flag for the nodes it starts (repeatable), e.g. --server-arg=--log-level=warn.
    #[arg(long, allow_hyphen_values = true)]
    pub server_arg: Vec<String>,

    #[command(flatten)]
    pub body: BodySize,

    /// Print the results as JSON on stdout.
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub publish: PublishFlags,

    #[command(flatten)]
    pub consume: ConsumeFlags,
}

impl ClusterCmd {
    /// `--rdy`, or bench.py's 10000 for nodes it starts (they get `--max-rdy-count` to match);
    /// for given nodes 2500, nsqd's default `--max-rdy-count`.
    pub fn rdy(&self) -> u32 {
        let starts_nodes = self.cluster.nsqd_tcp_addresses.is_empty();
        self.consume
            .rdy
            .unwrap_or(if starts_nodes { 10_000 } else { 2500 })
    }
}

/// `transports`' flags: the matrix's own (`TransportsArgs`) and the sizes and server.
#[derive(Debug, Clone, Args)]
pub struct TransportsCmd {
    /// Message sizes in bytes.
    #[arg(long, value_delimiter = ',', default_value = "64,1024,8192,65536", value_parser = msg_size)]
    pub sizes: Vec<usize>,

    /// The nsqrd binary (default: nsqrd next to this executable, else target/release).
    #[arg(long)]
    pub nsqrd: Option<PathBuf>,

    /// The --mem-queue-size of the nsqrd it starts and of the embedded broker.
    #[arg(long, default_value_t = 1_000_000)]
    pub mem_queue_size: u64,

    /// Print the results as JSON on stdout.
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub transports: TransportsArgs,
}

/// A value parser for a whole number of at least `lo`.
pub(crate) fn at_least<T: Whole>(
    lo: T,
) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync {
    ranged(lo, None)
}

/// A value parser for a whole number in `lo..=hi`.
pub(crate) fn within<T: Whole>(
    lo: T,
    hi: T,
) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync {
    ranged(lo, Some(hi))
}

/// The whole-number types flags take.
pub(crate) trait Whole:
    std::str::FromStr + PartialOrd + std::fmt::Display + Copy + Send + Sync + 'static
{
}

impl Whole for u32 {}
impl Whole for u64 {}
impl Whole for usize {}

fn ranged<T: Whole>(
    lo: T,
    hi: Option<T>,
) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync {
    move |s: &str| match s.trim().parse::<T>() {
        Ok(n) if lo <= n && hi.is_none_or(|h| n <= h) => Ok(n),
        _ => Err(match hi {
            Some(h) => format!("must be {lo}..={h}"),
            None => format!("must be at least {lo}"),
        }),
    }
}

/// A connection count: 1 to the number of publishers a message body can name.
pub(crate) fn connections() -> impl Fn(&str) -> Result<usize, String> + Clone + Send + Sync {
    within(1, MAX_PUBLISHERS)
}

/// A message size: room for the header (sequence number and send time), at most nsqd's
/// default `--max-msg-size`.
pub(crate) fn msg_size(s: &str) -> Result<usize, String> {
    let n: usize = s
        .trim()
        .parse()
        .map_err(|_| format!("invalid size {s:?} (bytes)"))?;
    if !(HEADER_LEN..=DEFAULT_MAX_MSG_SIZE).contains(&n) {
        return Err(format!(
            "message size {n} out of range {HEADER_LEN}..={DEFAULT_MAX_MSG_SIZE}"
        ));
    }
    Ok(n)
}

/// A valid NSQ topic or channel name.
fn topic_or_channel(s: &str) -> Result<String, String> {
    if nsq_wire::names::is_valid_name(s.as_bytes()) {
        Ok(s.to_string())
    } else {
        Err(format!("invalid name {s:?}"))
    }
}

/// A finite rate above zero.
fn positive_rate(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(format!("invalid rate {s:?} (a positive number)")),
    }
}

/// A Go duration (`3s`, `500ms`, `1m30s`, `1.5h`, `250us`), as nsq's tools take them; surrounding
/// spaces are ignored and negative durations refused.
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    nsq_common::duration::parse(s.trim())
        .map_err(|_| format!("invalid duration {s:?} (examples: 3s, 500ms, 1m30s)"))
}

pub(crate) fn has_duplicates<T: PartialEq>(v: &[T]) -> bool {
    v.iter().enumerate().any(|(i, x)| v[..i].contains(x))
}

fn distinct_sizes(sizes: &[usize]) -> Result<(), String> {
    if has_duplicates(sizes) {
        return Err("--sizes has the same size twice".into());
    }
    Ok(())
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
#[path = "cli_tests.rs"]
mod tests;
