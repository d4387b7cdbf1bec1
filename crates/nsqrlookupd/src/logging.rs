//! nsqlookupd's log lines on stderr (`[nsqlookupd] 2026/11/21 20:25:14.123456 INFO: TCP:
//! listening on 127.0.0.1:4160`), so operators' log parsing and the test harness (which reads
//! the `listening on` lines to learn the ephemeral ports) work as with nsqlookupd. The line
//! format is nsqd's, shared in `nsq_common::logging`; what is nsqlookupd's own is the level
//! mapping and the FATAL lines.

pub use nsq_common::logging::fatal;
use nsq_common::logging::{self, LevelFilter};

use crate::options::LogLevel;

/// Installs the subscriber. `fatal` shows nothing through tracing: the only FATAL lines are
/// written by [`fatal`].
pub fn init(prefix: &str, level: LogLevel) {
    let filter = match level {
        LogLevel::Debug => LevelFilter::DEBUG,
        LogLevel::Info => LevelFilter::INFO,
        LogLevel::Warn => LevelFilter::WARN,
        LogLevel::Error => LevelFilter::ERROR,
        LogLevel::Fatal => LevelFilter::OFF,
    };
    logging::init(prefix, filter);
}
