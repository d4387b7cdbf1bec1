//! Black-box test harness: starts a real nsqd-compatible binary on ephemeral loopback ports and
//! speaks raw bytes to it. The binary is `nsqrd` from this build, or any nsqd-compatible binary
//! named by `NSQD_BIN` (so every test can be checked against the reference nsqd). It uses only
//! std, with a timeout on every read, so a hung server fails a test instead of hanging it.
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

pub const FRAME_RESPONSE: i32 = 0;
pub const FRAME_ERROR: i32 = 1;
pub const FRAME_MESSAGE: i32 = 2;

use nsqr_testkit::Daemon;
pub use nsqr_testkit::READ_TIMEOUT;

/// The path of the server under test.
pub fn server_bin() -> PathBuf {
    match std::env::var_os("NSQD_BIN") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_BIN_EXE_nsqrd")),
    }
}

/// True when running against a reference nsqd instead of nsqrd.
pub fn is_reference() -> bool {
    std::env::var_os("NSQD_BIN").is_some()
}

/// True when the server spills queues to disk beyond `--mem-queue-size` (`backend_depth`):
/// both nsqd and nsqrd do.
pub fn has_disk_queue() -> bool {
    true
}

/// A running server; killed and its data directory removed on drop.
pub struct Server {
    proc: Daemon,
    pub tcp: SocketAddr,
    pub http: SocketAddr,
    pub data_path: PathBuf,
    /// Leave the data directory in place on drop (restart tests).
    keep_data: bool,
}

/// A fresh data directory.
pub fn temp_dir() -> PathBuf {
    nsqr_testkit::temp_dir("test")
}

impl Server {
    /// Start with default options plus `extra` flags.
    pub fn start(extra: &[&str]) -> Server {
        Server::start_in(temp_dir(), extra)
    }

    /// Start with an existing data directory (for restart tests).
    pub fn start_in(data_path: PathBuf, extra: &[&str]) -> Server {
        Server::start_bin_in(server_bin(), data_path, extra)
    }

    /// Start a given nsqd-compatible binary on a data directory.
    pub fn start_bin_in(bin: PathBuf, data_path: PathBuf, extra: &[&str]) -> Server {
        Server::start_env(bin, data_path, extra, &[])
    }

