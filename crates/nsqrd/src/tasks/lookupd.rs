//! Registration with nsqlookupd, as nsqd does it (nsqd's lookup.go): one peer per
//! `--lookupd-tcp-address`, each connected lazily, IDENTIFY + a REGISTER per topic (or per
//! topic/channel pair) on every (re)connect, REGISTER / UNREGISTER as topics and channels come
//! and go, PING every 15 s, and channel pre-creation for new topics from lookupd's `/channels`.
//!
//! The engine only fires events (`nsqr_broker::events`); this module turns them into commands.
//! Each peer has its own task and a bounded queue, so a slow or dead lookupd delays nothing but
//! itself: publishing and consuming never wait on it. If a peer's queue overflows, its queued
//! commands are dropped and it reconnects, which re-registers the current state in full (lookupd
//! forgets a node's registrations when its connection closes, so nothing stale survives).
//!
//! The same rule covers a lookupd that is down or starts after this node: while a peer is not
//! connected, its commands are not sent one by one; it tries to connect again every
//! `RECONNECT_INTERVAL` (nsqd: only at the next command or PING, up to 15 s later), a command
//! brings the next attempt forward (at most one attempt per `MIN_ATTEMPT_GAP`), and the connection
//! that succeeds registers everything. So a topic created while lookupd was down is known to it
//! about a second after it comes up, and one created after it came up at once.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Weak};
use std::time::Duration;

use nsqr_broker::{Broker, Event, EventListener, Listening, Topic, TopicHold};
use parking_lot::Mutex;
use tokio::sync::{mpsc, Notify};
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::{Instant, MissedTickBehavior};

use super::lookup_peer::{Identity, PeerConn, PeerError, PeerInfo};
use super::lookupd_channels::lookup_channels;

/// nsqd's heartbeat to each lookupd.
const PING_INTERVAL: Duration = Duration::from_secs(15);
/// Commands a peer may have queued before it falls back to a full re-registration.
const QUEUE: usize = 1024;
/// Time between connection attempts while a lookupd cannot be reached.
const RECONNECT_INTERVAL: Duration = Duration::from_secs(1);
/// A command for a peer that is not connected triggers an attempt, but no sooner than this after
/// the previous one.
const MIN_ATTEMPT_GAP: Duration = Duration::from_millis(250);
/// While a lookupd stays unreachable, one failed attempt in this many is logged as an error (the
/// others at debug level): about one line per nsqd PING interval instead of one per second.
const LOG_EVERY_FAILURES: u32 = 15;

/// Settings for the lookupd peers, taken from the options once the listeners are bound.
#[derive(Debug, Clone)]
pub struct LookupdConfig {
    pub identity: Identity,
    pub max_body_size: i64,
    pub http_connect_timeout: Duration,
    pub http_request_timeout: Duration,
}

/// A command for one lookupd.
#[derive(Debug, Clone, PartialEq, Eq)]
enum PeerCmd {
    Register(String, Option<String>),
    Unregister(String, Option<String>),
}

impl PeerCmd {
    fn line(&self) -> String {
        let (verb, t, c) = match self {
            PeerCmd::Register(t, c) => ("REGISTER", t, c),
            PeerCmd::Unregister(t, c) => ("UNREGISTER", t, c),
        };
        match c {
            Some(c) => format!("{verb} {t} {c}"),
            None => format!("{verb} {t}"),
        }
    }
}

/// What a peer's task shares with the manager.
struct PeerShared {
    addr: String,
    /// lookupd's own description from the last successful IDENTIFY (kept after a disconnect,
    /// as nsqd does, so pre-creation still knows where to ask).
    info: Mutex<Option<PeerInfo>>,
    /// The queue overflowed: drop it and re-register everything.
    resync: AtomicBool,
    wake: Notify,
}

struct Peer {
    shared: Arc<PeerShared>,
    tx: mpsc::Sender<PeerCmd>,
    task: JoinHandle<()>,
}

/// The set of lookupd peers and the broker's event sink that feeds them.
pub struct Lookupd {
    broker: Arc<Broker>,
    cfg: Arc<LookupdConfig>,
    runtime: tokio::runtime::Handle,
    peers: Mutex<Vec<Peer>>,
    stopped: AtomicBool,
    /// Our place on the broker's event bus (dropped at shutdown).
    listening: Mutex<Option<Listening>>,
    /// Replicated topics another node leads (`Event::Serving`): not registered from here.
    not_serving: Mutex<BTreeSet<String>>,
}

