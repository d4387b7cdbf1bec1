//! The engine's view of one connected client: what stats report and what channels need to wake
//! it. The connection task owns the socket; this struct is the part shared with channels (which
//! wake it and adjust its in-flight count on timeouts) and with `/stats`.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;

/// Client states as nsqd numbers them in `/stats`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum ClientState {
    Init = 0,
    Subscribed = 3,
    Closing = 4,
}

/// What IDENTIFY set, and other slowly changing facts.
#[derive(Debug, Clone, Default)]
pub struct ClientMeta {
    pub client_id: String,
    pub hostname: String,
    pub user_agent: String,
    pub sample_rate: i32,
    pub deflate: bool,
    pub snappy: bool,
    pub tls: bool,
    pub tls_version: String,
    pub tls_cipher_suite: String,
    pub authed: bool,
    pub auth_identity: String,
    pub auth_identity_url: String,
    pub topology_region: String,
    pub topology_zone: String,
}

#[derive(Debug)]
pub struct Client {
    pub id: u64,
    pub remote_address: String,
    pub connect_ts: i64,
    /// Woken when there may be something to deliver, or the client must go.
    pub notify: Notify,
    pub kicked: AtomicBool,
    state: AtomicU8,
    pub ready_count: AtomicI64,
    pub in_flight: AtomicI64,
    pub message_count: AtomicU64,
    pub finish_count: AtomicU64,
    pub requeue_count: AtomicU64,
    /// The in-flight timeout this client negotiated.
    pub msg_timeout_ms: AtomicU64,
    pub meta: Mutex<ClientMeta>,
    /// Per-topic publish counts (for `producers` in /stats).
    pub pub_counts: Mutex<Vec<(String, u64)>>,
}

impl Client {
    pub fn new(id: u64, remote_address: String, connect_ts: i64, msg_timeout: Duration) -> Self {
        let ip = remote_address
            .rsplit_once(':')
            .map(|(h, _)| h.trim_start_matches('[').trim_end_matches(']').to_string())
            .unwrap_or_default();
        Client {
            id,
            remote_address,
            connect_ts,
            notify: Notify::new(),
            kicked: AtomicBool::new(false),
            state: AtomicU8::new(ClientState::Init as u8),
            ready_count: AtomicI64::new(0),
            in_flight: AtomicI64::new(0),
            message_count: AtomicU64::new(0),
            finish_count: AtomicU64::new(0),
            requeue_count: AtomicU64::new(0),
            msg_timeout_ms: AtomicU64::new(msg_timeout.as_millis() as u64),
            meta: Mutex::new(ClientMeta {
                client_id: ip.clone(),
                hostname: ip,
                ..ClientMeta::default()
            }),
            pub_counts: Mutex::new(Vec::new()),
        }
    }

    pub fn state(&self) -> ClientState {
        match self.state.load(Relaxed) {
            3 => ClientState::Subscribed,
            4 => ClientState::Closing,
            _ => ClientState::Init,
        }
    }

    pub fn set_state(&self, s: ClientState) {
        self.state.store(s as u8, Relaxed);
    }

    /// Ask the connection to close (its channel or topic was deleted).
    pub fn kick(&self) {
        self.kicked.store(true, Relaxed);
        self.notify.notify_one();
    }

    pub fn is_kicked(&self) -> bool {
        self.kicked.load(Relaxed)
    }

    /// Record `n` messages published to `topic`.
    pub fn count_publish(&self, topic: &str, n: u64) {
        let mut pc = self.pub_counts.lock();
        match pc.iter_mut().find(|(t, _)| t == topic) {
            Some((_, c)) => *c += n,
            None => pc.push((topic.to_string(), n)),
        }
    }
}
