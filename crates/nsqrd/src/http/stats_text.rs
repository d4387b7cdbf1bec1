//! The plain-text `/stats` report, byte for byte as nsqd prints it (column padding, `*P `
//! markers for paused topics and channels, `Topics: None` / `Producers: None`), with Go's
//! duration and RFC 3339 formatting, because people and scripts read it.

use std::fmt::Write;

use super::stats_json::{ClientStats, E2eLatency, StatsView};
use crate::cluster::GroupStats;

use super::stats::MemStats;

/// What the report needs besides the snapshot.
pub struct TextStats<'a> {
    pub version: &'a str,
    pub start_time_ns: i64,
    pub now_ns: i64,
    pub health: &'a str,
    pub memory: Option<&'a MemStats>,
    pub view: &'a StatsView,
}

/// What nsqd prints after `built w/` (its Go version).
const BUILT_WITH: &str = concat!("nsqrd-", env!("CARGO_PKG_VERSION"));

pub fn render(s: &TextStats<'_>) -> String {
    let mut w = String::with_capacity(1024);
    // `write!` to a String cannot fail.
    let _ = write!(
        w,
        "nsqd v{} (built w/{BUILT_WITH})\nstart_time {}\nuptime {}\n\nHealth: {}\n",
        s.version,
        rfc3339_utc(s.start_time_ns.div_euclid(1_000_000_000)),
        go_duration(s.now_ns.saturating_sub(s.start_time_ns)),
        s.health,
    );
    if let Some(m) = s.memory {
        w.push_str("\nMemory:\n");
        for (k, v) in [
            ("heap_objects", m.heap_objects),
            ("heap_idle_bytes", m.heap_idle_bytes),
            ("heap_in_use_bytes", m.heap_in_use_bytes),
            ("heap_released_bytes", m.heap_released_bytes),
            ("gc_pause_usec_100", m.gc_pause_usec_100),
            ("gc_pause_usec_99", m.gc_pause_usec_99),
            ("gc_pause_usec_95", m.gc_pause_usec_95),
            ("next_gc_bytes", m.next_gc_bytes),
            ("gc_total_runs", u64::from(m.gc_total_runs)),
        ] {
            let _ = writeln!(w, "   {k:<25}\t{v}");
        }
    }
    let topics = s.view.topics.as_deref().unwrap_or_default();
    if topics.is_empty() {
        w.push_str("\nTopics: None\n");
    } else {
        w.push_str("\nTopics:");
    }
    for t in topics {
        let _ = writeln!(
            w,
            "\n{}[{:<15}] depth: {:<5} be-depth: {:<5} msgs: {:<8} e2e%: {}",
            if t.paused { "*P " } else { "   " },
            t.topic_name,
            t.counts.depth,
            t.counts.backend_depth,
            t.counts.message_count,
            e2e(&t.e2e_processing_latency),
        );
        if let Some(g) = &t.replication {
            let _ = writeln!(w, "    {}", group_line(g));
        }
        for c in &t.channels {
            let _ = writeln!(
                w,
                "{}[{:<25}] depth: {:<5} be-depth: {:<5} inflt: {:<4} def: {:<4} re-q: {:<5} timeout: {:<5} msgs: {:<8} e2e%: {}",
                if c.paused { "   *P " } else { "      " },
                c.channel_name,
                c.counts.depth,
                c.counts.backend_depth,
                c.counts.in_flight_count,
                c.counts.deferred_count,
                c.counts.requeue_count,
                c.counts.timeout_count,
                c.counts.message_count,
                e2e(&c.e2e_processing_latency),
            );
            for client in c.clients.iter().flatten() {
                let _ = writeln!(w, "        {}", client_line(client, s.now_ns));
            }
        }
    }
    if s.view.producers.is_empty() {
        w.push_str("\nProducers: None\n");
    } else {
        w.push_str("\nProducers:\n");
        for p in &s.view.producers {
            let _ = writeln!(w, "   {}", client_line(p, s.now_ns));
        }
    }
    w
}

