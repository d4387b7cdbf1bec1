//! `nsqr-bench http-consume` and `nsqr-bench sse`: a topic pre-filled over TCP (`--count`
//! messages), then consumed over HTTP with every message acknowledged by receipt, counted
//! exactly (loss and duplicates, as the TCP modes do).
//!
//! - `http-consume`: `--http-consumers` (100) tasks, each on its own keep-alive connection,
//!   long-polling `/channel/receive` for `--http-batch` (10) messages and answering them
//!   with one `/message/fin` carrying all their receipts.
//! - `sse`: one `/channel/stream` with `max_in_flight` = `--rdy`, its receipts acknowledged
//!   in batches by four tasks on their own connections (`sse.rs`).
//!
//! Timed from the first receive to the last acknowledgement.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::http::HttpConn;
use super::QueueSpec;
use crate::fail::{err, Result};
use crate::modes::{publish_phase, Workload};
use crate::publisher::{PubOutcome, Stop};
use crate::report::PubStats;
use crate::stats::rate;
use crate::tracker::Tracker;

/// What the consumers saw.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ConsumeStats {
    pub consumers: usize,
    /// Messages per receive (http-consume) or in flight (sse).
    pub batch: usize,
    pub expected: u64,
    pub received: u64,
    pub acknowledged: u64,
    pub unique: u64,
    pub duplicates: u64,
    pub lost: u64,
    pub foreign: u64,
    pub redelivered: u64,
    pub requests: u64,
    pub elapsed_s: f64,
    pub msgs_per_sec: f64,
    /// With `--server-pid`: CPU per acknowledged message over the consume phase.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuPerMsg>,
}

/// CPU time per acknowledged message, server and client, over the consume phase.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CpuPerMsg {
    pub server_us_per_msg: f64,
    pub client_us_per_msg: f64,
}

/// The server's and this process's CPU time at the start of the consume phase.
pub(super) struct CpuMeter {
    pid: u32,
    server: Duration,
    client: Duration,
}

impl CpuMeter {
    /// Start measuring (None without `--server-pid`).
    pub(super) fn start(pid: Option<u32>) -> Result<Option<CpuMeter>> {
        let Some(pid) = pid else {
            return Ok(None);
        };
        Ok(Some(CpuMeter {
            pid,
            server: crate::procstat::precise_cpu_time(pid).map_err(err)?,
            client: crate::procstat::own_cpu_time().map_err(err)?,
        }))
    }

    /// CPU per message for `msgs` acknowledged since [`CpuMeter::start`].
    pub(super) fn per_msg(&self, msgs: u64) -> Result<CpuPerMsg> {
        let server = crate::procstat::precise_cpu_time(self.pid)
            .map_err(err)?
            .saturating_sub(self.server);
        let client = crate::procstat::own_cpu_time()
            .map_err(err)?
            .saturating_sub(self.client);
        let per = |d: Duration| d.as_secs_f64() * 1e6 / msgs.max(1) as f64;
        Ok(CpuPerMsg {
            server_us_per_msg: per(server),
            client_us_per_msg: per(client),
        })
    }
}

impl ConsumeStats {
    pub(super) fn new(
        t: &Tracker,
        published: &PubOutcome,
        n: &Totals,
        elapsed: Duration,
    ) -> ConsumeStats {
        let secs = elapsed.as_secs_f64();
        ConsumeStats {
            expected: published.acked,
            received: n.received.load(Relaxed),
            acknowledged: n.acked.load(Relaxed),
            unique: t.unique,
            duplicates: t.duplicates,
            lost: t.lost(&published.acked_by_publisher),
            foreign: t.foreign,
            redelivered: n.redelivered.load(Relaxed),
            requests: n.requests.load(Relaxed),
            elapsed_s: secs,
            msgs_per_sec: rate(n.acked.load(Relaxed), secs),
            ..ConsumeStats::default()
        }
    }
}

#[derive(Default)]
pub(super) struct Totals {
    pub(super) received: AtomicU64,
    pub(super) acked: AtomicU64,
    pub(super) redelivered: AtomicU64,
    pub(super) requests: AtomicU64,
}

/// One message as `/channel/receive` and `/channel/stream` give it.
#[derive(Deserialize)]
pub(super) struct Delivered {
    pub(super) receipt: String,
    pub(super) attempts: u16,
    pub(super) body: String,
}

