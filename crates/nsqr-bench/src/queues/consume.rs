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

#[derive(Deserialize)]
struct Messages {
    messages: Vec<Delivered>,
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

/// Record a delivery; returns its receipt.
fn record(t: &mut Tracker, n: &Totals, d: Delivered) -> Result<String> {
    let body = STANDARD
        .decode(d.body.as_bytes())
        .map_err(|e| err(format!("a body that is not base64: {e}")))?;
    t.record(&body);
    if d.attempts > 1 {
        n.redelivered.fetch_add(1, Relaxed);
    }
    Ok(d.receipt)
}

/// `nsqr-bench http-consume`.
pub async fn http_consume(
    w: &Workload,
    q: &QueueSpec,
    topic: &str,
) -> Result<(PubStats, ConsumeStats)> {
    let (p, published) = prefill(w, q, topic, q.count(200_000)).await?;
    let totals = Arc::new(Totals::default());
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
                let mut receipts = String::new();
                for d in got.messages {
                    receipts.push_str(&record(&mut t, &totals, d)?);
                    receipts.push('\n');
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
    s.consumers = q.consumers;
    s.batch = q.batch;
    Ok((p, s))
}
