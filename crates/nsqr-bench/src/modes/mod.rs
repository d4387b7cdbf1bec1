//! The single-server TCP modes (`pub`, `sub`, `pubsub`, `latency`, `matrix`) and the pieces
//! they share. Each mode is a function from a [`Workload`] (the flags, resolved) to a
//! [`Report`]; `compare`, `cluster` and the queue modes call the same pieces against the
//! servers they reach.

pub mod inproc;
pub mod latency;
pub mod matrix;
pub mod publish;
pub mod pubsub;
pub mod subscribe;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::body::max_batch_for;
use crate::cli::{ConsumeFlags, LatencyArgs, MatrixArgs, PubArgs, PubSubArgs, PublishFlags};
use crate::fail::Result;
use crate::publisher::{self, PubSpec, Stop};
use crate::report::{emit, Report};
use crate::subscriber::SubSpec;

/// Everything a workload needs, from the flags.
#[derive(Debug, Clone)]
pub struct Workload {
    pub addr: String,
    pub channel: String,
    pub size: usize,
    pub batch_size: usize,
    pub pub_connections: usize,
    pub sub_connections: usize,
    pub pipeline: usize,
    pub rdy: u32,
    pub duration: Duration,
    pub count: Option<u64>,
    pub rate: f64,
    pub drain_timeout: Duration,
    pub sizes: Vec<usize>,
    /// The consumers' client settings (IDENTIFY).
    pub sub_config: nsqr_client::Config,
    pub progress: bool,
    /// Marks this run's messages (see `body`).
    pub tag: u16,
    pub t0: Instant,
}

impl Workload {
    /// The workload of `size`-byte messages to the server at `addr`, the consumers' `--rdy` in
    /// flight per connection; `count`, `rate` and `sizes` are left for the modes that take
    /// them.
    pub fn new(addr: &str, p: &PublishFlags, c: &ConsumeFlags, size: usize) -> Workload {
        let mut sub_config = crate::publisher::bench_config();
        if let Some(v) = c.output_buffer_size {
            sub_config.output_buffer_size = (v >= 0).then_some(v as u32);
        }
        if let Some(v) = c.output_buffer_timeout {
            sub_config.output_buffer_timeout = (v >= 0).then(|| Duration::from_millis(v as u64));
        }
        Workload {
            addr: addr.to_string(),
            channel: c.channel.clone(),
            size,
            batch_size: p.batch_size,
            pub_connections: p.pub_connections(),
            sub_connections: c.sub_connections(p),
            pipeline: p.pipeline,
            rdy: c.rdy(),
            duration: p.duration,
            count: None,
            rate: 0.0,
            drain_timeout: c.drain_timeout,
            sizes: Vec::new(),
            sub_config,
            progress: true,
            tag: run_tag(),
            t0: Instant::now(),
        }
    }

    /// The batch size actually used for `size`-byte messages.
    pub fn batch_for(&self, size: usize) -> usize {
        self.batch_size.min(max_batch_for(size))
    }

    pub fn pub_spec(&self, topic: &str, size: usize, stop: Stop, rate: Option<f64>) -> PubSpec {
        PubSpec {
            addr: self.addr.clone(),
            topic: topic.to_string(),
            size,
            batch_size: self.batch_for(size),
            connections: self.pub_connections,
            pipeline: self.pipeline,
            stop,
            rate,
            tag: self.tag,
            t0: self.t0,
        }
    }

    pub fn sub_spec(&self, topic: &str, record_latency: bool) -> SubSpec {
        SubSpec {
            addr: self.addr.clone(),
            topic: topic.to_string(),
            channel: self.channel.clone(),
            connections: self.sub_connections,
            rdy: self.rdy,
            config: self.sub_config.clone(),
            tag: self.tag,
            t0: self.t0,
            record_latency,
        }
    }
}

/// A 16-bit tag that differs between runs.
pub(crate) fn run_tag() -> u16 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let x = nanos ^ ((std::process::id() as u64) << 20);
    let x = x.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (x >> 48) as u16
}

/// A topic name unique to this run and phase.
pub fn topic_name(w: &Workload, phase: &str) -> String {
    format!("nsqr_bench_{phase}_{:04x}", w.tag)
}

/// The single-server modes that publish and consume.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Single {
    Sub,
    Pubsub,
}

/// The report of a run against `addr`, on `--topic` or a topic of this run's own.
fn new_report(mode: &str, w: &Workload, topic: &Option<String>) -> Report {
    Report {
        mode: mode.to_string(),
        nsqd_tcp_address: w.addr.clone(),
        topic: topic.clone().unwrap_or_else(|| topic_name(w, mode)),
        ..Default::default()
    }
}

/// Check the counts, print the report; Ok(false) when messages were lost.
fn finish(mut report: Report, json: bool) -> Result<bool> {
    report.check();
    emit(&report, json)?;
    Ok(report.ok)
}

/// `pub`.
pub async fn run_pub(a: &PubArgs) -> Result<bool> {
    let t = &a.target;
    let mut w = Workload::new(
        &t.nsqd_tcp_address,
        &a.publish,
        &ConsumeFlags::default(),
        a.body.size,
    );
    w.count = a.count;
    let mut report = new_report("pub", &w, &t.topic);
    report.publish = Some(publish::run(&w, &report.topic).await?.0);
    finish(report, t.json)
}

/// `sub` and `pubsub`.
pub async fn run_pubsub(mode: Single, a: &PubSubArgs) -> Result<bool> {
    let t = &a.target;
    let mut w = Workload::new(&t.nsqd_tcp_address, &a.publish, &a.consume, a.body.size);
    w.count = a.count;
    let name = match mode {
        Single::Sub => "sub",
        Single::Pubsub => "pubsub",
    };
    let mut report = new_report(name, &w, &t.topic);
    let (p, s) = match mode {
        Single::Sub => subscribe::run(&w, &report.topic).await?,
        Single::Pubsub => pubsub::run(&w, &report.topic, w.size).await?,
    };
    report.publish = Some(p);
    report.consume = Some(s);
    finish(report, t.json)
}

/// `latency`.
pub async fn run_latency(a: &LatencyArgs) -> Result<bool> {
    let t = &a.target;
    let mut w = Workload::new(&t.nsqd_tcp_address, &a.publish, &a.consume, a.body.size);
    w.rate = a.rate;
    let mut report = new_report("latency", &w, &t.topic);
    let (p, s, l) = latency::run(&w, &report.topic).await?;
    report.publish = Some(p);
    report.consume = Some(s);
    report.latency = Some(l);
    finish(report, t.json)
}

/// `matrix`.
pub async fn run_matrix(a: &MatrixArgs) -> Result<bool> {
    let t = &a.target;
    let mut w = Workload::new(&t.nsqd_tcp_address, &a.publish, &a.consume, 0);
    w.sizes = a.sizes.clone();
    let mut report = new_report("matrix", &w, &t.topic);
    report.matrix = matrix::run(&w, &report.topic).await?;
    finish(report, t.json)
}

/// Publish as fast as possible for `--duration` (or exactly `count` messages).
pub async fn publish_phase(
    w: &Workload,
    topic: &str,
    size: usize,
    stop: Stop,
    label: &str,
) -> Result<(crate::report::PubStats, publisher::PubOutcome)> {
    let counters = crate::progress::Counters::new();
    let _progress = crate::progress::Progress::start(w.progress, label, &counters);
    let spec = w.pub_spec(topic, size, stop, None);
    let o = publisher::run(&spec, &counters).await?;
    let stats =
        crate::report::PubStats::new(&o, spec.connections, size, spec.batch_size, spec.pipeline);
    Ok((stats, o))
}
