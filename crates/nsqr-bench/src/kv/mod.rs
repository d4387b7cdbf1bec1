//! `nsqr-bench kv`: the keyspace (or any Redis-protocol server) under redis-benchmark's SET
//! and GET, nubmq's workload, expiry lateness, RSS per key and per element of each data type
//! (`memory.rs`); and `nsqr-bench compare
//! --kv-reference <redis-server>`: nsqrd's keyspace against redis-server side by side
//! (`compare.rs`).

mod compare;
mod conn;
mod memory;
mod phases;

use clap::ValueEnum;

use crate::cli::{KvArgs, KvWorkload};
use crate::fail::{err, Result};
use crate::report::{emit, Render};
pub use compare::run as compare;
use memory::Shape;
use phases::{Metrics, Spec, Target};

/// One workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Phase {
    /// redis-benchmark -t set,get, one request at a time per client.
    Setget,
    /// The same with --kv-pipeline requests in flight per client (-P).
    Pipelined,
    /// nubmq's benchmark: --nubmq-connections, each --nubmq-ops SETs then as many GETs.
    Nubmq,
    /// Lateness of `expired` events for --expiry-shared keys sharing one deadline among
    /// --expiry-volatile keys with a 1-hour TTL.
    Expiry,
    /// RSS per key after writing --rss-keys keys of 32 bytes.
    Rss,
    /// EVALSHA of redis-py's Lock release script (a GET and a compare), redis-benchmark with
    /// --kv-pipeline requests in flight per client.
    Script,
    /// Transactions of five commands (MULTI, INCR a, INCR b, SET c, GET c, GET a, EXEC)
    /// from --kv-clients connections with --kv-pipeline transactions in flight each,
    /// --kv-requests in all.
    Multi,
    /// redis-benchmark's default tests of every type (`TYPE_TESTS`), one at a time, with
    /// --kv-pipeline requests in flight per client.
    Types,
    /// RSS per field of one hash of --mem-elements fields (16-byte fields and values).
    MemHash,
    /// RSS per member of one set of --mem-elements 16-byte members.
    MemSet,
    /// RSS per member of one sorted set of --mem-elements 16-byte members.
    MemZset,
    /// RSS per element of one list of --mem-elements 16-byte elements.
    MemList,
    /// RSS per field of --mem-elements / 10 hashes of 10 fields (16-byte fields and values).
    MemSmallHashes,
    /// RSS per entry of one stream of --mem-elements entries (`XADD big * f <16 bytes>`).
    MemStream,
}

impl Phase {
    /// The data shape of a memory phase.
    pub fn shape(self) -> Option<Shape> {
        match self {
            Phase::MemHash => Some(Shape::Hash),
            Phase::MemSet => Some(Shape::Set),
            Phase::MemZset => Some(Shape::Zset),
            Phase::MemList => Some(Shape::List),
            Phase::MemSmallHashes => Some(Shape::SmallHashes),
            Phase::MemStream => Some(Shape::Stream),
            _ => None,
        }
    }

    /// Whether the phase measures memory, so needs an empty server of its own and its pid.
    pub fn alone(self) -> bool {
        self == Phase::Rss || self.shape().is_some()
    }
}

impl Spec {
    pub fn from_args(a: &KvWorkload) -> Spec {
        Spec {
            requests: a.kv_requests,
            clients: a.kv_clients,
            pipeline: a.kv_pipeline,
            keyspace: a.kv_keyspace,
            nubmq_connections: a.nubmq_connections,
            nubmq_ops: a.nubmq_ops,
            expiry_volatile: a.expiry_volatile,
            expiry_shared: a.expiry_shared,
            expiry_timeout: a.expiry_timeout,
            rss_keys: a.rss_keys,
            mem_elements: a.mem_elements,
            redis_benchmark: a.redis_benchmark.clone(),
        }
    }
}

