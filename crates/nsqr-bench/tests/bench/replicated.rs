//! `nsqr-bench replicated` against real nsqrd processes it starts on 127.0.0.1: three nodes
//! with the topic at `replicas = 3`, then one plain node, one round of a few thousand
//! messages: every acknowledged message (the leader probe included) must arrive exactly once,
//! from the leader, with rates, latencies and CPU reported for both sides and the nodes gone
//! afterwards. Uses `target/<profile>/nsqrd` (or `NSQRD_BIN`).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::cluster::sibling;

const COUNT: u64 = 4000;

fn f(v: &Value, k: &str) -> f64 {
    v[k].as_f64()
        .unwrap_or_else(|| panic!("{k} missing in {v:#}"))
}

fn u(v: &Value, k: &str) -> u64 {
    v[k].as_u64()
        .unwrap_or_else(|| panic!("{k} missing in {v:#}"))
}

#[test]
fn replicated_and_single_deliver_every_acknowledged_message_once() {
    let nsqrd = sibling("nsqrd", "NSQRD_BIN");
    let out = nsqr_testkit::output_within(
        Command::new(env!("CARGO_BIN_EXE_nsqr-bench"))
            .args(["replicated", "--rounds", "1", "--json"])
            .args(["--count", &COUNT.to_string()])
            .arg("--nsqrd")
            .arg(&nsqrd)
            // Only a safety net: a debug-build node on a loaded machine may pause for seconds.
            .args(["--drain-timeout", "60s"]),
        Duration::from_secs(240),
        "nsqr-bench replicated",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let v: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("bad JSON ({e}):\n{stdout}\nstderr:\n{stderr}"));
    assert_eq!(out.status.code(), Some(0), "{v:#}\nstderr:\n{stderr}");
    assert_eq!(v["ok"], Value::Bool(true), "{v:#}");
    let runs = v["runs"].as_array().unwrap();
    let nodes: Vec<u64> = runs.iter().map(|r| u(r, "nodes")).collect();
    assert_eq!(nodes, [3, 1], "A then B: {v:#}");
    for r in runs {
        assert_eq!(u(r, "acked"), COUNT, "{r:#}");
        // The publishers' messages and the leader probe, each once.
        assert_eq!(u(r, "received"), COUNT + 1, "{r:#}");
        for k in ["lost", "duplicates", "foreign"] {
            assert_eq!(u(r, k), 0, "{k}: {r:#}");
        }
        for k in [
            "publish_msgs_per_sec",
            "consume_msgs_per_sec",
            "publish_p50_ms",
        ] {
            assert!(f(r, k) > 0.0, "{k}: {r:#}");
        }
        assert!(f(r, "publish_p99_ms") >= f(r, "publish_p50_ms"), "{r:#}");
    }
    // Three nodes replicating burn CPU on the publish path; the ratios are computed.
    assert!(f(&runs[0], "publish_cpu_us_per_msg") > 0.0, "{v:#}");
    assert!(f(&v["ratios"], "publish_rate") > 0.0, "{v:#}");
    assert_eq!(u(&v["replicated"], "rounds"), 1, "{v:#}");
    assert_eq!(u(&v["single"], "rounds"), 1, "{v:#}");
}
