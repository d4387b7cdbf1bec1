//! The engine's settings, taken from nsqd's flags by the daemon.

use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct BrokerConfig {
    /// Node part of message ids, [0, 1024).
    pub node_id: u16,
    /// Memory queue bound per topic / channel. Ephemeral queues drop beyond it; until the disk
    /// queue lands, durable queues keep everything in memory.
    pub mem_queue_size: usize,
    pub msg_timeout: Duration,
    pub max_msg_timeout: Duration,
    pub max_req_timeout: Duration,
    /// 0 = unlimited.
    pub max_channel_consumers: usize,
    /// Where `nsqd.dat` lives; None keeps metadata in memory only (embedding, tests).
    pub data_path: Option<PathBuf>,
    /// End-to-end latency quantiles to report, in report order; empty turns recording off.
    pub e2e_percentiles: Vec<f64>,
    /// The sliding window those quantiles cover.
    pub e2e_window: Duration,
}

impl Default for BrokerConfig {
    fn default() -> Self {
        BrokerConfig {
            node_id: 0,
            mem_queue_size: 10_000,
            msg_timeout: Duration::from_secs(60),
            max_msg_timeout: Duration::from_secs(15 * 60),
            max_req_timeout: Duration::from_secs(3600),
            max_channel_consumers: 0,
            data_path: None,
            e2e_percentiles: Vec::new(),
            e2e_window: Duration::from_secs(600),
        }
    }
}
