use super::*;
use crate::http::stats_json::{ChannelStats, Percentile, PubCount, StatsView, TopicStats};
use nsqr_broker::stats::{ChannelCounts, TopicCounts};

const NOW: i64 = 1_795_290_579_612_345_678;
const START: i64 = 1_795_290_495_000_000_000;

#[test]
fn go_durations() {
    for (ns, s) in [
        (0, "0s"),
        (1, "1ns"),
        (999, "999ns"),
        (1_500, "1.5µs"),
        (1_500_000, "1.5ms"),
        (12_345_678, "12.345678ms"),
        (1_000_000_000, "1s"),
        (84_612_345_678, "1m24.612345678s"),
        (60_000_000_000, "1m0s"),
        (7_205_000_000_000, "2h0m5s"),
        (-1_500_000, "-1.5ms"),
        (100_000_000, "100ms"),
    ] {
        assert_eq!(go_duration(ns), s, "{ns}");
    }
}

#[test]
fn rfc3339() {
    assert_eq!(rfc3339_utc(0), "1970-01-01T00:00:00Z");
    assert_eq!(rfc3339_utc(951_782_400), "2000-02-29T00:00:00Z");
    assert_eq!(rfc3339_utc(1_795_290_495), "2026-11-21T19:48:15Z");
    assert_eq!(rfc3339_utc(-1), "1969-12-31T23:59:59Z");
}

#[test]
fn human_nanos() {
    assert_eq!(nanos_to_human(0.0), "0.0ns");
    assert_eq!(nanos_to_human(1000.0), "1000.0ns");
    assert_eq!(nanos_to_human(1500.0), "1.5us");
    assert_eq!(nanos_to_human(304_712_345.0), "304.7ms");
    assert_eq!(nanos_to_human(2.5e9), "2.5s");
}

fn client(host: &str, port: u16, ua: &str, pubs: &[(&str, u64)]) -> ClientStats {
    ClientStats {
        client_id: host.into(),
        hostname: host.into(),
        version: "V2",
        remote_address: format!("127.0.0.1:{port}"),
        state: 3,
        ready_count: 3,
        in_flight_count: 2,
        message_count: 2,
        finish_count: 0,
        requeue_count: 0,
        connect_ts: NOW / 1_000_000_000 - 65,
        sample_rate: 0,
        deflate: false,
        snappy: false,
        user_agent: ua.into(),
        authed: false,
        auth_identity: String::new(),
        auth_identity_url: String::new(),
        topology_zone: String::new(),
        topology_region: String::new(),
        pub_counts: pubs
            .iter()
            .map(|(t, n)| PubCount {
                topic: t.to_string(),
                count: *n,
            })
            .collect(),
        tls: false,
        tls_cipher_suite: String::new(),
        tls_version: String::new(),
        tls_negotiated_protocol: String::new(),
        tls_negotiated_protocol_is_mutual: false,
    }
}

fn channel(name: &str, paused: bool, clients: Option<Vec<ClientStats>>) -> ChannelStats {
    ChannelStats {
        channel_name: name.into(),
        counts: ChannelCounts {
            depth: 4,
            backend_depth: 0,
            in_flight_count: 2,
            deferred_count: 1,
            message_count: 7,
            requeue_count: 2,
            timeout_count: 1,
        },
        client_count: clients.as_ref().map_or(0, Vec::len),
        clients,
        paused,
        e2e_processing_latency: E2eLatency::default(),
        disk_queue: None,
        settings: None,
        dead_letters: None,
    }
}

fn topic(name: &str, paused: bool, channels: Vec<ChannelStats>) -> TopicStats {
    TopicStats {
        topic_name: name.into(),
        channels,
        counts: TopicCounts {
            depth: 0,
            backend_depth: 0,
            message_count: 7,
            message_bytes: 20,
        },
        paused,
        e2e_processing_latency: E2eLatency::default(),
        disk_queue: None,
        settings: None,
        replication: None,
    }
}

fn render_snapshot(view: &StatsView, memory: Option<&MemStats>) -> String {
    render(&TextStats {
        version: "1.3.0",
        start_time_ns: START,
        now_ns: NOW,
        health: "OK",
        memory,
        view,
    })
}

