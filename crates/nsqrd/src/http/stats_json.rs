//! nsqd's `/stats` document, key for key and in nsqd's order (serde keeps struct order), built
//! from the engine's snapshot and nsqrd's client facts. The engine's stats types know nothing
//! of this shape; it lives here, at the edge, with the text report that reads the same view.

use std::collections::BTreeMap;

use nsqr_broker::stats as engine;
use nsqr_broker::ConsumerKind;
use serde::Serialize;

use crate::cluster::GroupStats;
use crate::tcp::client::ClientInfo;

/// One topic as nsqd reports it.
#[derive(Debug, Clone, Serialize)]
pub struct TopicStats {
    pub topic_name: String,
    pub channels: Vec<ChannelStats>,
    #[serde(flatten)]
    pub counts: engine::TopicCounts,
    pub paused: bool,
    pub e2e_processing_latency: E2eLatency,
    /// nsqr only, and only when there is something to report: disk queue anomalies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_queue: Option<engine::DiskStats>,
    /// nsqr only, and only when any are set: the topic's settings (`/topic/config`).
    #[serde(rename = "config", skip_serializing_if = "Option::is_none")]
    pub settings: Option<nsqr_broker::QueueSettings>,
    /// nsqr only, and only for a replicated topic: its group on this node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replication: Option<GroupStats>,
}

