//! `nsqr-bench sub`: pre-fill a topic, then consume it (SUB, RDY, a FIN per message) like nsq's
//! bench_reader, timed at the receiver from RDY to the last message.

use super::{publish_phase, Workload};
use crate::fail::Result;
use crate::progress::{Counters, Progress};
use crate::publisher::{PubOutcome, Stop};
use crate::report::{PubStats, SubStats};
use crate::subscriber::SubGroup;

pub async fn run(w: &Workload, topic: &str) -> Result<(PubStats, SubStats)> {
    let stop = match w.count {
        Some(n) => Stop::Count(n),
        None => Stop::After(w.duration),
    };
    let (p, outcome) = publish_phase(w, topic, w.size, stop, "sub: pre-fill").await?;
    let s = consume(w, topic, &outcome).await?;
    Ok((p, s))
}

/// Consume everything `published` put on `topic`.
pub async fn consume(w: &Workload, topic: &str, published: &PubOutcome) -> Result<SubStats> {
    let counters = Counters::new();
    let spec = w.sub_spec(topic, false);
    let group = SubGroup::connect(&spec, &counters).await?;
    let _progress = Progress::start(w.progress, "sub", &counters);
    let start = group.go();
    let o = group.finish(published.acked, w.drain_timeout).await?;
    Ok(SubStats::new(
        &o,
        published,
        start,
        w.size,
        spec.connections,
        spec.rdy,
    ))
}
