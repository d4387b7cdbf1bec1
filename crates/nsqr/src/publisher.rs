//! Publishing connections: each sends MPUB batches (one write per batch) and counts a batch as
//! acknowledged when its `OK` arrives. Like nsq's bench_writer a connection waits for each `OK`
//! before the next batch unless `pipeline` > 1 allows that many batches in flight.

use std::collections::VecDeque;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::body::MpubBatch;
use crate::client::{err, Conn, Result};
use crate::progress::Counters;

/// When publishing stops.
#[derive(Debug, Clone, Copy)]
pub enum Stop {
    /// Keep going for this long (the last batch may end a little later).
    After(Duration),
    /// Exactly this many messages, split across the connections.
    Count(u64),
}

#[derive(Debug, Clone)]
pub struct PubSpec {
    pub addr: String,
    pub topic: String,
    pub size: usize,
    pub batch_size: usize,
    pub connections: usize,
    pub pipeline: usize,
    pub stop: Stop,
    /// Messages per second across all connections (latency mode); None = as fast as possible.
    pub rate: Option<f64>,
    pub tag: u16,
    /// Timestamps in bodies are nanoseconds since this instant.
    pub t0: Instant,
}

#[derive(Debug, Clone, Default)]
pub struct PubOutcome {
    pub sent: u64,
    pub acked: u64,
    /// Acknowledged messages per publisher index (sequence numbers 0..n).
    pub acked_by_publisher: Vec<u64>,
    pub elapsed: Duration,
}

pub const IDENTIFY_JSON: &str = concat!(
    r#"{"client_id":"nsqr-bench","hostname":"nsqr-bench","user_agent":"nsqr-bench/"#,
    env!("CARGO_PKG_VERSION"),
    r#""}"#
);

/// Connect every publisher, start them together, and wait for all of them.
pub async fn run(spec: &PubSpec, counters: &Arc<Counters>) -> Result<PubOutcome> {
    let group = PubGroup::connect(spec, counters).await?;
    group.go();
    group.finish().await
}

/// Publishing connections that are connected and identified, and start on [`PubGroup::go`]
/// (so several groups, e.g. one per node and topic in `cluster`, can start together).
pub struct PubGroup {
    addr: String,
    tasks: Vec<JoinHandle<Result<(u64, u64)>>>,
    go_tx: watch::Sender<Option<Instant>>,
}

impl PubGroup {
    /// Connect and IDENTIFY `spec.connections` connections to `spec.addr`.
    pub async fn connect(spec: &PubSpec, counters: &Arc<Counters>) -> Result<PubGroup> {
        let n = spec.connections.max(1);
        let mut conns = Vec::with_capacity(n);
        for _ in 0..n {
            let mut c = Conn::connect(&spec.addr).await?;
            c.identify(IDENTIFY_JSON).await?;
            conns.push(c);
        }
        let (go_tx, go_rx) = watch::channel(None::<Instant>);
        let mut tasks = Vec::with_capacity(n);
        for (i, conn) in conns.into_iter().enumerate() {
            let quota = match spec.stop {
                Stop::Count(total) => {
                    Some(total / n as u64 + u64::from((i as u64) < total % n as u64))
                }
                Stop::After(_) => None,
            };
            let spec = spec.clone();
            let counters = Arc::clone(counters);
            let go = go_rx.clone();
            tasks.push(tokio::spawn(async move {
                publish(conn, &spec, i as u8, quota, &counters, go).await
            }));
        }
        Ok(PubGroup {
            addr: spec.addr.clone(),
            tasks,
            go_tx,
        })
    }

    /// Start publishing; returns the start time.
    pub fn go(&self) -> Instant {
        let start = Instant::now();
        let _ = self.go_tx.send(Some(start));
        start
    }

    /// Wait for every connection to finish; counts per publisher index. A group that was
    /// never started is closed with nothing published.
    pub async fn finish(self) -> Result<PubOutcome> {
        let Some(start) = *self.go_tx.borrow() else {
            self.tasks.iter().for_each(JoinHandle::abort);
            return Ok(PubOutcome::default());
        };
        let mut out = PubOutcome::default();
        let mut first_err = None;
        for t in self.tasks {
            match t.await {
                Ok(Ok((sent, acked))) => {
                    out.sent += sent;
                    out.acked += acked;
                    out.acked_by_publisher.push(acked);
                }
                Ok(Err(e)) => {
                    first_err.get_or_insert(e);
                }
                Err(e) => {
                    first_err.get_or_insert(err(format!("publisher task failed: {e}")));
                }
            }
        }
        out.elapsed = start.elapsed();
        match first_err {
            Some(e) => Err(err(format!("publishing to {}: {e}", self.addr))),
            None => Ok(out),
        }
    }
}

/// One connection's loop; returns (sent, acknowledged).
async fn publish(
    mut conn: Conn,
    spec: &PubSpec,
    idx: u8,
    quota: Option<u64>,
    counters: &Counters,
    mut go: watch::Receiver<Option<Instant>>,
) -> Result<(u64, u64)> {
    let mut batch = MpubBatch::new(&spec.topic, spec.size, spec.batch_size);
    let start = *go
        .wait_for(Option::is_some)
        .await
        .map_err(|_| err("start signal lost"))?;
    let start = start.unwrap_or_else(Instant::now);
    let deadline = match spec.stop {
        Stop::After(d) => Some(start + d),
        Stop::Count(_) => None,
    };
    let rate = spec.rate.map(|r| r / spec.connections.max(1) as f64);
    let pipeline = spec.pipeline.max(1);
    let mut in_flight: VecDeque<u64> = VecDeque::with_capacity(pipeline);
    let (mut sent, mut acked) = (0u64, 0u64);
    loop {
        let now = Instant::now();
        // A timed run at full speed sends at least one batch per connection, as bench_writer
        // does (so every topic exists on every node even on a machine too busy to start within
        // the time).
        let timed_out = deadline.is_some_and(|d| now >= d) && (sent > 0 || rate.is_some());
        if timed_out || quota.is_some_and(|q| sent >= q) {
            break;
        }
        let mut n = batch.capacity() as u64;
        if let Some(q) = quota {
            n = n.min(q - sent);
        }
        if let Some(r) = rate {
            let due = ((now - start).as_secs_f64() * r) as u64;
            if due <= sent {
                let next = start + Duration::from_secs_f64((sent + 1) as f64 / r);
                tokio::time::sleep_until(next.min(deadline.unwrap_or(next)).into()).await;
                continue;
            }
            n = n.min(due - sent);
        }
        let sent_ns = spec.t0.elapsed().as_nanos() as u64;
        let bytes = batch.stamp(n as usize, spec.tag, idx, sent, sent_ns);
        conn.stream.write_all(bytes).await?;
        sent += n;
        counters.sent.fetch_add(n, Relaxed);
        in_flight.push_back(n);
        if in_flight.len() >= pipeline {
            conn.expect_response("MPUB").await?;
            let k = in_flight.pop_front().unwrap_or(0);
            acked += k;
            counters.acked.fetch_add(k, Relaxed);
        }
    }
    while let Some(k) = in_flight.pop_front() {
        conn.expect_response("MPUB").await?;
        acked += k;
        counters.acked.fetch_add(k, Relaxed);
    }
    Ok((sent, acked))
}
