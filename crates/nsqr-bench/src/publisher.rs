//! Publishing connections, each an `nsqr_client::Producer`: MPUB batches, a batch counted as
//! acknowledged when its `OK` arrives. Like nsq's bench_writer a connection waits for each `OK`
//! before the next batch unless `pipeline` > 1 allows that many batches in flight.

use std::collections::VecDeque;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nsqr_client::{Config, Producer, Publish};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::body::BodyBatch;
use crate::fail::{err, Result, IO_TIMEOUT};
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
    /// Publish-to-`OK` time of every acknowledged batch, in nanoseconds, unsorted.
    pub batch_latency_ns: Vec<u64>,
    pub elapsed: Duration,
}

/// The client configuration of the benchmark's connections.
pub fn bench_config() -> Config {
    let mut c = Config::default();
    c.client_id = "nsqr-bench".into();
    c.hostname = "nsqr-bench".into();
    c.user_agent = concat!("nsqr-bench/", env!("CARGO_PKG_VERSION")).into();
    c.dial_timeout = IO_TIMEOUT;
    c.write_timeout = IO_TIMEOUT;
    c
}

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
    tasks: Vec<JoinHandle<Result<Answered>>>,
    go_tx: watch::Sender<Option<Instant>>,
}

impl PubGroup {
    /// Connect and IDENTIFY `spec.connections` connections to `spec.addr`.
    pub async fn connect(spec: &PubSpec, counters: &Arc<Counters>) -> Result<PubGroup> {
        let n = spec.connections.max(1);
        let mut conns = Vec::with_capacity(n);
        for _ in 0..n {
            let p = Producer::connect(&spec.addr, bench_config())
                .await
                .map_err(|e| err(format!("publishing to {}: {e}", spec.addr)))?;
            conns.push(p);
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
                Ok(Ok(a)) => {
                    out.sent += a.sent;
                    out.acked += a.acked;
                    out.acked_by_publisher.push(a.acked);
                    out.batch_latency_ns.extend(a.latency_ns);
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

/// What one connection sent and got acknowledged, with each batch's publish-to-`OK` time.
#[derive(Default)]
struct Answered {
    sent: u64,
    acked: u64,
    latency_ns: Vec<u64>,
}

/// One connection's loop.
async fn publish(
    conn: Producer,
    spec: &PubSpec,
    idx: u8,
    quota: Option<u64>,
    counters: &Counters,
    mut go: watch::Receiver<Option<Instant>>,
) -> Result<Answered> {
    let batch = BodyBatch::new(spec.size);
    let capacity = spec.batch_size.max(1) as u64;
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
    let mut in_flight: VecDeque<InFlight> = VecDeque::with_capacity(pipeline);
    let mut out = Answered::default();
    let mut sent = 0u64;
    loop {
        let now = Instant::now();
        // A timed run at full speed sends at least one batch per connection, as bench_writer
        // does (so every topic exists on every node even on a machine too busy to start within
        // the time).
        let timed_out = deadline.is_some_and(|d| now >= d) && (sent > 0 || rate.is_some());
        if timed_out || quota.is_some_and(|q| sent >= q) {
            break;
        }
        let mut n = capacity;
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
        let bodies = batch.stamp(n as usize, spec.tag, idx, sent, sent_ns);
        in_flight.push_back((
            n,
            Instant::now(),
            conn.multi_publish_async(&spec.topic, bodies),
        ));
        sent += n;
        counters.sent.fetch_add(n, Relaxed);
        if in_flight.len() >= pipeline {
            answer(&mut in_flight, counters, &mut out).await?;
        }
    }
    while !in_flight.is_empty() {
        answer(&mut in_flight, counters, &mut out).await?;
    }
    conn.stop().await;
    out.sent = sent;
    Ok(out)
}

/// A batch sent and not yet answered: its message count and when it was sent.
type InFlight = (u64, Instant, Publish);

/// Wait for the oldest batch's answer and count it in `out`.
async fn answer(
    in_flight: &mut VecDeque<InFlight>,
    counters: &Counters,
    out: &mut Answered,
) -> Result<()> {
    let Some((k, at, answer)) = in_flight.pop_front() else {
        return Ok(());
    };
    tokio::time::timeout(IO_TIMEOUT, answer)
        .await
        .map_err(|_| err(format!("MPUB: no response within {IO_TIMEOUT:?}")))?
        .map_err(|e| err(format!("MPUB: {e}")))?;
    out.latency_ns.push(at.elapsed().as_nanos() as u64);
    out.acked += k;
    counters.acked.fetch_add(k, Relaxed);
    Ok(())
}
