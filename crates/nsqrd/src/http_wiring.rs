//! Connects the HTTP API to the daemon: binds the listener, copies the option values the API
//! reads, and serves `/config/:opt` from the live options.

use std::net::SocketAddr;
use std::sync::Arc;

use nsqr_broker::Broker;
use parking_lot::RwLock;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::http::{self, ConfigPutError, ConfigStore, ConfigValue, HttpSettings, HttpState};
use crate::options::Options;
use crate::settings::NSQD_COMPAT_VERSION;

/// `/config/:opt` over the daemon's options.
pub struct OptionsStore {
    opts: RwLock<Options>,
}

impl OptionsStore {
    pub fn new(opts: Options) -> Self {
        OptionsStore {
            opts: RwLock::new(opts),
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
        // Until lookupd support lands, a peer list cannot take effect: refuse rather than
        // accept a setting that would silently do nothing.
        if key == "nsqlookupd_tcp_addresses" && !candidate.nsqlookupd_tcp_addresses.is_empty() {
            tracing::warn!("PUT /config/nsqlookupd_tcp_addresses: not supported yet");
            return Err(ConfigPutError::InvalidValue);
        }
        if key == "log_level" {
            crate::logging::set_level(candidate.log_level.tracing_level());
        }
        *opts = candidate;
        Ok(())
    }
}

fn port_of(addr: &SocketAddr) -> i32 {
    addr.port() as i32
}

/// Bind `--http-address` (empty disables HTTP) and serve until `shutdown`.
pub async fn start(
    opts: &Options,
    broker: &Arc<Broker>,
    tcp_addr: SocketAddr,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(Option<JoinHandle<()>>, Option<SocketAddr>), String> {
    if opts.http_address.is_empty() {
        return Ok((None, None));
    }
    let listener = TcpListener::bind(&opts.http_address)
        .await
        .map_err(|e| format!("listen ({}) failed - {e}", opts.http_address))?;
    let http_addr = listener.local_addr().map_err(|e| e.to_string())?;
    tracing::info!("HTTP: listening on {http_addr}");
    let mut live = opts.clone();
    if live.broadcast_tcp_port == 0 {
        live.broadcast_tcp_port = tcp_addr.port();
    }
    if live.broadcast_http_port == 0 {
        live.broadcast_http_port = http_addr.port();
    }
    let settings = HttpSettings {
        version: NSQD_COMPAT_VERSION.to_string(),
        broadcast_address: opts.broadcast_address.clone(),
        hostname: gethostname::gethostname().to_string_lossy().into_owned(),
        tcp_port: port_of(&tcp_addr),
        http_port: port_of(&http_addr),
        max_msg_size: opts.max_msg_size,
        max_body_size: opts.max_body_size,
        max_req_timeout: opts.max_req_timeout,
        max_heartbeat_interval: opts.max_heartbeat_interval,
        max_output_buffer_size: opts.max_output_buffer_size,
        max_output_buffer_timeout: opts.max_output_buffer_timeout,
        max_deflate_level: opts.max_deflate_level,
        topology_zone: opts.topology_zone.clone(),
        topology_region: opts.topology_region.clone(),
        ..HttpSettings::default()
    };
    let state = Arc::new(HttpState {
        broker: Arc::clone(broker),
        settings,
        config: Arc::new(OptionsStore::new(live)),
    });
    Ok((
        Some(tokio::spawn(http::serve(listener, state, shutdown))),
        Some(http_addr),
    ))
}