/// The broker's events reach the lookupd peers through this (it holds new topics until their
/// channels are pre-created).
struct Follower(Weak<Lookupd>);

impl EventListener for Follower {
    fn on_event(&self, event: Event) {
        if let Some(l) = self.0.upgrade() {
            l.on_event(event);
        }
    }

    fn holds_new_topics(&self) -> bool {
        true
    }
}

impl Lookupd {
    /// Connect to `addrs` and follow the broker's topics and channels from now on. Call inside
    /// the runtime, after `nsqd.dat` was loaded (loaded topics are registered on connect, but
    /// are not held for channel pre-creation, as in nsqd).
    pub fn start(broker: Arc<Broker>, cfg: LookupdConfig, addrs: &[String]) -> Arc<Lookupd> {
        let l = Arc::new(Lookupd {
            broker: Arc::clone(&broker),
            cfg: Arc::new(cfg),
            runtime: tokio::runtime::Handle::current(),
            peers: Mutex::new(Vec::new()),
            stopped: AtomicBool::new(false),
            listening: Mutex::new(None),
            not_serving: Mutex::new(BTreeSet::new()),
        });
        let listening = broker.listen(Arc::new(Follower(Arc::downgrade(&l))));
        *l.listening.lock() = Some(listening);
        l.set_addresses(addrs);
        l
    }

    /// Swap the peer list (`PUT /config/nsqlookupd_tcp_addresses`): peers no longer listed are
    /// disconnected, new ones connected; the others are left alone.
    pub fn set_addresses(&self, addrs: &[String]) {
        if self.stopped.load(Relaxed) {
            return;
        }
        let mut peers = self.peers.lock();
        peers.retain(|p| {
            let keep = addrs.contains(&p.shared.addr);
            if !keep {
                tracing::info!("LOOKUP({}): removing peer", p.shared.addr);
                p.task.abort();
            }
            keep
        });
        for addr in addrs {
            if peers.iter().any(|p| &p.shared.addr == addr) {
                continue;
            }
            tracing::info!("LOOKUP({addr}): adding peer");
            peers.push(self.spawn_peer(addr));
        }
    }

    /// Close every peer connection (shutdown). Nothing is unregistered: lookupd drops a node's
    /// registrations when its connection closes.
    pub fn shutdown(&self) {
        self.stopped.store(true, Relaxed);
        self.listening.lock().take();
        for p in self.peers.lock().drain(..) {
            p.task.abort();
        }
        tracing::info!("LOOKUP: closing");
    }

    fn spawn_peer(&self, addr: &str) -> Peer {
        let shared = Arc::new(PeerShared {
            addr: addr.to_string(),
            info: Mutex::new(None),
            resync: AtomicBool::new(false),
            wake: Notify::new(),
        });
        let (tx, rx) = mpsc::channel(QUEUE);
        let task = self.runtime.spawn(run_peer(
            Arc::clone(&shared),
            rx,
            Arc::clone(&self.broker),
            Arc::clone(&self.cfg),
        ));
        Peer { shared, tx, task }
    }

    /// An event from the broker's bus: quick, never blocks (see `nsqr_broker::EventListener`).
    fn on_event(&self, ev: Event) {
        match ev {
            Event::TopicCreated { topic, hold } => {
                if topic.is_serving() {
                    self.broadcast(&[PeerCmd::Register(topic.name().to_string(), None)]);
                }
                self.precreate_channels(topic, hold);
            }
            Event::TopicDeleted { topic, channels } => {
                let mut cmds = vec![PeerCmd::Unregister(topic.clone(), None)];
                cmds.extend(
                    channels
                        .into_iter()
                        .map(|c| PeerCmd::Unregister(topic.clone(), Some(c))),
                );
                self.broadcast(&cmds);
            }
            Event::ChannelCreated { topic, channel }
                if !self.not_serving.lock().contains(&topic) =>
            {
                self.broadcast(&[PeerCmd::Register(topic, Some(channel))]);
            }
            Event::Serving {
                topic,
                channels,
                serving,
            } => {
                let mut not_serving = self.not_serving.lock();
                if serving {
                    not_serving.remove(&topic);
                } else {
                    not_serving.insert(topic.clone());
                }
                self.broadcast(&serving_commands(topic, channels, serving));
            }
            Event::ChannelDeleted { topic, channel } => {
                self.broadcast(&[PeerCmd::Unregister(topic, Some(channel))]);
            }
            _ => {}
        }
    }

