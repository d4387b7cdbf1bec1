//! Connects the HTTP API to the daemon: binds the listener, copies the option values the API
//! reads, and serves `/config/:opt` from the live options (a PUT of the lookupd list reaches the
//! lookupd peers at once). The HTTPS listener (opened when a TLS cert is configured) serves the
//! same API; with `--tls-required=true` the plain one only answers 403 `TLS_REQUIRED`.

use std::net::SocketAddr;
use std::sync::Arc;

use nsqr_broker::Broker;
use parking_lot::RwLock;
use tokio::task::JoinHandle;

use crate::http::consumers::HttpConsumers;
use crate::http::workers::{self, StartError, Workers};
use crate::http::{self, ConfigPutError, ConfigStore, ConfigValue, HttpSettings, HttpState};
use crate::listener::Listener;
use crate::options::{Options, TlsRequired};
use crate::tasks::lookupd::Lookupd;
use crate::tcp::client::Clients;

/// `/config/:opt` over the daemon's options; a new lookupd peer list takes effect at once.
pub struct OptionsStore {
    opts: RwLock<Options>,
    lookupd: Arc<Lookupd>,
}

impl OptionsStore {
    pub fn new(opts: Options, lookupd: Arc<Lookupd>) -> Self {
        OptionsStore {
            opts: RwLock::new(opts),
            lookupd,
        }
    }
}

impl ConfigStore for OptionsStore {
    fn get(&self, key: &str) -> Option<ConfigValue> {
        self.opts.read().config_get(key)
    }

    fn put(&self, key: &str, body: &[u8]) -> Result<(), ConfigPutError> {
        let mut opts = self.opts.write();
        let mut candidate = opts.clone();
        candidate.config_put(key, body)?;
        match key {
            "nsqlookupd_tcp_addresses" => self
                .lookupd
                .set_addresses(&candidate.nsqlookupd_tcp_addresses),
            "log_level" => nsq_common::logging::set_level(candidate.log_filter()),
            _ => {}
        }
        *opts = candidate;
        Ok(())
    }
}

/// The HTTP listeners, bound before anything else starts so their ports are known (lookupd
/// registration and the statsd prefix report them).
pub struct HttpListeners {
    http: Option<Listener>,
    https: Option<Listener>,
}

impl HttpListeners {
    /// The plain HTTP listener's address (None: disabled or a unix socket).
    pub fn http_addr(&self) -> Option<SocketAddr> {
        self.http.as_ref().and_then(Listener::tcp_addr)
    }

    /// The plain HTTP listener's TCP port (None: disabled or a unix socket).
    pub fn http_port(&self) -> Option<u16> {
        self.http
            .as_ref()
            .and_then(Listener::tcp_addr)
            .map(|a| a.port())
    }
}

/// Bind `--http-address` (empty disables HTTP) and, when TLS is configured, `--https-address`.
pub async fn bind(opts: &Options, tls: bool) -> Result<HttpListeners, String> {
    let http = if opts.http_address.is_empty() {
        None
    } else {
        let l = Listener::bind(&opts.http_address).await?;
        tracing::info!("HTTP: listening on {}", l.describe());
        Some(l)
    };
    let https = if tls && !opts.https_address.is_empty() {
        let l = Listener::bind_tcp(&opts.https_address).await?;
        tracing::info!("HTTPS: listening on {}", l.describe());
        Some(l)
    } else {
        None
    };
    Ok(HttpListeners { http, https })
}

/// The options as the running node reports them: broadcast ports default to the ports bound,
/// as nsqd fills them in at startup (lookupd registration and the statsd prefix use them).
pub fn live_options(
    opts: &Options,
    tcp_addr: Option<SocketAddr>,
    http_port: Option<u16>,
) -> Options {
    let mut live = opts.clone();
    if live.broadcast_tcp_port == 0 {
        live.broadcast_tcp_port = tcp_addr.map_or(0, |a| a.port());
    }
    if live.broadcast_http_port == 0 {
        live.broadcast_http_port = http_port.unwrap_or(0);
    }
    live
}

/// What the HTTP API serves from.
pub struct Served {
    pub broker: Arc<Broker>,
    pub clients: Arc<Clients>,
    pub lookupd: Arc<Lookupd>,
    pub cluster: Option<Arc<crate::cluster::Cluster>>,
}

