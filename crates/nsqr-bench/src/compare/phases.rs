//! What `compare` runs against one server in one round. Each group of phases gets a fresh
//! server, so one phase's leftovers (queued messages, memory the allocator kept, topics with
//! channels) cannot slow the next: the RSS probe; then pub, sub, pubsub and latency at each of
//! `--latency-rates`; then, when asked for, fan-out, idle connections, the size matrix and nsq's
//! own bench_writer / bench_reader (`nsq_bench`).
//! Every value goes into the round's [`Metrics`] under a key from `metrics`.

use std::path::Path;
use std::time::Duration;

use super::metrics::{latency_values, matrix_values};
use super::{nsq_bench, Metrics};
use crate::cli::CompareArgs;
use crate::fail::{err, Result};
use crate::modes::{self, topic_name, Workload};
use crate::procstat::{cpu_time, status_bytes};
use crate::progress::Counters;
use crate::publisher::{PubOutcome, Stop};
use crate::report::SubStats;
use crate::server::Server;
use crate::subscriber::SubGroup;

/// The workload of every phase against the server at `addr`.
fn workload(a: &CompareArgs, addr: &str) -> Workload {
    let mut w = Workload::new(addr, &a.publish, &a.consume, a.body.size);
    w.sizes = a.sizes.clone();
    w
}

pub(super) fn server_args(a: &CompareArgs) -> Vec<String> {
    let mut v = vec![format!("--mem-queue-size={}", a.mem_queue_size)];
    v.extend(a.server_arg.iter().cloned());
    v
}

/// One server, one round: the RSS probe on one fresh server, the main phases on another, and
/// each optional phase on one of its own.
pub(super) async fn measure(bin: &Path, a: &CompareArgs) -> Result<Metrics> {
    let mut m = Metrics::new();
    let extra = server_args(a);
    {
        let mut srv = Server::start(bin, &extra).await?;
        let r = rss_per_queued_message(&srv, a).await;
        let (per_queued, drain_ratio) = with_log(&mut srv, r)?;
        m.insert("rss_bytes_per_queued_msg".into(), per_queued);
        m.insert("rss_after_drain_ratio".into(), drain_ratio);
    }
    let mut srv = Server::start(bin, &extra).await?;
    let r = phases(&srv, a, &mut m).await;
    with_log(&mut srv, r)?;
    if a.fanout_channels > 0 {
        let mut srv = Server::start(bin, &extra).await?;
        let r = fanout_phase(&srv, a, &mut m).await;
        with_log(&mut srv, r)?;
    }
    if a.idle_connections > 0 {
        let mut srv = Server::start(bin, &extra).await?;
        let r = idle_phase(&srv, a, &mut m).await;
        with_log(&mut srv, r)?;
    }
    if a.matrix {
        let mut srv = Server::start(bin, &extra).await?;
        let r = matrix_phase(&srv, a, &mut m).await;
        with_log(&mut srv, r)?;
    }
    if let Some(dir) = &a.nsq_bench {
        let mut srv = Server::start(bin, &extra).await?;
        let r = nsq_bench::measure(&srv, a, dir).await;
        m.extend(with_log(&mut srv, r)?);
    }
    Ok(m)
}

/// `nsqr-bench floor` (this executable), one round: the pub phase, then the sub phase consuming what
/// it published, each with the floor's CPU per message; with `--nsq-bench`, nsq's tools
/// against a fresh floor.
pub(super) async fn measure_floor(exe: &Path, a: &CompareArgs) -> Result<Metrics> {
    let mut m = Metrics::new();
    let mut srv = Server::start_with(exe, &["floor"], &[]).await?;
    let r = floor_phases(&srv, a, &mut m).await;
    with_log(&mut srv, r)?;
    if let Some(dir) = &a.nsq_bench {
        let mut srv = Server::start_with(exe, &["floor"], &[]).await?;
        let r = nsq_bench::measure(&srv, a, dir).await;
        m.extend(with_log(&mut srv, r)?);
    }
    Ok(m)
}