    /// Start with extra environment variables.
    pub fn start_env(
        bin: PathBuf,
        data_path: PathBuf,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Server {
        let mut cmd = Command::new(bin);
        cmd.envs(env.iter().copied())
            .arg("--tcp-address=127.0.0.1:0")
            .arg("--http-address=127.0.0.1:0")
            .arg("--https-address=")
            .arg("--broadcast-address=127.0.0.1")
            .arg(format!("--data-path={}", data_path.display()))
            .args(extra);
        let mut proc = Daemon::spawn(&mut cmd);
        let addrs = proc.listeners(
            Duration::from_secs(15),
            &["TCP: listening on ", "HTTP: listening on "],
        );
        Server {
            proc,
            tcp: addrs[0],
            http: addrs[1],
            data_path,
            keep_data: false,
        }
    }

    /// A new TCP connection that has sent the `  V2` magic.
    pub fn connect(&self) -> Conn {
        let mut c = self.connect_raw();
        c.write(b"  V2");
        c
    }

    /// A new TCP connection with nothing sent.
    pub fn connect_raw(&self) -> Conn {
        let s = TcpStream::connect(self.tcp).expect("connect");
        s.set_read_timeout(Some(READ_TIMEOUT)).expect("timeout");
        s.set_nodelay(true).expect("nodelay");
        Conn { s }
    }

    /// One HTTP/1.1 request; returns the response.
    pub fn http(&self, method: &str, path: &str, body: &[u8]) -> HttpResponse {
        http_request(self.http, method, path, &[], body)
    }

    pub fn get(&self, path: &str) -> HttpResponse {
        self.http("GET", path, b"")
    }

    pub fn post(&self, path: &str, body: &[u8]) -> HttpResponse {
        self.http("POST", path, body)
    }

    /// GET /stats?format=json parsed.
    pub fn stats(&self) -> serde_json::Value {
        let r = self.get("/stats?format=json");
        assert_eq!(r.status, 200, "stats: {}", r.text());
        r.json()
    }

    /// The stats object of one channel, if it exists.
    pub fn channel_stats(&self, topic: &str, channel: &str) -> Option<serde_json::Value> {
        let s = self.stats();
        let t = s["topics"]
            .as_array()?
            .iter()
            .find(|t| t["topic_name"] == topic)?
            .clone();
        t["channels"]
            .as_array()?
            .iter()
            .find(|c| c["channel_name"] == channel)
            .cloned()
    }

    /// The stats object of one topic, if it exists.
    pub fn topic_stats(&self, topic: &str) -> Option<serde_json::Value> {
        let s = self.stats();
        s["topics"]
            .as_array()?
            .iter()
            .find(|t| t["topic_name"] == topic)
            .cloned()
    }

    /// The consumer stats objects (`clients`) of one channel; empty if it does not exist.
    pub fn client_stats(&self, topic: &str, channel: &str) -> Vec<serde_json::Value> {
        self.channel_stats(topic, channel)
            .and_then(|c| c["clients"].as_array().cloned())
            .unwrap_or_default()
    }

    /// An integer field of a channel's stats (None if the channel does not exist).
    pub fn channel_stat(&self, topic: &str, channel: &str, field: &str) -> Option<i64> {
        self.channel_stats(topic, channel)
            .and_then(|c| c[field].as_i64())
    }

    /// An integer field of a topic's stats (None if the topic does not exist).
    pub fn topic_stat(&self, topic: &str, field: &str) -> Option<i64> {
        self.topic_stats(topic).and_then(|t| t[field].as_i64())
    }

    /// The stats object of the consumer on topic/channel that is connection `conn` (matched by
    /// `remote_address`).
    pub fn conn_stats(&self, topic: &str, channel: &str, conn: &Conn) -> Option<serde_json::Value> {
        let me = conn.s.local_addr().ok()?.to_string();
        self.client_stats(topic, channel)
            .into_iter()
            .find(|c| c["remote_address"] == me.as_str())
    }

    /// Wait (bounded) until consumer `conn` reports `ready_count` `n`.
    pub fn wait_conn_ready(&self, topic: &str, channel: &str, conn: &Conn, n: i64) {
        let ok = wait_until(Duration::from_secs(5), || {
            self.conn_stats(topic, channel, conn)
                .is_some_and(|c| c["ready_count"] == n)
        });
        assert!(
            ok,
            "ready_count of a consumer of {topic}/{channel} never reached {n}"
        );
    }

    /// Wait (bounded) until the channel's clients report a total `ready_count` of `n`, so a
    /// RDY sent on another connection is known to have been processed.
    pub fn wait_ready(&self, topic: &str, channel: &str, n: i64) {
        let ok = wait_until(Duration::from_secs(5), || {
            let c = self.client_stats(topic, channel);
            !c.is_empty()
                && c.iter()
                    .map(|c| c["ready_count"].as_i64().unwrap_or(0))
                    .sum::<i64>()
                    == n
        });
        assert!(ok, "ready_count of {topic}/{channel} never reached {n}");
    }

    /// Lines the server has logged so far.
    pub fn log_lines(&self) -> Vec<String> {
        self.proc.log_lines()
    }

    /// What the server logged while starting (up to its listening lines), once.
    pub fn startup_lines(&mut self) -> Vec<String> {
        self.proc.waited_lines()
    }

    /// Send SIGTERM and wait (bounded) for exit; returns the exit status code.
    pub fn terminate(mut self) -> Option<i32> {
        self.proc.signal("TERM", Duration::from_secs(10))
    }
}

impl Server {
    /// SIGTERM, wait for the exit, and hand back the data directory (not removed).
    pub fn terminate_keep(mut self) -> (Option<i32>, PathBuf) {
        self.keep_data = true;
        let dir = self.data_path.clone();
        (self.terminate(), dir)
    }