    fn broadcast(&self, cmds: &[PeerCmd]) {
        for p in self.peers.lock().iter() {
            for cmd in cmds {
                match p.tx.try_send(cmd.clone()) {
                    Ok(()) => {}
                    Err(mpsc::error::TrySendError::Full(_)) => {
                        p.shared.resync.store(true, Relaxed);
                        p.shared.wake.notify_one();
                        break;
                    }
                    Err(mpsc::error::TrySendError::Closed(_)) => break,
                }
            }
        }
    }

    /// The HTTP addresses of the lookupds that have identified themselves.
    fn http_addrs(&self) -> (usize, Vec<String>) {
        let peers = self.peers.lock();
        let addrs = peers
            .iter()
            .filter_map(|p| {
                let info = p.shared.info.lock();
                let info = info.as_ref()?;
                (!info.broadcast_address.is_empty()).then(|| {
                    crate::options::join_host_port(
                        &info.broadcast_address,
                        &info.http_port.to_string(),
                    )
                })
            })
            .collect();
        (peers.len(), addrs)
    }

    /// Create the channels lookupd knows for a new topic, then start it. The topic holds its
    /// messages meanwhile, so publishing never waits; the wait is bounded by the HTTP timeouts.
    fn precreate_channels(&self, topic: Arc<Topic>, hold: Option<TopicHold>) {
        let (peers, addrs) = self.http_addrs();
        if addrs.is_empty() {
            if peers > 0 {
                tracing::error!(
                    "no available nsqlookupd to query for channels to pre-create for topic {}",
                    topic.name()
                );
            }
            drop(hold);
            return;
        }
        let (connect, request) = (self.cfg.http_connect_timeout, self.cfg.http_request_timeout);
        let broker = Arc::clone(&self.broker);
        self.runtime.spawn(async move {
            let mut lookups = JoinSet::new();
            for addr in addrs {
                let name = topic.name().to_string();
                lookups.spawn(async move {
                    let r = lookup_channels(&addr, &name, connect, request).await;
                    (addr, r)
                });
            }
            let mut channels = BTreeSet::new();
            while let Some(done) = lookups.join_next().await {
                match done {
                    Ok((_, Ok(found))) => channels.extend(found),
                    Ok((addr, Err(e))) => tracing::warn!(
                        "failed to query nsqlookupd ({addr}) for channels to pre-create for topic {} - {e}",
                        topic.name()
                    ),
                    Err(e) => tracing::warn!("channel pre-creation: {e}"),
                }
            }
            for c in channels {
                // Ephemeral channels exist only with consumers; names from lookupd are checked.
                if nsq_wire::names::is_ephemeral(&c) || !nsq_wire::names::is_valid_name(c.as_bytes()) {
                    continue;
                }
                let _ = broker.open_channel(topic.name(), &c).await;
            }
            drop(hold);
        });
    }
}

/// A topic served from now on is registered as a new one is (its channels, or the topic
/// alone); one no longer served is unregistered with its channels.
fn serving_commands(topic: String, channels: Vec<String>, serving: bool) -> Vec<PeerCmd> {
    if !serving {
        let mut cmds: Vec<PeerCmd> = channels
            .into_iter()
            .map(|c| PeerCmd::Unregister(topic.clone(), Some(c)))
            .collect();
        cmds.push(PeerCmd::Unregister(topic, None));
        return cmds;
    }
    if channels.is_empty() {
        return vec![PeerCmd::Register(topic, None)];
    }
    channels
        .into_iter()
        .map(|c| PeerCmd::Register(topic.clone(), Some(c)))
        .collect()
}