/// A replicated topic's group (nsqr only): `replicated: 3 replicas, follower of node 2, term
/// 4, commit 120, applied 120`, and each follower's lag on the leader.
fn group_line(g: &GroupStats) -> String {
    let role = match (g.role, g.leader) {
        ("leader", _) => "leader".to_string(),
        (_, Some(id)) => format!("follower of node {id}"),
        (_, None) => "follower, no leader known".to_string(),
    };
    let index = |i: Option<u64>| i.map_or_else(|| "none".to_string(), |i| i.to_string());
    let mut line = format!(
        "replicated: {} replicas, {role}, term {}, commit {}, applied {}",
        g.replicas,
        g.term,
        index(g.commit_index),
        index(g.applied_index),
    );
    for f in &g.followers {
        let _ = write!(line, ", node {} lag {}", f.node, f.lag);
    }
    line
}

/// nsqd's `ClientStats.String()`: the producer form when the client has published, else the
/// consumer form.
fn client_line(c: &ClientStats, now_ns: i64) -> String {
    let port = c
        .remote_address
        .rsplit_once(':')
        .map(|(_, p)| p)
        .unwrap_or("");
    let id = format!("{}:{} {}", c.hostname, port, c.user_agent);
    let connected_s = (now_ns.div_euclid(1_000_000_000) - c.connect_ts).max(0);
    let connected = go_duration(connected_s.saturating_mul(1_000_000_000));
    if !c.pub_counts.is_empty() {
        let total: u64 = c.pub_counts.iter().map(|p| p.count).sum();
        let topics: Vec<String> = c
            .pub_counts
            .iter()
            .map(|p| format!("{}={}", p.topic, p.count))
            .collect();
        return format!(
            "[{} {:<21}] msgs: {:<8} topics: {} connected: {}",
            c.version,
            id,
            total,
            topics.join(","),
            connected
        );
    }
    format!(
        "[{} {:<21}] state: {} inflt: {:<4} rdy: {:<4} fin: {:<8} re-q: {:<8} msgs: {:<8} connected: {}",
        c.version,
        id,
        c.state,
        c.in_flight_count,
        c.ready_count,
        c.finish_count,
        c.requeue_count,
        c.message_count,
        connected
    )
}

/// The percentile values, each as nsqd's `NanoSecondToHuman`, joined by `, `.
fn e2e(l: &E2eLatency) -> String {
    l.percentiles
        .iter()
        .flatten()
        .map(|p| nanos_to_human(p.value))
        .collect::<Vec<_>>()
        .join(", ")
}

fn nanos_to_human(v: f64) -> String {
    let (v, unit) = if v > 1e9 {
        (v / 1e9, "s")
    } else if v > 1e6 {
        (v / 1e6, "ms")
    } else if v > 1e3 {
        (v / 1e3, "us")
    } else {
        (v, "ns")
    };
    format!("{v:.1}{unit}")
}

/// Go's `time.Duration.String()`: `0s`, `1.5ms`, `12.345µs`, `1m24.612345678s`, `2h0m5s`.
pub fn go_duration(ns: i64) -> String {
    if ns == 0 {
        return "0s".to_string();
    }
    let neg = ns < 0;
    let mut u = ns.unsigned_abs();
    let mut out = String::new();
    if u < 1_000_000_000 {
        let (prec, unit) = if u < 1_000 {
            (0, "ns")
        } else if u < 1_000_000 {
            (3, "µs")
        } else {
            (6, "ms")
        };
        let (frac, int) = fmt_frac(u, prec);
        let _ = write!(out, "{int}{frac}{unit}");
    } else {
        let (frac, secs) = fmt_frac(u, 9);
        u = secs;
        let s = u % 60;
        u /= 60;
        if u > 0 {
            let m = u % 60;
            u /= 60;
            if u > 0 {
                let _ = write!(out, "{u}h");
            }
            let _ = write!(out, "{m}m");
        }
        let _ = write!(out, "{s}{frac}s");
    }
    if neg {
        out.insert(0, '-');
    }
    out
}

/// Go's `fmtFrac`: `.ddd` of `v / 10^prec` without trailing zeros (nothing when zero), and the
/// integer part.
fn fmt_frac(v: u64, prec: u32) -> (String, u64) {
    let p = 10u64.pow(prec);
    let frac = v % p;
    if frac == 0 {
        return (String::new(), v / p);
    }
    let digits = format!("{frac:0width$}", width = prec as usize);
    (format!(".{}", digits.trim_end_matches('0')), v / p)
}

/// `2006-01-02T15:04:05Z` for a unix time in seconds (UTC).
pub fn rfc3339_utc(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Howard Hinnant's civil-from-days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests;
