//! Runs every single-server mode, the queue modes and `compare` briefly against a real nsqrd
//! and checks the counts.
//!
//! The nsqrd binary is the one `cargo test --workspace` (and so `make test`) builds next to
//! nsqr-bench: `target/<profile>/nsqrd`, found beside `CARGO_BIN_EXE_nsqr-bench`. Set
//! `NSQRD_BIN` to use another one (any nsqd-compatible binary works, e.g. a reference nsqd).
//! With `cargo test -p nsqr-bench` alone, build it first: `cargo build -p nsqrd`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

fn nsqr_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_nsqr-bench"))
}

fn nsqrd_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("NSQRD_BIN") {
        return PathBuf::from(p);
    }
    let p = nsqr_bin().with_file_name("nsqrd");
    assert!(
        p.is_file(),
        "nsqrd not found at {} (run `cargo build -p nsqrd` first, or set NSQRD_BIN)",
        p.display()
    );
    p
}

/// nsqrd on ephemeral loopback ports with a temporary data directory; killed on drop.
struct Server {
    child: Child,
    tcp: String,
    http: String,
    dir: PathBuf,
}

impl Server {
    fn start() -> Server {
        let dir = std::env::temp_dir().join(format!(
            "nsqr-bench-test-{}-{}",
            std::process::id(),
            Instant::now().elapsed().as_nanos()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let mut child = Command::new(nsqrd_bin())
            .arg("--tcp-address=127.0.0.1:0")
            .arg("--http-address=127.0.0.1:0")
            .arg("--https-address=")
            .arg(format!("--data-path={}", dir.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start nsqrd");
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                for (kind, marker) in [
                    ("tcp", "TCP: listening on "),
                    ("http", "HTTP: listening on "),
                ] {
                    if let Some(i) = line.find(marker) {
                        let _ = tx.send((kind, line[i + marker.len()..].trim().to_string()));
                    }
                }
            }
        });
        let (mut tcp, mut http) = (None, None);
        while tcp.is_none() || http.is_none() {
            match rx.recv_timeout(Duration::from_secs(15)) {
                Ok(("tcp", a)) => tcp = Some(a),
                Ok((_, a)) => http = Some(a),
                Err(_) => {
                    let _ = child.kill();
                    panic!("nsqrd did not report its addresses");
                }
            }
        }
        Server {
            child,
            tcp: tcp.unwrap_or_default(),
            http: http.unwrap_or_default(),
            dir,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Run `nsqr-bench ARGS --json`, bounded in time; returns (exit code, parsed stdout).
fn bench(args: &[&str]) -> (i32, Value) {
    let mut cmd = Command::new(nsqr_bin());
    cmd.args(args).arg("--json");
    if args.first() != Some(&"pub") {
        // Only a safety net here: on a loaded CI machine a debug-build server may pause for
        // seconds, which must not be reported as loss.
        cmd.args(["--drain-timeout", "60s"]);
    }
    let out = nsqr_testkit::output_within(
        &mut cmd,
        Duration::from_secs(120),
        &format!("nsqr-bench {args:?}"),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let v = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{args:?}: bad JSON ({e}):\n{stdout}\nstderr:\n{stderr}"));
    (out.status.code().unwrap_or(-1), v)
}

fn u(v: &Value, path: &[&str]) -> u64 {
    let mut x = v;
    for p in path {
        x = &x[*p];
    }
    x.as_u64()
        .unwrap_or_else(|| panic!("{path:?} missing in {v:#}"))
}

/// Published = acknowledged = received = FIN'd, each exactly once.
fn assert_exact(v: &Value) {
    let acked = u(v, &["publish", "acked"]);
    assert!(acked > 0, "nothing published: {v:#}");
    assert_eq!(u(v, &["publish", "sent"]), acked, "{v:#}");
    assert_eq!(u(v, &["consume", "received"]), acked, "{v:#}");
    assert_eq!(u(v, &["consume", "finned"]), acked, "{v:#}");
    assert_eq!(u(v, &["consume", "unique"]), acked, "{v:#}");
    assert_eq!(u(v, &["consume", "lost"]), 0, "{v:#}");
    assert_eq!(u(v, &["consume", "duplicates"]), 0, "{v:#}");
}

#[test]
fn pub_mode_counts_acknowledged_messages() {
    let s = Server::start();
    let (code, v) = bench(&[
        "pub",
        "--nsqd-tcp-address",
        &s.tcp,
        "--duration",
        "300ms",
        "--connections",
        "2",
    ]);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["ok"], Value::Bool(true), "{v:#}");
    let acked = u(&v, &["publish", "acked"]);
    assert!(acked > 0);
    assert_eq!(u(&v, &["publish", "sent"]), acked);
    assert_eq!(acked % 200, 0, "whole batches of 200");
}

#[test]
fn sub_mode_consumes_the_prefill_exactly() {
    let s = Server::start();
    let (code, v) = bench(&[
        "sub",
        "--nsqd-tcp-address",
        &s.tcp,
        "--count",
        "20001",
        "--sub-connections",
        "2",
    ]);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["ok"], Value::Bool(true), "{v:#}");
    assert_eq!(u(&v, &["publish", "acked"]), 20001);
    assert_exact(&v);
}

#[test]
fn pubsub_mode_receives_everything_sent() {
    let s = Server::start();
    let (code, v) = bench(&[
        "pubsub",
        "--nsqd-tcp-address",
        &s.tcp,
        "--duration",
        "300ms",
        "--size",
        "100",
    ]);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["ok"], Value::Bool(true), "{v:#}");
    assert_exact(&v);
}

#[test]
fn latency_mode_reports_percentiles() {
    let s = Server::start();
    let (code, v) = bench(&[
        "latency",
        "--nsqd-tcp-address",
        &s.tcp,
        "--duration",
        "300ms",
        "--rate",
        "2000",
    ]);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["ok"], Value::Bool(true), "{v:#}");
    assert_exact(&v);
    let l = &v["latency"];
    assert_eq!(
        u(&v, &["latency", "samples"]),
        u(&v, &["consume", "received"])
    );
    let p = |k: &str| l[k].as_f64().unwrap();
    assert!(p("p50_us") > 0.0 && p("p50_us") <= p("p99_us") && p("p99_us") <= p("p999_us"));
    assert!(p("p999_us") <= p("max_us"));
}

#[test]
fn matrix_mode_receives_everything_at_every_size() {
    let s = Server::start();
    let (code, v) = bench(&[
        "matrix",
        "--nsqd-tcp-address",
        &s.tcp,
        "--duration",
        "150ms",
    ]);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["ok"], Value::Bool(true), "{v:#}");
    let rows = v["matrix"].as_array().unwrap();
    let sizes: Vec<u64> = rows.iter().map(|r| r["size"].as_u64().unwrap()).collect();
    assert_eq!(sizes, [64, 1024, 8192, 65536]);
    for r in rows {
        assert_exact(r);
    }
    assert!(
        u(&rows[3], &["publish", "batch_size"]) <= 79,
        "64 KB batches fit 5 MiB"
    );
}

