//! `nsqr-bench transports` with tiny counts over tcp and unix (through the debug nsqrd it
//! starts) and inproc: every cell must report exactly its messages at every receiver, a cell
//! that cannot finish must fail the run with status 2, and bad flags exit 64.
//!
//! libzmq is not needed: `cargo test` builds nsqr-bench without the `libzmq` feature, so only
//! nsqr's side runs and the report says libzmq was not built in (`make transports` runs the
//! matrix with it). nsqrd is `NSQRD_BIN`, else the workspace's, built by nsqr-testkit in the
//! tests' profile if needed.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

fn nsqrd() -> PathBuf {
    std::env::var_os("NSQRD_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| nsqr_testkit::daemon_bin("nsqrd"))
}

/// `nsqr-bench transports --nsqrd <debug nsqrd> ARGS`, bounded in time: (exit code, stdout,
/// stderr).
fn transports(args: &[&str]) -> (i32, String, String) {
    let out = nsqr_testkit::output_within(
        Command::new(env!("CARGO_BIN_EXE_nsqr-bench"))
            .args(["transports", "--nsqrd"])
            .arg(nsqrd())
            .args(args),
        Duration::from_secs(300),
        &format!("nsqr-bench transports {args:?}"),
    );
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json(stdout: &str, stderr: &str) -> Value {
    serde_json::from_str(stdout)
        .unwrap_or_else(|e| panic!("bad JSON ({e}):\n{stdout}\nstderr:\n{stderr}"))
}

/// The cells of one (pattern, transport), in order.
fn cells<'a>(v: &'a Value, pattern: &str, transport: &str) -> Vec<&'a Value> {
    v["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["pattern"] == pattern && c["transport"] == transport)
        .collect()
}

#[test]
fn every_cell_counts_its_messages_exactly() {
    let (code, out, err) = transports(&[
        "--counts",
        "200,100,50,20",
        "--fanout-subscribers",
        "2,3",
        "--fanout-count",
        "150",
        "--reps",
        "2",
        "--json",
    ]);
    let v = json(&out, &err);
    assert_eq!(code, 0, "{v:#}\n{err}");
    assert_eq!(v["ok"], Value::Bool(true), "{v:#}");
    assert_eq!(v["libzmq_built_in"], Value::Bool(false), "{v:#}");
    // Two untimed repetitions per cell by default, not counted among the timed ones.
    assert_eq!(v["warmup"], 2, "{v:#}");
    assert!(v["libzmq"].as_str().unwrap().contains("not built in"));
    assert!(v["nsqrd"].as_str().unwrap().contains("nsqrd"), "{v:#}");
    assert_eq!(v["cells"].as_array().unwrap().len(), 3 * (4 + 4 + 2));
    for t in ["tcp", "unix", "inproc"] {
        for p in ["pubsub", "reqrep"] {
            let got: Vec<(u64, u64)> = cells(&v, p, t)
                .iter()
                .map(|c| (c["size"].as_u64().unwrap(), c["count"].as_u64().unwrap()))
                .collect();
            assert_eq!(
                got,
                [(64, 200), (1024, 100), (8192, 50), (65536, 20)],
                "{p} {t}"
            );
        }
        let fan: Vec<u64> = cells(&v, "fanout", t)
            .iter()
            .map(|c| c["receivers"].as_u64().unwrap())
            .collect();
        assert_eq!(fan, [2, 3], "fanout {t}");
    }
    for c in v["cells"].as_array().unwrap() {
        let n = &c["nsqr"];
        assert_eq!(n["reps_ok"], 2, "{c:#}");
        assert_eq!(n["received"], c["count"], "{c:#}");
        assert_eq!(n["errors"].as_array().unwrap().len(), 0, "{c:#}");
        assert!(n["msgs_per_sec"].as_f64().unwrap() > 0.0, "{c:#}");
        assert!(n["cpu_us_per_msg"].as_f64().unwrap() > 0.0, "{c:#}");
        let server = n["server_cpu_us_per_msg"].as_f64();
        assert_eq!(server.is_some(), c["transport"] != "inproc", "{c:#}");
        assert!(c["libzmq"].is_null() && c["ratio"].is_null(), "{c:#}");
    }
}

#[test]
fn the_table_says_libzmq_is_not_built_in() {
    let (code, out, err) = transports(&[
        "--patterns",
        "pubsub",
        "--transports",
        "inproc",
        "--sizes",
        "64",
        "--counts",
        "100",
        "--reps",
        "1",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("libzmq (not built in"), "{out}");
    assert!(out.contains("1 reps per cell after 2 untimed"), "{out}");
    assert!(out.contains("pubsub"), "{out}");
}

#[test]
fn a_cell_that_cannot_finish_fails_the_run() {
    // 200,000 messages of 64 KB cannot arrive within a millisecond.
    let (code, out, err) = transports(&[
        "--patterns",
        "pubsub",
        "--transports",
        "inproc",
        "--sizes",
        "65536",
        "--counts",
        "200000",
        "--reps",
        "1",
        "--cell-timeout",
        "1ms",
        "--json",
    ]);
    let v = json(&out, &err);
    assert_eq!(code, 2, "{v:#}\n{err}");
    assert_eq!(v["ok"], Value::Bool(false), "{v:#}");
    let errors = v["cells"][0]["nsqr"]["errors"].as_array().unwrap();
    assert!(
        errors[0].as_str().unwrap().contains("not done within"),
        "{v:#}"
    );
}

#[test]
fn bad_flags_exit_64() {
    for bad in [
        &["--counts", "1,2"][..],
        &["--reps", "0"],
        &["--warmup", "101"],
        &["--sizes", "8"],
        &["--fanout-subscribers", "0"],
    ] {
        let (code, _, err) = transports(bad);
        assert_eq!(code, 64, "{bad:?}: {err}");
        assert!(err.starts_with("error: "), "{bad:?}: {err}");
    }
}
