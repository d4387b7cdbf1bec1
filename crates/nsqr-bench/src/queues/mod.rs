//! The HTTP queue modes of `nsqr bench` (nsqrd only: they use its `/channel/*` and
//! `/message/*` routes): `http-consume` (many long-polling consumers), `sse` (one stream) and
//! `ordered` (an ordered channel with many keys beside a plain one). Counts are exact, as in
//! the TCP modes.

mod consume;
mod http;
mod ordered;
mod sse;

use serde::Serialize;

use crate::cli::{BenchArgs, Mode};
use crate::fail::{err, Result};
use crate::modes::{topic_name, Workload};
use crate::progress::group;
use crate::report::PubStats;

pub use consume::ConsumeStats;
pub use ordered::OrderedReport;

/// The queue modes' own flags.
#[derive(Debug, Clone)]
pub struct QueueArgs {
    pub http_address: String,
    pub consumers: usize,
    pub batch: usize,
    pub keys: usize,
    pub count: Option<u64>,
}

impl QueueArgs {
    pub fn from_args(a: &BenchArgs) -> QueueArgs {
        QueueArgs {
            http_address: a.nsqd_http_address.clone(),
            consumers: a.http_consumers,
            batch: a.http_batch,
            keys: a.keys,
            count: a.count,
        }
    }

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

    pub fn print_human(&self) {
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

/// Run one queue mode against the server at `--nsqd-tcp-address` / `--nsqd-http-address`.
pub async fn run(mode: Mode, args: &BenchArgs) -> Result<QueueReport> {
    let w = Workload::from_args(args, &args.nsqd_tcp_address);
    let q = QueueArgs::from_args(args);
    let topic = args
        .topic
        .clone()
        .unwrap_or_else(|| topic_name(&w, &mode.name().replace('-', "_")));
    match mode {
        Mode::HttpConsume => {
            let (publish, consume) = consume::http_consume(&w, &q, &topic).await?;
            Ok(QueueReport::Consume {
                mode: mode.name().to_string(),
                publish,
                consume,
            })
        }
        Mode::Sse => {
            let (publish, consume) = sse::sse(&w, &q, &topic).await?;
            Ok(QueueReport::Consume {
                mode: mode.name().to_string(),
                publish,
                consume,
            })
        }
        Mode::Ordered => Ok(QueueReport::Ordered(ordered::run(&w, &q, &topic).await?)),
        other => Err(err(format!("{} is not a queue mode", other.name()))),
    }
}