    /// SIGKILL (a crash), and hand back the data directory (not removed).
    pub fn kill_keep(mut self) -> PathBuf {
        self.keep_data = true;
        self.data_path.clone()
    }

    /// The process id (to send signals).
    pub fn pid(&self) -> u32 {
        self.proc.pid()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.proc.kill();
        if !self.keep_data {
            let _ = std::fs::remove_dir_all(&self.data_path);
        }
    }
}

/// Run the server binary with `args` to completion (for flag / startup tests): (exit code, output).
pub fn run_to_exit(args: &[&str]) -> (Option<i32>, String) {
    nsqr_testkit::run_to_exit(&server_bin(), args)
}

/// A decoded server frame.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    Response(Vec<u8>),
    Error(String),
    Message(Msg),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Msg {
    pub timestamp: i64,
    pub attempts: u16,
    pub id: [u8; 16],
    pub body: Vec<u8>,
}

impl Msg {
    pub fn id_str(&self) -> String {
        String::from_utf8_lossy(&self.id).into_owned()
    }
}

impl Frame {
    pub fn response_text(&self) -> String {
        match self {
            Frame::Response(b) => String::from_utf8_lossy(b).into_owned(),
            other => panic!("expected response frame, got {other:?}"),
        }
    }
}

/// A raw V2 protocol connection.
pub struct Conn {
    pub s: TcpStream,
}

impl Conn {
    pub fn write(&mut self, b: &[u8]) {
        self.s.write_all(b).expect("write");
    }

    /// Send a command line (a `\n` is appended).
    pub fn cmd(&mut self, line: &str) {
        let mut v = line.as_bytes().to_vec();
        v.push(b'\n');
        self.write(&v);
    }

    /// Send a command line followed by a size-prefixed body.
    pub fn cmd_body(&mut self, line: &str, body: &[u8]) {
        let mut v = line.as_bytes().to_vec();
        v.push(b'\n');
        v.extend_from_slice(&(body.len() as i32).to_be_bytes());
        v.extend_from_slice(body);
        self.write(&v);
    }

    pub fn set_timeout(&mut self, t: Duration) {
        self.s.set_read_timeout(Some(t)).expect("timeout");
    }

    /// Read one frame; panics on timeout or EOF.
    pub fn read_frame(&mut self) -> Frame {
        self.try_read_frame().expect("expected a frame")
    }

    /// Read one frame; None on EOF, timeout or a read error.
    pub fn try_read_frame(&mut self) -> Option<Frame> {
        let mut hdr = [0u8; 8];
        self.s.read_exact(&mut hdr).ok()?;
        let size = i32::from_be_bytes([hdr[0], hdr[1], hdr[2], hdr[3]]);
        let ftype = i32::from_be_bytes([hdr[4], hdr[5], hdr[6], hdr[7]]);
        let mut data = vec![0u8; (size - 4).max(0) as usize];
        self.s.read_exact(&mut data).ok()?;
        Some(match ftype {
            FRAME_RESPONSE => Frame::Response(data),
            FRAME_ERROR => Frame::Error(String::from_utf8_lossy(&data).into_owned()),
            FRAME_MESSAGE => {
                assert!(data.len() >= 26, "short message frame");
                let mut id = [0u8; 16];
                id.copy_from_slice(&data[10..26]);
                Frame::Message(Msg {
                    timestamp: i64::from_be_bytes(data[0..8].try_into().expect("8")),
                    attempts: u16::from_be_bytes([data[8], data[9]]),
                    id,
                    body: data[26..].to_vec(),
                })
            }
            t => panic!("unknown frame type {t}"),
        })
    }

    /// Read frames until one that is not a heartbeat.
    pub fn read_non_heartbeat(&mut self) -> Frame {
        loop {
            let f = self.read_frame();
            if f != Frame::Response(b"_heartbeat_".to_vec()) {
                return f;
            }
        }
    }

    /// Expect an `OK` response.
    pub fn expect_ok(&mut self) {
        assert_eq!(self.read_non_heartbeat(), Frame::Response(b"OK".to_vec()));
    }

