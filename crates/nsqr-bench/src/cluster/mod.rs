//! `nsqr-bench cluster`: nsq's own cluster benchmark (`bench/bench.py`) on one machine, with
//! exact counts. bench.py starts N nsqd hosts and load hosts running bench_writer (and, in
//! `pubsub` mode, bench_reader) against every node, and sums what each tool printed. Here the
//! nodes are processes this command starts (nsqrd or a `--reference` nsqd, registered with an
//! nsqrlookupd or `--lookupd-bin` lookupd; on loopback, or in network namespaces with
//! `--netns`) or running nodes it is given; the load is this process (`load`), the consumers
//! find the nodes through lookupd, and every message is accounted for per node (`report`).
//!
//! `--mode pub` publishes for `--duration` to topics without channels (bench.py's publish-only
//! run), then drains them through lookupd to check every acknowledged message arrives once;
//! `--mode pubsub` subscribes first, publishes for `--duration` and drains. Server CPU comes
//! from /proc/PID/stat of every node around the phase.

mod args;
mod load;
mod netns;
mod nodes;
mod report;

use std::collections::BTreeMap;

pub use args::{ClusterArgs, ClusterMode};

use crate::cli::ClusterCmd;
use crate::fail::{err, Result};
use crate::machine::Machine;
use crate::modes::Workload;
use crate::procstat::cpu_time;
pub use netns::rate_bits;

use load::{Phase, Plan};
use nodes::{Cluster, Node};
use report::{ClusterReport, CpuSpan, Measured};

/// Run the benchmark; Ok(false) when a message was lost or duplicated.
pub async fn run(a: &ClusterCmd) -> Result<bool> {
    let mut machine = Machine::probe();
    let mut cluster = Cluster::start(a).await?;
    let mut report = match measure(&cluster, a).await {
        Ok(r) => r,
        Err(e) => return Err(cluster.explain(e)),
    };
    machine.load_after = crate::machine::load();
    report.machine = machine;
    crate::report::emit(&report, a.json)?;
    Ok(report.ok)
}

/// CPU seconds of every node so far.
fn cpu_now(nodes: &[Node]) -> Result<CpuSpan> {
    nodes.iter().map(Node::cpu_s).collect()
}

fn cpu_since(before: &CpuSpan, nodes: &[Node]) -> Result<CpuSpan> {
    let now = cpu_now(nodes)?;
    Ok(before
        .iter()
        .zip(now)
        .map(|(b, n)| Some(n? - (*b)?))
        .collect())
}

fn client_cpu_s() -> Result<f64> {
    cpu_time(std::process::id())
        .map(|d| d.as_secs_f64())
        .map_err(err)
}

async fn measure(cluster: &Cluster, a: &ClusterCmd) -> Result<ClusterReport> {
    let c = &a.cluster;
    let nodes = &cluster.nodes;
    let mut w = Workload::new("", &a.publish, &a.consume, a.body.size);
    w.rdy = a.rdy();
    w.progress = false;
    let plan = Plan::new(
        &w,
        c.topics,
        c.writers,
        c.readers,
        &cluster.setup.lookupd_http_address,
    );
    let client0 = client_cpu_s()?;
    let pub_only = c.cluster_mode == ClusterMode::Pub;
    let (published, consumed, cpu, drain_cpu) = if pub_only {
        publish_then_drain(nodes, &plan, &w).await?
    } else {
        publish_and_consume(nodes, &plan, &w).await?
    };
    let client = client_cpu_s()? - client0;
    let m = Measured {
        nodes,
        size: w.size,
        published: &published,
        consumed: &consumed,
        cpu,
        drain_cpu,
        pub_only,
    };
    let stats = report::node_stats(&m);
    let total = report::total(&stats, pub_only);
    let problems = report::problems(&stats);
    Ok(ClusterReport {
        mode: if pub_only { "pub" } else { "pubsub" },
        machine: Machine::default(),
        setup: cluster.setup.clone(),
        settings: settings(a),
        topics: plan.topics.clone(),
        publish_s: published.elapsed.as_secs_f64(),
        consume_s: consumed.elapsed.as_secs_f64(),
        nodes: stats,
        ok: problems.is_empty(),
        client_cpu_us_per_msg: client * 1e6 / total.acked.max(1) as f64,
        total,
        problems,
    })
}

type Phases = (
    Phase<crate::publisher::PubOutcome>,
    Phase<crate::subscriber::SubOutcome>,
    CpuSpan,
    Option<CpuSpan>,
);

/// bench.py `--mode=pubsub`: channels created, consumers subscribed through lookupd, then
/// publishing for `--duration` while they consume, then the drain.
async fn publish_and_consume(nodes: &[Node], plan: &Plan, w: &Workload) -> Result<Phases> {
    load::create_channels(nodes, plan, w).await?;
    let subs = load::connect_consumers(nodes, plan, w).await?;
    let pubs = load::connect_publishers(nodes, plan, w).await?;
    let cpu0 = cpu_now(nodes)?;
    let start = load::go_consumers(&subs);
    load::go_publishers(&pubs);
    let published = load::finish_publishers(pubs).await?;
    let consumed = load::finish_consumers(subs, &published, start, w.drain_timeout).await?;
    let cpu = cpu_since(&cpu0, nodes)?;
    Ok((published, consumed, cpu, None))
}

/// bench.py `--mode=pub`: publishing for `--duration` to topics without channels; then every
/// topic is drained through lookupd (not part of bench.py's figure) to count the messages.
async fn publish_then_drain(nodes: &[Node], plan: &Plan, w: &Workload) -> Result<Phases> {
    let pubs = load::connect_publishers(nodes, plan, w).await?;
    let cpu0 = cpu_now(nodes)?;
    load::go_publishers(&pubs);
    let published = load::finish_publishers(pubs).await?;
    let cpu = cpu_since(&cpu0, nodes)?;
    let subs = load::connect_consumers(nodes, plan, w).await?;
    let cpu1 = cpu_now(nodes)?;
    let start = load::go_consumers(&subs);
    let consumed = load::finish_consumers(subs, &published, start, w.drain_timeout).await?;
    let drain = cpu_since(&cpu1, nodes)?;
    Ok((published, consumed, cpu, Some(drain)))
}

fn settings(a: &ClusterCmd) -> BTreeMap<&'static str, String> {
    let c = &a.cluster;
    let mut s = BTreeMap::new();
    s.insert("duration", nsq_common::duration::format(a.publish.duration));
    s.insert("nodes", c.node_count().to_string());
    s.insert("topics", c.topics.to_string());
    s.insert("writers", c.writers.to_string());
    s.insert("readers", c.readers.to_string());
    s.insert("size", a.body.size.to_string());
    s.insert("batch_size", a.publish.batch_size.to_string());
    s.insert("pipeline", a.publish.pipeline.to_string());
    s.insert("rdy", a.rdy().to_string());
    s.insert("mem_queue_size", a.mem_queue_size.to_string());
    s
}
