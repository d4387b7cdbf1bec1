//! The command line: defaults, flag spellings, and every rule clap or `check` enforces.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

fn parse(args: &[&str]) -> Result<Command, String> {
    let mut v = vec!["nsqr-bench"];
    v.extend_from_slice(args);
    let c = Cli::try_parse_from(v).map_err(|e| e.to_string())?.command;
    c.check()?;
    Ok(c)
}

fn ok(args: &[&str]) -> Command {
    parse(args).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn bad(args: &[&str]) -> String {
    match parse(args) {
        Ok(c) => panic!("{args:?} parsed as {c:?}"),
        Err(e) => e,
    }
}

#[test]
fn floor_takes_the_flags_compare_starts_servers_with() {
    let c = ok(&[
        "floor",
        "--tcp-address=127.0.0.1:0",
        "--http-address=127.0.0.1:0",
        "--https-address=",
        "--broadcast-address=127.0.0.1",
        "--data-path=/tmp/x",
    ]);
    let Command::Floor(f) = c else {
        panic!("{c:?}")
    };
    assert_eq!(f.tcp_address, "127.0.0.1:0");
    bad(&["floor", "--no-such-flag"]);
}

#[test]
fn defaults_and_flags() {
    let Command::Pub(b) = ok(&["pub"]) else {
        panic!()
    };
    assert_eq!(b.publish.duration, Duration::from_secs(3));
    assert_eq!(
        (b.body.size, b.publish.batch_size, b.publish.connections),
        (200, 200, 1)
    );
    assert_eq!(b.target.nsqd_tcp_address, "127.0.0.1:4150");
    let Command::Matrix(b) = ok(&[
        "matrix",
        "--duration",
        "500ms",
        "--sizes",
        "64,1024",
        "--json",
    ]) else {
        panic!()
    };
    assert_eq!(b.sizes, vec![64, 1024]);
    assert_eq!(b.publish.duration, Duration::from_millis(500));
    assert!(b.target.json);
    let Command::Sub(b) = ok(&["sub", "--output-buffer-size", "-1", "--sub-connections=2"]) else {
        panic!()
    };
    assert_eq!(b.consume.output_buffer_size, Some(-1));
    assert_eq!(
        (
            b.publish.pub_connections(),
            b.consume.sub_connections(&b.publish)
        ),
        (1, 2)
    );
    assert_eq!(b.consume.rdy(), 2500);
}

#[test]
fn modes_take_only_their_flags() {
    // pub does not consume, matrix takes --sizes only, inproc has no server.
    bad(&["pub", "--rdy=10"]);
    bad(&["pub", "--channel=c"]);
    bad(&["matrix", "--size=64"]);
    bad(&["inproc", "--nsqd-tcp-address=127.0.0.1:1"]);
    bad(&["kv", "--duration=1s"]);
    bad(&["compare", "--reference=/bin/true", "--nsqd-tcp-address=a:1"]);
    bad(&["sse", "--http-consumers=2"]);
    bad(&["http-consume", "--keys=2"]);
    ok(&["ordered", "--keys=2", "--http-batch=5"]);
    ok(&["http-consume", "--http-consumers=2", "--http-batch=5"]);
}

#[test]
fn durations_parse_as_go_does() {
    assert_eq!(parse_duration("3s"), Ok(Duration::from_secs(3)));
    assert_eq!(parse_duration(" 1m30s "), Ok(Duration::from_secs(90)));
    assert_eq!(parse_duration("250µs"), Ok(Duration::from_micros(250)));
    assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
    for bad in ["", "3", "s", "-1s", "3x", "1.2.3s", "ms5"] {
        assert!(parse_duration(bad).is_err(), "{bad:?}");
    }
    assert_eq!(
        parse_duration("3x"),
        Err("invalid duration \"3x\" (examples: 3s, 500ms, 1m30s)".to_string())
    );
}

#[test]
fn rates_parse_with_suffixes() {
    assert_eq!(parse_rate("1000"), Ok(1000));
    assert_eq!(parse_rate("10k"), Ok(10_000));
    assert_eq!(parse_rate("2.5k"), Ok(2500));
    assert_eq!(parse_rate("1M"), Ok(1_000_000));
    assert_eq!(parse_rate(" 500 "), Ok(500));
    for bad in ["", "0", "-5", "1.5", "k", "10x", "1m", "inf", "NaN", "1e13"] {
        assert!(parse_rate(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn latency_rates_and_matrix_flags() {
    let Command::Compare(b) = ok(&["compare", "--reference", "/bin/true"]) else {
        panic!()
    };
    assert_eq!(b.latency_rates, vec![1000, 10_000]);
    assert!(!b.matrix);
    assert_eq!((b.consume.rdy(), b.mem_queue_size), (2500, 1_000_000));
    let Command::Compare(b) = ok(&[
        "compare",
        "--reference",
        "/bin/true",
        "--latency-rates",
        "2k,5000",
        "--latency-rates=20k",
        "--matrix",
        "--sizes",
        "64,1024",
    ]) else {
        panic!()
    };
    assert_eq!(b.latency_rates, vec![2000, 5000, 20_000]);
    assert!(b.matrix);
    bad(&["compare", "--reference=/bin/true", "--latency-rates", "0"]);
    assert!(bad(&[
        "compare",
        "--reference=/bin/true",
        "--latency-rates",
        "1k,1000"
    ])
    .contains("same rate twice"));
}

#[test]
fn kv_flags() {
    let Command::Kv(b) = ok(&["kv", "--kv-phases", "setget,rss", "--kv-requests", "10"]) else {
        panic!()
    };
    assert_eq!(b.workload.kv_phases, vec![Phase::Setget, Phase::Rss]);
    assert!(bad(&["kv", "--kv-phases", "rss,rss"]).contains("at most once"));
    bad(&["kv", "--nubmq-ops", "0"]);
    // compare with only --kv-reference needs no nsqd reference; with neither, it is refused.
    ok(&["compare", "--kv-reference", "/usr/bin/redis-server"]);
    bad(&["compare"]);
    bad(&["compare", "--kv-reference=/x", "--kv-phases=rss,rss"]);
}

#[test]
fn cluster_flags() {
    let Command::Cluster(b) = ok(&["cluster"]) else {
        panic!()
    };
    let c = &b.cluster;
    assert_eq!(c.cluster_mode, crate::cluster::ClusterMode::Pubsub);
    assert_eq!((c.nodes, c.topics, c.writers, c.readers), (3, 3, 2, 8));
    assert_eq!((b.rdy(), b.mem_queue_size), (10_000, 10_000_000));
    let Command::Cluster(b) = ok(&["cluster", "--mode", "pub", "--nodes=2", "--rdy=300"]) else {
        panic!()
    };
    assert_eq!(b.cluster.cluster_mode, crate::cluster::ClusterMode::Pub);
    assert_eq!((b.cluster.node_count(), b.rdy()), (2, 300));
    let Command::Cluster(given) = ok(&[
        "cluster",
        "--nsqd-tcp-addresses=127.0.0.1:1,127.0.0.1:2",
        "--lookupd-http-address=127.0.0.1:3",
    ]) else {
        panic!()
    };
    assert_eq!((given.cluster.node_count(), given.rdy()), (2, 2500));
    let bad = |extra: &[&str]| {
        let mut v = vec!["cluster"];
        v.extend_from_slice(extra);
        bad(&v)
    };
    assert!(bad(&["--nodes=0"]).contains("--nodes"));
    assert!(bad(&["--writers=0"]).contains("--writers"));
    assert!(bad(&["--readers=0"]).contains("--readers"));
    assert!(bad(&["--nsqd-tcp-addresses=a:1"]).contains("--lookupd-http-address"));
    assert!(bad(&["--lookupd-http-address=a:1"]).contains("--nsqd-tcp-addresses"));
    assert!(bad(&["--netns-rate=1gbit"]).contains("--netns"));
    assert!(bad(&["--netns", "--netns-rate=fast"]).contains("--netns-rate"));
    assert!(bad(&["--netns", "--netns-delay=1 ms"]).contains("--netns-delay"));
    assert!(bad(&[
        "--netns",
        "--nsqd-tcp-addresses=a:1",
        "--lookupd-http-address=b:2"
    ])
    .contains("cannot be used with"));
    assert!(bad(&[
        "--nsqd-tcp-addresses=a:1",
        "--lookupd-http-address=b:2",
        "--nsqd-pids=1,2"
    ])
    .contains("one pid"));
}

#[test]
fn transports_flags() {
    let Command::Transports(b) = ok(&["transports"]) else {
        panic!()
    };
    assert_eq!(b.transports.reps, 5);
    assert!(b.transports.counts.is_empty());
    let Command::Transports(b) = ok(&["transports", "--counts", "200,100,50,20", "--reps=1"])
    else {
        panic!()
    };
    assert_eq!(b.transports.counts, vec![200, 100, 50, 20]);
    let bad = |extra: &[&str]| {
        let mut v = vec!["transports"];
        v.extend_from_slice(extra);
        bad(&v)
    };
    assert!(bad(&["--counts=1,2"]).contains("one count per size"));
    assert!(bad(&["--reps=0"]).contains("--reps"));
    assert!(bad(&["--scale=0"]).contains("--scale"));
    assert!(bad(&["--fanout-subscribers=2,2"]).contains("distinct"));
    assert!(bad(&["--transports=unix,unix"]).contains("at most once"));
    assert!(bad(&["--sizes=8"]).contains("out of range"));
    assert!(bad(&["--warmup=101"]).contains("--warmup"));
    bad(&["--patterns", "nope"]);
}

#[test]
fn validation() {
    assert!(bad(&["pub", "--size", "8"]).contains("out of range"));
    assert!(bad(&["pub", "--topic", "bad topic"]).contains("invalid name"));
    bad(&["pub", "--batch-size=0"]);
    bad(&["pub", "--pub-connections=257"]);
    bad(&["latency", "--rate=0"]);
    bad(&["sub", "--rdy=0"]);
    let compare = |extra: &[&str]| {
        let mut v = vec!["compare", "--reference", "/bin/true"];
        v.extend_from_slice(extra);
        parse(&v)
    };
    // --sizes is checked as it is parsed, with or without --matrix.
    assert!(compare(&["--sizes", "8"]).is_err());
    assert!(compare(&["--matrix", "--sizes", "64,64"]).is_err());
    assert!(compare(&["--matrix", "--sizes", "64,1048576"]).is_ok());
    assert!(parse(&["matrix", "--sizes", "64,2000000"]).is_err());
    assert!(parse(&["inproc", "--sizes", "64,64"]).is_err());
}

#[test]
fn http_pub_runs_a_laptop_load_and_minmqs_by_default() {
    let Command::HttpPub(a) = ok(&["http-pub", "--nsqrd-arg=--durability=strict"]) else {
        panic!()
    };
    let loads: Vec<String> = a.loads.iter().map(ToString::to_string).collect();
    assert_eq!(loads, ["-t2 -c50", "-t12 -c400"]);
    assert_eq!((a.rounds, a.duration), (3, Duration::from_secs(8)));
    assert_eq!(a.nsqrd_arg, ["--durability=strict"]);
    bad(&["http-pub", "--loads=12"]);
    bad(&["http-pub", "--rounds=0"]);
}
