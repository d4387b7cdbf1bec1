//! The daemon's lifecycle: lock the data directory, load `nsqd.dat` (which opens and recovers
//! every disk queue), bind the listeners, run until SIGINT / SIGTERM, then shut down in nsqd's
//! order (stop accepting, close clients, stop HTTP, persist `nsqd.dat`, flush every channel's
//! and topic's memory, in-flight and deferred messages to disk and close the queues).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use nsqr_broker::{Broker, BrokerConfig};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::auth::Authenticator;
use crate::listener::Listener;
use crate::options::Options;
use crate::tasks::lookup_peer::Identity;
use crate::tasks::lookupd::{Lookupd, LookupdConfig};
use crate::tasks::statsd::{self, StatsdConfig};
use crate::tcp::{self, client, TcpSettings};

/// The exclusively locked data directory (released when dropped).
struct DataDirLock {
    _file: std::fs::File,
}

fn lock_data_path(path: &str) -> Result<DataDirLock, String> {
    let dir = if path.is_empty() { "." } else { path };
    let file = std::fs::File::open(dir)
        .map_err(|e| format!("failed to lock data-path: open {dir}: {e}"))?;
    if !file.metadata().map(|m| m.is_dir()).unwrap_or(false) {
        return Err(format!(
            "failed to lock data-path: {dir} is not a directory"
        ));
    }
    match file.try_lock() {
        Ok(()) => Ok(DataDirLock { _file: file }),
        Err(e) => Err(format!(
            "failed to lock data-path: cannot flock directory {dir} - {e} (possibly in use by another instance of nsqd)"
        )),
    }
}

/// What a test harness may inject into a server (nothing in production).
#[derive(Debug, Clone, Default)]
pub struct Hooks {
    /// Consulted before every disk write (`nsqr_broker::DiskFaults`).
    pub disk_faults: Option<nsqr_broker::DiskFaults>,
}

pub(crate) fn broker_config(o: &Options) -> BrokerConfig {
    BrokerConfig {
        node_id: o.node_id.clamp(0, 1023) as u16,
        mem_queue_size: o.mem_queue_size.max(0) as usize,
        msg_timeout: o.msg_timeout,
        max_msg_timeout: o.max_msg_timeout,
        max_req_timeout: o.max_req_timeout,
        max_channel_consumers: o.max_channel_consumers.max(0) as usize,
        e2e_percentiles: o.e2e_processing_latency_percentiles.clone(),
        e2e_window: o.e2e_processing_latency_window_time,
        data_path: Some(std::path::PathBuf::from(if o.data_path.is_empty() {
            "."
        } else {
            o.data_path.as_str()
        })),
        durability: nsqr_broker::Durability::parse(&o.durability).unwrap_or_default(),
        max_bytes_per_file: o.max_bytes_per_file.max(1) as u64,
        sync_every: o.sync_every.max(0) as u64,
        sync_timeout: o.sync_timeout,
        max_disk_bytes: o.max_disk_bytes.max(0) as u64,
        max_msg_size: o.max_msg_size.max(0) as u64,
        health: nsqr_broker::Health::default(),
        ..BrokerConfig::default()
    }
}

/// The cluster listener and this node's replicated logs, with the `--cluster-*` flags.
async fn start_cluster(o: &Options) -> Result<Option<Arc<crate::cluster::Cluster>>, String> {
    let Some(config) = o.cluster().map_err(|e| e.to_string())? else {
        return Ok(None);
    };
    let data_path = broker_config(o).data_path.unwrap_or_default();
    let strict =
        nsqr_broker::Durability::parse(&o.durability) == Some(nsqr_broker::Durability::Strict);
    let snapshot_every = o.cluster_snapshot_every().map_err(|e| e.to_string())?;
    crate::cluster::Cluster::start(config, data_path, strict, snapshot_every)
        .await
        .map(Some)
}

/// The auth-server client, when `--auth-http-address` is set.
fn authenticator(o: &Options) -> Result<Option<Arc<Authenticator>>, String> {
    if o.auth_http_addresses.is_empty() {
        return Ok(None);
    }
    let tls = crate::tls::client_config(o)
        .map_err(|e| format!("failed to build client TLS config - {e}"))?;
    Ok(Some(Arc::new(Authenticator::new(
        o.auth_http_addresses.clone(),
        &o.auth_http_request_method,
        o.http_client_connect_timeout,
        o.http_client_request_timeout,
        tls,
    ))))
}

