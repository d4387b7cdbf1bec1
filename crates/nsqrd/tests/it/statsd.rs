//! The statsd push: a UDP listener in the test receives the datagrams and checks nsqd's metric
//! names, the `|c` / `|g` types, the prefix (`nsq.<host key>.`), the packet size bound, counters
//! sent as deltas that add up to the workload, gauges, memory stats, e2e percentile gauges and
//! `--statsd-exclude-ephemeral`. Passes against nsqd too.

use std::collections::HashMap;
use std::net::UdpSocket;
use std::time::{Duration, Instant};

use crate::common::*;

/// Everything received: counters summed, gauges as last seen, and the datagram sizes.
#[derive(Default, Debug)]
struct Received {
    counters: HashMap<String, i64>,
    gauges: HashMap<String, i64>,
    max_datagram: usize,
    lines: usize,
}

impl Received {
    fn read(&mut self, sock: &UdpSocket, prefix: &str) {
        let mut buf = [0u8; 65536];
        while let Ok(n) = sock.recv(&mut buf) {
            self.max_datagram = self.max_datagram.max(n);
            let text = std::str::from_utf8(&buf[..n]).unwrap();
            assert!(text.ends_with('\n'), "{text:?}");
            for line in text.lines() {
                self.lines += 1;
                let rest = line
                    .strip_prefix(prefix)
                    .unwrap_or_else(|| panic!("{line:?} lacks {prefix:?}"));
                let (name, value) = rest.split_once(':').unwrap();
                let (value, kind) = value.split_once('|').unwrap();
                let v: i64 = value.parse().unwrap();
                match kind {
                    "c" => *self.counters.entry(name.to_string()).or_default() += v,
                    "g" => {
                        self.gauges.insert(name.to_string(), v);
                    }
                    other => panic!("type {other} in {line:?}"),
                }
            }
        }
    }

    fn counter(&self, n: &str) -> Option<i64> {
        self.counters.get(n).copied()
    }
}

fn listener() -> UdpSocket {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    sock
}

/// Receive until `done` holds (bounded).
fn receive_until(
    sock: &UdpSocket,
    prefix: &str,
    got: &mut Received,
    what: &str,
    done: impl Fn(&Received) -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while !done(got) {
        assert!(Instant::now() < deadline, "{what}: {got:#?}");
        got.read(sock, prefix);
    }
}

#[test]
fn pushes_nsqd_names_with_counters_as_deltas() {
    let sock = listener();
    // nsqd needs an interval above 1 s (it spreads a push over the interval minus one second).
    let s = Server::start(&[
        &format!("--statsd-address={}", sock.local_addr().unwrap()),
        "--statsd-interval=2s",
        "--e2e-processing-latency-percentile=0.99,0.5",
    ]);
    let prefix = format!("nsq.127_0_0_1_{}.", s.http.port());
    let mut p = s.connect();
    for i in 0..3 {
        p.publish("st", format!("msg{i}").as_bytes());
    }
    let mut c = s.connect();
    c.sub("st", "ch");
    c.rdy(10);
    let msgs = c.expect_messages(3);
    c.fin(&msgs[0].id_str());
    c.req(&msgs[1].id_str(), 0);
    let _again = c.expect_message();

    let mut got = Received::default();
    receive_until(&sock, &prefix, &mut got, "first workload", |g| {
        g.counter("topic.st.message_count") == Some(3)
            && g.counter("topic.st.channel.ch.requeue_count") == Some(1)
            && g.gauges
                .contains_key("topic.st.channel.ch.e2e_processing_latency_99")
            && g.counters.contains_key("mem.gc_runs")
    });
    assert_eq!(got.counter("topic.st.message_bytes"), Some(12));
    assert_eq!(got.counter("topic.st.channel.ch.message_count"), Some(3));
    assert_eq!(got.counter("topic.st.channel.ch.timeout_count"), Some(0));
    assert_eq!(got.gauges.get("topic.st.depth"), Some(&0));
    assert_eq!(got.gauges.get("topic.st.backend_depth"), Some(&0));
    assert_eq!(got.gauges.get("topic.st.channel.ch.clients"), Some(&1));
    assert_eq!(
        got.gauges.get("topic.st.channel.ch.in_flight_count"),
        Some(&2)
    );
    assert_eq!(
        got.gauges.get("topic.st.channel.ch.deferred_count"),
        Some(&0)
    );
    assert_eq!(got.gauges.get("topic.st.channel.ch.depth"), Some(&0));
    for k in [
        "topic.st.e2e_processing_latency_99",
        "topic.st.e2e_processing_latency_50",
        "topic.st.channel.ch.e2e_processing_latency_50",
    ] {
        assert!(got.gauges.get(k).is_some_and(|v| *v > 0), "{k}: {got:#?}");
    }
    for k in [
        "mem.heap_objects",
        "mem.heap_idle_bytes",
        "mem.heap_in_use_bytes",
        "mem.heap_released_bytes",
        "mem.gc_pause_usec_100",
        "mem.gc_pause_usec_99",
        "mem.gc_pause_usec_95",
        "mem.next_gc_bytes",
    ] {
        assert!(got.gauges.contains_key(k), "{k}");
    }
    assert!(got.counters.contains_key("mem.gc_runs"));
    assert!(
        got.max_datagram <= 508,
        "datagram of {} bytes",
        got.max_datagram
    );

    // More traffic: the next pushes carry only the change, so the sums keep matching.
    for i in 0..2 {
        p.publish("st", format!("more{i}").as_bytes());
    }
    receive_until(&sock, &prefix, &mut got, "second workload", |g| {
        g.counter("topic.st.message_count") == Some(5)
            && g.counter("topic.st.message_bytes") == Some(22)
    });
    assert_eq!(got.counter("topic.st.channel.ch.requeue_count"), Some(1));
}

#[test]
fn custom_prefix_packet_size_and_excluded_ephemerals() {
    let sock = listener();
    let s = Server::start(&[
        &format!("--statsd-address={}", sock.local_addr().unwrap()),
        "--statsd-interval=2s",
        "--statsd-prefix=app.%s.q",
        "--statsd-udp-packet-size=100",
        "--statsd-mem-stats=false",
        "--statsd-exclude-ephemeral",
    ]);
    let prefix = format!("app.127_0_0_1_{}.q.", s.http.port());
    let mut p = s.connect();
    p.publish("kept", b"x");
    p.publish("gone#ephemeral", b"x");
    let mut c = s.connect();
    c.sub("kept", "tmp#ephemeral");
    let mut got = Received::default();
    receive_until(&sock, &prefix, &mut got, "kept topic", |g| {
        g.counter("topic.kept.message_count") == Some(1)
    });
    got.read(&sock, &prefix);
    assert!(
        got.max_datagram <= 100,
        "datagram of {} bytes",
        got.max_datagram
    );
    let names: Vec<&String> = got.counters.keys().chain(got.gauges.keys()).collect();
    assert!(
        names
            .iter()
            .all(|n| !n.contains("ephemeral") && !n.starts_with("mem.")),
        "{names:?}"
    );
}
