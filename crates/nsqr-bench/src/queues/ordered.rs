//! `nsqr-bench ordered`: what order costs. One topic with two channels, `plain` and `ordered`
//! (`"ordered": true`), pre-filled over HTTP with `--count` messages spread over `--keys`
//! ordering keys (`/mpub?binary=true&ordering_key=K`, `--http-batch` messages per request and
//! key, the keys taken in turn), then each channel consumed over TCP (one connection, `--rdy`,
//! a FIN per message) and timed at the receiver. Counts are exact, and the ordered channel is
//! checked: within each key, messages must arrive in publish order.
//!
//! A third channel, `keeper`, is never consumed. Every channel of a topic shares the
//! published buffers, and a buffer is freed when the last channel finishes its messages;
//! without `keeper`, whichever channel ran second would pay for freeing the whole backlog and
//! the ratio would depend on the order of the two phases. With it, neither timed phase frees
//! anything (the backlog stays with `keeper` until the topic goes).

use std::collections::HashMap;
use std::time::Instant;

use bytes::Bytes;
use serde::Serialize;

use super::http::HttpConn;
use super::QueueSpec;
use crate::body::{self, HEADER_LEN};
use crate::fail::{err, Result};
use crate::modes::Workload;
use crate::publisher::PubOutcome;
use crate::stats::rate;
use crate::tracker::Tracker;
use nsqr_client::{Consumer, Reply};

/// Publishing tasks for the pre-fill; each owns the keys `p, p + PUBLISHERS, ...`.
const PUBLISHERS: usize = 4;

/// One channel's consumption.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ChannelRun {
    pub channel: String,
    pub expected: u64,
    pub received: u64,
    pub unique: u64,
    pub duplicates: u64,
    pub lost: u64,
    /// Messages that arrived before an earlier message of their key (ordered channel).
    pub out_of_order: u64,
    pub elapsed_s: f64,
    pub msgs_per_sec: f64,
}

/// The whole run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct OrderedReport {
    pub keys: usize,
    pub count: u64,
    pub prefill_s: f64,
    pub plain: ChannelRun,
    pub ordered: ChannelRun,
    /// ordered msgs/s over plain msgs/s.
    pub ratio: f64,
}

/// The key of publisher `p`'s message `seq`: its batches take the publisher's keys in turn.
fn key_of(p: usize, seq: u64, batch: usize, keys: usize) -> usize {
    let own = keys.div_ceil(PUBLISHERS).max(1);
    let k = p + PUBLISHERS * ((seq as usize / batch) % own);
    if k < keys {
        k
    } else {
        p
    }
}

/// `/mpub?binary=true` body for `n` messages of publisher `p` from `first`.
fn binary_batch(w: &Workload, p: usize, first: u64, n: usize) -> Bytes {
    let size = w.size.max(HEADER_LEN);
    let mut b = Vec::with_capacity(4 + n * (4 + size));
    b.extend_from_slice(&(n as u32).to_be_bytes());
    let sent = w.t0.elapsed().as_nanos() as u64;
    for i in 0..n as u64 {
        b.extend_from_slice(&(size as u32).to_be_bytes());
        b.extend_from_slice(&body::seq_word(w.tag, p as u8, first + i).to_be_bytes());
        b.extend_from_slice(&sent.to_be_bytes());
        b.resize(b.len() + size - HEADER_LEN, b'x');
    }
    Bytes::from(b)
}

async fn prefill(w: &Workload, q: &QueueSpec, topic: &str, count: u64) -> Result<PubOutcome> {
    let start = Instant::now();
    let per = count.div_ceil(PUBLISHERS as u64);
    let mut tasks = Vec::new();
    for p in 0..PUBLISHERS {
        let mut c = HttpConn::connect(&q.http_address).await?;
        let (w, topic, batch, keys) = (w.clone(), topic.to_string(), q.batch, q.keys);
        let total = per.min(count.saturating_sub(per * p as u64));
        tasks.push(tokio::spawn(async move {
            let mut seq = 0u64;
            while seq < total {
                let n = (batch as u64).min(total - seq) as usize;
                let key = key_of(p, seq, batch, keys);
                let path = format!("/mpub?topic={topic}&binary=true&ordering_key=k{key}");
                c.call("POST", &path, binary_batch(&w, p, seq, n)).await?;
                seq += n as u64;
            }
            Ok::<u64, crate::fail::Error>(seq)
        }));
    }
    let mut acked_by_publisher = Vec::new();
    for t in tasks {
        acked_by_publisher.push(t.await.map_err(|e| err(e.to_string()))??);
    }
    let acked = acked_by_publisher.iter().sum();
    Ok(PubOutcome {
        sent: acked,
        acked,
        acked_by_publisher,
        elapsed: start.elapsed(),
        ..Default::default()
    })
}

