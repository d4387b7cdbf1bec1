//! The engine's settings, taken from nsqd's flags by the daemon, and nsqd's defaults for the
//! ones only the engine reads ([`defaults`]; the protocol's are `nsq_wire::defaults`). The
//! daemon's flag table starts from the same constants, so an embedded broker and nsqrd
//! default alike.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::durability::Durability;
use crate::health::Health;

/// How a broker runs; the defaults are nsqd's, with no data path (memory only).
#[derive(Debug, Clone)]
pub struct BrokerConfig {
    /// Node part of message ids, [0, 1024).
    pub node_id: u16,
    /// Memory queue bound per topic / channel. Ephemeral queues drop beyond it; durable ones
    /// spill to disk (with a data path).
    pub mem_queue_size: usize,
    /// How long a delivered message stays in flight unanswered (a consumer may ask for
    /// another, up to `max_msg_timeout`).
    pub msg_timeout: Duration,
    /// The longest in-flight timeout, and the longest a TOUCH can keep a message.
    pub max_msg_timeout: Duration,
    /// The longest delay of a requeue or a deferred publish.
    pub max_req_timeout: Duration,
    /// 0 = unlimited.
    pub max_channel_consumers: usize,
    /// Where `nsqd.dat` and the disk queues live; None keeps everything in memory only
    /// (embedding, tests).
    pub data_path: Option<PathBuf>,
    /// What an acknowledged publish promises ([`Durability`]).
    pub durability: Durability,
    /// Size at which a disk queue starts a new data file.
    pub max_bytes_per_file: u64,
    /// fsync + metadata after this many reads and writes of a disk queue.
    pub sync_every: u64,
    /// fsync + metadata at least this often when a disk queue changed.
    pub sync_timeout: Duration,
    /// Bound on one queue's data files (0 = unlimited).
    pub max_disk_bytes: u64,
    /// Largest message body (`--max-msg-size`): records beyond it are corrupt.
    pub max_msg_size: u64,
    /// Shared with the disk writers: a failed write makes the node unhealthy.
    pub health: Health,
    /// End-to-end latency quantiles to report, in report order; empty turns recording off.
    pub e2e_percentiles: Vec<f64>,
    /// The sliding window those quantiles cover.
    pub e2e_window: Duration,
    /// Fault injection for tests: consulted before every disk write.
    pub disk_faults: Option<DiskFaults>,
    /// The replicated log of topics with `replicas` above 1 (the daemon's, when it is part of
    /// a cluster); None: no cluster, and `replicas` can only be 1.
    pub replication: Option<crate::Replication>,
    /// The runtime whose blocking pool runs the disk writers' passes. None: the runtime
    /// [`crate::Broker::start`] runs on, so a queue created from a thread of another
    /// (shorter-lived) runtime, such as nsqrd's HTTP serving threads, still writes after that
    /// runtime is gone.
    pub runtime: Option<tokio::runtime::Handle>,
}

/// A fault-injection hook for tests (a full disk where no small file system can be mounted):
/// called before each disk write; an error it returns is that write's outcome.
#[derive(Clone)]
pub struct DiskFaults(Arc<dyn Fn() -> Option<std::io::Error> + Send + Sync>);

impl DiskFaults {
    /// A hook around `f`.
    pub fn new(f: impl Fn() -> Option<std::io::Error> + Send + Sync + 'static) -> DiskFaults {
        DiskFaults(Arc::new(f))
    }

    pub(crate) fn before_write(&self) -> Option<std::io::Error> {
        (self.0)()
    }
}

impl std::fmt::Debug for DiskFaults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DiskFaults")
    }
}

/// nsqd's defaults for the engine's own flags.
pub mod defaults {
    use std::time::Duration;

    /// `--mem-queue-size`.
    pub const MEM_QUEUE_SIZE: usize = 10_000;
    /// `--max-bytes-per-file`.
    pub const MAX_BYTES_PER_FILE: u64 = 100 * 1024 * 1024;
    /// `--sync-every`.
    pub const SYNC_EVERY: u64 = 2_500;
    /// `--sync-timeout`.
    pub const SYNC_TIMEOUT: Duration = Duration::from_secs(2);
    /// `--e2e-processing-latency-window-time`.
    pub const E2E_WINDOW: Duration = Duration::from_secs(600);
    /// `--max-channel-consumers` (0: unlimited).
    pub const MAX_CHANNEL_CONSUMERS: usize = 0;
    /// `--max-disk-bytes` (0: unlimited).
    pub const MAX_DISK_BYTES: u64 = 0;
}

impl Default for BrokerConfig {
    fn default() -> Self {
        use nsq_wire::defaults as wire;
        BrokerConfig {
            node_id: 0,
            mem_queue_size: defaults::MEM_QUEUE_SIZE,
            msg_timeout: wire::MSG_TIMEOUT,
            max_msg_timeout: wire::MAX_MSG_TIMEOUT,
            max_req_timeout: wire::MAX_REQ_TIMEOUT,
            max_channel_consumers: defaults::MAX_CHANNEL_CONSUMERS,
            data_path: None,
            durability: Durability::Default,
            max_bytes_per_file: defaults::MAX_BYTES_PER_FILE,
            sync_every: defaults::SYNC_EVERY,
            sync_timeout: defaults::SYNC_TIMEOUT,
            max_disk_bytes: defaults::MAX_DISK_BYTES,
            max_msg_size: wire::MAX_MSG_SIZE as u64,
            health: Health::default(),
            e2e_percentiles: Vec::new(),
            e2e_window: defaults::E2E_WINDOW,
            disk_faults: None,
            replication: None,
            runtime: None,
        }
    }
}