/// What this node tells lookupd; `live` has the broadcast ports filled in.
fn lookupd_config(live: &Options) -> LookupdConfig {
    LookupdConfig {
        identity: Identity {
            broadcast_address: live.broadcast_address.clone(),
            hostname: crate::options::hostname().to_string(),
            http_port: live.broadcast_http_port,
            tcp_port: live.broadcast_tcp_port,
            topology_region: live.topology_region.clone(),
            topology_zone: live.topology_zone.clone(),
            version: nsqr_broker::NSQD_COMPAT_VERSION.to_string(),
        },
        max_body_size: live.max_body_size,
        http_connect_timeout: live.http_client_connect_timeout,
        http_request_timeout: live.http_client_request_timeout,
    }
}

fn statsd_config(live: &Options) -> StatsdConfig {
    StatsdConfig {
        address: live.statsd_address.clone(),
        interval: live.statsd_interval,
        prefix: live.resolved_statsd_prefix(live.broadcast_http_port),
        mem_stats: live.statsd_mem_stats,
        udp_packet_size: usize::try_from(live.statsd_udp_packet_size)
            .unwrap_or(0)
            .max(1),
        exclude_ephemeral: live.statsd_exclude_ephemeral,
    }
}

/// Wait for SIGINT or SIGTERM.
pub async fn wait_for_signal() {
    nsq_common::net::shutdown_signal().await
}

/// Run nsqrd until SIGINT / SIGTERM, then shut down gracefully.
pub async fn run(opts: Options, hooks: Hooks) -> Result<(), String> {
    let server = Server::start_with(opts, hooks).await?;
    wait_for_signal().await;
    server.shutdown().await
}

/// A running nsqrd: its listeners are bound and serving. Stop it with [`Server::shutdown`];
/// dropping it stops the listeners and the background tasks without the graceful flush, as
/// a crash would.
pub struct Server {
    broker: Broker,
    clients: Arc<client::Clients>,
    lookupd: Arc<Lookupd>,
    tcp_addr: Option<SocketAddr>,
    http_addr: Option<SocketAddr>,
    stop: watch::Sender<bool>,
    tcp_task: Option<JoinHandle<()>>,
    http_tasks: Vec<JoinHandle<()>>,
    memtrim: JoinHandle<()>,
    /// The keyspace's RESP server, with `--kv-address`.
    kv: Option<crate::resp::Handle>,
    /// This node's place in the cluster, with the `--cluster-*` flags.
    cluster: Option<Arc<crate::cluster::Cluster>>,
    _lock: DataDirLock,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        self.lookupd.shutdown();
        self.memtrim.abort();
        if let Some(t) = self.tcp_task.take() {
            t.abort();
        }
    }
}

impl Server {
    /// Lock the data directory, load `nsqd.dat` (recovering every disk queue), bind the
    /// listeners and start serving, on the current tokio runtime.
    pub async fn start(opts: Options) -> Result<Server, String> {
        Server::start_with(opts, Hooks::default()).await
    }

