//! Consuming connections: SUB, RDY, and a FIN for every message. Each read is parsed in place
//! and all the FINs it calls for go out in one write. Every body is checked off in a per-
//! connection [`Tracker`]; the trackers are merged at the end for exact loss/duplicate counts.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::client::{err, put_fin, put_nop, put_rdy, put_sub, Conn, Frame, Result};
use crate::progress::Counters;
use crate::tracker::Tracker;

#[derive(Debug, Clone)]
pub struct SubSpec {
    pub addr: String,
    pub topic: String,
    pub channel: String,
    pub connections: usize,
    pub rdy: u32,
    /// IDENTIFY body sent before SUB.
    pub identify: String,
    pub tag: u16,
    pub t0: Instant,
    /// Keep every message's publish-to-receive latency.
    pub record_latency: bool,
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
    stop_tx: watch::Sender<bool>,
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
            stop_tx: watch::channel(false).0,
            counters: Arc::clone(counters),
        }
    }

    /// One more connection to `spec.addr`: connected, identified and subscribed, waiting for
    /// [`SubGroup::go`] (`spec.connections` is not used here).
    pub async fn add(&mut self, spec: &SubSpec) -> Result<()> {
        let mut c = Conn::connect(&spec.addr).await?;
        c.identify(&spec.identify).await?;
        put_sub(&mut c.wbuf, &spec.topic, &spec.channel);
        c.flush().await?;
        c.expect_response("SUB").await?;
        let (spec, counters) = (spec.clone(), Arc::clone(&self.counters));
        let (go, stop) = (self.go_tx.subscribe(), self.stop_tx.subscribe());
        self.tasks.push(tokio::spawn(async move {
            consume(c, &spec, &counters, go, stop).await
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
        self.stop_tx.send_replace(true);
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
    mut conn: Conn,
    spec: &SubSpec,
    counters: &Counters,
    mut go: watch::Receiver<bool>,
    mut stop: watch::Receiver<bool>,
) -> Result<SubOutcome> {
    let mut out = SubOutcome {
        tracker: Tracker::new(spec.tag),
        ..Default::default()
    };
    tokio::select! {
        r = go.wait_for(|g| *g) => { r.map_err(|_| err("start signal lost"))?; }
        _ = stop.wait_for(|s| *s) => return Ok(out),
    }
    put_rdy(&mut conn.wbuf, spec.rdy);
    conn.flush().await?;
    loop {
        tokio::select! {
            biased;
            _ = stop.wait_for(|s| *s) => break,
            r = conn.reader.fill(&mut conn.stream) => r?,
        }
        let now = Instant::now();
        let now_ns = if spec.record_latency {
            now.duration_since(spec.t0).as_nanos() as u64
        } else {
            0
        };
        let mut n = 0u64;
        while let Some(frame) = conn.reader.next_frame()? {
            match frame {
                Frame::Message(m) => {
                    n += 1;
                    out.redelivered += u64::from(m.attempts > 1);
                    let sent_ns = out.tracker.record(m.body);
                    if let (true, Some(s)) = (spec.record_latency, sent_ns) {
                        out.latencies_ns.push(now_ns.saturating_sub(s));
                    }
                    put_fin(&mut conn.wbuf, m.id);
                }
                Frame::Response(b"_heartbeat_") => put_nop(&mut conn.wbuf),
                Frame::Response(_) => {}
                Frame::Error(e) if e.starts_with(b"E_FIN_FAILED") => out.fin_errors += 1,
                Frame::Error(e) => {
                    return Err(err(format!("server error: {}", String::from_utf8_lossy(e))))
                }
            }
        }
        if n > 0 {
            out.first_recv.get_or_insert(now);
            out.last_recv = Some(now);
            out.received += n;
            counters.received.fetch_add(n, Relaxed);
        }
        conn.flush().await?;
        if n > 0 {
            out.finned += n;
            counters.finned.fetch_add(n, Relaxed);
        }
    }
    Ok(out)
}
