//! `/stats` snapshots, with nsqd's JSON keys in nsqd's order (serde keeps struct order).
//! Counters are atomics read on demand; nothing is sampled in the background.

use std::sync::atomic::Ordering::Relaxed;

use serde::Serialize;

use crate::client::Client;

#[derive(Debug, Clone, Serialize)]
pub struct TopicStats {
    pub topic_name: String,
    pub channels: Vec<ChannelStats>,
    pub depth: i64,
    pub backend_depth: i64,
    pub message_count: u64,
    pub message_bytes: u64,
    pub paused: bool,
    pub e2e_processing_latency: E2eLatency,
    /// nsqr only, and only when there is something to report: disk queue anomalies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_queue: Option<DiskStats>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ChannelStats {
    pub channel_name: String,
    pub depth: i64,
    pub backend_depth: i64,
    pub in_flight_count: usize,
    pub deferred_count: usize,
    pub message_count: u64,
    pub requeue_count: u64,
    pub timeout_count: u64,
    pub client_count: usize,
    pub clients: Option<Vec<ClientStats>>,
    pub paused: bool,
    pub e2e_processing_latency: E2eLatency,
    /// nsqr only, and only when there is something to report: disk queue anomalies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_queue: Option<DiskStats>,
}

/// What the disk queue of a topic or channel met since it was opened: recovery after a crash,
/// corruption, failed writes. Shown in `/stats` (JSON) only when something is non-zero, so a
/// healthy node's output is nsqd's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DiskStats {
    /// Data files found corrupt (invalid length, short record) and set aside as `.bad`.
    pub corrupt_files: u64,
    /// Data files the reader expected but did not find.
    pub missing_files: u64,
    /// Records written after the last metadata sync, found intact on open and kept.
    pub recovered_records: u64,
    /// Torn tails (a write cut by a crash) cut off the last data file on open.
    pub torn_tails_truncated: u64,
    /// Times lost or broken metadata was rebuilt from the data files.
    pub metadata_rebuilds: u64,
    /// Records that were not valid messages (bad id) and were skipped.
    pub undecodable_records: u64,
    /// Failed disk writes.
    pub write_errors: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_corruption: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_write_error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_read_error: Option<String>,
}

impl DiskStats {
    pub fn is_notable(&self) -> bool {
        *self != DiskStats::default()
    }
}

/// nsqd's quantile result; `percentiles` is null when no percentiles are configured.
#[derive(Debug, Clone, Default, Serialize)]
pub struct E2eLatency {
    pub count: u64,
    pub percentiles: Option<Vec<Percentile>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Percentile {
    #[serde(serialize_with = "go_float")]
    pub quantile: f64,
    #[serde(serialize_with = "go_float")]
    pub value: f64,
}

/// Go's `encoding/json` writes integral floats without a fraction (`1`, not `1.0`).
fn go_float<S: serde::Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    if v.fract() == 0.0 && v.abs() < 1e18 {
        s.serialize_i64(*v as i64)
    } else {
        s.serialize_f64(*v)
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct PubCount {
    pub topic: String,
    pub count: u64,
}

fn is_false(b: &bool) -> bool {
    !*b
}

#[derive(Debug, Clone, Serialize)]
pub struct ClientStats {
    pub client_id: String,
    pub hostname: String,
    pub version: &'static str,
    pub remote_address: String,
    pub state: i32,
    pub ready_count: i64,
    pub in_flight_count: i64,
    pub message_count: u64,
    pub finish_count: u64,
    pub requeue_count: u64,
    pub connect_ts: i64,
    pub sample_rate: i32,
    pub deflate: bool,
    pub snappy: bool,
    pub user_agent: String,
    #[serde(skip_serializing_if = "is_false")]
    pub authed: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub auth_identity: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub auth_identity_url: String,
    pub topology_zone: String,
    pub topology_region: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pub_counts: Vec<PubCount>,
    pub tls: bool,
    pub tls_cipher_suite: String,
    pub tls_version: String,
    pub tls_negotiated_protocol: String,
    pub tls_negotiated_protocol_is_mutual: bool,
}

impl ClientStats {
    /// Snapshot a client; `topic` limits `pub_counts` to one topic.
    pub fn of(c: &Client, topic: Option<&str>) -> ClientStats {
        let m = c.meta.lock().clone();
        let pub_counts = c
            .pub_counts
            .lock()
            .iter()
            .filter(|(t, _)| topic.is_none_or(|x| x == t))
            .map(|(t, n)| PubCount {
                topic: t.clone(),
                count: *n,
            })
            .collect();
        ClientStats {
            client_id: m.client_id,
            hostname: m.hostname,
            version: "V2",
            remote_address: c.remote_address.clone(),
            state: c.state() as i32,
            ready_count: c.ready_count.load(Relaxed),
            in_flight_count: c.in_flight.load(Relaxed),
            message_count: c.message_count.load(Relaxed),
            finish_count: c.finish_count.load(Relaxed),
            requeue_count: c.requeue_count.load(Relaxed),
            connect_ts: c.connect_ts,
            sample_rate: m.sample_rate,
            deflate: m.deflate,
            snappy: m.snappy,
            user_agent: m.user_agent,
            authed: m.authed,
            auth_identity: m.auth_identity,
            auth_identity_url: m.auth_identity_url,
            topology_zone: m.topology_zone,
            topology_region: m.topology_region,
            pub_counts,
            tls: m.tls,
            tls_cipher_suite: m.tls_cipher_suite,
            tls_version: m.tls_version,
            tls_negotiated_protocol: String::new(),
            // Go reports true for every TLS session (the field is deprecated, always true).
            tls_negotiated_protocol_is_mutual: m.tls,
        }
    }
}

/// The whole `/stats` snapshot before rendering.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// None when a `topic=` filter named a topic that does not exist.
    pub topics: Option<Vec<TopicStats>>,
    pub producers: Vec<ClientStats>,
}
