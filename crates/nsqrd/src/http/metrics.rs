//! `GET /metrics`: the node's figures in Prometheus' text exposition format (0.0.4), which
//! nsqd does not offer (users have asked for it for years; see `reference/user-asks.md`).
//!
//! One broker snapshot (the same one `/stats` renders) becomes one family per figure, labelled
//! by `topic` and `channel`: depths, in-flight and deferred counts, clients, the message,
//! requeue and timeout counters, and the end-to-end latency quantiles when configured. Process
//! figures (resident memory, open file descriptors, CPU time, start time) and the connection
//! count follow. Counters are cumulative since start, as Prometheus expects; nothing is
//! sampled in the background.

use std::collections::BTreeMap;
use std::fmt::Write;

use bytes::Bytes;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::StatusCode;
use nsq_common::http::response::{Body, Resp};
use nsqr_broker::stats::{ChannelStats, E2eLatency, TopicStats};

use super::HttpState;
use crate::cluster::GroupStats;

/// Prometheus' content type for the text format.
pub const PROMETHEUS_CT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Escape a label value (`\`, `"` and newlines).
fn label(v: &str) -> String {
    v.replace('\\', r"\\")
        .replace('"', r#"\""#)
        .replace('\n', r"\n")
}

/// A float as Prometheus reads it.
fn num(v: f64) -> String {
    nsq_common::float::to_text(v, nsq_common::float::EXACT_LIMIT)
}

/// One metric family: its header, then samples added one by one.
struct Family<'a> {
    out: &'a mut String,
}

impl<'a> Family<'a> {
    fn new(out: &'a mut String, name: &str, kind: &str, help: &str) -> Family<'a> {
        let _ = write!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n");
        Family { out }
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                let _ = write!(self.out, "{k}=\"{}\"", label(v));
            }
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {}", num(value));
    }
}

type TopicFigure = fn(&TopicStats) -> f64;
type ChannelFigure = fn(&ChannelStats) -> f64;

const TOPIC_FIGURES: &[(&str, &str, &str, TopicFigure)] = &[
    (
        "nsq_topic_depth",
        "gauge",
        "Messages held by the topic (memory and disk), not yet given to channels.",
        |t| t.counts.depth as f64,
    ),
    (
        "nsq_topic_backend_depth",
        "gauge",
        "Messages of the topic held on disk.",
        |t| t.counts.backend_depth as f64,
    ),
    (
        "nsq_topic_messages_total",
        "counter",
        "Messages published to the topic.",
        |t| t.counts.message_count as f64,
    ),
    (
        "nsq_topic_message_bytes_total",
        "counter",
        "Body bytes published to the topic.",
        |t| t.counts.message_bytes as f64,
    ),
    (
        "nsq_topic_paused",
        "gauge",
        "1 when the topic is paused.",
        |t| f64::from(u8::from(t.paused)),
    ),
];

const CHANNEL_FIGURES: &[(&str, &str, &str, ChannelFigure)] = &[
    (
        "nsq_channel_depth",
        "gauge",
        "Messages ready for delivery (memory and disk); excludes in-flight and deferred.",
        |c| c.counts.depth as f64,
    ),
    (
        "nsq_channel_backend_depth",
        "gauge",
        "Messages of the channel held on disk.",
        |c| c.counts.backend_depth as f64,
    ),
    (
        "nsq_channel_in_flight",
        "gauge",
        "Messages delivered and not yet finished, requeued or timed out.",
        |c| c.counts.in_flight_count as f64,
    ),
    (
        "nsq_channel_deferred",
        "gauge",
        "Messages waiting for their deferred time.",
        |c| c.counts.deferred_count as f64,
    ),
    (
        "nsq_channel_clients",
        "gauge",
        "Consumers subscribed to the channel.",
        |c| c.consumer_count as f64,
    ),
    (
        "nsq_channel_messages_total",
        "counter",
        "Messages that entered the channel.",
        |c| c.counts.message_count as f64,
    ),
    (
        "nsq_channel_requeued_total",
        "counter",
        "Messages requeued by consumers (REQ).",
        |c| c.counts.requeue_count as f64,
    ),
    (
        "nsq_channel_timed_out_total",
        "counter",
        "In-flight messages that timed out.",
        |c| c.counts.timeout_count as f64,
    ),
    (
        "nsq_channel_paused",
        "gauge",
        "1 when the channel is paused.",
        |c| f64::from(u8::from(c.paused)),
    ),
];

/// The quantile samples of one end-to-end latency summary (nothing when not configured).
fn e2e_samples(f: &mut Family<'_>, name: &str, labels: &[(&str, &str)], e: &E2eLatency) {
    for p in e.percentiles.iter().flatten() {
        let q = num(p.quantile);
        let mut l = labels.to_vec();
        l.push(("quantile", &q));
        f.sample(name, &l, p.value / 1e9);
    }
}

/// Dead letters by reason and dropped expired messages, for the channels that have dead-letter
/// settings or counts (nothing when none do).
fn dead_letters(out: &mut String, topics: &[TopicStats]) {
    let with: Vec<(&str, &ChannelStats)> = topics
        .iter()
        .flat_map(|t| t.channels.iter().map(move |c| (t.topic_name.as_str(), c)))
        .filter(|(_, c)| c.dead_letters.is_some())
        .collect();
    if with.is_empty() {
        return;
    }
    let name = "nsq_channel_dead_letters_total";
    let mut f = Family::new(
        out,
        name,
        "counter",
        "Messages sent to the dead-letter topic, by reason (delivery_limit, rejected, expired).",
    );
    for (topic, c) in &with {
        let Some(d) = &c.dead_letters else { continue };
        for (reason, n) in [
            ("delivery_limit", d.delivery_limit),
            ("rejected", d.rejected),
            ("expired", d.expired),
        ] {
            let labels = [
                ("topic", *topic),
                ("channel", c.channel_name.as_str()),
                ("reason", reason),
            ];
            f.sample(name, &labels, n as f64);
        }
    }
    let name = "nsq_channel_expired_dropped_total";
    let mut f = Family::new(
        out,
        name,
        "counter",
        "Expired messages dropped (channels set to drop rather than dead-letter them).",
    );
    for (topic, c) in &with {
        let Some(d) = &c.dead_letters else { continue };
        let labels = [("topic", *topic), ("channel", c.channel_name.as_str())];
        f.sample(name, &labels, d.expired_dropped as f64);
    }
}

type GroupFigure = fn(&GroupStats) -> Option<f64>;

/// Each replicated topic's group on this node; a figure not known yet (no leader, no entry)
/// has no sample.
const GROUP_FIGURES: &[(&str, &str, GroupFigure)] = &[
    (
        "nsqr_topic_replicas",
        "Voters of the replicated topic's group.",
        |g| Some(g.replicas as f64),
    ),
    (
        "nsqr_topic_leader_node",
        "Node id of the replicated topic's leader, as this node knows it.",
        |g| g.leader.map(|l| l as f64),
    ),
    (
        "nsqr_topic_is_leader",
        "1 while this node leads the replicated topic, else 0.",
        |g| Some(f64::from(u8::from(g.role == "leader"))),
    ),
    (
        "nsqr_topic_raft_term",
        "The Raft term this node is in for the replicated topic.",
        |g| Some(g.term as f64),
    ),
    (
        "nsqr_topic_commit_index",
        "Last log entry of the replicated topic this node knows committed.",
        |g| g.commit_index.map(|i| i as f64),
    ),
    (
        "nsqr_topic_applied_index",
        "Last log entry of the replicated topic applied on this node.",
        |g| g.applied_index.map(|i| i as f64),
    ),
];

/// The replicated topics' groups: [`GROUP_FIGURES`], and on a leader each follower's lag.
fn replication(out: &mut String, groups: &BTreeMap<String, GroupStats>) {
    if groups.is_empty() {
        return;
    }
    for (name, help, get) in GROUP_FIGURES {
        let mut f = Family::new(out, name, "gauge", help);
        for (topic, g) in groups {
            if let Some(v) = get(g) {
                f.sample(name, &[("topic", topic)], v);
            }
        }
    }
    let name = "nsqr_topic_follower_lag";
    let mut f = Family::new(
        out,
        name,
        "gauge",
        "On the leader, entries of its log a follower is not known to hold.",
    );
    for (topic, g) in groups {
        for follower in &g.followers {
            let node = follower.node.to_string();
            f.sample(
                name,
                &[("topic", topic), ("follower", &node)],
                follower.lag as f64,
            );
        }
    }
}

/// Process figures from `/proc/self` (absent where it is unavailable).
fn process(out: &mut String, start_time: i64) {
    if let Some(m) = nsq_common::procfs::statm() {
        let (v, r) = (m.virtual_bytes as f64, m.resident_bytes as f64);
        Family::new(
            out,
            "process_resident_memory_bytes",
            "gauge",
            "Resident memory size in bytes.",
        )
        .sample("process_resident_memory_bytes", &[], r);
        Family::new(
            out,
            "process_virtual_memory_bytes",
            "gauge",
            "Virtual memory size in bytes.",
        )
        .sample("process_virtual_memory_bytes", &[], v);
    }
    if let Ok(fds) = std::fs::read_dir("/proc/self/fd") {
        Family::new(out, "process_open_fds", "gauge", "Open file descriptors.").sample(
            "process_open_fds",
            &[],
            fds.count() as f64,
        );
    }
    // utime and stime are fields 14 and 15 of /proc/self/stat, after the parenthesised name.
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    if let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) {
        let f: Vec<&str> = rest.split_whitespace().collect();
        if let (Some(u), Some(s)) = (f.get(11), f.get(12)) {
            let ticks = u.parse::<f64>().unwrap_or(0.0) + s.parse::<f64>().unwrap_or(0.0);
            // USER_HZ is 100 on every Linux configuration that matters.
            Family::new(
                out,
                "process_cpu_seconds_total",
                "counter",
                "User and system CPU time spent in seconds.",
            )
            .sample("process_cpu_seconds_total", &[], ticks / 100.0);
        }
    }
    Family::new(
        out,
        "process_start_time_seconds",
        "gauge",
        "Start time of the process since the Unix epoch in seconds.",
    )
    .sample("process_start_time_seconds", &[], start_time as f64);
}

