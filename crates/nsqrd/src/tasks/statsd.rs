//! The statsd push (`--statsd-address`), with nsqd's metric names and format (nsqd's statsd.go):
//! every `--statsd-interval`, one `/stats` snapshot becomes `<prefix><name>:<value>|c` (counters,
//! as deltas since the previous push) and `|g` (gauges) lines, packed into UDP datagrams of at
//! most `--statsd-udp-packet-size` bytes (a line is never split) and spread over the interval
//! minus one second, as nsqd does.
//!
//! It runs in its own task and only reads counters the engine keeps anyway, so it adds nothing
//! to the message path; a statsd that is down costs a failed UDP send.

use std::collections::HashMap;
use std::time::Duration;

use nsqr_broker::stats::{E2eLatency, TopicStats};
use nsqr_broker::Broker;
use tokio::net::UdpSocket;

use crate::http::MemStats;

/// Settings for the push loop, from the options.
#[derive(Debug, Clone)]
pub struct StatsdConfig {
    pub address: String,
    pub interval: Duration,
    /// Already resolved (`%s` replaced, trailing `.`).
    pub prefix: String,
    pub mem_stats: bool,
    pub udp_packet_size: usize,
    pub exclude_ephemeral: bool,
}

/// The counters of the previous push, keyed by stat name (counters are sent as deltas).
#[derive(Debug, Default)]
pub struct Counters {
    last: HashMap<String, u64>,
}

/// Builds one push's lines.
struct Lines<'a> {
    prefix: &'a str,
    out: Vec<String>,
    prev: &'a Counters,
    next: HashMap<String, u64>,
}

impl Lines<'_> {
    fn gauge(&mut self, stat: &str, value: i64) {
        self.out.push(format!("{}{stat}:{value}|g\n", self.prefix));
    }

    /// A counter sent as the change since the last push (the first push sends the total).
    fn counter(&mut self, stat: String, total: u64) {
        let before = self.prev.last.get(&stat).copied().unwrap_or(0);
        let delta = total.wrapping_sub(before) as i64;
        self.out.push(format!("{}{stat}:{delta}|c\n", self.prefix));
        self.next.insert(stat, total);
    }

    fn e2e(&mut self, stat: &str, e: &E2eLatency) {
        for p in e.percentiles.iter().flatten() {
            let name = format!("{stat}.e2e_processing_latency_{:.0}", p.quantile * 100.0);
            self.gauge(&name, p.value as i64);
        }
    }
}

/// The lines of one push; `counters` is updated to this push's totals.
pub fn render(
    topics: &[TopicStats],
    mem: Option<&MemStats>,
    cfg: &StatsdConfig,
    counters: &mut Counters,
) -> Vec<String> {
    let mut l = Lines {
        prefix: &cfg.prefix,
        out: Vec::new(),
        prev: counters,
        next: HashMap::new(),
    };
    let ephemeral = |name: &str| cfg.exclude_ephemeral && nsq_wire::names::is_ephemeral(name);
    for t in topics.iter().filter(|t| !ephemeral(&t.topic_name)) {
        let tp = format!("topic.{}", t.topic_name);
        l.counter(format!("{tp}.message_count"), t.counts.message_count);
        l.counter(format!("{tp}.message_bytes"), t.counts.message_bytes);
        l.gauge(&format!("{tp}.depth"), t.counts.depth);
        l.gauge(&format!("{tp}.backend_depth"), t.counts.backend_depth);
        l.e2e(&tp, &t.e2e_processing_latency);
        for c in t.channels.iter().filter(|c| !ephemeral(&c.channel_name)) {
            let cp = format!("{tp}.channel.{}", c.channel_name);
            l.counter(format!("{cp}.message_count"), c.counts.message_count);
            l.gauge(&format!("{cp}.depth"), c.counts.depth);
            l.gauge(&format!("{cp}.backend_depth"), c.counts.backend_depth);
            l.gauge(
                &format!("{cp}.in_flight_count"),
                c.counts.in_flight_count as i64,
            );
            l.gauge(
                &format!("{cp}.deferred_count"),
                c.counts.deferred_count as i64,
            );
            l.counter(format!("{cp}.requeue_count"), c.counts.requeue_count);
            l.counter(format!("{cp}.timeout_count"), c.counts.timeout_count);
            l.gauge(&format!("{cp}.clients"), c.consumer_count as i64);
            l.e2e(&cp, &c.e2e_processing_latency);
        }
    }
    if let Some(m) = mem {
        let g = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        l.gauge("mem.heap_objects", g(m.heap_objects));
        l.gauge("mem.heap_idle_bytes", g(m.heap_idle_bytes));
        l.gauge("mem.heap_in_use_bytes", g(m.heap_in_use_bytes));
        l.gauge("mem.heap_released_bytes", g(m.heap_released_bytes));
        l.gauge("mem.gc_pause_usec_100", g(m.gc_pause_usec_100));
        l.gauge("mem.gc_pause_usec_99", g(m.gc_pause_usec_99));
        l.gauge("mem.gc_pause_usec_95", g(m.gc_pause_usec_95));
        l.gauge("mem.next_gc_bytes", g(m.next_gc_bytes));
        l.counter("mem.gc_runs".to_string(), u64::from(m.gc_total_runs));
    }
    let Lines { out, next, .. } = l;
    // Topics and channels that went away are forgotten, as nsqd compares with the last push only.
    counters.last = next;
    out
}