/// Runs `phases` against `t`.
async fn measure(t: &Target, s: &Spec, phases: &[Phase]) -> Result<Metrics> {
    let mut m = Metrics::new();
    for p in phases {
        match p {
            Phase::Setget => phases::setget(t, s, 1, "", &mut m).await?,
            Phase::Pipelined => phases::setget(t, s, s.pipeline, "p_", &mut m).await?,
            Phase::Nubmq => phases::nubmq(t, s, &mut m).await?,
            Phase::Expiry => phases::expiry(t, s, &mut m).await?,
            Phase::Rss => phases::rss(t, s, &mut m).await?,
            Phase::Script => phases::script(t, s, &mut m).await?,
            Phase::Multi => phases::multi(t, s, &mut m).await?,
            Phase::Types => phases::types(t, s, &mut m).await?,
            p => {
                if let Some(shape) = p.shape() {
                    memory::measure(t, shape, s.mem_elements, &mut m).await?;
                }
            }
        }
    }
    Ok(m)
}

/// Every metric row: [`ROWS`], then the `types` phase's [`TYPE_ROWS`].
pub fn rows() -> impl Iterator<Item = &'static Row> {
    ROWS.iter().chain(TYPE_ROWS)
}

macro_rules! type_rows {
    ($( $test:literal, $label:literal; )*) => {
        /// The tests of the `types` phase, as redis-benchmark's `-t` names them.
        pub const TYPE_TESTS: &[&str] = &[$( $test, )*];
        /// Their rows: `t_<test>_rps` and `t_<test>_cpu_us`.
        pub const TYPE_ROWS: &[Row] = &[$(
            Row {
                key: concat!("t_", $test, "_rps"),
                label: concat!($label, " ops/s (-P)"),
                higher_is_better: true,
            },
            Row {
                key: concat!("t_", $test, "_cpu_us"),
                label: concat!($label, " CPU µs/op (-P)"),
                higher_is_better: false,
            },
        )*];
    };
}

type_rows! {
    "set", "SET";
    "get", "GET";
    "incr", "INCR";
    "lpush", "LPUSH";
    "rpush", "RPUSH";
    "lpop", "LPOP";
    "rpop", "RPOP";
    "sadd", "SADD";
    "hset", "HSET";
    "spop", "SPOP";
    "zadd", "ZADD";
    "zpopmin", "ZPOPMIN";
    "lrange_100", "LRANGE_100";
    "lrange_300", "LRANGE_300";
    "lrange_600", "LRANGE_600";
    "mset", "MSET (10 keys)";
}

/// A metric: its key, its label, and whether more is better.
pub struct Row {
    pub key: &'static str,
    pub label: &'static str,
    pub higher_is_better: bool,
}