/// One channel as nsqd reports it.
#[derive(Debug, Clone, Serialize)]
pub struct ChannelStats {
    pub channel_name: String,
    #[serde(flatten)]
    pub counts: engine::ChannelCounts,
    pub client_count: usize,
    pub clients: Option<Vec<ClientStats>>,
    pub paused: bool,
    pub e2e_processing_latency: E2eLatency,
    /// nsqr only, and only when there is something to report: disk queue anomalies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_queue: Option<engine::DiskStats>,
    /// nsqr only, and only when any are set: the channel's own settings (`/channel/config`).
    #[serde(rename = "config", skip_serializing_if = "Option::is_none")]
    pub settings: Option<nsqr_broker::QueueSettings>,
    /// nsqr only: dead letters by reason, when the channel's settings can make them or it
    /// has made some.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dead_letters: Option<engine::DeadLetterStats>,
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
    match nsq_common::float::integral(*v, nsq_common::float::JSON_LIMIT) {
        Some(n) => s.serialize_i64(n),
        None => s.serialize_f64(*v),
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

/// One client (a consumer of a channel, or a producer) as nsqd reports it.
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

/// The whole snapshot as `/stats` shows it.
#[derive(Debug, Clone)]
pub struct StatsView {
    /// None when a `topic=` filter named a topic that does not exist.
    pub topics: Option<Vec<TopicStats>>,
    pub producers: Vec<ClientStats>,
}

impl StatsView {
    /// The engine's snapshot with each consumer's protocol facts, and the producers (only
    /// their counts for `topic`, when filtered).
    pub fn new(
        snap: &engine::Snapshot,
        producers: &[std::sync::Arc<nsqr_broker::Consumer>],
        topic: Option<&str>,
    ) -> StatsView {
        StatsView {
            topics: snap
                .topics
                .as_ref()
                .map(|ts| ts.iter().map(TopicStats::from).collect()),
            producers: producers
                .iter()
                .map(|c| ClientStats::of_consumer(c, topic))
                .filter(|s| topic.is_none() || !s.pub_counts.is_empty())
                .collect(),
        }
    }
}

impl StatsView {
    /// Each replicated topic's group (`groups`, by topic) beside its topic.
    pub fn add_replication(&mut self, mut groups: BTreeMap<String, GroupStats>) {
        for t in self.topics.iter_mut().flatten() {
            t.replication = groups.remove(&t.topic_name);
        }
    }
}

impl From<&engine::TopicStats> for TopicStats {
    fn from(t: &engine::TopicStats) -> TopicStats {
        TopicStats {
            topic_name: t.topic_name.clone(),
            channels: t.channels.iter().map(ChannelStats::from).collect(),
            counts: t.counts.clone(),
            paused: t.paused,
            e2e_processing_latency: E2eLatency::from(&t.e2e_processing_latency),
            disk_queue: t.disk_queue.clone(),
            settings: t.settings.clone(),
            replication: None,
        }
    }
}

impl From<&engine::ChannelStats> for ChannelStats {
    fn from(c: &engine::ChannelStats) -> ChannelStats {
        ChannelStats {
            channel_name: c.channel_name.clone(),
            counts: c.counts.clone(),
            client_count: c.consumer_count,
            clients: c
                .consumers
                .as_ref()
                .map(|cs| cs.iter().map(ClientStats::of_member).collect()),
            paused: c.paused,
            e2e_processing_latency: E2eLatency::from(&c.e2e_processing_latency),
            disk_queue: c.disk_queue.clone(),
            settings: c.settings.clone(),
            dead_letters: c.dead_letters.clone(),
        }
    }
}

impl From<&engine::E2eLatency> for E2eLatency {
    fn from(e: &engine::E2eLatency) -> E2eLatency {
        E2eLatency {
            count: e.count,
            percentiles: e.percentiles.as_ref().map(|ps| {
                ps.iter()
                    .map(|p| Percentile {
                        quantile: p.quantile,
                        value: p.value,
                    })
                    .collect()
            }),
        }
    }
}

/// The counters every client row shares, whoever the client is.
struct Counters {
    id_text: String,
    remote_address: String,
    ready_count: i64,
    in_flight_count: i64,
    message_count: u64,
    finish_count: u64,
    requeue_count: u64,
    connect_ts: i64,
    kind: ConsumerKind,
}

impl ClientStats {
    /// A consumer of a channel, from the channel's snapshot.
    fn of_member(s: &engine::ConsumerStats) -> ClientStats {
        let counters = Counters {
            id_text: s.id.to_string(),
            remote_address: s.remote_address().to_string(),
            ready_count: s.ready_count,
            in_flight_count: s.in_flight_count,
            message_count: s.message_count,
            finish_count: s.finish_count,
            requeue_count: s.requeue_count,
            connect_ts: s.connect_ts(),
            kind: s.kind(),
        };
        ClientStats::build(counters, s.details::<ClientInfo>(), None)
    }

    /// A connection (a producer), with its publish counts (only for `topic` if given).
    fn of_consumer(c: &nsqr_broker::Consumer, topic: Option<&str>) -> ClientStats {
        let counters = Counters {
            id_text: c.id().to_string(),
            remote_address: c.remote_address().to_string(),
            ready_count: c.ready_count(),
            in_flight_count: c.in_flight(),
            message_count: c.message_count(),
            finish_count: c.finish_count(),
            requeue_count: c.requeue_count(),
            connect_ts: c.connect_ts(),
            kind: c.kind(),
        };
        ClientStats::build(counters, c.details::<ClientInfo>(), topic)
    }

    /// A TCP client shows what IDENTIFY and its layers set; an in-process or HTTP consumer
    /// shows its kind as user agent and its id as client id.
    fn build(n: Counters, info: Option<&ClientInfo>, topic: Option<&str>) -> ClientStats {
        let m =
            info.map(|i| i.meta.lock().clone())
                .unwrap_or_else(|| crate::tcp::client::ClientMeta {
                    client_id: n.id_text.clone(),
                    hostname: n.remote_address.clone(),
                    user_agent: match n.kind {
                        ConsumerKind::InProcess => "nsqr in-process",
                        ConsumerKind::Http => "nsqr http",
                        _ => "nsqr",
                    }
                    .to_string(),
                    ..Default::default()
                });
        let pub_counts = info
            .map(|i| {
                i.pub_counts
                    .lock()
                    .iter()
                    .filter(|(t, _)| topic.is_none_or(|x| x == t))
                    .map(|(t, n)| PubCount {
                        topic: t.clone(),
                        count: *n,
                    })
                    .collect()
            })
            .unwrap_or_default();
        ClientStats {
            client_id: m.client_id,
            hostname: m.hostname,
            version: "V2",
            remote_address: n.remote_address,
            // A consumer that is not a TCP client is subscribed by nature.
            state: info.map_or(3, ClientInfo::stats_state),
            ready_count: n.ready_count,
            in_flight_count: n.in_flight_count,
            message_count: n.message_count,
            finish_count: n.finish_count,
            requeue_count: n.requeue_count,
            connect_ts: n.connect_ts,
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