/// The whole exposition, with `groups`, this node's replicated topics.
pub fn render(state: &HttpState, groups: &BTreeMap<String, GroupStats>) -> String {
    let snap = state.broker.snapshot(None, None, false);
    let topics = snap.topics.as_deref().unwrap_or_default();
    let mut out = String::with_capacity(4096);
    node(&mut out, state, topics);
    figures(&mut out, topics);
    dead_letters(&mut out, topics);
    e2e_latency(&mut out, topics);
    replication(&mut out, groups);
    process(&mut out, state.broker.start_time());
    out
}

/// The node's own gauges: versions, health, connections, how many topics and channels.
fn node(out: &mut String, state: &HttpState, topics: &[TopicStats]) {
    let broker = &state.broker;
    Family::new(
        out,
        "nsq_info",
        "gauge",
        "Constant 1, labelled with the nsqd protocol version and the nsqrd version.",
    )
    .sample(
        "nsq_info",
        &[
            ("version", state.settings.version()),
            ("nsqrd_version", env!("CARGO_PKG_VERSION")),
        ],
        1.0,
    );
    Family::new(
        out,
        "nsq_healthy",
        "gauge",
        "1 while the node is healthy (no failed disk write), else 0.",
    )
    .sample("nsq_healthy", &[], f64::from(u8::from(broker.is_healthy())));
    Family::new(
        out,
        "nsq_tcp_connections",
        "gauge",
        "Open TCP client connections (producers and consumers).",
    )
    .sample("nsq_tcp_connections", &[], state.clients.count() as f64);
    Family::new(
        out,
        "nsq_http_consumers",
        "gauge",
        "HTTP consumers (long polls, streams, and those still holding messages).",
    )
    .sample("nsq_http_consumers", &[], state.consumers.count() as f64);
    Family::new(out, "nsq_topics", "gauge", "Topics on this node.").sample(
        "nsq_topics",
        &[],
        topics.len() as f64,
    );
    Family::new(out, "nsq_channels", "gauge", "Channels on this node.").sample(
        "nsq_channels",
        &[],
        topics.iter().map(|t| t.channels.len()).sum::<usize>() as f64,
    );
}

