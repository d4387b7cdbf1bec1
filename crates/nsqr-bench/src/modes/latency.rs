//! `nsqr-bench latency`: publish at a fixed `--rate` while consuming; each body carries its send
//! time, so the consumer measures publish-to-deliver latency of every message. The flow is
//! pubsub's ([`super::pubsub::flow`]) with a rate.

use super::pubsub;
use super::Workload;
use crate::fail::Result;
use crate::report::{LatencyStats, PubStats, SubStats};

pub async fn run(w: &Workload, topic: &str) -> Result<(PubStats, SubStats, LatencyStats)> {
    let (p, s, mut o) = pubsub::flow(w, topic, w.size, Some(w.rate), "latency").await?;
    let l = LatencyStats::new(w.rate, std::mem::take(&mut o.latencies_ns));
    Ok((p, s, l))
}
