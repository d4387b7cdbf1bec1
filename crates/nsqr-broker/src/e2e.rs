//! End-to-end processing latency (nsqd's `--e2e-processing-latency-percentile`): for every
//! FIN, the time since the message was first published, summarised as quantiles over a
//! sliding window.
//!
//! As in nsqd, each channel keeps two sketches that each cover half the window: samples go
//! into the current one, and every window/2 the older one is cleared and becomes current, so
//! a query (both merged) sees between window/2 and window of history. A topic reports the
//! merge of its channels.
//!
//! The sketch differs from nsqd's on purpose: nsqd uses a CKMS targeted-quantile stream
//! (buffer, sort, compress; rank error 1%); nsqrd uses DDSketch (`sketches-ddsketch`): a
//! log-bucketed histogram with 1% *relative value* error, O(1) insertion with no sorting or
//! allocation on the FIN path once its range is covered, bounded memory (at most 2048 buckets)
//! and exact merges. Reported values are clamped to the observed minimum and maximum, so with
//! few samples they are exact. Nothing here runs unless percentiles are configured.

use parking_lot::{Mutex, MutexGuard};
use sketches_ddsketch::{Config, DDSketch};

use crate::broker_config::BrokerConfig;
use crate::stats::{E2eLatency, Percentile};

/// The shortest half-window (a zero window would rotate on every sample).
const MIN_HALF_WINDOW_NS: i64 = 1_000_000;

/// One channel's latency windows.
#[derive(Debug)]
pub struct E2eStream {
    /// Configured quantiles, in the order they are reported (nsqd: descending).
    percentiles: Vec<f64>,
    half_window_ns: i64,
    windows: Mutex<Windows>,
}

struct Windows {
    sketches: [DDSketch; 2],
    current: usize,
    /// When `current` became current (unix ns).
    since_ns: i64,
}

impl std::fmt::Debug for Windows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Windows")
            .field(
                "count",
                &(self.sketches[0].count() + self.sketches[1].count()),
            )
            .field("since_ns", &self.since_ns)
            .finish()
    }
}

fn new_sketch() -> DDSketch {
    DDSketch::new(Config::defaults())
}

impl Windows {
    /// Rotate as many half-windows as have passed by `now_ns`.
    fn rotate(&mut self, now_ns: i64, half: i64) {
        let passed = now_ns.saturating_sub(self.since_ns);
        if passed <= half {
            return;
        }
        if passed > 2 * half {
            // Idle for more than a whole window: everything is stale.
            self.sketches = [new_sketch(), new_sketch()];
            self.since_ns = now_ns - passed % half;
            return;
        }
        self.current ^= 1;
        self.sketches[self.current] = new_sketch();
        self.since_ns += half;
    }
}

/// Records a batch of FINs under one lock with one clock read.
pub struct Recorder<'a> {
    windows: MutexGuard<'a, Windows>,
    now_ns: i64,
}

impl Recorder<'_> {
    /// A message published at `timestamp_ns` (unix ns) was finished now.
    pub fn record(&mut self, timestamp_ns: i64) {
        let latency = self.now_ns.saturating_sub(timestamp_ns).max(0);
        let cur = self.windows.current;
        self.windows.sketches[cur].add(latency as f64);
    }
}

impl E2eStream {
    /// The stream for a new channel, or None when no percentiles are configured.
    pub fn for_config(cfg: &BrokerConfig) -> Option<E2eStream> {
        if cfg.e2e_percentiles.is_empty() {
            return None;
        }
        let half = i64::try_from(cfg.e2e_window.as_nanos() / 2).unwrap_or(i64::MAX);
        Some(E2eStream::new(
            cfg.e2e_percentiles.clone(),
            half.max(MIN_HALF_WINDOW_NS),
            crate::now_unix_nanos(),
        ))
    }

