//! `nsqr-bench replicated`: a replicated topic's speed (issue 30's load) beside a single
//! unreplicated nsqrd's, in one run. Each round starts `--replicas` nsqrd nodes on 127.0.0.1
//! (a topic with `replicas = N`), finds the topic's leader, publishes `--count` messages to it
//! in MPUB batches from `--publishers` connections, then consumes them from it; then the same
//! on one nsqrd without cluster flags (A B A B ...). Rates, publish-to-`OK` percentiles and the
//! nodes' summed CPU per message (/proc/PID/stat) are taken per side and round, and reported
//! as medians with their ratios; every acknowledged message is checked off on arrival.

mod args;
mod nodes;
mod report;

use std::time::Instant;

pub use args::ReplicatedCmd;

use crate::body::{max_batch_for, BodyBatch};
use crate::fail::Result;
use crate::machine::Machine;
use crate::progress::Counters;
use crate::publisher::{bench_config, PubGroup, PubSpec, Stop};
use crate::server::{find_nsqrd, version};
use crate::subscriber::{create_channel, SubGroup, SubSpec};
use nodes::Side;
use report::{ReplicatedReport, SideRun};

/// The consumers' channel, created on the leader before publishing.
const CHANNEL: &str = "ch";

/// Run the rounds; Ok(false) when a message was lost or duplicated.
pub async fn run(a: &ReplicatedCmd) -> Result<bool> {
    let mut machine = Machine::probe();
    let bin = find_nsqrd(a.nsqrd.as_deref())?;
    let mut runs = Vec::new();
    for round in 0..a.rounds {
        runs.push(side(a, &bin, a.replicas, round).await?);
        if !a.no_single {
            runs.push(side(a, &bin, 1, round).await?);
        }
    }
    machine.load_after = crate::machine::load();
    let report = ReplicatedReport::new(a, version(&bin), machine, runs);
    crate::report::emit(&report, a.json)?;
    Ok(report.ok)
}

/// One side of one round on fresh nodes.
async fn side(
    a: &ReplicatedCmd,
    bin: &std::path::Path,
    nodes: usize,
    round: usize,
) -> Result<SideRun> {
    let mut args = vec![
        a.durability.flag().to_string(),
        "--mem-queue-size=10000000".to_string(),
        format!("--max-rdy-count={}", a.rdy),
    ];
    args.extend(a.server_arg.iter().cloned());
    let tag = crate::modes::run_tag();
    let topic = format!("nsqr_replicated_{tag:04x}_{round}_{nodes}");
    let mut s = Side::start(bin, nodes, &args, &topic).await?;
    match measure(a, tag, &mut s, &topic).await {
        Ok(mut r) => {
            r.nodes = nodes;
            r.round = round;
            Ok(r)
        }
        Err(e) => Err(s.explain(e)),
    }
}

/// Publish `--count` messages to the leader, then consume them from it.
async fn measure(a: &ReplicatedCmd, tag: u16, s: &mut Side, topic: &str) -> Result<SideRun> {
    let size = a.body.size;
    let config = bench_config();
    // The probe is message 0 of an extra publisher index, so the tracker counts it as ours.
    let probe = BodyBatch::new(size).stamp(1, tag, a.publishers as u8, 0, 0);
    s.find_leader(topic, probe[0].clone()).await?;
    let leader = s.leader_tcp().to_string();
    create_channel(&leader, topic, CHANNEL, &config).await?;

    let spec = PubSpec {
        addr: leader.clone(),
        topic: topic.to_string(),
        size,
        batch_size: a.batch_size.min(max_batch_for(size)),
        connections: a.publishers,
        pipeline: a.pipeline,
        stop: Stop::Count(a.count),
        rate: None,
        tag,
        t0: Instant::now(),
    };
    let pubs = PubGroup::connect(&spec, &Counters::new()).await?;
    let cpu0 = s.cpu_s()?;
    pubs.go();
    let mut published = pubs.finish().await?;
    let cpu_pub = s.cpu_s()? - cpu0;
    published.acked_by_publisher.push(1);

    let sub = SubSpec {
        addr: leader,
        topic: topic.to_string(),
        channel: CHANNEL.to_string(),
        connections: a.consumers,
        rdy: a.rdy,
        config,
        tag,
        t0: spec.t0,
        record_latency: false,
    };
    let subs = SubGroup::connect(&sub, &Counters::new()).await?;
    let cpu1 = s.cpu_s()?;
    let start: Instant = subs.go();
    let consumed = subs.finish(published.acked + 1, a.drain_timeout).await?;
    let cpu_sub = s.cpu_s()? - cpu1;
    let mut run = SideRun::new(&published, &consumed, start, cpu_pub, cpu_sub);
    run.pids = s.pids();
    Ok(run)
}
