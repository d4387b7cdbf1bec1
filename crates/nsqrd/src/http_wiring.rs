//! Connects the HTTP API to the daemon: binds the listener, copies the option values the API
//! reads, and serves `/config/:opt` from the live options. The HTTPS listener (opened when a
//! TLS cert is configured) serves the same API; with `--tls-required=true` the plain one only
//! answers 403 `TLS_REQUIRED`.

use std::net::SocketAddr;
use std::sync::Arc;

use nsqr_broker::Broker;
use parking_lot::RwLock;
use tokio::task::JoinHandle;

use crate::http::{self, ConfigPutError, ConfigStore, ConfigValue, HttpSettings, HttpState};
use crate::listener::Listener;
use crate::options::{Options, TlsRequired};
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

/// Bind `--http-address` (empty disables HTTP) and, when a TLS cert is configured,
/// `--https-address`; serve both until `shutdown`. Returns their tasks.
pub async fn start(
    opts: &Options,
    broker: &Arc<Broker>,
    tcp_addr: Option<SocketAddr>,
    tls: Option<Arc<rustls::ServerConfig>>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<Vec<JoinHandle<()>>, String> {
    let http = if opts.http_address.is_empty() {
        None
    } else {
        let l = Listener::bind(&opts.http_address).await?;
        tracing::info!("HTTP: listening on {}", l.describe());
        Some(l)
    };
    let https = match &tls {
        Some(_) if !opts.https_address.is_empty() => {
            let l = Listener::bind_tcp(&opts.https_address).await?;
            tracing::info!("HTTPS: listening on {}", l.describe());
            Some(l)
        }
        _ => None,
    };
    let http_port = http.as_ref().map_or(0, Listener::port);
    let https_port = https
        .as_ref()
        .and_then(Listener::tcp_addr)
        .map_or(0, |a| a.port());
    let mut live = opts.clone();
    if live.broadcast_tcp_port == 0 {
        live.broadcast_tcp_port = tcp_addr.map_or(0, |a| a.port());
    }
    if live.broadcast_http_port == 0 && http_port > 0 {
        live.broadcast_http_port = http_port as u16;
    }
    let settings = HttpSettings {
        version: NSQD_COMPAT_VERSION.to_string(),
        broadcast_address: opts.broadcast_address.clone(),
        hostname: gethostname::gethostname().to_string_lossy().into_owned(),
        tcp_port: tcp_addr.map_or(-1, |a| a.port() as i32),
        http_port: if http.is_some() { http_port } else { 0 },
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
    let config: Arc<dyn crate::http::ConfigStore> = Arc::new(OptionsStore::new(live));
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut tasks = Vec::new();
    if let Some(l) = http {
        // `--tls-required=true` (not tcp-https) turns plain HTTP away.
        let refuse = (opts.tls_required == TlsRequired::True).then_some(https_port);
        let state = Arc::new(HttpState {
            broker: Arc::clone(broker),
            settings: HttpSettings {
                tls_required_https_port: refuse,
                ..settings.clone()
            },
            config: Arc::clone(&config),
        });
        tasks.push(tokio::spawn(http::serve(
            l,
            state,
            None,
            wait(stop_rx.clone()),
        )));
    }
    if let (Some(l), Some(tls)) = (https, tls) {
        let state = Arc::new(HttpState {
            broker: Arc::clone(broker),
            settings,
            config,
        });
        let acceptor = tokio_rustls::TlsAcceptor::from(tls);
        tasks.push(tokio::spawn(http::serve(
            l,
            state,
            Some(acceptor),
            wait(stop_rx),
        )));
    }
    tokio::spawn(async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    });
    Ok(tasks)
}

async fn wait(mut rx: tokio::sync::watch::Receiver<bool>) {
    let _ = rx.wait_for(|v| *v).await;
}
