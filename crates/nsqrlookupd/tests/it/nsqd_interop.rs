//! A real nsqd registering with the lookupd under test: IDENTIFY, REGISTER on topic and channel
//! creation, UNREGISTER on deletion, and the producer visible in `/lookup` with nsqd's ports.
//!
//! The node is this workspace's nsqrd (built by `nsqr_testkit::daemon_bin`), or the binary
//! named by `NSQD_BIN` (e.g. upstream nsqd).

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::common::*;

struct Nsqd {
    child: Child,
    http: SocketAddr,
    tcp: SocketAddr,
    dir: std::path::PathBuf,
}

impl Drop for Nsqd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The node under test: `NSQD_BIN`, else this workspace's nsqrd.
fn nsqd_bin() -> PathBuf {
    match std::env::var_os("NSQD_BIN") {
        Some(p) => PathBuf::from(p),
        None => nsqr_testkit::daemon_bin("nsqrd"),
    }
}

fn start_nsqd(bin: &Path, lookupd_tcp: SocketAddr) -> Nsqd {
    let dir = nsqr_testkit::temp_dir("nsqrlookupd-interop");
    let mut child = Command::new(bin)
        .arg("--tcp-address=127.0.0.1:0")
        .arg("--http-address=127.0.0.1:0")
        .arg("--https-address=")
        .arg("--broadcast-address=127.0.0.1")
        .arg(format!("--data-path={}", dir.display()))
        .arg(format!("--lookupd-tcp-address={lookupd_tcp}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn nsqd");
    let (tx, rx) = mpsc::channel();
    let err = child.stderr.take().expect("stderr");
    std::thread::spawn(move || {
        let mut r = BufReader::new(err);
        let mut line = Vec::new();
        while matches!(r.read_until(b'\n', &mut line), Ok(n) if n > 0) {
            let _ = tx.send(String::from_utf8_lossy(&line).trim_end().to_string());
            line.clear();
        }
    });
    let addr = |line: &str, marker: &str| -> Option<SocketAddr> {
        line.split(marker)
            .nth(1)?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    };
    let (mut tcp, mut http) = (None, None);
    let deadline = Instant::now() + Duration::from_secs(15);
    while tcp.is_none() || http.is_none() {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => {
                tcp = tcp.or_else(|| addr(&line, "TCP: listening on "));
                http = http.or_else(|| addr(&line, "HTTP: listening on "));
            }
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("nsqd did not start");
            }
        }
    }
    Nsqd {
        child,
        http: http.expect("http"),
        tcp: tcp.expect("tcp"),
        dir,
    }
}

#[test]
fn a_real_nsqd_registers_and_unregisters() {
    let bin = nsqd_bin();
    let l = Lookupd::start(&[]);
    let nsqd = start_nsqd(&bin, l.tcp);
    let post = |path: &str| {
        let r = http_request(nsqd.http, "POST", path, &[], b"");
        assert_eq!(r.status, 200, "nsqd {path}: {}", r.text());
    };
    post("/topic/create?topic=interop");
    post("/channel/create?topic=interop&channel=ch");
    let visible = wait_until(Duration::from_secs(10), || {
        l.get("/lookup?topic=interop").status == 200
            && l.list("/channels?topic=interop", "channels") == ["ch"]
            && l.lookup_producers("interop").is_some_and(|p| p.len() == 1)
    });
    assert!(
        visible,
        "nsqd's registration never showed up: {}",
        l.get("/debug").text()
    );
    let p = &l.get_json("/lookup?topic=interop")["producers"][0];
    assert_eq!(p["broadcast_address"], "127.0.0.1");
    assert_eq!(p["tcp_port"], nsqd.tcp.port());
    assert_eq!(p["http_port"], nsqd.http.port());
    assert_eq!(p["version"], "1.3.0");
    assert_eq!(
        l.get_json("/nodes")["producers"][0]["topics"],
        serde_json::json!(["interop"])
    );

    post("/channel/delete?topic=interop&channel=ch");
    post("/topic/delete?topic=interop");
    let gone = wait_until(Duration::from_secs(10), || {
        l.lookup_producers("interop").is_some_and(|p| p.is_empty())
    });
    assert!(gone, "{}", l.get("/debug").text());
    // nsqd stays a node (client registration) while connected.
    assert_eq!(
        l.get_json("/nodes")["producers"].as_array().unwrap().len(),
        1
    );
}