/// Pack lines into datagrams of at most `size` bytes; a longer line goes alone.
pub fn pack(lines: &[String], size: usize) -> Vec<Vec<u8>> {
    let mut packets = Vec::new();
    let mut cur: Vec<u8> = Vec::with_capacity(size);
    for line in lines {
        if !cur.is_empty() && cur.len() + line.len() > size {
            packets.push(std::mem::take(&mut cur));
        }
        cur.extend_from_slice(line.as_bytes());
    }
    if !cur.is_empty() {
        packets.push(cur);
    }
    packets
}

/// Push until `stop` resolves.
pub async fn run(
    broker: std::sync::Arc<Broker>,
    cfg: StatsdConfig,
    stop: impl std::future::Future<Output = ()>,
) {
    tokio::pin!(stop);
    let interval = cfg.interval.max(Duration::from_millis(1));
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut counters = Counters::default();
    loop {
        tokio::select! {
            _ = &mut stop => break,
            _ = ticker.tick() => {}
        }
        let snap = broker.snapshot(None, None, false);
        let mem = cfg.mem_stats.then(MemStats::current);
        let lines = render(
            snap.topics.as_deref().unwrap_or_default(),
            mem.as_ref(),
            &cfg,
            &mut counters,
        );
        let packets = pack(&lines, cfg.udp_packet_size);
        tokio::select! {
            _ = &mut stop => break,
            _ = send(&cfg, &packets, interval) => {}
        }
    }
    tracing::info!("STATSD: closing");
}

/// Send the datagrams spaced evenly over the interval minus one second.
async fn send(cfg: &StatsdConfig, packets: &[Vec<u8>], interval: Duration) {
    let sock = match open(&cfg.address).await {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(
                "failed to create UDP socket to statsd({}) - {e}",
                cfg.address
            );
            return;
        }
    };
    tracing::info!("STATSD: pushing stats to {}", cfg.address);
    let spread = interval.saturating_sub(Duration::from_secs(1));
    let gap = spread / u32::try_from(packets.len().max(1)).unwrap_or(u32::MAX);
    for p in packets {
        if let Err(e) = sock.send(p).await {
            tracing::debug!("STATSD: send to {} failed - {e}", cfg.address);
        }
        tokio::time::sleep(gap).await;
    }
}

