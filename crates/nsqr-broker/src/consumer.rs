//! One consumer model for every way of consuming: a TCP connection, an in-process
//! [`Subscription`](crate::Subscription), and an HTTP consumer are all a [`Consumer`] inside
//! the engine.
//!
//! A consumer is what a channel needs to hand out messages fairly and account for them: how
//! many it may hold (its ready count, nsqd's RDY), how many it holds, its in-flight timeout, a
//! way to wake it (`notified`) and to make it go (`kick`). Whatever drives it (a connection
//! task, a subscription's `next`, an HTTP long poll) takes messages with
//! [`Channel::deliver`](crate::Channel::deliver). Protocol facts (TLS, compression, IDENTIFY
//! fields, auth) are the driver's: it may attach them as [`ConsumerInfo::details`], which the
//! engine carries untouched into stats snapshots.

use std::any::Any;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

/// How a consumer reaches the broker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConsumerKind {
    /// An NSQ V2 TCP (or unix socket) connection.
    Tcp,
    /// A [`Subscription`](crate::Subscription) in the same process.
    InProcess,
    /// An HTTP consumer (long poll or stream).
    Http,
}

/// What a consumer is, fixed when it is created.
#[derive(Clone)]
pub struct ConsumerInfo {
    kind: ConsumerKind,
    remote_address: String,
    connect_ts: i64,
    msg_timeout: Option<Duration>,
    details: Option<Arc<dyn Any + Send + Sync>>,
}

impl ConsumerInfo {
    /// A consumer of `kind` reached from `remote_address` ("" in process), connected now.
    pub fn new(kind: ConsumerKind, remote_address: impl Into<String>) -> ConsumerInfo {
        ConsumerInfo {
            kind,
            remote_address: remote_address.into(),
            connect_ts: crate::now_unix_nanos().div_euclid(1_000_000_000),
            msg_timeout: None,
            details: None,
        }
    }

    /// Its in-flight timeout (default: the broker's `msg_timeout`).
    pub fn msg_timeout(mut self, timeout: Duration) -> ConsumerInfo {
        self.msg_timeout = Some(timeout);
        self
    }

    /// Protocol facts the driver wants back in stats snapshots ([`Consumer::details`]).
    pub fn details(mut self, details: Arc<dyn Any + Send + Sync>) -> ConsumerInfo {
        self.details = Some(details);
        self
    }
}

impl std::fmt::Debug for ConsumerInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsumerInfo")
            .field("kind", &self.kind)
            .field("remote_address", &self.remote_address)
            .finish()
    }
}

/// The engine's view of one consumer; shared by its driver and the channel it joined.
pub struct Consumer {
    id: u64,
    info: ConsumerInfo,
    /// Woken when there may be something to deliver, or the consumer must go.
    notify: Notify,
    kicked: AtomicBool,
    ready_count: AtomicI64,
    in_flight: AtomicI64,
    message_count: AtomicU64,
    finish_count: AtomicU64,
    requeue_count: AtomicU64,
    msg_timeout_ms: AtomicU64,
    /// It asked for its own timeout (else a channel's `msg_timeout` setting applies).
    own_timeout: AtomicBool,
}

impl Consumer {
    pub(crate) fn new(id: u64, info: ConsumerInfo, default_timeout: Duration) -> Consumer {
        let timeout = info.msg_timeout.unwrap_or(default_timeout);
        let own = info.msg_timeout.is_some();
        Consumer {
            id,
            info,
            notify: Notify::new(),
            kicked: AtomicBool::new(false),
            ready_count: AtomicI64::new(0),
            in_flight: AtomicI64::new(0),
            message_count: AtomicU64::new(0),
            finish_count: AtomicU64::new(0),
            requeue_count: AtomicU64::new(0),
            msg_timeout_ms: AtomicU64::new(duration_ms(timeout)),
            own_timeout: AtomicBool::new(own),
        }
    }

    /// Unique within its broker.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// How it reaches the broker.
    pub fn kind(&self) -> ConsumerKind {
        self.info.kind
    }

