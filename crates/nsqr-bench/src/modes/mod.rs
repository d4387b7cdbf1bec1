//! The workloads. Each mode is a function from a [`Workload`] (the flags, resolved) to a
//! [`Report`]; `compare` calls the same pieces phase by phase against servers it starts.

pub mod inproc;
pub mod latency;
pub mod matrix;
pub mod publish;
pub mod pubsub;
pub mod subscribe;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::body::max_batch_for;
use crate::cli::{BenchArgs, Mode};
use crate::fail::Result;
use crate::publisher::{self, PubSpec, Stop};
use crate::report::Report;
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
    pub fn from_args(a: &BenchArgs, addr: &str) -> Workload {
        let mut sub_config = crate::publisher::bench_config();
        if let Some(v) = a.output_buffer_size {
            sub_config.output_buffer_size = (v >= 0).then_some(v as u32);
        }
        if let Some(v) = a.output_buffer_timeout {
            sub_config.output_buffer_timeout = (v >= 0).then(|| Duration::from_millis(v as u64));
        }
        Workload {
            addr: addr.to_string(),
            channel: a.channel.clone(),
            size: a.size,
            batch_size: a.batch_size,
            pub_connections: a.pub_connections(),
            sub_connections: a.sub_connections(),
            pipeline: a.pipeline,
            rdy: a.rdy(),
            duration: a.duration,
            count: a.count,
            rate: a.rate,
            drain_timeout: a.drain_timeout,
            sizes: a.sizes.clone(),
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
fn run_tag() -> u16 {
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

/// Run one of the single-server modes.
pub async fn run(mode: Mode, args: &BenchArgs) -> Result<Report> {
    let w = Workload::from_args(args, &args.nsqd_tcp_address);
    let topic = args
        .topic
        .clone()
        .unwrap_or_else(|| topic_name(&w, mode.name()));
    let mut report = Report {
        mode: mode.name().to_string(),
        nsqd_tcp_address: w.addr.clone(),
        topic: topic.clone(),
        ..Default::default()
    };
    match mode {
        Mode::Pub => report.publish = Some(publish::run(&w, &topic).await?.0),
        Mode::Sub => {
            let (p, s) = subscribe::run(&w, &topic).await?;
            report.publish = Some(p);
            report.consume = Some(s);
        }
        Mode::Pubsub => {
            let (p, s) = pubsub::run(&w, &topic, w.size).await?;
            report.publish = Some(p);
            report.consume = Some(s);
        }
        Mode::Latency => {
            let (p, s, l) = latency::run(&w, &topic).await?;
            report.publish = Some(p);
            report.consume = Some(s);
            report.latency = Some(l);
        }
        Mode::Matrix => report.matrix = matrix::run(&w, &topic).await?,
        Mode::Compare
        | Mode::Cluster
        | Mode::Inproc
        | Mode::Kv
        | Mode::HttpConsume
        | Mode::Sse
        | Mode::Ordered
        | Mode::Transports => {
            return Err(crate::fail::err(format!(
                "{} is not a single-server mode",
                mode.name()
            )))
        }
    }
    report.check();
    Ok(report)
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