/// The HTTP view of the options; `tcp_port` and `http_port` are the bound ports (-1 for a unix
/// socket, 0 when disabled).
pub(crate) fn http_settings(live: &Options, tcp_port: i32, http_port: i32) -> HttpSettings {
    HttpSettings {
        broadcast_address: live.broadcast_address.clone(),
        hostname: crate::options::hostname().to_string(),
        tcp_port,
        http_port,
        max_msg_size: live.max_msg_size,
        max_body_size: live.max_body_size,
        max_req_timeout: live.max_req_timeout,
        max_heartbeat_interval: live.max_heartbeat_interval,
        max_output_buffer_size: live.max_output_buffer_size,
        max_output_buffer_timeout: live.max_output_buffer_timeout,
        max_deflate_level: live.max_deflate_level,
        topology_zone: live.topology_zone.clone(),
        topology_region: live.topology_region.clone(),
        tls_required_https_port: None,
        timeouts: nsq_common::http::server::Timeouts {
            idle: live.http_idle_timeout,
            read: live.http_read_timeout,
            write: live.http_write_timeout,
        },
        max_connections: max_connections(
            live.http_max_connections,
            crate::rlimit::open_files_limit(),
        ),
    }
}

/// Serve the bound listeners until `shutdown`, their connections on `--http-threads` serving
/// threads; `live` comes from [`live_options`]. Returns their tasks.
pub fn start(
    listeners: HttpListeners,
    live: Options,
    served: Served,
    tcp_addr: Option<SocketAddr>,
    tls: Option<Arc<rustls::ServerConfig>>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<Vec<JoinHandle<()>>, StartError> {
    let HttpListeners { http, https } = listeners;
    if http.is_none() && https.is_none() {
        return Ok(Vec::new());
    }
    let workers = Arc::new(Workers::start(workers::threads(live.http_threads))?);
    let http_port = http.as_ref().map_or(0, Listener::port);
    let https_port = https
        .as_ref()
        .and_then(Listener::tcp_addr)
        .map_or(0, |a| a.port());
    let settings = http_settings(
        &live,
        tcp_addr.map_or(-1, |a| i32::from(a.port())),
        if http.is_some() { http_port } else { 0 },
    );
    // `--tls-required=true` (not tcp-https) turns plain HTTP away.
    let refuse = (live.tls_required == TlsRequired::True).then_some(https_port);
    let Served {
        broker,
        clients,
        lookupd,
        cluster,
    } = served;
    let config: Arc<dyn ConfigStore> = Arc::new(OptionsStore::new(live, lookupd));
    let consumers = Arc::new(HttpConsumers::default());
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut tasks = Vec::new();
    tokio::spawn(crate::http::consumers::run_sweeper(
        Arc::clone(&consumers),
        Arc::clone(&broker),
        wait(stop_rx.clone()),
    ));
    if let Some(l) = http {
        let state = Arc::new(HttpState {
            broker: Arc::clone(&broker),
            clients: Arc::clone(&clients),
            settings: HttpSettings {
                tls_required_https_port: refuse,
                ..settings.clone()
            },
            config: Arc::clone(&config),
            consumers: Arc::clone(&consumers),
            cluster: cluster.clone(),
        });
        tasks.push(tokio::spawn(http::serve(
            l,
            state,
            None,
            Arc::clone(&workers),
            wait(stop_rx.clone()),
        )));
    }
    if let (Some(l), Some(tls)) = (https, tls) {
        let state = Arc::new(HttpState {
            broker: Arc::clone(&broker),
            clients: Arc::clone(&clients),
            settings,
            config,
            consumers: Arc::clone(&consumers),
            cluster,
        });
        let acceptor = tokio_rustls::TlsAcceptor::from(tls);
        tasks.push(tokio::spawn(http::serve(
            l,
            state,
            Some(acceptor),
            workers,
            wait(stop_rx),
        )));
    }
    tokio::spawn(async move {
        shutdown.await;
        // Long polls and streams end now rather than holding their connections open.
        consumers.close();
        let _ = stop_tx.send(true);
    });
    Ok(tasks)
}

async fn wait(mut rx: tokio::sync::watch::Receiver<bool>) {
    let _ = rx.wait_for(|v| *v).await;
}

/// `--http-max-connections`, or by default (0) half the open-file limit, so HTTP clients alone
/// cannot take every file descriptor from the TCP clients and the disk queues.
fn max_connections(flag: i64, open_files: Option<u64>) -> usize {
    match usize::try_from(flag) {
        Ok(n) if n > 0 => n,
        _ => open_files.map_or(usize::MAX, |n| {
            usize::try_from(n / 2).unwrap_or(usize::MAX).max(1)
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_connection_bound_is_the_flag_or_half_the_open_file_limit() {
        assert_eq!(max_connections(10, Some(1024)), 10);
        assert_eq!(max_connections(0, Some(1024)), 512);
        assert_eq!(max_connections(0, Some(1)), 1);
        assert_eq!(max_connections(0, None), usize::MAX);
    }
}