async fn floor_phases(srv: &Server, a: &CompareArgs, m: &mut Metrics) -> Result<()> {
    let w = workload(a, &srv.tcp);
    let (topic, published) = pub_phase(srv, &w, m).await?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let s = sub_phase(srv, &w, &topic, &published, m).await?;
    add(m, "lost", s.lost as f64);
    add(m, "duplicates", s.duplicates as f64);
    Ok(())
}

/// Add the server's log tail to an error when the server died.
fn with_log<T>(srv: &mut Server, r: Result<T>) -> Result<T> {
    r.map_err(|e| match srv.exited() {
        Some(st) => err(format!(
            "{e}\nserver exited ({st}); its log:\n{}",
            srv.log_tail()
        )),
        None => e,
    })
}

/// RSS per queued message, and RSS after that backlog is consumed relative to before it.
async fn rss_per_queued_message(srv: &Server, a: &CompareArgs) -> Result<(f64, f64)> {
    let w = workload(a, &srv.tcp);
    let topic = topic_name(&w, "rss");
    // A subscribed consumer that never sends RDY: the channel exists and nobody consumes.
    let idle = SubGroup::connect(&w.sub_spec(&topic, false), &Counters::new()).await?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = status_bytes(srv.pid, "VmRSS")?;
    let (_, published) =
        modes::publish_phase(&w, &topic, w.size, Stop::Count(a.rss_messages), "rss").await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = status_bytes(srv.pid, "VmRSS")?;
    idle.finish(0, Duration::ZERO).await?;
    // Then consume the backlog and see how much memory the server gives back.
    modes::subscribe::consume(&w, &topic, &published).await?;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let drained = status_bytes(srv.pid, "VmRSS")?;
    Ok((
        after.saturating_sub(before) as f64 / published.acked.max(1) as f64,
        drained as f64 / before.max(1) as f64,
    ))
}

