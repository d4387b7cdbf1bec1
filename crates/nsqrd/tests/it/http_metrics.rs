//! `GET /metrics` (not in nsqd): Prometheus' text format with the per-topic and per-channel
//! series after a small workload. `tests/metrics/check_metrics.py` parses the same endpoint
//! with a real Prometheus parser; this is the quick check that runs with `cargo test`.

use crate::common::*;

/// The value of the sample line that starts with `series` (name and labels).
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.parse().ok())
}

#[test]
fn metrics_after_a_workload() {
    if is_reference() {
        return; // nsqd has no /metrics (404)
    }
    let s = Server::start(&[]);
    let mut p = s.connect();
    p.publish("mt", b"abc");
    let mut c = s.connect();
    c.sub("mt", "ch");
    c.rdy(1);
    let m = c.expect_message();
    c.req(&m.id_str(), 0);
    let again = c.expect_message();
    c.fin(&again.id_str());
    assert!(wait_until(std::time::Duration::from_secs(5), || {
        s.channel_stat("mt", "ch", "in_flight_count") == Some(0)
    }));
    let r = s.get("/metrics");
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("Content-Type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    let t = r.text();
    let ch = |name: &str| sample(&t, &format!("{name}{{topic=\"mt\",channel=\"ch\"}}"));
    assert_eq!(
        sample(&t, "nsq_topic_messages_total{topic=\"mt\"}"),
        Some(1.0),
        "{t}"
    );
    assert_eq!(
        sample(&t, "nsq_topic_message_bytes_total{topic=\"mt\"}"),
        Some(3.0)
    );
    assert_eq!(ch("nsq_channel_messages_total"), Some(1.0));
    assert_eq!(ch("nsq_channel_requeued_total"), Some(1.0));
    assert_eq!(ch("nsq_channel_in_flight"), Some(0.0));
    assert_eq!(ch("nsq_channel_depth"), Some(0.0));
    assert_eq!(ch("nsq_channel_clients"), Some(1.0));
    assert_eq!(sample(&t, "nsq_tcp_connections"), Some(2.0));
    assert!(
        t.contains("# TYPE nsq_channel_timed_out_total counter\n"),
        "{t}"
    );
    // Without configured percentiles there are no e2e series.
    assert!(!t.contains("e2e_processing_latency"), "{t}");
    assert!(sample(&t, "process_resident_memory_bytes").is_some_and(|v| v > 0.0));
}
