//! The keyspace's Redis-protocol server, on `--kv-address` (off by default: with no `--kv-*`
//! flag nsqrd is nsqd). Every Redis client speaks to it unchanged: RESP2, RESP3 after
//! `HELLO 3`, inline commands, pipelining, pub/sub with push frames.
//!
//! ```text
//! resp/mod.rs     start(): open the keyspace, bind, accept; Handle::shutdown()
//! resp/workers.rs the serving threads (one single-threaded runtime each)
//! resp/conn.rs    one task per client: read, parse (resp-wire), dispatch, write
//! resp/registry.rs every connected client (CLIENT LIST / KILL / PAUSE)
//! resp/table.rs   the command table: arity, flags, the checks Redis makes before running one
//! resp/command_meta.rs what Redis 7.0 says of every command: flags, ACL categories, key specs
//! resp/acl/       ACL users, the permission check, ACL LOG, the ACL command
//! resp/args.rs    reading integers, deadlines and options the way Redis does
//! resp/<group>.rs the commands: connection, server, config, strings, keys, pubsub,
//!                 transaction (MULTI / EXEC / WATCH), persistence (SAVE / BGSAVE),
//!                 introspection (OBJECT / MEMORY / LATENCY / ROLE), bits (bitmaps),
//!                 dump (DUMP / RESTORE), script (EVAL / SCRIPT: Lua)
//! resp/feed.rs    the change feed into an NSQ topic
//! ```
//!
//! The engine (keys, expiry, eviction, pub/sub hub, persistence) is `nsqr-kv`; this module only
//! speaks the protocol.

mod acl;
mod args;
mod bitfield;
mod bits;
mod blocking;
mod client;
mod command_list;
mod command_meta;
mod config;
mod conn;
mod connection;
mod databases;
mod dump;
mod feed;
mod geo;
mod hashes;
mod hll;
mod introspection;
mod keys;
mod lcs;
mod lists;
mod lolwut;
mod migrate;
mod module;
mod monitor;
mod params;
mod persistence;
mod pubsub;
mod registry;
mod replication;
mod script;
mod server;
mod session;
mod sets;
mod slowlog;
mod sort;
mod stream_groups;
mod stream_info;
mod stream_read;
mod streams;
mod strings;
mod table;
mod tracking;
mod transaction;
mod workers;
mod zblocking;
mod zranges;
mod zsets;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::Arc;
use std::time::Instant;

use nsq_common::net::{accept_until, Connections};
use nsqr_broker::Broker;
use nsqr_kv::{ChangeFeed, FeedConfig, Keyspace, KvConfig, NotifyFlags, OutputLimit, Policy};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::options::Options;

/// What every connection shares.
pub struct Shared {
    pub ks: Arc<Keyspace>,
    /// The ACL users (`default` has `--kv-password`).
    pub users: acl::Users,
    pub acl_log: acl::Log,
    /// Bound to an address other than loopback: protected mode applies.
    pub exposed: bool,
    /// `--kv-protected-mode` / `CONFIG SET protected-mode`: while exposed and the default user
    /// needs no password, clients from elsewhere are refused.
    pub protected_mode: AtomicBool,
    /// `--kv-password` / `CONFIG SET requirepass`, for `CONFIG GET requirepass` (the users keep
    /// only hashes).
    pub requirepass: parking_lot::Mutex<String>,
    pub next_client_id: AtomicU64,
    pub connected: AtomicUsize,
    pub total_connections: AtomicU64,
    /// Commands run (added once per batch of requests).
    pub total_commands: AtomicU64,
    pub started: Instant,
    pub port: u16,
    pub pubsub_limit: OutputLimit,
    pub max_bulk: u64,
    /// Every connected client (`CLIENT LIST / KILL / PAUSE`).
    pub clients: registry::Clients,
    /// The script cache and the script thread (`EVAL`).
    pub scripts: script::Scripts,
    pub slowlog: slowlog::SlowLog,
    /// The clients that ran MONITOR.
    pub monitors: monitor::Monitors,
    /// `CONFIG SET timeout`: a client idle this many seconds is closed (0: never).
    pub idle_timeout_secs: AtomicU64,
    /// How many databases SELECT reaches (Redis's `databases`).
    pub databases: usize,
}

/// The running server: stop it with [`Handle::shutdown`]. Dropped without it, the server
/// stops serving and writes nothing (as a crash would).
pub struct Handle {
    addr: std::net::SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    /// The accept loop; it hands back the serving threads when it stops.
    task: Option<JoinHandle<workers::Workers>>,
    ks: Arc<Keyspace>,
    /// To stop a running script when the server stops.
    shared: Arc<Shared>,
}

fn data_dir(o: &Options) -> PathBuf {
    let base = Path::new(if o.data_path.is_empty() {
        "."
    } else {
        o.data_path.as_str()
    });
    base.join(&o.kv_data_dir)
}

