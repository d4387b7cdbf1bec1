//! Connects the HTTP API to the daemon: binds the listener, copies the option values the API
//! reads, and serves `/config/:opt` from the live options (a PUT of the lookupd list reaches the
//! lookupd peers at once).

use std::net::SocketAddr;
use std::sync::Arc;

use nsqr_broker::Broker;
use parking_lot::RwLock;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::http::{self, ConfigPutError, ConfigStore, ConfigValue, HttpSettings, HttpState};
use crate::options::Options;
use crate::settings::NSQD_COMPAT_VERSION;
use crate::tasks::lookupd::Lookupd;

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
            "log_level" => crate::logging::set_level(candidate.log_level.tracing_level()),
            _ => {}
        }
        *opts = candidate;
        Ok(())
    }
}

fn port_of(addr: &SocketAddr) -> i32 {
    addr.port() as i32
}

/// Bind `--http-address`; `None` when it is empty (HTTP disabled).
pub async fn bind(opts: &Options) -> Result<Option<TcpListener>, String> {
    if opts.http_address.is_empty() {
        return Ok(None);
    }
    let listener = TcpListener::bind(&opts.http_address)
        .await
        .map_err(|e| format!("listen ({}) failed - {e}", opts.http_address))?;
    if let Ok(a) = listener.local_addr() {
        tracing::info!("HTTP: listening on {a}");
    }
    Ok(Some(listener))
}

/// The options as the running node reports them: broadcast ports default to the ports bound,
/// as nsqd fills them in at startup (lookupd registration and the statsd prefix use them).
pub fn live_options(
    opts: &Options,
    tcp_addr: SocketAddr,
    http_addr: Option<SocketAddr>,
) -> Options {
    let mut live = opts.clone();
    if live.broadcast_tcp_port == 0 {
        live.broadcast_tcp_port = tcp_addr.port();
    }
    if live.broadcast_http_port == 0 {
        live.broadcast_http_port = http_addr.map_or(0, |a| a.port());
    }
    live
}

/// Serve HTTP on `listener` until `shutdown`; `live` comes from [`live_options`].
pub fn start(
    listener: TcpListener,
    live: Options,
    broker: &Arc<Broker>,
    lookupd: Arc<Lookupd>,
    tcp_addr: SocketAddr,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<JoinHandle<()>, String> {
    let http_addr = listener.local_addr().map_err(|e| e.to_string())?;
    let settings = HttpSettings {
        version: NSQD_COMPAT_VERSION.to_string(),
        broadcast_address: live.broadcast_address.clone(),
        hostname: gethostname::gethostname().to_string_lossy().into_owned(),
        tcp_port: port_of(&tcp_addr),
        http_port: port_of(&http_addr),
        max_msg_size: live.max_msg_size,
        max_body_size: live.max_body_size,
        max_req_timeout: live.max_req_timeout,
        max_heartbeat_interval: live.max_heartbeat_interval,
        max_output_buffer_size: live.max_output_buffer_size,
        max_output_buffer_timeout: live.max_output_buffer_timeout,
        max_deflate_level: live.max_deflate_level,
        topology_zone: live.topology_zone.clone(),
        topology_region: live.topology_region.clone(),
        ..HttpSettings::default()
    };
    let state = Arc::new(HttpState {
        broker: Arc::clone(broker),
        settings,
        config: Arc::new(OptionsStore::new(live, lookupd)),
    });
    Ok(tokio::spawn(http::serve(listener, state, shutdown)))
}
