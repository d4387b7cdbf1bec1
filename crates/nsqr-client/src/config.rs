//! Every setting of a producer or consumer, with go-nsq v1.1.0's names and defaults (its
//! `Config`), so what a Go user tuned carries over. One `Config` serves all transports; the
//! in-process one also carries the broker ([`Config::inproc`]).

use std::sync::Arc;
use std::time::Duration;

use nsqr_broker::Broker;

use crate::error::Error;

/// Compression negotiated through IDENTIFY (TCP and unix sockets only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    /// None (the default).
    #[default]
    None,
    /// Snappy's framing format.
    Snappy,
    /// Raw DEFLATE at this level, 1 (fastest) to 9 (smallest); nsqd caps it at its
    /// `--max-deflate-level` (6 by default).
    Deflate(u8),
}

/// How long a consumer backs off after its n-th consecutive failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackoffStrategy {
    /// `backoff_multiplier * 2^n` (go-nsq's default).
    #[default]
    Exponential,
    /// A random duration in `[0, backoff_multiplier * 2^n)`.
    FullJitter,
}

/// TLS for the IDENTIFY upgrade (`tls_v1`), as a rustls client configuration.
#[derive(Clone)]
pub struct TlsConfig {
    /// The rustls configuration (roots, client certificate, versions).
    pub client: Arc<rustls::ClientConfig>,
    /// The name the server's certificate must hold; by default the host of the address
    /// (`localhost` for a unix socket).
    pub server_name: Option<String>,
}

impl std::fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsConfig")
            .field("server_name", &self.server_name)
            .finish_non_exhaustive()
    }
}

/// Settings of a [`Producer`](crate::Producer) or [`Consumer`](crate::Consumer). Start from
/// `Config::default()` (go-nsq's defaults) and change fields.
#[derive(Clone)]
#[non_exhaustive]
pub struct Config {
    /// The broker `inproc://` addresses reach.
    pub broker: Option<Broker>,

    /// Sent in IDENTIFY; default the short hostname.
    pub client_id: String,
    /// Sent in IDENTIFY; default the hostname.
    pub hostname: String,
    /// Sent in IDENTIFY; default `nsqr-client/<version>`.
    pub user_agent: String,

    /// How long a connect may take (go-nsq: `dial_timeout`, 1 s).
    pub dial_timeout: Duration,
    /// Longest silence from the server before the connection is dropped (60 s); must exceed
    /// the heartbeat interval.
    pub read_timeout: Duration,
    /// How long one write may block (go-nsq: 1 s; here 10 s, so a large MPUB to a busy
    /// server does not count as a dead connection).
    pub write_timeout: Duration,
    /// Heartbeats asked of the server (30 s); None disables them.
    pub heartbeat_interval: Option<Duration>,
    /// Bytes nsqd may buffer before writing to this client (16 KiB); None disables buffering.
    pub output_buffer_size: Option<u32>,
    /// How long nsqd may hold buffered output (250 ms); None disables the timeout.
    pub output_buffer_timeout: Option<Duration>,
    /// The in-flight timeout nsqd applies to this consumer's messages; None: the server's.
    pub msg_timeout: Option<Duration>,
    /// Percentage of the channel's messages to receive, 0 (all) to 99.
    pub sample_rate: u8,
    /// Upgrade to TLS (`tls_v1`).
    pub tls: Option<TlsConfig>,
    /// Compression to ask for.
    pub compression: Compression,
    /// Secret for AUTH, sent when the server says `auth_required`.
    pub auth_secret: Option<String>,
    /// Send the auth secret to nsqlookupd too, as `Authorization: Bearer <secret>` (go-nsq's
    /// `LookupdAuthorization`, true).
    pub lookupd_authorization: bool,

