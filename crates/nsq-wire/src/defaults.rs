//! nsqd's defaults for what the protocol checks and reports, defined once.
//!
//! The daemon's flag table starts from these, and the library types that carry them
//! ([`Limits`](crate::Limits), [`ServerConfig`](crate::identify::ServerConfig)) default to
//! them, so a server, a client and a test agree on nsqd's numbers without repeating them.

use std::time::Duration;

/// The nsqd release whose protocol and replies nsqr reproduces (reported by IDENTIFY,
/// `/info`, `/stats` and to lookupd).
pub const NSQD_VERSION: &str = "1.3.0";

/// `--msg-timeout`: how long a delivered message stays in flight unanswered.
pub const MSG_TIMEOUT: Duration = Duration::from_secs(60);
/// `--max-msg-timeout`: the longest in-flight timeout a client may ask for.
pub const MAX_MSG_TIMEOUT: Duration = Duration::from_secs(15 * 60);
/// `--max-req-timeout`: the longest requeue or deferred-publish delay.
pub const MAX_REQ_TIMEOUT: Duration = Duration::from_secs(3600);
/// `--max-msg-size`: the largest message body.
pub const MAX_MSG_SIZE: i64 = 1_048_576;
/// `--max-body-size`: the largest command body.
pub const MAX_BODY_SIZE: i64 = 5_242_880;
/// `--max-rdy-count`: the largest RDY count.
pub const MAX_RDY_COUNT: i64 = 2_500;
/// `--max-heartbeat-interval`: the longest heartbeat interval a client may ask for.
pub const MAX_HEARTBEAT_INTERVAL: Duration = Duration::from_secs(60);
/// The heartbeat interval of a client that asks for none: half nsqd's fixed 60 s client
/// timeout.
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(30);
/// The output buffer of a client that asks for none.
pub const DEFAULT_OUTPUT_BUFFER_SIZE: usize = 16 * 1024;
/// `--max-output-buffer-size`: the largest output buffer a client may ask for.
pub const MAX_OUTPUT_BUFFER_SIZE: i64 = 65_536;
/// `--output-buffer-timeout`: the flush interval of a client that asks for none.
pub const OUTPUT_BUFFER_TIMEOUT: Duration = Duration::from_millis(250);
/// `--min-output-buffer-timeout`.
pub const MIN_OUTPUT_BUFFER_TIMEOUT: Duration = Duration::from_millis(25);
/// `--max-output-buffer-timeout`.
pub const MAX_OUTPUT_BUFFER_TIMEOUT: Duration = Duration::from_secs(30);
/// `--deflate`: clients may negotiate DEFLATE.
pub const DEFLATE: bool = true;
/// `--snappy`: clients may negotiate snappy.
pub const SNAPPY: bool = true;
/// `--max-deflate-level`.
pub const MAX_DEFLATE_LEVEL: i64 = 6;
/// The DEFLATE level of a client that asks for none, also the level IDENTIFY reports when
/// DEFLATE is not granted (fixed in nsqd).
pub const DEFLATE_LEVEL: i64 = 6;