    /// The peer's address ("" in process or on a unix socket).
    pub fn remote_address(&self) -> &str {
        &self.info.remote_address
    }

    /// Unix seconds when it was created.
    pub fn connect_ts(&self) -> i64 {
        self.info.connect_ts
    }

    /// The driver's own facts, if it attached some of type `T`.
    pub fn details<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.info.details.as_deref()?.downcast_ref::<T>()
    }

    /// Wait until there may be something to deliver, or [`Consumer::is_kicked`].
    pub fn notified(&self) -> tokio::sync::futures::Notified<'_> {
        self.notify.notified()
    }

    pub(crate) fn wake(&self) {
        self.notify.notify_one();
    }

    /// Ask its driver to stop (its channel or topic was deleted, the broker is shutting down).
    pub fn kick(&self) {
        self.kicked.store(true, Relaxed);
        self.notify.notify_one();
    }

    /// True once kicked.
    pub fn is_kicked(&self) -> bool {
        self.kicked.load(Relaxed)
    }

    /// How many messages it may hold in flight (nsqd's RDY).
    pub fn ready_count(&self) -> i64 {
        self.ready_count.load(Relaxed)
    }

    /// Set how many messages it may hold in flight. Lowering it takes nothing back; to stop
    /// deliveries also tell the channel ([`Channel::set_not_ready`](crate::Channel::set_not_ready)).
    pub fn set_ready_count(&self, n: i64) {
        self.ready_count.store(n, Relaxed);
    }

    /// Messages it holds in flight now.
    pub fn in_flight(&self) -> i64 {
        self.in_flight.load(Relaxed)
    }

    /// How many more it may take now (ready count minus in flight).
    pub fn capacity(&self) -> i64 {
        self.ready_count() - self.in_flight()
    }

    /// Messages delivered to it so far.
    pub fn message_count(&self) -> u64 {
        self.message_count.load(Relaxed)
    }

    /// Messages it finished so far.
    pub fn finish_count(&self) -> u64 {
        self.finish_count.load(Relaxed)
    }

    /// Messages it requeued so far.
    pub fn requeue_count(&self) -> u64 {
        self.requeue_count.load(Relaxed)
    }

    /// Its in-flight timeout.
    pub fn msg_timeout(&self) -> Duration {
        Duration::from_millis(self.msg_timeout_ms.load(Relaxed))
    }

    /// Change its in-flight timeout (IDENTIFY's `msg_timeout`); applies to later deliveries.
    /// A consumer that set one keeps it on a channel with a `msg_timeout` setting.
    pub fn set_msg_timeout(&self, timeout: Duration) {
        self.msg_timeout_ms.store(duration_ms(timeout), Relaxed);
        self.own_timeout.store(true, Relaxed);
    }

    /// True when it asked for its own in-flight timeout.
    pub fn has_own_msg_timeout(&self) -> bool {
        self.own_timeout.load(Relaxed)
    }

    pub(crate) fn delivered(&self, n: usize) {
        self.in_flight.fetch_add(n as i64, Relaxed);
        self.message_count.fetch_add(n as u64, Relaxed);
    }

    pub(crate) fn finished(&self, n: usize) {
        self.in_flight.fetch_sub(n as i64, Relaxed);
        self.finish_count.fetch_add(n as u64, Relaxed);
    }

    pub(crate) fn requeued(&self) {
        self.in_flight.fetch_sub(1, Relaxed);
        self.requeue_count.fetch_add(1, Relaxed);
    }

    /// A message it held timed out or was taken back.
    pub(crate) fn lost_one(&self) {
        self.in_flight.fetch_sub(1, Relaxed);
    }

    pub(crate) fn reset_in_flight(&self) {
        self.in_flight.store(0, Relaxed);
    }
}

impl std::fmt::Debug for Consumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer")
            .field("id", &self.id)
            .field("kind", &self.info.kind)
            .field("remote_address", &self.info.remote_address)
            .finish()
    }
}

fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