pub const ROWS: &[Row] = &[
    Row {
        key: "set_rps",
        label: "SET ops/s",
        higher_is_better: true,
    },
    Row {
        key: "set_cpu_us",
        label: "SET server CPU µs/op",
        higher_is_better: false,
    },
    Row {
        key: "get_rps",
        label: "GET ops/s",
        higher_is_better: true,
    },
    Row {
        key: "get_cpu_us",
        label: "GET server CPU µs/op",
        higher_is_better: false,
    },
    Row {
        key: "p_set_rps",
        label: "SET ops/s (-P)",
        higher_is_better: true,
    },
    Row {
        key: "p_set_cpu_us",
        label: "SET CPU µs/op (-P)",
        higher_is_better: false,
    },
    Row {
        key: "p_get_rps",
        label: "GET ops/s (-P)",
        higher_is_better: true,
    },
    Row {
        key: "p_get_cpu_us",
        label: "GET CPU µs/op (-P)",
        higher_is_better: false,
    },
    Row {
        key: "nubmq_ops",
        label: "nubmq workload ops/s",
        higher_is_better: true,
    },
    Row {
        key: "nubmq_cpu_us",
        label: "nubmq server CPU µs/op",
        higher_is_better: false,
    },
    Row {
        key: "evalsha_rps",
        label: "EVALSHA ops/s (-P)",
        higher_is_better: true,
    },
    Row {
        key: "evalsha_cpu_us",
        label: "EVALSHA CPU µs/op (-P)",
        higher_is_better: false,
    },
    Row {
        key: "multi_rps",
        label: "MULTI/EXEC (5) tx/s (-P)",
        higher_is_better: true,
    },
    Row {
        key: "multi_cpu_us",
        label: "MULTI/EXEC CPU µs/tx (-P)",
        higher_is_better: false,
    },
    Row {
        key: "expiry_received",
        label: "expired events received",
        higher_is_better: true,
    },
    Row {
        key: "expiry_p50_ms",
        label: "expiry lateness p50 ms",
        higher_is_better: false,
    },
    Row {
        key: "expiry_p99_ms",
        label: "expiry lateness p99 ms",
        higher_is_better: false,
    },
    Row {
        key: "expiry_max_ms",
        label: "expiry lateness max ms",
        higher_is_better: false,
    },
    Row {
        key: "rss_per_key",
        label: "RSS bytes per key",
        higher_is_better: false,
    },
    Row {
        key: "mem_hash",
        label: "RSS B/field, one hash",
        higher_is_better: false,
    },
    Row {
        key: "mem_set",
        label: "RSS B/member, one set",
        higher_is_better: false,
    },
    Row {
        key: "mem_zset",
        label: "RSS B/member, one zset",
        higher_is_better: false,
    },
    Row {
        key: "mem_list",
        label: "RSS B/element, one list",
        higher_is_better: false,
    },
    Row {
        key: "mem_small_hashes",
        label: "RSS B/field, 10-field hashes",
        higher_is_better: false,
    },
    Row {
        key: "mem_stream",
        label: "RSS B/entry, one stream",
        higher_is_better: false,
    },
];

/// A value for the table: NaN (a percentile among events that never came) shows as such.
pub fn cell(m: &Metrics, key: &str, timeout_ms: f64) -> String {
    match m.get(key) {
        None => "-".into(),
        Some(v) if v.is_nan() => format!(">{timeout_ms:.0}"),
        Some(v) if v.abs() >= 100.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.2}"),
    }
}

/// What `kv` measured, against which server.
#[derive(serde::Serialize)]
#[serde(transparent)]
struct KvReport {
    metrics: Metrics,
    #[serde(skip)]
    addr: String,
    #[serde(skip)]
    pid: Option<u32>,
    #[serde(skip)]
    timeout_ms: f64,
}

impl Render for KvReport {
    fn print_human(&self) {
        println!(
            "nsqr-bench kv against {} (pid {})",
            self.addr,
            self.pid.map_or("unknown".into(), |p| p.to_string())
        );
        for r in rows().filter(|r| self.metrics.contains_key(r.key)) {
            println!(
                "  {:<28} {:>12}",
                r.label,
                cell(&self.metrics, r.key, self.timeout_ms)
            );
        }
    }
}

/// `nsqr-bench kv`: the phases against `--kv-address`.
pub async fn run(a: &KvArgs) -> Result<bool> {
    let pid = match a.kv_pid {
        Some(p) => Some(p),
        None => conn::server_pid(&a.kv_address)
            .await
            .ok()
            .filter(|p| std::path::Path::new(&format!("/proc/{p}")).exists()),
    };
    let t = Target {
        addr: a.kv_address.clone(),
        pid,
    };
    let k = &a.workload;
    if pid.is_none() && k.kv_phases.iter().any(|p| p.alone()) {
        return Err(err(
            "the rss and memory phases need the server's pid: run them on the server's machine or pass --kv-pid",
        ));
    }
    if k.kv_phases.iter().filter(|p| p.alone()).count() > 1 {
        return Err(err(
            "the rss and memory phases each need an empty server: run one per fresh server, or several with compare --kv-reference",
        ));
    }
    let s = Spec::from_args(k);
    let metrics = measure(&t, &s, &k.kv_phases).await?;
    let report = KvReport {
        metrics,
        addr: t.addr,
        pid,
        timeout_ms: k.expiry_timeout.as_millis() as f64,
    };
    emit(&report, a.json)?;
    Ok(true)
}
