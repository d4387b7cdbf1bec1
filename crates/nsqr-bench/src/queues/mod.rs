//! The HTTP queue modes of `nsqr-bench` (nsqrd only: they use its `/channel/*` and
//! `/message/*` routes): `http-consume` (many long-polling consumers), `sse` (one stream) and
//! `ordered` (an ordered channel with many keys beside a plain one). Counts are exact, as in
//! the TCP modes.

mod consume;
mod http;
mod ordered;
mod sse;

use serde::Serialize;

use crate::cli::{HttpConsumeArgs, OrderedArgs, QueueArgs};
use crate::fail::Result;
use crate::modes::{topic_name, Workload};
use crate::progress::group;
use crate::report::{emit, PubStats, Render};

pub use consume::ConsumeStats;
pub use http::HttpConn;
pub use ordered::OrderedReport;

/// The queue modes' own settings, from their flags.
#[derive(Debug, Clone)]
pub struct QueueSpec {
    pub http_address: String,
    pub consumers: usize,
    pub batch: usize,
    pub keys: usize,
    pub count: Option<u64>,
    pub server_pid: Option<u32>,
}

impl QueueSpec {
    /// `--count`, or the mode's default.
    pub fn count(&self, default: u64) -> u64 {
        self.count.unwrap_or(default)
    }
}

/// What a queue mode measured.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum QueueReport {
    Consume {
        mode: String,
        publish: PubStats,
        consume: ConsumeStats,
    },
    Ordered(OrderedReport),
}

impl QueueReport {
    /// Nothing lost, nothing duplicated, order kept.
    pub fn ok(&self) -> bool {
        match self {
            QueueReport::Consume { consume: c, .. } => {
                c.lost == 0 && c.duplicates == 0 && c.foreign == 0
            }
            QueueReport::Ordered(r) => [&r.plain, &r.ordered]
                .iter()
                .all(|c| c.lost == 0 && c.duplicates == 0 && c.out_of_order == 0),
        }
    }
}

impl Render for QueueReport {
    fn print_human(&self) {
        match self {
            QueueReport::Consume {
                mode,
                publish,
                consume: c,
            } => {
                println!(
                    "pre-fill (TCP): {} messages of {} B in {:.2}s",
                    group(publish.acked),
                    publish.size,
                    publish.elapsed_s
                );
                println!(
                    "{mode}: {} consumer(s), {} {}: {} received, {} acknowledged in {:.2}s = {:.0} msgs/s ({} requests)",
                    c.consumers,
                    c.batch,
                    if mode == "sse" { "in flight" } else { "per receive" },
                    group(c.received),
                    group(c.acknowledged),
                    c.elapsed_s,
                    c.msgs_per_sec,
                    group(c.requests)
                );
                println!(
                    "  expected {}, unique {}, lost {}, duplicates {}, redelivered {}",
                    group(c.expected),
                    group(c.unique),
                    c.lost,
                    c.duplicates,
                    c.redelivered
                );
                if let Some(cpu) = &c.cpu {
                    println!(
                        "  CPU per message: server {:.2} µs, client {:.2} µs",
                        cpu.server_us_per_msg, cpu.client_us_per_msg
                    );
                }
            }
            QueueReport::Ordered(r) => {
                println!(
                    "pre-fill (HTTP /mpub, {} keys): {} messages in {:.2}s",
                    r.keys,
                    group(r.count),
                    r.prefill_s
                );
                for c in [&r.plain, &r.ordered] {
                    println!(
                        "{:>8}: {} received in {:.2}s = {:.0} msgs/s; lost {}, duplicates {}, out of order {}",
                        c.channel,
                        group(c.received),
                        c.elapsed_s,
                        c.msgs_per_sec,
                        c.lost,
                        c.duplicates,
                        c.out_of_order
                    );
                }
                println!("ordered / plain: {:.2}", r.ratio);
            }
        }
    }
}

/// The queue modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum QueueMode {
    HttpConsume,
    Sse,
    Ordered,
}

impl QueueMode {
    fn name(self) -> &'static str {
        match self {
            QueueMode::HttpConsume => "http-consume",
            QueueMode::Sse => "sse",
            QueueMode::Ordered => "ordered",
        }
    }
}

impl QueueSpec {
    /// The settings every queue mode takes; the mode's own (consumers, batch, keys) are 0
    /// until it sets them.
    fn of(a: &QueueArgs) -> QueueSpec {
        QueueSpec {
            http_address: a.nsqd_http_address.clone(),
            consumers: 0,
            batch: 0,
            keys: 0,
            count: a.count,
            server_pid: a.server_pid,
        }
    }
}

/// `http-consume`.
pub async fn http_consume(a: &HttpConsumeArgs) -> Result<bool> {
    let q = QueueSpec {
        consumers: a.http_consumers,
        batch: a.http_batch,
        ..QueueSpec::of(&a.queue)
    };
    run(QueueMode::HttpConsume, &a.queue, &q).await
}

/// `sse`.
pub async fn sse(a: &QueueArgs) -> Result<bool> {
    run(QueueMode::Sse, a, &QueueSpec::of(a)).await
}

/// `ordered`.
pub async fn ordered(a: &OrderedArgs) -> Result<bool> {
    let q = QueueSpec {
        batch: a.http_batch,
        keys: a.keys,
        ..QueueSpec::of(&a.queue)
    };
    run(QueueMode::Ordered, &a.queue, &q).await
}

/// Run one queue mode against the server at `--nsqd-tcp-address` / `--nsqd-http-address`
/// and print its report; Ok(false) when a message was lost, duplicated or out of order.
async fn run(mode: QueueMode, a: &QueueArgs, q: &QueueSpec) -> Result<bool> {
    let t = &a.target;
    let mut w = Workload::new(&t.nsqd_tcp_address, &a.publish, &a.consume, a.body.size);
    w.count = a.count;
    let topic = t
        .topic
        .clone()
        .unwrap_or_else(|| topic_name(&w, &mode.name().replace('-', "_")));
    let r = match mode {
        QueueMode::HttpConsume => {
            let (publish, consume) = consume::http_consume(&w, q, &topic).await?;
            QueueReport::Consume {
                mode: mode.name().to_string(),
                publish,
                consume,
            }
        }
        QueueMode::Sse => {
            let (publish, consume) = sse::sse(&w, q, &topic).await?;
            QueueReport::Consume {
                mode: mode.name().to_string(),
                publish,
                consume,
            }
        }
        QueueMode::Ordered => QueueReport::Ordered(ordered::run(&w, q, &topic).await?),
    };
    emit(&r, t.json)?;
    Ok(r.ok())
}