    fn new(percentiles: Vec<f64>, half_window_ns: i64, now_ns: i64) -> E2eStream {
        E2eStream {
            percentiles,
            half_window_ns,
            windows: Mutex::new(Windows {
                sketches: [new_sketch(), new_sketch()],
                current: 0,
                since_ns: now_ns,
            }),
        }
    }

    /// Lock the stream for a batch of samples taken now.
    pub fn recorder(&self) -> Recorder<'_> {
        self.recorder_at(crate::now_unix_nanos())
    }

    fn recorder_at(&self, now_ns: i64) -> Recorder<'_> {
        let mut windows = self.windows.lock();
        windows.rotate(now_ns, self.half_window_ns);
        Recorder { windows, now_ns }
    }

    /// Both windows merged, as of `now_ns`.
    fn merged_at(&self, now_ns: i64) -> DDSketch {
        let mut w = self.windows.lock();
        w.rotate(now_ns, self.half_window_ns);
        let mut m = w.sketches[0].clone();
        // Same config on both sides: merging cannot fail.
        let _ = m.merge(&w.sketches[1]);
        m
    }

    /// This channel's figures for `/stats`.
    pub fn result(&self) -> E2eLatency {
        latency(&self.merged_at(crate::now_unix_nanos()), &self.percentiles)
    }

    /// A topic's figures: the merge of its channels' streams. With no streams (no channels,
    /// or percentiles not configured) the result has `percentiles: null`, as in nsqd.
    pub fn aggregate<'a>(streams: impl IntoIterator<Item = &'a E2eStream>) -> E2eLatency {
        Self::aggregate_at(streams, crate::now_unix_nanos())
    }

    fn aggregate_at<'a>(
        streams: impl IntoIterator<Item = &'a E2eStream>,
        now_ns: i64,
    ) -> E2eLatency {
        let mut streams = streams.into_iter();
        let Some(first) = streams.next() else {
            return E2eLatency::default();
        };
        let mut merged = first.merged_at(now_ns);
        for s in streams {
            let _ = merged.merge(&s.merged_at(now_ns));
        }
        latency(&merged, &first.percentiles)
    }
}