    /// Expect an error frame with exactly this text.
    pub fn expect_error(&mut self, text: &str) {
        assert_eq!(self.read_non_heartbeat(), Frame::Error(text.to_string()));
    }

    /// Expect a message frame.
    pub fn expect_message(&mut self) -> Msg {
        match self.read_non_heartbeat() {
            Frame::Message(m) => m,
            other => panic!("expected message, got {other:?}"),
        }
    }

    /// True if the server closed the connection (EOF) within the read timeout.
    pub fn expect_closed(&mut self) -> bool {
        nsqr_testkit::expect_closed(&mut self.s)
    }

    /// True if nothing at all arrives within `t`.
    pub fn expect_silence(&mut self, t: Duration) -> bool {
        nsqr_testkit::expect_silence(&self.s, t)
    }

    /// IDENTIFY with a JSON body; returns the response frame.
    pub fn identify(&mut self, json: &str) -> Frame {
        self.cmd_body("IDENTIFY", json.as_bytes());
        self.read_non_heartbeat()
    }

    /// SUB and expect OK.
    pub fn sub(&mut self, topic: &str, channel: &str) {
        self.cmd(&format!("SUB {topic} {channel}"));
        self.expect_ok();
    }

    /// PUB and expect OK.
    pub fn publish(&mut self, topic: &str, body: &[u8]) {
        self.cmd_body(&format!("PUB {topic}"), body);
        self.expect_ok();
    }

    pub fn close(self) {
        let _ = self.s.shutdown(Shutdown::Both);
    }

    /// Read one frame (heartbeats included), waiting at most `t`; None on timeout or EOF.
    pub fn read_frame_within(&mut self, t: Duration) -> Option<Frame> {
        self.set_timeout(t.max(Duration::from_millis(1)));
        let f = self.try_read_frame();
        self.set_timeout(READ_TIMEOUT);
        f
    }

    /// Read frames, skipping heartbeats, until a non-heartbeat frame arrives or `t` passes.
    pub fn frame_within(&mut self, t: Duration) -> Option<Frame> {
        let deadline = Instant::now() + t;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            match self.read_frame_within(left) {
                Some(Frame::Response(b)) if b == b"_heartbeat_" => continue,
                other => return other,
            }
        }
    }

    /// Wait at most `t` for a message frame (skipping heartbeats); panics on any other frame.
    pub fn message_within(&mut self, t: Duration) -> Option<Msg> {
        match self.frame_within(t) {
            None => None,
            Some(Frame::Message(m)) => Some(m),
            Some(other) => panic!("expected message, got {other:?}"),
        }
    }

    /// Expect `n` message frames.
    pub fn expect_messages(&mut self, n: usize) -> Vec<Msg> {
        (0..n).map(|_| self.expect_message()).collect()
    }

    /// Expect an error frame with exactly this text, then the server closing the connection.
    pub fn expect_fatal(&mut self, text: &str) {
        self.expect_error(text);
        assert!(self.expect_closed(), "connection not closed after {text:?}");
    }

    /// Half-close: no more bytes from us (the server sees EOF), but we can still read.
    pub fn shutdown_write(&mut self) {
        let _ = self.s.shutdown(Shutdown::Write);
    }

    pub fn rdy(&mut self, n: u64) {
        self.cmd(&format!("RDY {n}"));
    }

    pub fn fin(&mut self, id: &str) {
        self.cmd(&format!("FIN {id}"));
    }

    pub fn req(&mut self, id: &str, delay_ms: u64) {
        self.cmd(&format!("REQ {id} {delay_ms}"));
    }

    pub fn touch(&mut self, id: &str) {
        self.cmd(&format!("TOUCH {id}"));
    }
}

/// Encode an MPUB body: `[int32 num][int32 size][data]...` (without the outer size).
pub fn mpub_body(msgs: &[&[u8]]) -> Vec<u8> {
    let mut v = (msgs.len() as i32).to_be_bytes().to_vec();
    for m in msgs {
        v.extend_from_slice(&(m.len() as i32).to_be_bytes());
        v.extend_from_slice(m);
    }
    v
}

pub use nsqr_testkit::{http_request, wait_until, HttpResponse};
