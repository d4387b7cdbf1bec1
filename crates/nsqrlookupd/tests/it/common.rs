//! Black-box harness: starts a real nsqlookupd-compatible binary on ephemeral loopback ports and
//! speaks raw bytes to it. The binary is this build's `nsqrlookupd`, or any binary named by
//! `NSQLOOKUPD_BIN` (so every test also runs against upstream nsqlookupd). Only std, a timeout on
//! every read, and the server is killed on drop, so a hung or crashed server fails a test
//! instead of hanging it or leaking a process.
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use nsqr_testkit::Daemon;
/// How long any single read may block before the test fails.
pub use nsqr_testkit::READ_TIMEOUT;

/// The server under test.
pub fn server_bin() -> PathBuf {
    match std::env::var_os("NSQLOOKUPD_BIN") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_BIN_EXE_nsqrlookupd")),
    }
}

/// True when running against another binary (upstream nsqlookupd) instead of nsqrlookupd.
pub fn is_upstream() -> bool {
    std::env::var_os("NSQLOOKUPD_BIN").is_some()
}

/// The OS hostname, as the server reports it.
pub fn os_hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .expect("hostname")
        .trim()
        .to_string()
}

/// A running server; killed on drop.
pub struct Lookupd {
    proc: Daemon,
    pub tcp: SocketAddr,
    pub http: SocketAddr,
}

impl Lookupd {
    /// Starts with `--broadcast-address=127.0.0.1` plus `extra` flags.
    pub fn start(extra: &[&str]) -> Lookupd {
        let mut args = vec![
            "--tcp-address=127.0.0.1:0",
            "--http-address=127.0.0.1:0",
            "--broadcast-address=127.0.0.1",
        ];
        args.extend_from_slice(extra);
        Lookupd::start_with(&args)
    }

    /// Starts with exactly `args`; they must make it listen on ports it logs.
    pub fn start_with(args: &[&str]) -> Lookupd {
        let mut proc = Daemon::spawn(Command::new(server_bin()).args(args));
        let addrs = proc.listeners(
            Duration::from_secs(15),
            &["TCP: listening on ", "HTTP: listening on "],
        );
        Lookupd {
            proc,
            tcp: addrs[0],
            http: addrs[1],
        }
    }

    /// A connection that has sent the `  V1` magic.
    pub fn connect(&self) -> Conn {
        let mut c = self.connect_raw();
        c.write(b"  V1");
        c
    }

    /// A connection with nothing sent.
    pub fn connect_raw(&self) -> Conn {
        let s = TcpStream::connect(self.tcp).expect("connect");
        s.set_read_timeout(Some(READ_TIMEOUT)).expect("timeout");
        s.set_nodelay(true).expect("nodelay");
        Conn { s }
    }

    /// A connection identified as an nsqd with this broadcast address and ports.
    pub fn nsqd(&self, broadcast: &str, tcp_port: u16, http_port: u16) -> Conn {
        let mut c = self.connect();
        let body = identify_json(broadcast, tcp_port, http_port);
        let reply = c.identify(body.as_bytes());
        assert!(
            reply.starts_with(b"{"),
            "IDENTIFY: {}",
            String::from_utf8_lossy(&reply)
        );
        c
    }

    pub fn http(&self, method: &str, path: &str) -> HttpResponse {
        http_request(self.http, method, path, &[], b"")
    }

    pub fn get(&self, path: &str) -> HttpResponse {
        self.http("GET", path)
    }

    pub fn post(&self, path: &str) -> HttpResponse {
        self.http("POST", path)
    }

    /// GET that must answer 200 with JSON.
    pub fn get_json(&self, path: &str) -> serde_json::Value {
        let r = self.get(path);
        assert_eq!(r.status, 200, "GET {path}: {}", r.text());
        r.json()
    }

    /// The `remote_address` of each producer `/lookup?topic=` lists (None on 404), sorted.
    pub fn lookup_producers(&self, topic: &str) -> Option<Vec<String>> {
        let r = self.get(&format!("/lookup?topic={}", topic.replace('#', "%23")));
        if r.status == 404 {
            return None;
        }
        assert_eq!(r.status, 200, "{}", r.text());
        let mut v: Vec<String> = r.json()["producers"]
            .as_array()
            .expect("producers")
            .iter()
            .map(|p| p["remote_address"].as_str().expect("addr").to_string())
            .collect();
        v.sort();
        Some(v)
    }

