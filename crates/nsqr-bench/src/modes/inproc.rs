//! `nsqr-bench inproc`: the embedded broker with no sockets. One task publishes batches
//! through a `Publisher`, another consumes through a `Subscription` and FINs every message,
//! for each of `--sizes`; timed at the receiver, from the first publish to the last message
//! received (ServerLink's method). It shows what the engine itself costs, and that bodies
//! are not copied: each received body is checked to be the very buffer published.

use std::time::{Duration, Instant};

use bytes::Bytes;
use nsqr_broker::{Broker, BrokerConfig, SubscribeOptions};
use serde::Serialize;

use crate::cli::InprocArgs;
use crate::fail::{err, Result};
use crate::report::{emit, Render, Table};
use crate::stats::{middle, sorted};

/// Messages per size when `--count` is not given: ten times ServerLink's cells, so a run
/// lasts long enough to time on a busy machine.
pub fn default_count(size: usize) -> u64 {
    10 * crate::transports::cells::default_count(size)
}

/// Distinct bodies cycled through (their bytes live in one buffer of at most 64 MiB).
fn ring_len(size: usize) -> usize {
    (64 << 20) / size.max(1)
}

/// One size, the median of the rounds.
#[derive(Debug, Clone, Serialize)]
pub struct InprocRow {
    pub size: usize,
    pub count: u64,
    pub rounds: usize,
    pub msgs_per_sec: f64,
    /// Lowest and highest of the rounds.
    pub msgs_per_sec_min: f64,
    pub msgs_per_sec_max: f64,
    pub mb_per_sec: f64,
    /// Process CPU (publisher + subscriber + broker) per message, median.
    pub cpu_us_per_msg: f64,
    /// Every received body was the published buffer (no copy).
    pub zero_copy: bool,
}

/// One timed round.
struct Round {
    secs: f64,
    cpu: Duration,
    zero_copy: bool,
}

/// `inproc`: the rows, printed; Ok(false) when a body was copied.
pub async fn main(a: &InprocArgs) -> Result<bool> {
    let rows = run(&a.sizes, a.count, a.rounds, a.batch_size, a.rdy).await?;
    emit(rows.as_slice(), a.json)?;
    Ok(rows.iter().all(|r| r.zero_copy))
}

pub async fn run(
    sizes: &[usize],
    count: Option<u64>,
    rounds: usize,
    batch: usize,
    rdy: u32,
) -> Result<Vec<InprocRow>> {
    let mut rows = Vec::new();
    for &size in sizes {
        let n = count.unwrap_or_else(|| default_count(size));
        let mut done = Vec::new();
        for _ in 0..rounds.max(1) {
            done.push(round(size, n, batch.max(1), rdy.max(1)).await?);
        }
        rows.push(summarise(size, n, &done));
    }
    Ok(rows)
}

fn summarise(size: usize, n: u64, rounds: &[Round]) -> InprocRow {
    let rates = sorted(rounds.iter().map(|r| n as f64 / r.secs));
    let cpus = sorted(rounds.iter().map(|r| r.cpu.as_secs_f64() * 1e6 / n as f64));
    let rate = middle(&rates).unwrap_or(0.0);
    InprocRow {
        size,
        count: n,
        rounds: rounds.len(),
        msgs_per_sec: rate,
        msgs_per_sec_min: rates.first().copied().unwrap_or(0.0),
        msgs_per_sec_max: rates.last().copied().unwrap_or(0.0),
        mb_per_sec: rate * size as f64 / 1e6,
        cpu_us_per_msg: middle(&cpus).unwrap_or(0.0),
        zero_copy: rounds.iter().all(|r| r.zero_copy),
    }
}

