//! `nsqr-bench pub`: MPUB batches for `--duration`, like nsq's bench_writer.

use super::{publish_phase, Workload};
use crate::fail::Result;
use crate::publisher::{PubOutcome, Stop};
use crate::report::PubStats;

pub async fn run(w: &Workload, topic: &str) -> Result<(PubStats, PubOutcome)> {
    let stop = match w.count {
        Some(n) => Stop::Count(n),
        None => Stop::After(w.duration),
    };
    publish_phase(w, topic, w.size, stop, "pub").await
}