/// One message of a long poll's answer, borrowed from it (base64 and receipts never hold
/// escapes): no string per message in the client, whose CPU shares the machine with the
/// server's.
#[derive(Deserialize)]
struct Polled<'a> {
    receipt: &'a str,
    attempts: u16,
    body: &'a str,
}

#[derive(Deserialize)]
struct Messages<'a> {
    #[serde(borrow)]
    messages: Vec<Polled<'a>>,
}

/// Create the channel (so the pre-fill reaches it), then pre-fill it over TCP.
pub(super) async fn prefill(
    w: &Workload,
    q: &QueueSpec,
    topic: &str,
    count: u64,
) -> Result<(PubStats, PubOutcome)> {
    let mut c = HttpConn::connect(&q.http_address).await?;
    c.call(
        "POST",
        &format!("/channel/config?topic={topic}&channel={}", w.channel),
        Bytes::from_static(b"{}"),
    )
    .await?;
    publish_phase(w, topic, w.size, Stop::Count(count), "pre-fill").await
}

/// Record a delivery's base64 `body`, decoded into `buf` (reused).
fn record_body(
    t: &mut Tracker,
    n: &Totals,
    body: &str,
    attempts: u16,
    buf: &mut Vec<u8>,
) -> Result<()> {
    buf.clear();
    STANDARD
        .decode_vec(body.as_bytes(), buf)
        .map_err(|e| err(format!("a body that is not base64: {e}")))?;
    t.record(buf);
    if attempts > 1 {
        n.redelivered.fetch_add(1, Relaxed);
    }
    Ok(())
}

/// `nsqr-bench http-consume`.
pub async fn http_consume(
    w: &Workload,
    q: &QueueSpec,
    topic: &str,
) -> Result<(PubStats, ConsumeStats)> {
    let (p, published) = prefill(w, q, topic, q.count(200_000)).await?;
    let totals = Arc::new(Totals::default());
    let cpu = CpuMeter::start(q.server_pid)?;
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..q.consumers {
        let mut conn = HttpConn::connect(&q.http_address).await?;
        let (totals, tag) = (Arc::clone(&totals), w.tag);
        let expected = published.acked;
        let idle = w.drain_timeout;
        let path = format!(
            "/channel/receive?topic={topic}&channel={}&max={}&wait=1s",
            w.channel, q.batch
        );
        tasks.push(tokio::spawn(async move {
            let mut t = Tracker::new(tag);
            let mut last = Instant::now();
            let mut done_at = None;
            let mut body = Vec::new();
            while totals.acked.load(Relaxed) < expected && last.elapsed() < idle {
                let answer = conn.call("POST", &path, Bytes::new()).await?;
                totals.requests.fetch_add(1, Relaxed);
                let got: Messages = serde_json::from_slice(&answer)?;
                if got.messages.is_empty() {
                    continue;
                }
                last = Instant::now();
                let n = got.messages.len() as u64;
                totals.received.fetch_add(n, Relaxed);
                let mut receipts = Vec::with_capacity(got.messages.len() * 80);
                for d in &got.messages {
                    record_body(&mut t, &totals, d.body, d.attempts, &mut body)?;
                    receipts.extend_from_slice(d.receipt.as_bytes());
                    receipts.push(b'\n');
                }
                conn.call("POST", "/message/fin", Bytes::from(receipts))
                    .await?;
                totals.requests.fetch_add(1, Relaxed);
                totals.acked.fetch_add(n, Relaxed);
                done_at = Some(Instant::now());
            }
            Ok::<_, crate::fail::Error>((t, done_at))
        }));
    }
    let mut tracker = Tracker::new(w.tag);
    let mut end = start;
    for task in tasks {
        let (t, done_at) = task.await.map_err(|e| err(e.to_string()))??;
        tracker.merge(t);
        end = end.max(done_at.unwrap_or(start));
    }
    let mut s = ConsumeStats::new(&tracker, &published, &totals, end - start);
    s.cpu = cpu.map(|c| c.per_msg(s.acknowledged)).transpose()?;
    s.consumers = q.consumers;
    s.batch = q.batch;
    Ok((p, s))
}
