//! `nsqr-bench pubsub`: consumers subscribe first, then publishers run for `--duration`; the
//! consumers drain what was acknowledged. Consuming is timed at the receiver. `latency` is the
//! same flow at a fixed rate ([`flow`]).

use super::Workload;
use crate::fail::Result;
use crate::progress::{Counters, Progress};
use crate::publisher::{self, Stop};
use crate::report::{PubStats, SubStats};
use crate::subscriber::{SubGroup, SubOutcome};

pub async fn run(w: &Workload, topic: &str, size: usize) -> Result<(PubStats, SubStats)> {
    let (p, s, _) = flow(w, topic, size, None, "pubsub").await?;
    Ok((p, s))
}

/// Subscribe, publish `size`-byte bodies for `--duration`, then drain what was acknowledged.
/// With a `rate` (messages a second) publishers keep to it and the consumers record every
/// delivery's latency, which the returned outcome holds.
pub(super) async fn flow(
    w: &Workload,
    topic: &str,
    size: usize,
    rate: Option<f64>,
    label: &str,
) -> Result<(PubStats, SubStats, SubOutcome)> {
    let counters = Counters::new();
    let sspec = w.sub_spec(topic, rate.is_some());
    let group = SubGroup::connect(&sspec, &counters).await?;
    let _progress = Progress::start(w.progress, label, &counters);
    let pspec = w.pub_spec(topic, size, Stop::After(w.duration), rate);
    let start = group.go();
    let published = match publisher::run(&pspec, &counters).await {
        Ok(p) => p,
        Err(e) => {
            let _ = group.finish(0, w.drain_timeout).await;
            return Err(e);
        }
    };
    let o = group.finish(published.acked, w.drain_timeout).await?;
    let p = PubStats::new(
        &published,
        pspec.connections,
        size,
        pspec.batch_size,
        pspec.pipeline,
    );
    let s = SubStats::new(&o, &published, start, size, sspec.connections, sspec.rdy);
    Ok((p, s, o))
}