    /// Messages a consumer may hold at once, over all its connections (1).
    pub max_in_flight: u32,
    /// A message delivered more often than this is finished without being handled (5); 0
    /// never gives up.
    pub max_attempts: u16,
    /// Requeue delay per attempt for a failed message when none is given (90 s).
    pub default_requeue_delay: Duration,
    /// Upper bound of computed requeue delays (15 min).
    pub max_requeue_delay: Duration,
    /// How the backoff after failures grows.
    pub backoff_strategy: BackoffStrategy,
    /// Unit of the backoff (1 s).
    pub backoff_multiplier: Duration,
    /// Longest backoff (2 min); zero disables backoff.
    pub max_backoff_duration: Duration,
    /// How often nsqlookupd is asked, and how long a dropped nsqd connection waits before
    /// it is tried again when there is no lookupd (60 s).
    pub lookupd_poll_interval: Duration,
    /// Fraction of the interval added at random to the first poll (0.3).
    pub lookupd_poll_jitter: f64,
    /// How long one lookupd request may take (60 s).
    pub lookupd_poll_timeout: Duration,
    /// A connection that got nothing for this long gives up its RDY when redistributing (10 s).
    pub low_rdy_idle_timeout: Duration,
    /// A connection holding RDY for this long gives it up when redistributing (30 s).
    pub low_rdy_timeout: Duration,
    /// How often RDY is redistributed when there are more connections than max_in_flight,
    /// or while backing off (5 s).
    pub rdy_redistribute_interval: Duration,
    /// How many messages [`Consumer::run`](crate::Consumer::run) handles at once (1).
    pub handler_concurrency: usize,
    /// How long [`Consumer::stop`](crate::Consumer::stop) waits for messages in flight to
    /// be answered before closing anyway (30 s, as go-nsq).
    pub drain_timeout: Duration,

    /// Consecutive publishes to one topic waiting to be written together go out as one MPUB
    /// (true). A batch then succeeds or fails as a whole (each publish's result is the
    /// batch's) and a failure is reported as `E_MPUB_FAILED` / MPUB's texts. In process,
    /// consecutive `publish_async`s to one topic share one broker call (flushed when one is
    /// awaited or dropped, at 256 messages or 64 KiB, before another topic or kind of
    /// publish, or within about 1 ms).
    pub coalesce_publishes: bool,
    /// Largest frame accepted from the server (64 MiB).
    pub max_frame_size: usize,
}

impl Default for Config {
    fn default() -> Config {
        let hostname = gethostname::gethostname().to_string_lossy().into_owned();
        let short = hostname.split('.').next().unwrap_or("").to_string();
        Config {
            broker: None,
            client_id: short,
            hostname,
            user_agent: concat!("nsqr-client/", env!("CARGO_PKG_VERSION")).to_string(),
            dial_timeout: Duration::from_secs(1),
            read_timeout: Duration::from_secs(60),
            write_timeout: Duration::from_secs(10),
            heartbeat_interval: Some(Duration::from_secs(30)),
            output_buffer_size: Some(16 * 1024),
            output_buffer_timeout: Some(Duration::from_millis(250)),
            msg_timeout: None,
            sample_rate: 0,
            tls: None,
            compression: Compression::None,
            auth_secret: None,
            lookupd_authorization: true,
            max_in_flight: 1,
            max_attempts: 5,
            default_requeue_delay: Duration::from_secs(90),
            max_requeue_delay: Duration::from_secs(15 * 60),
            backoff_strategy: BackoffStrategy::Exponential,
            backoff_multiplier: Duration::from_secs(1),
            max_backoff_duration: Duration::from_secs(120),
            lookupd_poll_interval: Duration::from_secs(60),
            lookupd_poll_jitter: 0.3,
            lookupd_poll_timeout: Duration::from_secs(60),
            low_rdy_idle_timeout: Duration::from_secs(10),
            low_rdy_timeout: Duration::from_secs(30),
            rdy_redistribute_interval: Duration::from_secs(5),
            handler_concurrency: 1,
            drain_timeout: Duration::from_secs(30),
            coalesce_publishes: true,
            max_frame_size: nsq_wire::client::DEFAULT_MAX_FRAME_SIZE,
        }
    }
}