/// The REGISTER commands describing everything this node serves now.
fn full_registration(broker: &Broker) -> Vec<PeerCmd> {
    let mut cmds = Vec::new();
    for name in broker.topic_names() {
        let Some(t) = broker.topic(&name).filter(|t| t.is_serving()) else {
            continue;
        };
        let channels = t.channel_names();
        if channels.is_empty() {
            cmds.push(PeerCmd::Register(name, None));
        } else {
            cmds.extend(
                channels
                    .into_iter()
                    .map(|c| PeerCmd::Register(name.clone(), Some(c))),
            );
        }
    }
    cmds
}

/// One peer's connection state, driven by its task.
struct PeerLink {
    shared: Arc<PeerShared>,
    broker: Arc<Broker>,
    cfg: Arc<LookupdConfig>,
    conn: Option<PeerConn>,
    /// When not connected: when to try again. Commands are not sent meanwhile; the connection
    /// registers everything.
    retry_at: Option<Instant>,
    /// When the last connection attempt began.
    last_attempt: Option<Instant>,
    /// Failed attempts since the last connection (for logging).
    failures: u32,
}

impl PeerLink {
    /// Connect, IDENTIFY and register everything.
    async fn connect(&mut self) -> Result<(), PeerError> {
        let addr = &self.shared.addr;
        if self.failures == 0 {
            tracing::info!("LOOKUP connecting to {addr}");
        } else {
            tracing::debug!("LOOKUP connecting to {addr}");
        }
        let mut conn = PeerConn::connect(addr, self.cfg.max_body_size).await?;
        let info = conn.identify(&self.cfg.identity).await?;
        tracing::info!("LOOKUPD({addr}): peer info {info:?}");
        if info.broadcast_address.is_empty() {
            tracing::error!("LOOKUPD({addr}): no broadcast address");
        }
        *self.shared.info.lock() = Some(info);
        for cmd in full_registration(&self.broker) {
            let line = cmd.line();
            tracing::info!("LOOKUPD({addr}): {line}");
            conn.command(&line, None).await?;
        }
        self.conn = Some(conn);
        Ok(())
    }

    /// Connect now (registering everything); on failure, schedule the next attempt.
    async fn reconnect(&mut self) {
        self.conn = None;
        self.last_attempt = Some(Instant::now());
        match self.connect().await {
            Ok(()) => {
                self.retry_at = None;
                self.failures = 0;
            }
            Err(e) => {
                self.failures = self.failures.saturating_add(1);
                let addr = &self.shared.addr;
                if self.failures % LOG_EVERY_FAILURES == 1 {
                    tracing::error!("LOOKUPD({addr}): connect failed - {e}");
                } else {
                    tracing::debug!("LOOKUPD({addr}): connect failed - {e}");
                }
                self.retry_at = Some(Instant::now() + RECONNECT_INTERVAL);
            }
        }
    }

    /// Send one command on the open connection. Without one, nothing is sent: the pending
    /// reconnection (brought forward) registers everything. An error drops the connection and
    /// reconnects at once (with a full registration, so the failed command is not lost).
    async fn send(&mut self, line: &str) {
        let Some(conn) = self.conn.as_mut() else {
            self.hurry();
            return;
        };
        if let Err(e) = conn.command(line, None).await {
            tracing::error!("LOOKUPD({}): {line} - {e}", self.shared.addr);
            self.conn = None;
            self.retry_at = Some(Instant::now());
        }
    }

    /// Bring the next connection attempt forward, to at most `MIN_ATTEMPT_GAP` after the last.
    fn hurry(&mut self) {
        let soonest = self
            .last_attempt
            .map_or_else(Instant::now, |t| t + MIN_ATTEMPT_GAP);
        self.retry_at = Some(self.retry_at.map_or(soonest, |r| r.min(soonest)));
    }
}

