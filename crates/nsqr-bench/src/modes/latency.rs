//! `nsqr-bench latency`: publish at a fixed `--rate` while consuming; each body carries its send
//! time, so the consumer measures publish-to-deliver latency of every message.

use super::Workload;
use crate::fail::Result;
use crate::progress::{Counters, Progress};
use crate::publisher::{self, Stop};
use crate::report::{LatencyStats, PubStats, SubStats};
use crate::subscriber::SubGroup;

pub async fn run(w: &Workload, topic: &str) -> Result<(PubStats, SubStats, LatencyStats)> {
    let counters = Counters::new();
    let sspec = w.sub_spec(topic, true);
    let group = SubGroup::connect(&sspec, &counters).await?;
    let _progress = Progress::start(w.progress, "latency", &counters);
    let pspec = w.pub_spec(topic, w.size, Stop::After(w.duration), Some(w.rate));
    let start = group.go();
    let published = match publisher::run(&pspec, &counters).await {
        Ok(p) => p,
        Err(e) => {
            let _ = group.finish(0, w.drain_timeout).await;
            return Err(e);
        }
    };
    let mut o = group.finish(published.acked, w.drain_timeout).await?;
    let p = PubStats::new(
        &published,
        pspec.connections,
        w.size,
        pspec.batch_size,
        pspec.pipeline,
    );
    let s = SubStats::new(&o, &published, start, w.size, sspec.connections, sspec.rdy);
    let l = LatencyStats::new(w.rate, std::mem::take(&mut o.latencies_ns));
    Ok((p, s, l))
}