impl Config {
    /// The defaults, with `broker` as what `inproc://` reaches.
    pub fn inproc(broker: Broker) -> Config {
        Config {
            broker: Some(broker),
            ..Config::default()
        }
    }

    /// Check the ranges go-nsq checks (and that heartbeats come before the read timeout).
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |s: String| Err(Error::Config(s));
        if let Compression::Deflate(l) = self.compression {
            if !(1..=9).contains(&l) {
                return bad(format!("deflate level {l} is not in 1..=9"));
            }
        }
        if self.sample_rate > 99 {
            return bad(format!("sample_rate {} is not in 0..=99", self.sample_rate));
        }
        if let Some(h) = self.heartbeat_interval {
            if h >= self.read_timeout {
                return bad(format!(
                    "heartbeat_interval {h:?} must be less than read_timeout {:?}",
                    self.read_timeout
                ));
            }
        }
        if !(0.0..=1.0).contains(&self.lookupd_poll_jitter) {
            return bad("lookupd_poll_jitter is not in [0, 1]".into());
        }
        if self.lookupd_poll_interval.is_zero() || self.rdy_redistribute_interval.is_zero() {
            return bad("poll and redistribute intervals must be positive".into());
        }
        if self.handler_concurrency == 0 {
            return bad("handler_concurrency must be at least 1".into());
        }
        if self.read_timeout.is_zero() || self.write_timeout.is_zero() {
            return bad("read_timeout and write_timeout must be positive".into());
        }
        Ok(())
    }

    /// The backoff for the `n`-th consecutive failure (n >= 1), before the cap.
    pub(crate) fn backoff_for(&self, n: u32, random: f64) -> Duration {
        let full = self
            .backoff_multiplier
            .saturating_mul(1u32.checked_shl(n.min(31)).unwrap_or(u32::MAX));
        match self.backoff_strategy {
            BackoffStrategy::Exponential => full,
            BackoffStrategy::FullJitter => full.mul_f64(random.clamp(0.0, 1.0)),
        }
    }

    /// The requeue delay of a failed message with `attempts` when the caller gave none.
    pub(crate) fn requeue_delay(&self, attempts: u16) -> Duration {
        self.default_requeue_delay
            .saturating_mul(u32::from(attempts))
            .min(self.max_requeue_delay)
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("inproc", &self.broker.is_some())
            .field("client_id", &self.client_id)
            .field("user_agent", &self.user_agent)
            .field("tls", &self.tls.is_some())
            .field("compression", &self.compression)
            .field("auth", &self.auth_secret.is_some())
            .field("max_in_flight", &self.max_in_flight)
            .field("max_attempts", &self.max_attempts)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_nsq_defaults_and_checks() {
        let c = Config::default();
        assert_eq!(c.max_in_flight, 1);
        assert_eq!(c.max_attempts, 5);
        assert!(c.validate().is_ok());
        assert_eq!(c.backoff_for(1, 0.5), Duration::from_secs(2));
        assert_eq!(c.backoff_for(3, 0.5), Duration::from_secs(8));
        assert_eq!(c.requeue_delay(2), Duration::from_secs(180));
        assert_eq!(c.requeue_delay(100), Duration::from_secs(900));
        let mut j = c.clone();
        j.backoff_strategy = BackoffStrategy::FullJitter;
        assert_eq!(j.backoff_for(1, 0.25), Duration::from_millis(500));
        let mut bad = c.clone();
        bad.compression = Compression::Deflate(10);
        assert!(bad.validate().is_err());
        let mut bad = c.clone();
        bad.heartbeat_interval = Some(Duration::from_secs(60));
        assert!(bad.validate().is_err());
        let mut bad = c;
        bad.sample_rate = 100;
        assert!(bad.validate().is_err());
    }
}