/// Publish to a topic with `n` channels, each held by an idle consumer (RDY 0).
async fn fanout_phase(srv: &Server, a: &CompareArgs, m: &mut Metrics) -> Result<()> {
    let w = workload(a, &srv.tcp);
    let topic = topic_name(&w, "fanout");
    let mut holders = Vec::new();
    for i in 0..a.fanout_channels {
        let mut spec = w.sub_spec(&topic, false);
        spec.channel = format!("fan{i}");
        spec.connections = 1;
        holders.push(SubGroup::connect(&spec, &Counters::new()).await?);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let c0 = cpu_time(srv.pid).map_err(err)?;
    let (p, _) =
        modes::publish_phase(&w, &topic, w.size, Stop::After(w.duration), "fanout").await?;
    let c1 = cpu_time(srv.pid).map_err(err)?;
    m.insert("fanout_pub_msgs_per_sec".into(), p.msgs_per_sec);
    m.insert(
        "fanout_pub_cpu_us_per_msg".into(),
        per_msg(c1 - c0, p.acked),
    );
    for h in holders {
        h.finish(0, Duration::ZERO).await?;
    }
    Ok(())
}

/// Pub then sub with `n` idle consumer connections (RDY 0, another topic) open throughout.
async fn idle_phase(srv: &Server, a: &CompareArgs, m: &mut Metrics) -> Result<()> {
    let w = workload(a, &srv.tcp);
    let mut spec = w.sub_spec(&topic_name(&w, "idle"), false);
    spec.connections = a.idle_connections;
    let idle = SubGroup::connect(&spec, &Counters::new()).await?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let topic = topic_name(&w, "idlepub");
    let (p, published) =
        modes::publish_phase(&w, &topic, w.size, Stop::After(w.duration), "idlepub").await?;
    m.insert("idle_pub_msgs_per_sec".into(), p.msgs_per_sec);
    let s = modes::subscribe::consume(&w, &topic, &published).await?;
    m.insert("idle_sub_msgs_per_sec".into(), s.msgs_per_sec);
    idle.finish(0, Duration::ZERO).await?;
    Ok(())
}

fn per_msg(d: Duration, n: u64) -> f64 {
    d.as_secs_f64() * 1e6 / n.max(1) as f64
}

/// Publish for `--duration` to a new topic (named by `w`, whose tag marks the messages as
/// this run's for the consume that follows): rates and the server's CPU per message.
async fn pub_phase(srv: &Server, w: &Workload, m: &mut Metrics) -> Result<(String, PubOutcome)> {
    let topic = topic_name(w, "pub");
    let c0 = cpu_time(srv.pid).map_err(err)?;
    let (p, published) =
        modes::publish_phase(w, &topic, w.size, Stop::After(w.duration), "pub").await?;
    let c1 = cpu_time(srv.pid).map_err(err)?;
    m.insert("pub_msgs_per_sec".into(), p.msgs_per_sec);
    m.insert("pub_mb_per_sec".into(), p.mb_per_sec);
    m.insert("pub_cpu_us_per_msg".into(), per_msg(c1 - c0, p.acked));
    Ok((topic, published))
}

/// Consume what the pub phase put on `topic` (the channel is created by this SUB, as in nsq's
/// bench.sh without its create calls): rates and the server's CPU per message.
async fn sub_phase(
    srv: &Server,
    w: &Workload,
    topic: &str,
    published: &PubOutcome,
    m: &mut Metrics,
) -> Result<SubStats> {
    let c0 = cpu_time(srv.pid).map_err(err)?;
    let s = modes::subscribe::consume(w, topic, published).await?;
    let c1 = cpu_time(srv.pid).map_err(err)?;
    m.insert("sub_msgs_per_sec".into(), s.msgs_per_sec);
    m.insert("sub_mb_per_sec".into(), s.mb_per_sec);
    m.insert("sub_cpu_us_per_msg".into(), per_msg(c1 - c0, s.received));
    Ok(s)
}

async fn phases(srv: &Server, a: &CompareArgs, m: &mut Metrics) -> Result<()> {
    let w = workload(a, &srv.tcp);
    let cpu = || cpu_time(srv.pid).map_err(err);
    let settle = || tokio::time::sleep(Duration::from_millis(200));

    let (topic, published) = pub_phase(srv, &w, m).await?;
    settle().await;

    let s = sub_phase(srv, &w, &topic, &published, m).await?;
    settle().await;

    let c2 = cpu()?;
    let (_, ps) = modes::pubsub::run(&w, &topic_name(&w, "pubsub"), w.size).await?;
    let c3 = cpu()?;
    m.insert("pubsub_msgs_per_sec".into(), ps.msgs_per_sec);
    m.insert("pubsub_mb_per_sec".into(), ps.mb_per_sec);
    m.insert(
        "pubsub_cpu_us_per_msg".into(),
        per_msg(c3 - c2, ps.received),
    );
    settle().await;

    let (mut lost, mut duplicates) = (s.lost + ps.lost, s.duplicates + ps.duplicates);
    for &rate in &a.latency_rates {
        let w = Workload {
            rate: rate as f64,
            ..w.clone()
        };
        let topic = topic_name(&w, &format!("latency{rate}"));
        let (_, ls, lat) = modes::latency::run(&w, &topic).await?;
        m.extend(latency_values(rate, &lat));
        lost += ls.lost;
        duplicates += ls.duplicates;
        settle().await;
    }

    m.insert(
        "peak_rss_mb".into(),
        status_bytes(srv.pid, "VmHWM")? as f64 / 1e6,
    );
    add(m, "lost", lost as f64);
    add(m, "duplicates", duplicates as f64);
    Ok(())
}

/// pubsub for each of `--sizes`, as `nsqr-bench matrix` runs it: publish and consume rates.
async fn matrix_phase(srv: &Server, a: &CompareArgs, m: &mut Metrics) -> Result<()> {
    let w = workload(a, &srv.tcp);
    let rows = modes::matrix::run(&w, &topic_name(&w, "matrix")).await?;
    for r in rows {
        m.extend(matrix_values(&r));
        add(m, "lost", r.consume.lost as f64);
        add(m, "duplicates", r.consume.duplicates as f64);
    }
    Ok(())
}

/// Add to a count that several phases contribute to (lost, duplicates).
fn add(m: &mut Metrics, key: &str, v: f64) {
    *m.entry(key.to_string()).or_insert(0.0) += v;
}
