//! Runs `nsqr-bench kv` briefly against a real nsqrd with the keyspace on, and checks what it
//! reports. The phases that drive redis-benchmark (an external binary) are left to the
//! benchmark runs; their output parsing has unit tests.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn nsqr_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_nsqr-bench"))
}

fn nsqrd_bin() -> PathBuf {
    let p = nsqr_bin().with_file_name("nsqrd");
    assert!(
        p.is_file(),
        "nsqrd not found at {} (run `cargo build -p nsqrd` first)",
        p.display()
    );
    p
}

/// nsqrd with `--kv-address` on an ephemeral port; killed on drop.
struct Server {
    child: Child,
    kv: String,
    dir: PathBuf,
}

impl Server {
    fn start() -> Server {
        // One directory per server: the tests run at once in one process.
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("nsqr-bench-kv-test-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut child = Command::new(nsqrd_bin())
            .args([
                "--tcp-address=127.0.0.1:0",
                "--http-address=127.0.0.1:0",
                "--https-address=",
            ])
            .arg("--kv-address=127.0.0.1:0")
            .arg(format!("--data-path={}", dir.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start nsqrd");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let deadline = Instant::now() + Duration::from_secs(30);
        let kv = loop {
            assert!(Instant::now() < deadline, "nsqrd did not start");
            let line = lines.next().expect("nsqrd exited").unwrap();
            if let Some(addr) = line.split("KV: listening on ").nth(1) {
                break addr.trim().to_string();
            }
        };
        // Keep draining the log so nsqrd never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Server { child, kv, dir }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs `cmd` (an `nsqr-bench kv ... --json`), which must succeed; its report.
fn report(cmd: &mut Command) -> Value {
    let out = cmd.output().expect("run nsqr-bench");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn kv_mode_reports_nubmq_expiry_and_rss() {
    let srv = Server::start();
    let mut cmd = Command::new(nsqr_bin());
    cmd.args(["kv", "--kv-address", &srv.kv, "--json"])
        .args(["--kv-phases", "nubmq,expiry,rss"])
        .args(["--nubmq-connections", "4", "--nubmq-ops", "200"])
        .args([
            "--expiry-volatile",
            "2000",
            "--expiry-shared",
            "100",
            "--expiry-timeout",
            "20s",
        ])
        .args(["--rss-keys", "20000"]);
    let m = report(&mut cmd);
    assert!(m["nubmq_ops"].as_f64().unwrap() > 0.0, "{m}");
    assert!(m["nubmq_cpu_us"].as_f64().unwrap() >= 0.0, "{m}");
    assert_eq!(m["expiry_received"].as_f64(), Some(100.0), "{m}");
    let p99 = m["expiry_p99_ms"].as_f64().unwrap();
    assert!(p99.is_finite() && p99 > -1.0, "{m}");
    assert!(m["rss_per_key"].as_f64().unwrap() > 0.0, "{m}");
}

#[test]
fn kv_mode_reports_transactions() {
    let srv = Server::start();
    let mut cmd = Command::new(nsqr_bin());
    cmd.args(["kv", "--kv-address", &srv.kv, "--json"])
        .args(["--kv-phases", "multi", "--kv-requests", "500"])
        .args([
            "--kv-clients",
            "3",
            "--kv-pipeline",
            "4",
            "--kv-keyspace",
            "10",
        ]);
    let m = report(&mut cmd);
    assert!(m["multi_rps"].as_f64().unwrap() > 0.0, "{m}");
    assert!(m["multi_cpu_us"].as_f64().unwrap() > 0.0, "{m}");
}

#[test]
fn kv_flags_are_checked() {
    let out = Command::new(nsqr_bin())
        .args(["kv", "--nubmq-ops", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&out.stderr).contains("must be at least 1"));
}
