//! `nsqr-bench cluster` against 2 real nsqrd nodes and an nsqrlookupd that it starts on
//! loopback, briefly, in both of bench.py's modes: every acknowledged message must arrive
//! exactly once, from the node it was published to, and the nodes must be gone afterwards.
//!
//! The binaries are the ones `cargo test --workspace` (and so `make test`) builds next to
//! nsqr-bench: `target/<profile>/nsqrd` and `nsqrlookupd`. `NSQRD_BIN` and `LOOKUPD_BIN` use others
//! (e.g. an upstream nsqd and nsqlookupd). With `cargo test -p nsqr-bench` alone, build them first:
//! `cargo build -p nsqrd -p nsqrlookupd`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

pub(crate) fn sibling(name: &str, env: &str) -> PathBuf {
    if let Some(p) = std::env::var_os(env) {
        return PathBuf::from(p);
    }
    let p = PathBuf::from(env!("CARGO_BIN_EXE_nsqr-bench")).with_file_name(name);
    assert!(
        p.is_file(),
        "{name} not found at {} (run `cargo build -p nsqrd -p nsqrlookupd` first, or set {env})",
        p.display()
    );
    p
}

/// `nsqr-bench cluster ARGS --json` with 2 nodes, bounded in time; (exit code, report).
fn cluster(args: &[&str]) -> (i32, Value) {
    let nsqrd = sibling("nsqrd", "NSQRD_BIN");
    let lookupd = sibling("nsqrlookupd", "LOOKUPD_BIN");
    let out = nsqr_testkit::output_within(
        Command::new(env!("CARGO_BIN_EXE_nsqr-bench"))
            .args(["cluster", "--nodes", "2", "--duration", "300ms", "--json"])
            .arg("--nsqrd")
            .arg(&nsqrd)
            .arg("--lookupd-bin")
            .arg(&lookupd)
            // Only a safety net: a debug-build node on a loaded machine may pause for seconds,
            // which must not be reported as loss.
            .args(["--drain-timeout", "60s"])
            .args(args),
        Duration::from_secs(120),
        &format!("nsqr-bench cluster {args:?}"),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let v = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{args:?}: bad JSON ({e}):\n{stdout}\nstderr:\n{stderr}"));
    (out.status.code().unwrap_or(-1), v)
}

fn u(v: &Value, k: &str) -> u64 {
    v[k].as_u64()
        .unwrap_or_else(|| panic!("{k} missing in {v:#}"))
}

/// Every node published and delivered, each acknowledged message once; the total is the sum.
fn assert_exact(v: &Value) {
    assert_eq!(v["ok"], Value::Bool(true), "{v:#}");
    assert_eq!(v["problems"].as_array().unwrap().len(), 0, "{v:#}");
    assert_eq!(v["topics"].as_array().unwrap().len(), 3, "{v:#}");
    let nodes = v["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 2, "{v:#}");
    let mut acked = 0;
    for n in nodes {
        let a = u(n, "acked");
        assert!(a > 0, "node published nothing: {n:#}");
        assert_eq!(a % 200, 0, "whole MPUBs of 200: {n:#}");
        assert_eq!(u(n, "sent"), a, "{n:#}");
        for k in ["received", "finned", "unique"] {
            assert_eq!(u(n, k), a, "{k}: {n:#}");
        }
        for k in ["lost", "duplicates", "foreign", "redelivered", "fin_errors"] {
            assert_eq!(u(n, k), 0, "{k}: {n:#}");
        }
        assert!(n["cpu_us_per_msg"].as_f64().unwrap() > 0.0, "{n:#}");
        assert!(n["peak_rss_mb"].as_f64().unwrap() > 0.0, "{n:#}");
        acked += a;
    }
    let t = &v["total"];
    assert_eq!(u(t, "acked"), acked, "{v:#}");
    assert_eq!(u(t, "received"), acked, "{v:#}");
    assert_eq!(u(t, "lost") + u(t, "duplicates"), 0, "{v:#}");
    // The nodes were stopped when nsqr-bench exited (it waits for them).
    for n in nodes {
        let pid = u(n, "pid");
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "node {pid} still running"
        );
    }
}

#[test]
fn pubsub_delivers_every_message_once_per_node() {
    let (code, v) = cluster(&["--mode", "pubsub"]);
    assert_eq!(code, 0, "{v:#}");
    assert_exact(&v);
    assert_eq!(v["mode"], "pubsub");
    assert_eq!(v["setup"]["network"], "loopback");
    assert_eq!(v["settings"]["readers"], "8");
    assert!(v["total"]["out_msgs_per_sec"].as_f64().unwrap() > 0.0);
    assert!(v["nodes"][0]["drain_cpu_us_per_msg"].is_null(), "{v:#}");
}

#[test]
fn pub_then_drain_counts_every_message() {
    let (code, v) = cluster(&["--mode", "pub", "--topics", "3", "--writers", "1"]);
    assert_eq!(code, 0, "{v:#}");
    assert_exact(&v);
    assert_eq!(v["mode"], "pub");
    assert!(
        v["nodes"][1]["drain_cpu_us_per_msg"].as_f64().unwrap() > 0.0,
        "{v:#}"
    );
}