async fn round(size: usize, n: u64, batch: usize, rdy: u32) -> Result<Round> {
    let broker = Broker::start(BrokerConfig {
        // Nothing waits in memory for long: the consumer keeps up or the queue grows.
        mem_queue_size: usize::MAX / 2,
        ..BrokerConfig::default()
    })
    .await
    .map_err(|e| err(e.to_string()))?;
    let ring = bodies(size);
    let ring_n = ring.len();
    let ring_ptrs: Vec<usize> = ring.iter().map(|b| b.as_ptr() as usize).collect();
    let mut sub = broker
        .subscribe("bench", "c", SubscribeOptions::default().max_in_flight(rdy))
        .await
        .map_err(|e| err(e.to_string()))?;
    let publisher = broker.publisher("bench").map_err(|e| err(e.to_string()))?;
    let cpu0 = crate::procstat::cpu_time(std::process::id()).map_err(err)?;
    let start = Instant::now();
    let producer = tokio::spawn(async move {
        let mut sent = 0u64;
        while sent < n {
            let k = (n - sent).min(batch as u64) as usize;
            let from = (sent as usize) % ring_n;
            let chunk = (0..k).map(|i| ring[(from + i) % ring_n].clone());
            publisher
                .publish_batch(chunk)
                .map_err(|e| err(e.to_string()))?;
            sent += k as u64;
            // Let the consumer run between batches on a busy runtime.
            tokio::task::yield_now().await;
        }
        Ok::<(), crate::fail::Error>(())
    });
    let mut got = 0u64;
    let mut zero_copy = true;
    let mut fins = Vec::with_capacity(256);
    while got < n {
        let d = tokio::time::timeout(Duration::from_secs(60), sub.next())
            .await
            .map_err(|_| {
                err(format!(
                    "inproc {size} B: nothing received for 60 s after {got}"
                ))
            })?
            .ok_or_else(|| err("inproc: subscription closed"))?;
        if got.is_multiple_of(997) {
            zero_copy &= ring_ptrs[(got as usize) % ring_ptrs.len()] == d.body().as_ptr() as usize;
        }
        got += 1;
        fins.push(d);
        if fins.len() >= 256 || got == n {
            let errors = sub.fin_all(std::mem::take(&mut fins));
            if let Some((_, e)) = errors.first() {
                return Err(err(format!("inproc FIN: {e}")));
            }
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let cpu = crate::procstat::cpu_time(std::process::id())
        .map_err(err)?
        .saturating_sub(cpu0);
    producer.await.map_err(|e| err(e.to_string()))??;
    drop(sub);
    broker.shutdown().await.map_err(|e| err(e.to_string()))?;
    Ok(Round {
        secs,
        cpu,
        zero_copy,
    })
}

/// Distinct bodies of `size` bytes, slices of one buffer.
fn bodies(size: usize) -> Vec<Bytes> {
    let n = ring_len(size).clamp(16, 4096);
    let mut buf = vec![0u8; size * n];
    for (i, chunk) in buf.chunks_mut(size.max(1)).enumerate() {
        let tag = (i as u64).to_le_bytes();
        let n = chunk.len().min(8);
        chunk[..n].copy_from_slice(&tag[..n]);
    }
    let all = Bytes::from(buf);
    (0..n)
        .map(|i| all.slice(i * size..(i + 1) * size))
        .collect()
}

impl Render for [InprocRow] {
    /// The table printed for a person.
    fn print_human(&self) {
        let mut t = Table::new([
            "size",
            "messages",
            "msgs/s",
            "min..max",
            "MB/s",
            "cpu us/msg",
            "no copy",
        ]);
        for r in self {
            t.row(vec![
                r.size.to_string(),
                r.count.to_string(),
                format!("{:.0}", r.msgs_per_sec),
                format!("{:.0}..{:.0}", r.msgs_per_sec_min, r.msgs_per_sec_max),
                format!("{:.1}", r.mb_per_sec),
                format!("{:.3}", r.cpu_us_per_msg),
                if r.zero_copy { "yes" } else { "NO" }.to_string(),
            ]);
        }
        t.print();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_message_arrives_without_a_copy() {
        let rows = run(&[64, 70_000], Some(3_000), 1, 100, 500).await.unwrap();
        assert_eq!(rows.len(), 2);
        for r in rows {
            assert_eq!(r.count, 3_000);
            assert!(r.zero_copy, "{} B bodies were copied", r.size);
            assert!(r.msgs_per_sec > 0.0);
        }
    }
}
