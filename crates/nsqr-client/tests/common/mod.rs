//! The daemons the client's tests talk to: nsqrd from this workspace (or any nsqd-compatible
//! binary named by `NSQD_BIN`, e.g. upstream nsqd) and nsqrlookupd (or `NSQLOOKUPD_BIN`),
//! started on ephemeral loopback ports and killed on drop, plus the TLS fixtures nsqrd's
//! tests use.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nsqr_client::Config;
use nsqr_testkit::{daemon_bin, http_request, listen_addr};

/// True when the tests run against a reference nsqd.
pub fn is_reference() -> bool {
    std::env::var_os("NSQD_BIN").is_some()
}

fn nsqd_bin() -> PathBuf {
    std::env::var_os("NSQD_BIN").map_or_else(|| daemon_bin("nsqrd"), PathBuf::from)
}

fn lookupd_bin() -> PathBuf {
    std::env::var_os("NSQLOOKUPD_BIN").map_or_else(|| daemon_bin("nsqrlookupd"), PathBuf::from)
}

pub fn temp_dir() -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let d = std::env::temp_dir().join(format!(
        "nsqr-client-test-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A daemon process; killed on drop.
pub struct Daemon {
    child: Child,
    pub tcp: SocketAddr,
    pub http: SocketAddr,
    pub dir: PathBuf,
    log: mpsc::Receiver<String>,
}

impl Daemon {
    fn spawn(bin: PathBuf, args: Vec<String>, dir: PathBuf) -> Daemon {
        let mut child = Command::new(bin)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn daemon");
        let (tx, rx) = mpsc::channel::<String>();
        for pipe in [
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        ]
        .into_iter()
        .flatten()
        {
            let tx = tx.clone();
            std::thread::spawn(move || {
                let mut r = BufReader::new(pipe);
                let mut line = Vec::new();
                while matches!(r.read_until(b'\n', &mut line), Ok(n) if n > 0) {
                    let _ = tx.send(String::from_utf8_lossy(&line).trim_end().to_string());
                    line.clear();
                }
            });
        }
        drop(tx);
        let (mut tcp, mut http) = (None, None);
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut seen = Vec::new();
        while tcp.is_none() || http.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    if line.contains("TCP: listening on /") {
                        // A unix socket: the test knows its path.
                        tcp = tcp.or_else(|| "0.0.0.0:0".parse().ok());
                    }
                    tcp = tcp.or_else(|| listen_addr(&line, "TCP: listening on "));
                    http = http.or_else(|| listen_addr(&line, "HTTP: listening on "));
                    seen.push(line);
                }
                Err(_) => {
                    let _ = child.kill();
                    panic!("daemon did not report its listeners:\n{}", seen.join("\n"));
                }
            }
        }
        Daemon {
            child,
            tcp: tcp.unwrap(),
            http: http.unwrap(),
            dir,
            log: rx,
        }
    }

    /// nsqd with its defaults plus `extra`, on ephemeral ports.
    pub fn nsqd(extra: &[&str]) -> Daemon {
        Daemon::nsqd_at(temp_dir(), "127.0.0.1:0", extra)
    }

    /// nsqd on `dir` listening on `tcp` (a restart keeps its address).
    pub fn nsqd_at(dir: PathBuf, tcp: &str, extra: &[&str]) -> Daemon {
        let mut args = vec![
            format!("--tcp-address={tcp}"),
            "--http-address=127.0.0.1:0".to_string(),
            "--https-address=".to_string(),
            "--broadcast-address=127.0.0.1".to_string(),
            format!("--data-path={}", dir.display()),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        Daemon::spawn(nsqd_bin(), args, dir)
    }

    /// nsqlookupd on ephemeral ports.
    pub fn lookupd() -> Daemon {
        let args = vec![
            "--tcp-address=127.0.0.1:0".to_string(),
            "--http-address=127.0.0.1:0".to_string(),
            "--broadcast-address=127.0.0.1".to_string(),
        ];
        Daemon::spawn(lookupd_bin(), args, temp_dir())
    }

    /// `tcp://host:port`.
    pub fn url(&self) -> String {
        format!("tcp://{}", self.tcp)
    }

    /// Kill it, keeping its data directory; returns it and the TCP address.
    pub fn kill(mut self) -> (PathBuf, SocketAddr) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let dir = std::mem::take(&mut self.dir);
        (dir, self.tcp)
    }

    /// GET /stats?format=json.
    pub fn stats(&self) -> serde_json::Value {
        let r = http_request(self.http, "GET", "/stats?format=json", &[], b"");
        assert_eq!(r.status, 200, "{}", r.text());
        r.json()
    }

    /// A channel's field in /stats (None if the channel does not exist).
    pub fn channel_stat(&self, topic: &str, channel: &str, field: &str) -> Option<i64> {
        let s = self.stats();
        let t = s["topics"]
            .as_array()?
            .iter()
            .find(|t| t["topic_name"] == topic)?
            .clone();
        let c = t["channels"]
            .as_array()?
            .iter()
            .find(|c| c["channel_name"] == channel)?
            .clone();
        c[field].as_i64()
    }

    /// POST an HTTP API path; panics unless 200.
    pub fn post(&self, path: &str, body: &[u8]) {
        let r = http_request(self.http, "POST", path, &[], body);
        assert_eq!(r.status, 200, "{path}: {}", r.text());
    }

    /// Log lines so far.
    pub fn log_lines(&self) -> Vec<String> {
        self.log.try_iter().collect()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if !self.dir.as_os_str().is_empty() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// A config for tests: quick reconnects and redistribution, generous timeouts.
pub fn config() -> Config {
    let mut c = Config::default();
    c.dial_timeout = Duration::from_secs(10);
    c.lookupd_poll_interval = Duration::from_millis(200);
    c.lookupd_poll_jitter = 0.0;
    c.rdy_redistribute_interval = Duration::from_millis(100);
    c.drain_timeout = Duration::from_secs(10);
    c
}

/// A file of nsqrd's TLS fixtures.
pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../nsqrd/tests/fixtures/tls")
        .join(name)
}

/// The TLS flags of an nsqd using the fixtures.
pub fn tls_flags() -> Vec<String> {
    vec![
        format!("--tls-cert={}", fixture("server.pem").display()),
        format!("--tls-key={}", fixture("server.key").display()),
        format!("--tls-root-ca-file={}", fixture("ca.pem").display()),
    ]
}

pub fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// Wait up to 20 s for `f`, polling.
pub async fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `fut`, or a panic after 20 s.
pub async fn within<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), fut)
        .await
        .unwrap_or_else(|_| panic!("timed out: {what}"))
}
