//! Black-box harness: starts a real nsqlookupd-compatible binary on ephemeral loopback ports and
//! speaks raw bytes to it. The binary is this build's `nsqrlookupd`, or any binary named by
//! `NSQLOOKUPD_BIN` (so every test also runs against upstream nsqlookupd). Only std, a timeout on
//! every read, and the server is killed on drop, so a hung or crashed server fails a test
//! instead of hanging it or leaking a process.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nsqr_testkit::listen_addr;
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
    child: Child,
    pub tcp: SocketAddr,
    pub http: SocketAddr,
    log: mpsc::Receiver<String>,
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
        let mut child = Command::new(server_bin())
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn server");
        let (tx, rx) = mpsc::channel::<String>();
        let pipes: Vec<Box<dyn Read + Send>> = vec![
            Box::new(child.stderr.take().expect("stderr")),
            Box::new(child.stdout.take().expect("stdout")),
        ];
        for pipe in pipes {
            let tx = tx.clone();
            // Lines are read as bytes: a server may log what a client sent, which need not be
            // UTF-8, and a reader that stopped would kill the server with SIGPIPE.
            std::thread::spawn(move || {
                let mut r = BufReader::new(pipe);
                let mut line = Vec::new();
                while matches!(r.read_until(b'\n', &mut line), Ok(n) if n > 0) {
                    let text = String::from_utf8_lossy(&line).trim_end().to_string();
                    line.clear();
                    let _ = tx.send(text);
                }
            });
        }
        drop(tx);
        let (mut tcp, mut http) = (None, None);
        let deadline = Instant::now() + Duration::from_secs(15);
        let mut seen = Vec::new();
        while tcp.is_none() || http.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    tcp = tcp.or_else(|| listen_addr(&line, "TCP: listening on "));
                    http = http.or_else(|| listen_addr(&line, "HTTP: listening on "));
                    seen.push(line);
                }
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!(
                        "server did not report its listeners; log:\n{}",
                        seen.join("\n")
                    );
                }
            }
        }
        Lookupd {
            child,
            tcp: tcp.expect("tcp"),
            http: http.expect("http"),
            log: rx,
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
        self.log.try_iter().collect()
    }

    /// True while the process runs.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits (bounded) for the process to exit; its exit code.
    pub fn wait_exit(&mut self, t: Duration) -> Option<i32> {
        let deadline = Instant::now() + t;
        while Instant::now() < deadline {
            if let Ok(Some(st)) = self.child.try_wait() {
                return st.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// Sends `signal` (e.g. "TERM") and waits (bounded) for exit; the exit code.
    pub fn signal(&mut self, signal: &str) -> Option<i32> {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status();
        self.wait_exit(Duration::from_secs(10))
    }
}

impl Drop for Lookupd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
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
        let mut b = [0u8; 1024];
        loop {
            match self.s.read(&mut b) {
                Ok(0) => return true,
                Ok(_) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
                // A signal interrupted the wait (a read with a timeout is not restarted).
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => return false,
            }
        }
    }

    /// Expects exactly this error reply, then the connection closing.
    pub fn expect_fatal(&mut self, text: &str) {
        assert_eq!(self.reply_text(), text);
        assert!(self.expect_closed(), "connection not closed after {text:?}");
    }

    /// True if nothing arrives within `t` and the connection stays open.
    pub fn expect_silence(&mut self, t: Duration) -> bool {
        self.s.set_read_timeout(Some(t)).expect("timeout");
        let mut b = [0u8; 1];
        let r = match self.s.peek(&mut b) {
            Ok(_) => false,
            Err(e) => matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
        };
        self.s
            .set_read_timeout(Some(READ_TIMEOUT))
            .expect("timeout");
        r
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

#[allow(unused_imports)]
pub use nsqr_testkit::{http_request, parse_http_response, wait_until, HttpResponse};
