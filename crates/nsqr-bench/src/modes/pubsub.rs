//! `nsqr-bench pubsub`: consumers subscribe first, then publishers run for `--duration`; the
//! consumers drain what was acknowledged. Consuming is timed at the receiver.

use super::Workload;
use crate::fail::Result;
use crate::progress::{Counters, Progress};
use crate::publisher::{self, Stop};
use crate::report::{PubStats, SubStats};
use crate::subscriber::SubGroup;

pub async fn run(w: &Workload, topic: &str, size: usize) -> Result<(PubStats, SubStats)> {
    let counters = Counters::new();
    let sspec = w.sub_spec(topic, false);
    let group = SubGroup::connect(&sspec, &counters).await?;
    let _progress = Progress::start(w.progress, "pubsub", &counters);
    let pspec = w.pub_spec(topic, size, Stop::After(w.duration), None);
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
    Ok((p, s))
}
