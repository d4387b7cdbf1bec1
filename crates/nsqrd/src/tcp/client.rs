//! What nsqrd knows about a TCP client beyond the engine's counters, and the set of connected
//! clients.
//!
//! The engine sees a subscribed connection as a `Consumer` (ready count, in flight, counters).
//! Everything else `/stats` shows about an nsqd client (IDENTIFY fields, TLS, compression,
//! AUTH, what it published, its protocol state) is protocol business, so it lives here and
//! rides along as the consumer's details. Producers never join a channel, so nsqrd keeps
//! its own list of connections for `/stats`' `producers`, the connection count, and kicking
//! everyone at shutdown.

use std::sync::atomic::{AtomicU8, Ordering::Relaxed};
use std::sync::Arc;

use nsq_wire::ClientState as WireState;
use nsqr_broker::Consumer;
use parking_lot::Mutex;
use std::collections::HashMap;

/// What IDENTIFY (and the layers it granted, and AUTH) set.
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

/// One TCP client's protocol facts, shared by its connection task and `/stats`.
#[derive(Debug, Default)]
pub struct ClientInfo {
    pub meta: Mutex<ClientMeta>,
    /// Messages published, per topic (for `producers` in `/stats`).
    pub pub_counts: Mutex<Vec<(String, u64)>>,
    /// The connection's protocol state; its only home (the connection reads it from here).
    state: AtomicU8,
}

impl ClientInfo {
    /// A client from `remote_address` ("" on a unix socket): until IDENTIFY says otherwise
    /// its client id and hostname are its IP, as in nsqd.
    pub fn new(remote_address: &str) -> ClientInfo {
        let ip = remote_address
            .rsplit_once(':')
            .map(|(h, _)| h.trim_start_matches('[').trim_end_matches(']').to_string())
            .unwrap_or_default();
        ClientInfo {
            meta: Mutex::new(ClientMeta {
                client_id: ip.clone(),
                hostname: ip,
                ..ClientMeta::default()
            }),
            pub_counts: Mutex::new(Vec::new()),
            state: AtomicU8::new(encode(WireState::Init)),
        }
    }

    /// The protocol state.
    pub fn state(&self) -> WireState {
        match self.state.load(Relaxed) {
            1 => WireState::Subscribed,
            2 => WireState::Closing,
            _ => WireState::Init,
        }
    }

    pub fn set_state(&self, s: WireState) {
        self.state.store(encode(s), Relaxed);
    }

    /// The state as nsqd numbers it in `/stats` (init 0, subscribed 3, closing 4).
    pub fn stats_state(&self) -> i32 {
        match self.state() {
            WireState::Init => 0,
            WireState::Subscribed => 3,
            WireState::Closing => 4,
        }
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

fn encode(s: WireState) -> u8 {
    match s {
        WireState::Init => 0,
        WireState::Subscribed => 1,
        WireState::Closing => 2,
    }
}

/// Every connected TCP client, by consumer id.
#[derive(Debug, Default)]
pub struct Clients(Mutex<HashMap<u64, Arc<Consumer>>>);

impl Clients {
    pub fn insert(&self, c: Arc<Consumer>) {
        self.0.lock().insert(c.id(), c);
    }

    pub fn remove(&self, id: u64) {
        self.0.lock().remove(&id);
    }

    pub fn count(&self) -> usize {
        self.0.lock().len()
    }

    /// Kick every client (shutdown).
    pub fn kick_all(&self) {
        for c in self.0.lock().values() {
            c.kick();
        }
    }

    /// Clients that published, with their facts.
    pub fn producers(&self) -> Vec<Arc<Consumer>> {
        let all: Vec<Arc<Consumer>> = self.0.lock().values().cloned().collect();
        all.into_iter()
            .filter(|c| {
                c.details::<ClientInfo>()
                    .is_some_and(|i| !i.pub_counts.lock().is_empty())
            })
            .collect()
    }
}