#[test]
fn empty_instance_with_memory() {
    let snap = StatsView {
        topics: Some(vec![]),
        producers: vec![],
    };
    let m = MemStats {
        heap_in_use_bytes: 123,
        ..MemStats::default()
    };
    let text = render_snapshot(&snap, Some(&m));
    let expect = format!(
        "nsqd v1.3.0 (built w/{BUILT_WITH})\nstart_time 2026-11-21T19:48:15Z\nuptime 1m24.612345678s\n\nHealth: OK\n\nMemory:\n   heap_objects             \t0\n   heap_idle_bytes          \t0\n   heap_in_use_bytes        \t123\n   heap_released_bytes      \t0\n   gc_pause_usec_100        \t0\n   gc_pause_usec_99         \t0\n   gc_pause_usec_95         \t0\n   next_gc_bytes            \t0\n   gc_total_runs            \t0\n\nTopics: None\n\nProducers: None\n"
    );
    assert_eq!(text, expect);
    // A topic filter that matched nothing prints the same.
    let none = StatsView {
        topics: None,
        producers: vec![],
    };
    assert!(
        render_snapshot(&none, None).ends_with("\nHealth: OK\n\nTopics: None\n\nProducers: None\n")
    );
}

#[test]
fn topics_channels_clients_producers() {
    let snap = StatsView {
        topics: Some(vec![
            topic("paused", true, vec![channel("pc", true, None)]),
            topic(
                "tx",
                false,
                vec![channel(
                    "ch",
                    false,
                    Some(vec![client("hn", 5000, "ua/1.0", &[])]),
                )],
            ),
        ]),
        producers: vec![client("127.0.0.1", 5001, "", &[("tx", 2)])],
    };
    let text = render_snapshot(&snap, None);
    let at = text.find("\nTopics:").unwrap();
    let consumer = format!("[V2 {:<21}]", "hn:5000 ua/1.0");
    let producer = format!("[V2 {:<21}]", "127.0.0.1:5001 ");
    let expect = "\nTopics:\n*P [paused         ] depth: 0     be-depth: 0     msgs: 7        e2e%: \n   *P [pc                       ] depth: 4     be-depth: 0     inflt: 2    def: 1    re-q: 2     timeout: 1     msgs: 7        e2e%: \n\n   [tx             ] depth: 0     be-depth: 0     msgs: 7        e2e%: \n      [ch                       ] depth: 4     be-depth: 0     inflt: 2    def: 1    re-q: 2     timeout: 1     msgs: 7        e2e%: \n        CONSUMER state: 3 inflt: 2    rdy: 3    fin: 0        re-q: 0        msgs: 2        connected: 1m5s\n\nProducers:\n   PRODUCER msgs: 2        topics: tx=2 connected: 1m5s\n"
        .replace("CONSUMER", &consumer)
        .replace("PRODUCER", &producer);
    assert_eq!(&text[at..], expect);
}

#[test]
fn long_names_and_e2e_values() {
    let mut t = topic(
        &"a".repeat(20),
        false,
        vec![channel(&"b".repeat(30), false, None)],
    );
    t.e2e_processing_latency = E2eLatency {
        count: 1,
        percentiles: Some(vec![
            Percentile {
                quantile: 1.0,
                value: 304_700_000.0,
            },
            Percentile {
                quantile: 0.5,
                value: 0.0,
            },
        ]),
    };
    let snap = StatsView {
        topics: Some(vec![t]),
        producers: vec![],
    };
    let text = render_snapshot(&snap, None);
    assert!(
        text.contains(&format!("\n   [{}] depth: 0 ", "a".repeat(20))),
        "{text}"
    );
    assert!(
        text.contains(&format!("\n      [{}] depth: 4 ", "b".repeat(30))),
        "{text}"
    );
    assert!(
        text.contains("msgs: 7        e2e%: 304.7ms, 0.0ns\n"),
        "{text}"
    );
}

/// A replicated topic gets one line under its own (nsqr only): the group as this node sees it.
#[test]
fn a_replicated_topic_shows_its_group() {
    let mut t = topic("orders", false, Vec::new());
    t.replication = Some(crate::cluster::GroupStats {
        replicas: 3,
        leader: Some(2),
        role: "follower",
        term: 4,
        commit_index: Some(120),
        applied_index: Some(118),
        last_log_index: Some(121),
        followers: Vec::new(),
    });
    let view = StatsView {
        topics: Some(vec![t]),
        producers: Vec::new(),
    };
    let text = render_snapshot(&view, None);
    let want =
        "\n    replicated: 3 replicas, follower of node 2, term 4, commit 120, applied 118\n";
    assert!(text.contains(want), "{text}");
}