/// The HTTP queue modes (nsqrd only): exact counts, order kept on the ordered channel.
#[test]
fn queue_modes_count_exactly() {
    let s = Server::start();
    let addrs = ["--nsqd-tcp-address", &s.tcp, "--nsqd-http-address", &s.http];
    let run = |mode: &str, extra: &[&str]| {
        let mut args = vec![mode];
        args.extend_from_slice(&addrs);
        args.extend_from_slice(extra);
        let (code, v) = bench(&args);
        assert_eq!(code, 0, "{mode}: {v:#}");
        v
    };
    for (mode, extra) in [
        (
            "http-consume",
            &["--count", "3001", "--http-consumers", "10"][..],
        ),
        ("sse", &["--count", "3001", "--rdy", "100"][..]),
    ] {
        let v = run(mode, extra);
        assert_eq!(u(&v, &["publish", "acked"]), 3001, "{v:#}");
        for k in ["received", "acknowledged", "unique"] {
            assert_eq!(u(&v, &["consume", k]), 3001, "{mode} {k}: {v:#}");
        }
        assert_eq!(u(&v, &["consume", "lost"]), 0, "{v:#}");
        assert_eq!(u(&v, &["consume", "duplicates"]), 0, "{v:#}");
    }
    let v = run("ordered", &["--count", "3001", "--keys", "50"]);
    assert_eq!(u(&v, &["count"]), 3001, "{v:#}");
    for ch in ["plain", "ordered"] {
        assert_eq!(u(&v, &[ch, "unique"]), 3001, "{ch}: {v:#}");
        assert_eq!(u(&v, &[ch, "lost"]), 0, "{ch}: {v:#}");
        assert_eq!(u(&v, &[ch, "out_of_order"]), 0, "{ch}: {v:#}");
    }
    assert!(v["ratio"].as_f64().unwrap() > 0.0);
}