async fn run_peer(
    shared: Arc<PeerShared>,
    mut rx: mpsc::Receiver<PeerCmd>,
    broker: Arc<Broker>,
    cfg: Arc<LookupdConfig>,
) {
    let mut link = PeerLink {
        shared: Arc::clone(&shared),
        broker,
        cfg,
        conn: None,
        retry_at: None,
        last_attempt: None,
        failures: 0,
    };
    link.reconnect().await;
    let mut ping = tokio::time::interval_at(Instant::now() + PING_INTERVAL, PING_INTERVAL);
    ping.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        let retry_at = link.retry_at;
        let retry = async move {
            match retry_at {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            _ = shared.wake.notified() => {
                if shared.resync.swap(false, Relaxed) {
                    tracing::warn!("LOOKUPD({}): too many pending commands; re-registering", shared.addr);
                    while rx.try_recv().is_ok() {}
                    link.reconnect().await;
                }
            }
            _ = retry => link.reconnect().await,
            cmd = rx.recv() => {
                let Some(cmd) = cmd else { return };
                let line = cmd.line();
                tracing::info!("LOOKUPD({}): {line}", shared.addr);
                link.send(&line).await;
            }
            _ = ping.tick() => {
                tracing::debug!("LOOKUPD({}): sending heartbeat", shared.addr);
                link.send("PING").await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines() {
        assert_eq!(PeerCmd::Register("t".into(), None).line(), "REGISTER t");
        assert_eq!(
            PeerCmd::Unregister("t".into(), Some("c#ephemeral".into())).line(),
            "UNREGISTER t c#ephemeral"
        );
    }

    #[tokio::test]
    async fn full_registration_lists_topics_or_their_channels() {
        let b = Broker::start(nsqr_broker::BrokerConfig::default())
            .await
            .unwrap();
        b.get_or_create_topic("lonely").ok();
        if let Ok(t) = b.get_or_create_topic("busy") {
            t.get_or_create_channel("a").ok();
            t.get_or_create_channel("b").ok();
        }
        let lines: Vec<String> = full_registration(&b).iter().map(PeerCmd::line).collect();
        assert_eq!(
            lines,
            ["REGISTER busy a", "REGISTER busy b", "REGISTER lonely"]
        );
    }

    // A lookupd that is down is tried again well before nsqd's next PING would reconnect.
    const _: () = assert!(RECONNECT_INTERVAL.as_millis() < PING_INTERVAL.as_millis());
    const _: () = assert!(MIN_ATTEMPT_GAP.as_millis() < RECONNECT_INTERVAL.as_millis());

    /// A link to an address where nothing listens (a port bound, then released).
    async fn link_to_nowhere() -> PeerLink {
        let addr = match std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()) {
            Ok(a) => a.to_string(),
            Err(e) => panic!("no loopback port: {e}"),
        };
        let broker = match Broker::start(nsqr_broker::BrokerConfig::default()).await {
            Ok(b) => b,
            Err(e) => panic!("broker: {e}"),
        };
        let identity = Identity {
            broadcast_address: "127.0.0.1".into(),
            hostname: "test".into(),
            http_port: 4151,
            tcp_port: 4150,
            topology_region: String::new(),
            topology_zone: String::new(),
            version: "test".into(),
        };
        PeerLink {
            shared: Arc::new(PeerShared {
                addr,
                info: Mutex::new(None),
                resync: AtomicBool::new(false),
                wake: Notify::new(),
            }),
            broker: Arc::new(broker),
            cfg: Arc::new(LookupdConfig {
                identity,
                max_body_size: 1024,
                http_connect_timeout: Duration::from_secs(1),
                http_request_timeout: Duration::from_secs(1),
            }),
            conn: None,
            retry_at: None,
            last_attempt: None,
            failures: 0,
        }
    }

    #[tokio::test]
    async fn a_failed_connection_is_retried_after_the_reconnect_interval() {
        let mut link = link_to_nowhere().await;
        link.reconnect().await;
        assert!(link.conn.is_none());
        assert_eq!(link.failures, 1);
        let (Some(attempt), Some(retry)) = (link.last_attempt, link.retry_at) else {
            panic!("no retry scheduled after a failed connection");
        };
        assert!(retry > attempt);
        assert!(retry <= Instant::now() + RECONNECT_INTERVAL);
    }

    #[tokio::test]
    async fn a_command_while_disconnected_brings_the_next_attempt_forward() {
        let mut link = link_to_nowhere().await;
        link.reconnect().await;
        let (Some(attempt), Some(scheduled)) = (link.last_attempt, link.retry_at) else {
            panic!("no retry scheduled after a failed connection");
        };
        link.send("REGISTER t").await;
        let Some(hurried) = link.retry_at else {
            panic!("the command cancelled the retry");
        };
        assert!(hurried <= attempt + MIN_ATTEMPT_GAP);
        assert!(hurried <= scheduled);
    }
}