/// Consume `channel` over TCP until every message came (or none came for the drain timeout).
async fn consume(
    w: &Workload,
    q: &QueueSpec,
    topic: &str,
    channel: &str,
    published: &PubOutcome,
) -> Result<ChannelRun> {
    let mut config = w.sub_config.clone();
    config.max_in_flight = w.rdy;
    let mut c = Consumer::new(topic, channel, config).map_err(|e| err(e.to_string()))?;
    c.connect(&w.addr)
        .await
        .map_err(|e| err(format!("consuming from {}: {e}", w.addr)))?;
    let start = Instant::now();
    let mut t = Tracker::new(w.tag);
    let (mut received, mut out_of_order) = (0u64, 0u64);
    let mut last_seq: HashMap<usize, u64> = HashMap::new();
    let mut last = start;
    while received < published.acked {
        let batch = c.next_batch(|m| {
            received += 1;
            t.record(m.body());
            if let Some(h) = body::decode(m.body()).filter(|h| h.tag == w.tag) {
                let k = key_of(h.publisher as usize, h.seq, q.batch, q.keys);
                let prev = last_seq.insert(k, h.seq);
                out_of_order += u64::from(prev.is_some_and(|p| p > h.seq));
            }
            Reply::Finish
        });
        match tokio::time::timeout(w.drain_timeout, batch).await {
            Ok(Some(_)) => last = Instant::now(),
            Ok(None) | Err(_) => break,
        }
    }
    c.stop().await;
    let secs = last.saturating_duration_since(start).as_secs_f64();
    Ok(ChannelRun {
        channel: channel.to_string(),
        expected: published.acked,
        received,
        unique: t.unique,
        duplicates: t.duplicates,
        lost: t.lost(&published.acked_by_publisher),
        out_of_order,
        elapsed_s: secs,
        msgs_per_sec: rate(received, secs),
    })
}

/// `nsqr-bench ordered`.
pub async fn run(w: &Workload, q: &QueueSpec, topic: &str) -> Result<OrderedReport> {
    let mut c = HttpConn::connect(&q.http_address).await?;
    for (ch, settings) in [
        ("plain", "{}"),
        ("ordered", r#"{"ordered": true}"#),
        ("keeper", "{}"),
    ] {
        c.call(
            "POST",
            &format!("/channel/config?topic={topic}&channel={ch}"),
            Bytes::from(settings),
        )
        .await?;
    }
    let count = q.count(100_000);
    let published = prefill(w, q, topic, count).await?;
    let plain = consume(w, q, topic, "plain", &published).await?;
    let ordered = consume(w, q, topic, "ordered", &published).await?;
    Ok(OrderedReport {
        keys: q.keys,
        count: published.acked,
        prefill_s: published.elapsed.as_secs_f64(),
        ratio: if plain.msgs_per_sec > 0.0 {
            ordered.msgs_per_sec / plain.msgs_per_sec
        } else {
            0.0
        },
        plain,
        ordered,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_belong_to_one_publisher_and_rotate() {
        let keys = 1000;
        for p in 0..PUBLISHERS {
            for seq in (0..100_000).step_by(7) {
                let k = key_of(p, seq, 10, keys);
                assert!(k < keys);
                assert_eq!(k % PUBLISHERS, p % PUBLISHERS, "owned by its publisher");
            }
        }
        let used: std::collections::HashSet<usize> = (0..PUBLISHERS)
            .flat_map(|p| (0..10_000u64).map(move |s| key_of(p, s * 10, 10, keys)))
            .collect();
        assert_eq!(used.len(), keys, "every key is used");
        assert_eq!(key_of(1, 0, 10, 3), 1);
    }
}