#[test]
fn unreachable_server_is_an_error() {
    let out = Command::new(nsqr_bin())
        .args([
            "pub",
            "--nsqd-tcp-address",
            "127.0.0.1:1",
            "--duration",
            "100ms",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("127.0.0.1:1"));
}

/// compare's process handling (start, measure, kill, clean up), with nsqrd as its own
/// reference so the test needs no other binary.
#[test]
fn compare_runs_both_servers_and_cleans_up() {
    let bin = nsqrd_bin();
    let bin = bin.to_str().unwrap();
    let (code, v) = bench(&[
        "compare",
        "--nsqrd",
        bin,
        "--reference",
        bin,
        "--rounds",
        "1",
        "--duration",
        "150ms",
        "--rss-messages",
        "5000",
        "--latency-rates",
        "2000,5k",
        "--matrix",
        "--sizes",
        "64,1024",
        "--floor",
    ]);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["ok"], Value::Bool(true), "{v:#}");
    // `nsqr-bench floor` ran its publish phase and the consume that follows it, handing out every
    // message once, with the server's CPU for each.
    let floor = &v["floor"]["rounds"][0];
    for k in ["pub_msgs_per_sec", "sub_msgs_per_sec"] {
        assert!(floor[k].as_f64().unwrap() > 0.0, "{k}: {v:#}");
    }
    for k in ["pub_cpu_us_per_msg", "sub_cpu_us_per_msg"] {
        assert!(floor[k].as_f64().is_some(), "{k}: {v:#}");
    }
    assert_eq!(floor["lost"].as_f64(), Some(0.0), "{v:#}");
    assert_eq!(floor["duplicates"].as_f64(), Some(0.0), "{v:#}");
    assert!(floor.get("pubsub_msgs_per_sec").is_none(), "{v:#}");
    for side in ["nsqrd", "reference"] {
        let rounds = v[side]["rounds"].as_array().unwrap();
        assert_eq!(rounds.len(), 1);
        let r = &rounds[0];
        for k in [
            "pub_msgs_per_sec",
            "sub_msgs_per_sec",
            "pubsub_msgs_per_sec",
            "peak_rss_mb",
            "latency_p50_us_at_2000",
            "latency_max_us_at_2000",
            "latency_p99_us_at_5000",
            "matrix_64_pub_msgs_per_sec",
            "matrix_64_sub_msgs_per_sec",
            "matrix_1024_pub_mb_per_sec",
            "matrix_1024_sub_mb_per_sec",
        ] {
            assert!(r[k].as_f64().unwrap() > 0.0, "{side} {k}: {r:#}");
        }
        assert_eq!(r["lost"].as_f64(), Some(0.0));
    }
    assert!(v["ratio"]["pub_msgs_per_sec"].as_f64().unwrap() > 0.0);
    assert!(v["ratio"]["matrix_1024_sub_msgs_per_sec"].as_f64().unwrap() > 0.0);
    assert!(
        v["nsqrd"]["median"]["latency_p99_us_at_5000"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert_eq!(v["settings"]["latency_rates"], "2000,5000");
    assert_eq!(v["settings"]["matrix_sizes"], "64,1024");
}