/// The keyspace's settings from nsqrd's options (already validated).
fn kv_config(o: &Options) -> KvConfig {
    KvConfig {
        maxmemory: nsqr_kv::config::parse_memory(&o.kv_maxmemory).unwrap_or(0),
        policy: Policy::parse(&o.kv_maxmemory_policy).unwrap_or_default(),
        notify: NotifyFlags::parse(&o.kv_notify_keyspace_events).unwrap_or_default(),
        data_dir: Some(data_dir(o)),
        strict: o.durability == "strict",
        feed: FeedConfig {
            prefixes: o
                .kv_events_prefixes
                .iter()
                .map(|p| p.as_bytes().to_vec())
                .collect(),
            include_value: o.kv_events_value,
        },
        ..KvConfig::default()
    }
}

/// Opens the keyspace and starts serving it, if `--kv-address` is set.
pub async fn start(o: &Options, broker: &Broker) -> Result<Option<Handle>, String> {
    if o.kv_address.is_empty() {
        return Ok(None);
    }
    let config = kv_config(o);
    let dir = config.data_dir.clone().unwrap_or_default();
    std::fs::create_dir_all(&dir).map_err(|e| {
        format!(
            "failed to create keyspace directory {} - {e}",
            dir.display()
        )
    })?;
    let feed = if o.kv_events_topic.is_empty() {
        None
    } else {
        let f = feed::BrokerFeed::new(broker, &o.kv_events_topic, config.strict)?;
        Some(Arc::new(f) as Arc<dyn ChangeFeed>)
    };
    let ks = Keyspace::open(config.clone(), feed)
        .map_err(|e| format!("failed to open the keyspace - {e}"))?;
    let listener = TcpListener::bind(&o.kv_address)
        .await
        .map_err(|e| format!("listen ({}) failed - {e}", o.kv_address))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("listen ({}) failed - {e}", o.kv_address))?;
    tracing::info!("KV: listening on {addr}");
    let shared = Arc::new(Shared {
        ks: Arc::clone(&ks),
        users: acl::Users::new((!o.kv_password.is_empty()).then_some(o.kv_password.as_str())),
        acl_log: acl::Log::default(),
        exposed: !addr.ip().is_loopback(),
        protected_mode: AtomicBool::new(o.kv_protected_mode == "yes"),
        requirepass: parking_lot::Mutex::new(o.kv_password.clone()),
        next_client_id: AtomicU64::new(1),
        connected: AtomicUsize::new(0),
        total_connections: AtomicU64::new(0),
        total_commands: AtomicU64::new(0),
        started: Instant::now(),
        port: addr.port(),
        pubsub_limit: config.pubsub_limit,
        max_bulk: config.max_bulk,
        clients: registry::Clients::default(),
        scripts: script::Scripts::default(),
        slowlog: slowlog::SlowLog::default(),
        monitors: monitor::Monitors::default(),
        idle_timeout_secs: AtomicU64::new(0),
        databases: o.kv_databases.clamp(1, 256) as usize,
    });
    let stop_scripts = Arc::clone(&shared);
    // By default half the cores: clients on the same machine (and nsqrd's NSQ side) need the
    // rest, and one request at a time gains nothing from more threads than cores free.
    let threads = match o.kv_threads {
        n if n > 0 => n as usize,
        _ => (std::thread::available_parallelism().map_or(1, |n| n.get()) / 2).max(1),
    };
    let workers = workers::Workers::start(threads, &shared)?;
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let task = tokio::spawn(serve(listener, workers, Arc::clone(&shared), stop_rx));
    Ok(Some(Handle {
        addr,
        stop: Some(stop_tx),
        task: Some(task),
        ks,
        shared: stop_scripts,
    }))
}

/// Accepts until stopped, handing each connection to a serving thread.
async fn serve(
    listener: TcpListener,
    mut workers: workers::Workers,
    shared: Arc<Shared>,
    stop: oneshot::Receiver<()>,
) -> workers::Workers {
    let none = accept_until(
        async {
            let _ = stop.await;
        },
        || listener.accept(),
        |(stream, peer), _: &mut Connections| workers.dispatch(stream, peer, &shared),
        |e| tracing::error!("KV: accept error - {e}"),
    )
    .await;
    drop(none);
    workers
}

impl Drop for Handle {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl Handle {
    /// The bound address.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.addr
    }

    /// Stops accepting, closes every connection, then writes the keyspace's snapshot (and
    /// drains its log). Call before the broker closes its queues: the change feed's last
    /// messages go there.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.shared.scripts.abort();
        let workers = match self.task.take() {
            Some(t) => t.await.ok(),
            None => None,
        };
        let ks = Arc::clone(&self.ks);
        let closed = tokio::task::spawn_blocking(move || {
            if let Some(w) = workers {
                w.shutdown();
            }
            ks.close()
        });
        match closed.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::error!("KV: shutdown snapshot failed - {e}"),
            Err(e) => tracing::error!("KV: shutdown snapshot failed - {e}"),
        }
    }
}
