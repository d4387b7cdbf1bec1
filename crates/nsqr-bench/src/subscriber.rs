//! Consuming connections, each an `nsqr_client::Consumer` of one nsqd: SUB, RDY on the start
//! signal, and a FIN for every message. Every body is checked off in a per-connection
//! [`Tracker`]; the trackers are merged at the end for exact loss/duplicate counts.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nsqr_client::{Config, Consumer, Reply, Stopper};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::fail::{err, Result};
use crate::progress::Counters;
use crate::tracker::Tracker;

#[derive(Debug, Clone)]
pub struct SubSpec {
    pub addr: String,
    pub topic: String,
    pub channel: String,
    pub connections: usize,
    pub rdy: u32,
    /// The consumers' client settings (IDENTIFY).
    pub config: Config,
    pub tag: u16,
    pub t0: Instant,
    /// Keep every message's publish-to-receive latency.
    pub record_latency: bool,
}
/// Create `topic` and its `channel` on the nsqd at `addr` as bench.sh does: a SUB (with RDY
/// 0), then the connection is closed; the channel stays.
pub async fn create_channel(addr: &str, topic: &str, channel: &str, config: &Config) -> Result<()> {
    let mut config = config.clone();
    config.max_in_flight = 0;
    let mut c = Consumer::new(topic, channel, config).map_err(|e| err(e.to_string()))?;
    c.connect(addr)
        .await
        .map_err(|e| err(format!("SUB {topic} {channel} on {addr}: {e}")))?;
    c.stop().await;
    Ok(())
}

/// What the consumers saw, merged over all connections.
#[derive(Debug, Default)]
pub struct SubOutcome {
    pub received: u64,
    pub finned: u64,
    pub fin_errors: u64,
    /// Deliveries with attempts > 1 (the server redelivered after a timeout or requeue).
    pub redelivered: u64,
    pub tracker: Tracker,
    pub first_recv: Option<Instant>,
    pub last_recv: Option<Instant>,
    /// Nanoseconds, unsorted (latency mode only).
    pub latencies_ns: Vec<u64>,
}

/// Subscribed connections that start consuming on [`SubGroup::go`].
pub struct SubGroup {
    tasks: Vec<JoinHandle<Result<SubOutcome>>>,
    go_tx: watch::Sender<bool>,
    stoppers: Vec<Stopper>,
    counters: Arc<Counters>,
}

impl SubGroup {
    /// Connect, IDENTIFY and SUB every connection (each waits for its `OK`s).
    pub async fn connect(spec: &SubSpec, counters: &Arc<Counters>) -> Result<SubGroup> {
        let mut g = SubGroup::empty(counters);
        for _ in 0..spec.connections.max(1) {
            g.add(spec).await?;
        }
        Ok(g)
    }

    /// A group without connections yet (see [`SubGroup::add`]).
    pub fn empty(counters: &Arc<Counters>) -> SubGroup {
        SubGroup {
            tasks: Vec::new(),
            go_tx: watch::channel(false).0,
            stoppers: Vec::new(),
            counters: Arc::clone(counters),
        }
    }

    /// One more connection to `spec.addr`: connected, identified and subscribed, waiting for
    /// [`SubGroup::go`] (`spec.connections` is not used here).
    pub async fn add(&mut self, spec: &SubSpec) -> Result<()> {
        // RDY 0 until the start signal.
        let mut config = spec.config.clone();
        config.max_in_flight = 0;
        let mut c =
            Consumer::new(&spec.topic, &spec.channel, config).map_err(|e| err(e.to_string()))?;
        c.connect(&spec.addr)
            .await
            .map_err(|e| err(format!("consuming from {}: {e}", spec.addr)))?;
        self.stoppers.push(c.stopper());
        let (spec, counters) = (spec.clone(), Arc::clone(&self.counters));
        let go = self.go_tx.subscribe();
        self.tasks.push(tokio::spawn(async move {
            consume(c, &spec, &counters, go).await
        }));
        Ok(())
    }

    /// Send RDY on every connection; returns the start time.
    pub fn go(&self) -> Instant {
        let now = Instant::now();
        self.go_tx.send_replace(true);
        now
    }

    /// Wait until `expected` messages arrived, or none arrived for `idle`, then stop and merge.
    pub async fn finish(self, expected: u64, idle: Duration) -> Result<SubOutcome> {
        let (mut last, mut since) = (u64::MAX, Instant::now());
        loop {
            let got = self.counters.received.load(Relaxed);
            if got >= expected || self.tasks.iter().any(|t| t.is_finished()) {
                break;
            }
            if got != last {
                (last, since) = (got, Instant::now());
            } else if since.elapsed() >= idle {
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        for s in &self.stoppers {
            s.stop();
        }
        let mut all = SubOutcome::default();
        let mut first_err = None;
        for t in self.tasks {
            match t.await {
                Ok(Ok(o)) => {
                    all.received += o.received;
                    all.finned += o.finned;
                    all.fin_errors += o.fin_errors;
                    all.redelivered += o.redelivered;
                    all.tracker.merge(o.tracker);
                    all.first_recv = min_opt(all.first_recv, o.first_recv);
                    all.last_recv = all.last_recv.max(o.last_recv);
                    all.latencies_ns.extend(o.latencies_ns);
                }
                Ok(Err(e)) => {
                    first_err.get_or_insert(e);
                }
                Err(e) => {
                    first_err.get_or_insert(err(format!("consumer task failed: {e}")));
                }
            }
        }
        match first_err {
            Some(e) => Err(err(format!("consuming: {e}"))),
            None => Ok(all),
        }
    }
}

fn min_opt(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

async fn consume(
    mut consumer: Consumer,
    spec: &SubSpec,
    counters: &Counters,
    mut go: watch::Receiver<bool>,
) -> Result<SubOutcome> {
    let mut out = SubOutcome {
        tracker: Tracker::new(spec.tag),
        ..Default::default()
    };
    // Stopped before the start: next() returns None at once.
    let started = tokio::select! {
        r = go.wait_for(|g| *g) => r.is_ok(),
        m = consumer.next() => { drop(m); false }
    };
    if started {
        consumer.change_max_in_flight(spec.rdy);
    }
    // Each read's messages are handled in place and timed together, as they arrived.
    loop {
        let (tracker, latencies) = (&mut out.tracker, &mut out.latencies_ns);
        let mut redelivered = 0;
        let mut arrived_ns = None;
        let handled = consumer.next_batch(|m| {
            redelivered += u64::from(m.attempts() > 1);
            let sent_ns = tracker.record(m.body());
            if let (true, Some(s)) = (spec.record_latency, sent_ns) {
                let now_ns = *arrived_ns.get_or_insert_with(|| spec.t0.elapsed().as_nanos() as u64);
                latencies.push(now_ns.saturating_sub(s));
            }
            Reply::Finish
        });
        let Some(n) = handled.await else { break };
        let n = n as u64;
        let now = Instant::now();
        out.first_recv.get_or_insert(now);
        out.last_recv = Some(now);
        out.redelivered += redelivered;
        out.received += n;
        out.finned += n;
        counters.received.fetch_add(n, Relaxed);
        counters.finned.fetch_add(n, Relaxed);
    }
    consumer.stop().await;
    Ok(out)
}