    /// [`Server::start`] with test hooks.
    pub async fn start_with(opts: Options, hooks: Hooks) -> Result<Server, String> {
        let lock = lock_data_path(&opts.data_path)?;
        tracing::info!(
            "nsqrd v{} (nsqd v{} compatible)",
            env!("CARGO_PKG_VERSION"),
            nsqr_broker::NSQD_COMPAT_VERSION
        );
        tracing::info!("ID: {}", opts.node_id);
        let tls = crate::tls::server_config(&opts)
            .map_err(|e| format!("failed to build TLS config - {e}"))?;
        let auth = authenticator(&opts)?;

        let cluster = start_cluster(&opts).await?;
        let config = BrokerConfig {
            disk_faults: hooks.disk_faults,
            replication: cluster
                .as_ref()
                .map(|c| nsqr_broker::Replication(Arc::new(crate::cluster::Hook(Arc::clone(c))))),
            ..broker_config(&opts)
        };
        let limits = nsqr_broker::queue_settings::Limits::of(&config, "");
        let queues = crate::queue_settings_file::from_config_file(&opts.config, &limits)?;
        let broker = Broker::start(config).await.map_err(|e| e.to_string())?;
        if let Some(c) = &cluster {
            c.attach(broker.clone());
        }
        crate::queue_settings_file::apply(&broker, queues).await?;
        let memtrim = tokio::spawn(crate::memtrim::run(Arc::new(broker.clone())));
        let kv = crate::resp::start(&opts, &broker).await?;

        let tcp_listener = Listener::bind(&opts.tcp_address).await?;
        let tcp_addr = tcp_listener.tcp_addr();
        tracing::info!("TCP: listening on {}", tcp_listener.describe());

        let (stop, stop_rx) = watch::channel(false);
        let clients = Arc::new(client::Clients::default());
        let shared = Arc::new(tcp::Shared {
            broker: broker.clone(),
            clients: Arc::clone(&clients),
            settings: TcpSettings::from_options(&opts),
            tls: tls.clone().map(tokio_rustls::TlsAcceptor::from),
            auth,
        });
        let tcp_task = tokio::spawn(tcp::serve(tcp_listener, shared, stopped(stop_rx.clone())));

        let listeners = crate::http_wiring::bind(&opts, tls.is_some()).await?;
        let http_addr = listeners.http_addr();
        let live = crate::http_wiring::live_options(&opts, tcp_addr, listeners.http_port());
        let lookupd = Lookupd::start(
            Arc::new(broker.clone()),
            lookupd_config(&live),
            &live.nsqlookupd_tcp_addresses,
        );
        if !live.statsd_address.is_empty() {
            tokio::spawn(statsd::run(
                Arc::new(broker.clone()),
                statsd_config(&live),
                stopped(stop_rx.clone()),
            ));
        }
        let http_tasks = crate::http_wiring::start(
            listeners,
            live,
            crate::http_wiring::Served {
                broker: Arc::new(broker.clone()),
                clients: Arc::clone(&clients),
                lookupd: Arc::clone(&lookupd),
                cluster: cluster.clone(),
            },
            tcp_addr,
            tls,
            stopped(stop_rx),
        )
        .map_err(|e| e.to_string())?;
        Ok(Server {
            broker,
            clients,
            lookupd,
            tcp_addr,
            http_addr,
            stop,
            tcp_task: Some(tcp_task),
            http_tasks,
            memtrim,
            kv,
            cluster,
            _lock: lock,
        })
    }

    /// The bound TCP address (None on a unix socket).
    pub fn tcp_addr(&self) -> Option<SocketAddr> {
        self.tcp_addr
    }

    /// The bound HTTP address (None when disabled or on a unix socket).
    pub fn http_addr(&self) -> Option<SocketAddr> {
        self.http_addr
    }

    /// The keyspace's bound RESP address (None without `--kv-address`).
    pub fn kv_addr(&self) -> Option<SocketAddr> {
        self.kv.as_ref().map(crate::resp::Handle::addr)
    }

    /// The engine, to publish and subscribe in process beside the TCP and HTTP clients.
    pub fn broker(&self) -> &Broker {
        &self.broker
    }

    /// Shut down in nsqd's order: stop accepting, close the clients (their in-flight messages
    /// go back to their queues), stop HTTP, persist `nsqd.dat`, flush every queue to disk.
    pub async fn shutdown(mut self) -> Result<(), String> {
        tracing::info!("TERM: shutting down");
        // The keyspace first: its shutdown snapshot, and its last changes into the broker.
        if let Some(kv) = self.kv.take() {
            kv.shutdown().await;
        }
        self.broker.set_exiting();
        // No UNREGISTER on the way out (as nsqd): closing the connections is enough for lookupd.
        self.lookupd.shutdown();
        let _ = self.stop.send(true);
        if let Some(t) = self.tcp_task.take() {
            let _ = t.await;
        }
        self.clients.kick_all();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while self.clients.count() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        for t in std::mem::take(&mut self.http_tasks) {
            let _ = tokio::time::timeout(Duration::from_secs(5), t).await;
        }
        if let Some(c) = self.cluster.take() {
            c.shutdown().await;
        }
        self.broker.shutdown().await.map_err(|e| e.to_string())
    }
}

async fn stopped(mut rx: watch::Receiver<bool>) {
    let _ = rx.wait_for(|v| *v).await;
}
