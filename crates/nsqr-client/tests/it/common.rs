//! The daemons the client's tests talk to: nsqrd from this workspace (or any nsqd-compatible
//! binary named by `NSQD_BIN`, e.g. upstream nsqd) and nsqrlookupd (or `NSQLOOKUPD_BIN`),
//! started on ephemeral loopback ports and killed on drop, plus the TLS fixtures nsqrd's
//! tests use.
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use nsqr_client::Config;
use nsqr_testkit::{daemon_bin, http_request, listen_addr};

fn nsqd_bin() -> PathBuf {
    std::env::var_os("NSQD_BIN").map_or_else(|| daemon_bin("nsqrd"), PathBuf::from)
}

fn lookupd_bin() -> PathBuf {
    std::env::var_os("NSQLOOKUPD_BIN").map_or_else(|| daemon_bin("nsqrlookupd"), PathBuf::from)
}

pub fn temp_dir() -> PathBuf {
    nsqr_testkit::temp_dir("client-test")
}

/// A daemon process; killed on drop.
pub struct Daemon {
    proc: nsqr_testkit::Daemon,
    pub tcp: SocketAddr,
    pub http: SocketAddr,
    pub dir: PathBuf,
}

impl Daemon {
    fn spawn(bin: PathBuf, args: Vec<String>, dir: PathBuf) -> Daemon {
        let mut proc = nsqr_testkit::Daemon::spawn(Command::new(bin).args(&args));
        let (mut tcp, mut http) = (None, None);
        proc.wait_for_log(Duration::from_secs(20), |line| {
            if line.contains("TCP: listening on /") {
                // A unix socket: the test knows its path.
                tcp = tcp.or_else(|| "0.0.0.0:0".parse().ok());
            }
            tcp = tcp.or_else(|| listen_addr(line, "TCP: listening on "));
            http = http.or_else(|| listen_addr(line, "HTTP: listening on "));
            tcp.is_some() && http.is_some()
        });
        Daemon {
            proc,
            tcp: tcp.unwrap(),
            http: http.unwrap(),
            dir,
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
        self.proc.kill();
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
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.proc.kill();
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