async fn open(addr: &str) -> std::io::Result<UdpSocket> {
    let target = tokio::time::timeout(Duration::from_secs(1), tokio::net::lookup_host(addr))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "i/o timeout"))??
        .next()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no address"))?;
    let local = if target.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    };
    let sock = UdpSocket::bind(local).await?;
    sock.connect(target).await?;
    Ok(sock)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use nsqr_broker::stats::{ChannelCounts, ChannelStats, Percentile, TopicCounts};

    fn cfg(exclude_ephemeral: bool) -> StatsdConfig {
        StatsdConfig {
            address: String::new(),
            interval: Duration::from_secs(60),
            prefix: "nsq.h_1.".into(),
            mem_stats: false,
            udp_packet_size: 508,
            exclude_ephemeral,
        }
    }

    fn channel(name: &str, msgs: u64) -> ChannelStats {
        ChannelStats {
            channel_name: name.into(),
            counts: ChannelCounts {
                depth: 3,
                backend_depth: 0,
                in_flight_count: 1,
                deferred_count: 2,
                message_count: msgs,
                requeue_count: 4,
                timeout_count: 5,
            },
            consumer_count: 6,
            consumers: None,
            paused: false,
            e2e_processing_latency: E2eLatency {
                count: 1,
                percentiles: Some(vec![Percentile {
                    quantile: 0.99,
                    value: 1234.7,
                }]),
            },
            disk_queue: None,
            settings: None,
            dead_letters: None,
        }
    }

    fn topic(msgs: u64) -> TopicStats {
        TopicStats {
            topic_name: "t".into(),
            channels: vec![channel("c", msgs), channel("e#ephemeral", msgs)],
            counts: TopicCounts {
                depth: 7,
                backend_depth: 0,
                message_count: msgs,
                message_bytes: msgs * 10,
            },
            paused: false,
            e2e_processing_latency: E2eLatency::default(),
            disk_queue: None,
            settings: None,
        }
    }

    #[test]
    fn names_values_and_deltas() {
        let mut counters = Counters::default();
        let first = render(&[topic(10)], None, &cfg(true), &mut counters);
        assert_eq!(
            first.concat(),
            "nsq.h_1.topic.t.message_count:10|c\n\
             nsq.h_1.topic.t.message_bytes:100|c\n\
             nsq.h_1.topic.t.depth:7|g\n\
             nsq.h_1.topic.t.backend_depth:0|g\n\
             nsq.h_1.topic.t.channel.c.message_count:10|c\n\
             nsq.h_1.topic.t.channel.c.depth:3|g\n\
             nsq.h_1.topic.t.channel.c.backend_depth:0|g\n\
             nsq.h_1.topic.t.channel.c.in_flight_count:1|g\n\
             nsq.h_1.topic.t.channel.c.deferred_count:2|g\n\
             nsq.h_1.topic.t.channel.c.requeue_count:4|c\n\
             nsq.h_1.topic.t.channel.c.timeout_count:5|c\n\
             nsq.h_1.topic.t.channel.c.clients:6|g\n\
             nsq.h_1.topic.t.channel.c.e2e_processing_latency_99:1234|g\n"
        );
        let second = render(&[topic(15)], None, &cfg(false), &mut counters);
        assert!(second.contains(&"nsq.h_1.topic.t.message_count:5|c\n".to_string()));
        assert!(second.contains(&"nsq.h_1.topic.t.channel.c.requeue_count:0|c\n".to_string()));
        // Not in the previous push (it was excluded): the total.
        assert!(second
            .contains(&"nsq.h_1.topic.t.channel.e#ephemeral.message_count:15|c\n".to_string()));
        let m = MemStats::default();
        let third = render(&[], Some(&m), &cfg(false), &mut counters);
        assert_eq!(third.len(), 9);
        assert_eq!(third[8], "nsq.h_1.mem.gc_runs:0|c\n");
    }

    #[test]
    fn packing_never_splits_lines() {
        let lines: Vec<String> = ["aaaa\n", "bbbb\n", "cc\n", "dddddddddddd\n", "e\n"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let p = pack(&lines, 10);
        let p: Vec<&str> = p.iter().map(|b| std::str::from_utf8(b).unwrap()).collect();
        assert_eq!(p, ["aaaa\nbbbb\n", "cc\n", "dddddddddddd\n", "e\n"]);
    }
}