/// One sample per topic of each of [`TOPIC_FIGURES`], per channel of [`CHANNEL_FIGURES`].
fn figures(out: &mut String, topics: &[TopicStats]) {
    for (name, kind, help, get) in TOPIC_FIGURES {
        let mut f = Family::new(out, name, kind, help);
        for t in topics {
            f.sample(name, &[("topic", &t.topic_name)], get(t));
        }
    }
    for (name, kind, help, get) in CHANNEL_FIGURES {
        let mut f = Family::new(out, name, kind, help);
        for t in topics {
            for c in &t.channels {
                f.sample(
                    name,
                    &[("topic", &t.topic_name), ("channel", &c.channel_name)],
                    get(c),
                );
            }
        }
    }
}

/// The end-to-end latency quantiles of topics and channels, when
/// `--e2e-processing-latency-percentile` asks for any.
fn e2e_latency(out: &mut String, topics: &[TopicStats]) {
    let configured = topics
        .iter()
        .flat_map(|t| &t.channels)
        .any(|c| c.e2e_processing_latency.percentiles.is_some());
    if !configured {
        return;
    }
    let name = "nsq_topic_e2e_processing_latency_seconds";
    let mut f = Family::new(out, name, "gauge", "End-to-end processing latency quantiles (publish to FIN) over the window, all channels of the topic.");
    for t in topics {
        e2e_samples(
            &mut f,
            name,
            &[("topic", &t.topic_name)],
            &t.e2e_processing_latency,
        );
    }
    let name = "nsq_channel_e2e_processing_latency_seconds";
    let mut f = Family::new(
        out,
        name,
        "gauge",
        "End-to-end processing latency quantiles (publish to FIN) over the window.",
    );
    for t in topics {
        for c in &t.channels {
            e2e_samples(
                &mut f,
                name,
                &[("topic", &t.topic_name), ("channel", &c.channel_name)],
                &c.e2e_processing_latency,
            );
        }
    }
    let name = "nsq_channel_e2e_processing_latency_samples";
    let mut f = Family::new(out, name, "gauge", "FINs in the end-to-end latency window.");
    for t in topics {
        for c in &t.channels {
            f.sample(
                name,
                &[("topic", &t.topic_name), ("channel", &c.channel_name)],
                c.e2e_processing_latency.count as f64,
            );
        }
    }
}

/// `GET /metrics`.
pub fn metrics(state: &HttpState, groups: &BTreeMap<String, GroupStats>) -> Resp {
    let mut r = hyper::Response::new(Body::new(Bytes::from(render(state, groups))));
    *r.status_mut() = StatusCode::OK;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(PROMETHEUS_CT));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatting() {
        assert_eq!(label("a\"b\\c\nd"), r#"a\"b\\c\nd"#);
        assert_eq!(num(3.0), "3");
        assert_eq!(num(0.99), "0.99");
        assert_eq!(num(0.0015), "0.0015");
        let mut out = String::new();
        let mut f = Family::new(&mut out, "x_total", "counter", "Things.");
        f.sample(
            "x_total",
            &[("topic", "t"), ("channel", "c#ephemeral")],
            2.0,
        );
        f.sample("x_total", &[], 1.5);
        assert_eq!(
            out,
            "# HELP x_total Things.\n# TYPE x_total counter\nx_total{topic=\"t\",channel=\"c#ephemeral\"} 2\nx_total 1.5\n"
        );
    }
}
