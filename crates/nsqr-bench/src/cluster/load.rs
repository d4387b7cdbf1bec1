//! The load `cluster` puts on the nodes, as nsq's bench.py does: on every node, for each of
//! `--topics` topics, `--writers` publishing connections (bench_writer's) and, with consumers,
//! `--readers` clients on the topic's channel `ch`. The consumers do what NSQ consumers do:
//! each client asks lookupd for the topic's producers and holds one connection to each.
//!
//! Every (node, topic) pair has a run tag of its own (see `body`), so each message is checked
//! off against exactly the node and topic it was published to: a message delivered by another
//! node, or twice, or never, is counted per node.

use std::time::{Duration, Instant};

use super::nodes::Node;
use crate::fail::{err, Result};
use crate::lookupd::wait_for_producers;
use crate::modes::Workload;
use crate::progress::Counters;
use crate::publisher::{PubGroup, PubOutcome, Stop};
use crate::subscriber::{SubGroup, SubOutcome};

/// How long nodes may take to register a new topic with lookupd.
const REGISTER_TIMEOUT: Duration = Duration::from_secs(30);

/// The topics and the shape of the load.
#[derive(Debug, Clone)]
pub struct Plan {
    pub topics: Vec<String>,
    pub writers: usize,
    pub readers: usize,
    pub lookupd_http: String,
}

impl Plan {
    /// `topics` new topic names for this run.
    pub fn new(w: &Workload, topics: usize, writers: usize, readers: usize, lookupd: &str) -> Plan {
        Plan {
            topics: (0..topics)
                .map(|t| format!("nsqr_cluster_{:04x}_{t}", w.tag))
                .collect(),
            writers,
            readers,
            lookupd_http: lookupd.to_string(),
        }
    }

    /// The run tag of messages published to `node` on topic `t`.
    pub fn tag(&self, w: &Workload, node: usize, t: usize) -> u16 {
        w.tag.wrapping_add((node * self.topics.len() + t) as u16)
    }
}

/// What one phase saw, per node and topic (`[node][topic]`).
pub struct Phase<T> {
    pub by_pair: Vec<Vec<T>>,
    /// From the start signal to the end (publishing) or to the last arrival (consuming).
    pub elapsed: Duration,
}

/// Create every topic and its channel `ch` on every node (a `SUB`, then the connection is
/// closed; the channel stays), as bench.sh creates them before publishing, so consumers find
/// the topics through lookupd and nothing published is held back in a topic without channels.
pub async fn create_channels(nodes: &[Node], plan: &Plan, w: &Workload) -> Result<()> {
    for n in nodes {
        for topic in &plan.topics {
            crate::subscriber::create_channel(&n.tcp, topic, &w.channel, &w.sub_config).await?;
        }
    }
    Ok(())
}

/// Connected, identified publishers for every node and topic, not yet started.
pub async fn connect_publishers(
    nodes: &[Node],
    plan: &Plan,
    w: &Workload,
) -> Result<Vec<Vec<PubGroup>>> {
    let mut all = Vec::new();
    for (k, n) in nodes.iter().enumerate() {
        let mut row = Vec::new();
        for (t, topic) in plan.topics.iter().enumerate() {
            let mut spec = w.pub_spec(topic, w.size, Stop::After(w.duration), None);
            spec.addr = n.tcp.clone();
            spec.connections = plan.writers;
            spec.tag = plan.tag(w, k, t);
            row.push(PubGroup::connect(&spec, &Counters::new()).await?);
        }
        all.push(row);
    }
    Ok(all)
}

/// Start every group; returns the first start time.
pub fn go_publishers(groups: &[Vec<PubGroup>]) -> Instant {
    let start = Instant::now();
    groups.iter().flatten().for_each(|g| {
        g.go();
    });
    start
}

/// Wait for every publisher.
pub async fn finish_publishers(groups: Vec<Vec<PubGroup>>) -> Result<Phase<PubOutcome>> {
    let mut by_pair = Vec::new();
    let mut elapsed = Duration::ZERO;
    for row in groups {
        let mut r = Vec::new();
        for g in row {
            let o = g.finish().await?;
            elapsed = elapsed.max(o.elapsed);
            r.push(o);
        }
        by_pair.push(r);
    }
    Ok(Phase { by_pair, elapsed })
}

/// `--readers` clients per topic, each connected through lookupd to every node that has the
/// topic, subscribed, not yet started; grouped by node and topic.
pub async fn connect_consumers(
    nodes: &[Node],
    plan: &Plan,
    w: &Workload,
) -> Result<Vec<Vec<SubGroup>>> {
    let mut groups: Vec<Vec<SubGroup>> = nodes
        .iter()
        .map(|_| {
            plan.topics
                .iter()
                .map(|_| SubGroup::empty(&Counters::new()))
                .collect()
        })
        .collect();
    for (t, topic) in plan.topics.iter().enumerate() {
        for _client in 0..plan.readers {
            let producers =
                wait_for_producers(&plan.lookupd_http, topic, nodes.len(), REGISTER_TIMEOUT)
                    .await?;
            for p in producers {
                let addr = p.tcp_address();
                let k = nodes.iter().position(|n| n.tcp == addr).ok_or_else(|| {
                    err(format!(
                        "lookupd lists {addr} as a producer of {topic}, which is not one of the nodes ({}); give nodes as they register (broadcast address)",
                        nodes.iter().map(|n| n.tcp.as_str()).collect::<Vec<_>>().join(", ")
                    ))
                })?;
                let mut spec = w.sub_spec(topic, false);
                spec.addr = addr;
                spec.tag = plan.tag(w, k, t);
                groups[k][t].add(&spec).await?;
            }
        }
    }
    Ok(groups)
}

/// Send RDY on every consumer connection; returns the start time.
pub fn go_consumers(groups: &[Vec<SubGroup>]) -> Instant {
    let start = Instant::now();
    groups.iter().flatten().for_each(|g| {
        g.go();
    });
    start
}

/// Wait until each group received what its node acknowledged on its topic (or nothing came
/// for `idle`), then stop them; `elapsed` is from `start` to the last arrival anywhere.
pub async fn finish_consumers(
    groups: Vec<Vec<SubGroup>>,
    published: &Phase<PubOutcome>,
    start: Instant,
    idle: Duration,
) -> Result<Phase<SubOutcome>> {
    let mut by_pair = Vec::new();
    let mut last: Option<Instant> = None;
    for (row, pubs) in groups.into_iter().zip(&published.by_pair) {
        let mut r = Vec::new();
        for (g, p) in row.into_iter().zip(pubs) {
            let o = g.finish(p.acked, idle).await?;
            last = last.max(o.last_recv);
            r.push(o);
        }
        by_pair.push(r);
    }
    let elapsed = last
        .map(|l| l.saturating_duration_since(start))
        .unwrap_or_default();
    Ok(Phase { by_pair, elapsed })
}