/// The configured quantiles of `sketch` (0 when it is empty), clamped to what was observed.
fn latency(sketch: &DDSketch, percentiles: &[f64]) -> E2eLatency {
    let (lo, hi) = (sketch.min().unwrap_or(0.0), sketch.max().unwrap_or(0.0));
    E2eLatency {
        count: sketch.count() as u64,
        percentiles: Some(
            percentiles
                .iter()
                .map(|&q| Percentile {
                    quantile: q,
                    value: sketch
                        .quantile(q.clamp(0.0, 1.0))
                        .ok()
                        .flatten()
                        .map_or(0.0, |v| v.clamp(lo, hi).round()),
                })
                .collect(),
        ),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;

    fn values(e: &E2eLatency) -> Vec<(f64, f64)> {
        e.percentiles
            .as_ref()
            .unwrap()
            .iter()
            .map(|p| (p.quantile, p.value))
            .collect()
    }

    fn stream(now: i64) -> E2eStream {
        E2eStream::new(vec![1.0, 0.99, 0.5], 5_000 * MS, now)
    }

    #[test]
    fn off_without_percentiles() {
        assert!(E2eStream::for_config(&BrokerConfig::default()).is_none());
        let cfg = BrokerConfig {
            e2e_percentiles: vec![0.5],
            ..BrokerConfig::default()
        };
        assert!(E2eStream::for_config(&cfg).is_some());
    }

    #[test]
    fn empty_reports_zeros_in_configured_order() {
        let s = stream(0);
        let e = latency(&s.merged_at(0), &s.percentiles);
        assert_eq!(e.count, 0);
        assert_eq!(values(&e), [(1.0, 0.0), (0.99, 0.0), (0.5, 0.0)]);
    }

    #[test]
    fn one_sample_is_exact() {
        let s = stream(0);
        s.recorder_at(1_000 * MS).record(1_000 * MS - 123_456_789);
        let e = latency(&s.merged_at(1_000 * MS), &s.percentiles);
        assert_eq!(e.count, 1);
        assert!(values(&e).iter().all(|&(_, v)| v == 123_456_789.0), "{e:?}");
    }

    #[test]
    fn quantiles_within_one_percent() {
        let s = stream(0);
        let now = 1_000 * MS;
        {
            let mut r = s.recorder_at(now);
            // Latencies 1..=1000 ms.
            for i in 1..=1000 {
                r.record(now - i * MS);
            }
        }
        let e = latency(&s.merged_at(now), &s.percentiles);
        assert_eq!(e.count, 1000);
        for (q, v) in values(&e) {
            let want = (q * 1000.0).max(1.0) * MS as f64;
            assert!((v - want).abs() <= want * 0.02, "q={q} v={v} want={want}");
        }
        // A negative latency (clock step) counts as zero.
        s.recorder_at(now).record(now + 5 * MS);
        assert_eq!(s.merged_at(now).min(), Some(0.0));
    }

    #[test]
    fn windows_rotate_and_expire() {
        let half = 5_000 * MS;
        let s = stream(0);
        s.recorder_at(MS).record(0);
        // Next half-window: the old sample is still in the older window.
        s.recorder_at(half + 2 * MS).record(half);
        assert_eq!(s.merged_at(half + 2 * MS).count(), 2);
        // One more rotation drops the first window's sample.
        assert_eq!(s.merged_at(2 * half + 3 * MS).count(), 1);
        // Idle for longer than the whole window: nothing is left.
        assert_eq!(s.merged_at(10 * half).count(), 0);
        s.recorder_at(10 * half + MS).record(10 * half);
        assert_eq!(s.merged_at(10 * half + MS).count(), 1);
    }

    #[test]
    fn topic_merges_channels() {
        let (a, b) = (stream(0), stream(0));
        a.recorder_at(100 * MS).record(90 * MS);
        b.recorder_at(100 * MS).record(0);
        let e = E2eStream::aggregate_at([&a, &b], 100 * MS);
        assert_eq!(e.count, 2);
        assert_eq!(values(&e)[0], (1.0, 100.0 * MS as f64));
        let none = E2eStream::aggregate_at(std::iter::empty(), 0);
        assert_eq!((none.count, none.percentiles.is_none()), (0, true));
    }

    #[tokio::test]
    async fn fin_records_latency_in_channel_and_topic_stats() {
        use std::sync::Arc;
        use std::time::Duration;

        let cfg = BrokerConfig {
            e2e_percentiles: vec![1.0, 0.5],
            ..BrokerConfig::default()
        };
        let b = crate::Broker::start(cfg).await.unwrap();
        let t = b.get_or_create_topic("t").unwrap();
        let ch = t.get_or_create_channel("c").unwrap();
        let client = b.new_consumer(
            crate::ConsumerInfo::new(crate::ConsumerKind::Tcp, "a:1")
                .msg_timeout(Duration::from_secs(60)),
        );
        ch.add_consumer(Arc::clone(&client)).unwrap();
        let old = crate::now_unix_nanos() - 250 * MS;
        let m = crate::Message::new(
            nsq_wire::MessageId(7),
            old,
            0,
            bytes::Bytes::from_static(b"x"),
        )
        .expect("small");
        let _ = ch.put([m]);
        let mut rng = 1;
        assert_eq!(ch.deliver(&client, 1, 0, &mut rng, |_| {}), 1);
        ch.finish(&client, &[7], |_, e| panic!("{e}"));
        let ts = t.stats(None, false);
        for e in [
            &ts.e2e_processing_latency,
            &ts.channels[0].e2e_processing_latency,
        ] {
            assert_eq!(e.count, 1);
            for (_, v) in values(e) {
                assert!(
                    (250.0 * MS as f64..10_000.0 * MS as f64).contains(&v),
                    "{v}"
                );
            }
        }
    }
}