    /// A sorted string list from a JSON GET (`/topics` → "topics").
    pub fn list(&self, path: &str, field: &str) -> Vec<String> {
        let mut v: Vec<String> = self.get_json(path)[field]
            .as_array()
            .unwrap_or_else(|| panic!("{path}: no {field} array"))
            .iter()
            .map(|x| x.as_str().expect("string").to_string())
            .collect();
        v.sort();
        v
    }

    /// Lines logged so far.
    pub fn log_lines(&self) -> Vec<String> {
        self.proc.log_lines()
    }

    /// True while the process runs.
    pub fn is_running(&mut self) -> bool {
        self.proc.is_running()
    }

    /// Waits (bounded) for the process to exit; its exit code.
    pub fn wait_exit(&mut self, t: Duration) -> Option<i32> {
        self.proc.wait_exit(t)
    }

    /// Sends `signal` (e.g. "TERM") and waits (bounded) for exit; the exit code.
    pub fn signal(&mut self, signal: &str) -> Option<i32> {
        self.proc.signal(signal, Duration::from_secs(10))
    }
}

/// The IDENTIFY body an nsqd sends.
pub fn identify_json(broadcast: &str, tcp_port: u16, http_port: u16) -> String {
    format!(
        r#"{{"broadcast_address":"{broadcast}","hostname":"nsqd-host","http_port":{http_port},"tcp_port":{tcp_port},"topology_region":"","topology_zone":"","version":"1.3.0"}}"#
    )
}

/// Runs the server with `args` to completion (bounded): (exit code, stdout + stderr).
pub fn run_to_exit(args: &[&str]) -> (Option<i32>, String) {
    nsqr_testkit::run_to_exit(&server_bin(), args)
}

/// A raw protocol V1 connection.
pub struct Conn {
    pub s: TcpStream,
}

impl Conn {
    pub fn write(&mut self, b: &[u8]) {
        self.s.write_all(b).expect("write");
    }

    /// Sends a line (`\n` appended).
    pub fn cmd(&mut self, line: &str) {
        self.write(format!("{line}\n").as_bytes());
    }

    /// Sends `IDENTIFY\n[size][body]` and reads the reply.
    pub fn identify(&mut self, body: &[u8]) -> Vec<u8> {
        self.write(&identify_bytes(body));
        self.read_reply().expect("IDENTIFY reply")
    }

    /// One `[int32 size][payload]` reply; None on EOF, timeout or error.
    pub fn read_reply(&mut self) -> Option<Vec<u8>> {
        let mut hdr = [0u8; 4];
        self.s.read_exact(&mut hdr).ok()?;
        let size = i32::from_be_bytes(hdr);
        let mut data = vec![0u8; usize::try_from(size).ok()?];
        self.s.read_exact(&mut data).ok()?;
        Some(data)
    }

    pub fn reply_text(&mut self) -> String {
        String::from_utf8_lossy(&self.read_reply().expect("a reply")).into_owned()
    }

    pub fn expect_ok(&mut self) {
        assert_eq!(self.reply_text(), "OK");
    }

    /// Sends a line and expects `OK`.
    pub fn ok(&mut self, line: &str) {
        self.cmd(line);
        self.expect_ok();
    }

    /// True if the server closed the connection (EOF or reset) within the read timeout,
    /// discarding anything else it sends.
    pub fn expect_closed(&mut self) -> bool {
        nsqr_testkit::expect_closed(&mut self.s)
    }

    /// Expects exactly this error reply, then the connection closing.
    pub fn expect_fatal(&mut self, text: &str) {
        assert_eq!(self.reply_text(), text);
        assert!(self.expect_closed(), "connection not closed after {text:?}");
    }

    /// True if nothing arrives within `t` and the connection stays open.
    pub fn expect_silence(&mut self, t: Duration) -> bool {
        nsqr_testkit::expect_silence(&self.s, t)
    }

    /// Half-close: the server sees EOF, we can still read.
    pub fn shutdown_write(&mut self) {
        let _ = self.s.shutdown(Shutdown::Write);
    }

    pub fn local_addr(&self) -> String {
        self.s.local_addr().expect("local addr").to_string()
    }

    pub fn close(self) {
        let _ = self.s.shutdown(Shutdown::Both);
    }
}

/// `IDENTIFY\n[int32 size][body]`.
pub fn identify_bytes(body: &[u8]) -> Vec<u8> {
    let mut v = b"IDENTIFY\n".to_vec();
    v.extend_from_slice(&(body.len() as i32).to_be_bytes());
    v.extend_from_slice(body);
    v
}

pub use nsqr_testkit::{http_request, parse_http_response, wait_until, HttpResponse};
