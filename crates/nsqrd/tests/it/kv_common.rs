//! Black-box harness for the keyspace: starts this build's nsqrd with `--kv-address` on
//! ephemeral loopback ports, and speaks RESP to it through resp-wire's encoder and decoder (so
//! tests see the exact frames the server sends). Every read has a timeout; servers are killed
//! and their data directories removed on drop unless kept for a restart.
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use nsqr_testkit::Daemon;

pub use resp_wire::Frame;

pub const READ_TIMEOUT: Duration = Duration::from_secs(20);

/// A running nsqrd with the keyspace on.
pub struct KvServer {
    proc: Daemon,
    pub kv: SocketAddr,
    pub tcp: SocketAddr,
    pub data_path: PathBuf,
    keep_data: bool,
}

impl KvServer {
    pub fn start(extra: &[&str]) -> KvServer {
        KvServer::start_in(nsqr_testkit::temp_dir("kv-test"), extra)
    }

    pub fn start_in(data_path: PathBuf, extra: &[&str]) -> KvServer {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_nsqrd"));
        cmd.arg("--tcp-address=127.0.0.1:0")
            .arg("--http-address=127.0.0.1:0")
            .arg("--https-address=")
            .arg("--broadcast-address=127.0.0.1")
            .arg("--kv-address=127.0.0.1:0")
            .arg(format!("--data-path={}", data_path.display()))
            .args(extra);
        let mut proc = Daemon::spawn(&mut cmd);
        let addrs = proc.listeners(
            Duration::from_secs(30),
            &["KV: listening on ", "TCP: listening on "],
        );
        KvServer {
            proc,
            kv: addrs[0],
            tcp: addrs[1],
            data_path,
            keep_data: false,
        }
    }

    pub fn client(&self) -> Client {
        Client::connect(self.kv)
    }

    pub fn pid(&self) -> u32 {
        self.proc.pid()
    }

    /// Resident memory of the server, in KiB.
    pub fn rss_kib(&self) -> u64 {
        self.status_kib("VmRSS:")
    }

    /// Virtual memory of the server (what it allocated, touched or not), in KiB.
    pub fn vm_kib(&self) -> u64 {
        self.status_kib("VmSize:")
    }

    fn status_kib(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect(field)
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        self.proc.is_running()
    }

    /// SIGTERM (graceful: the keyspace writes its snapshot); keeps the data directory.
    pub fn terminate_keep(mut self) -> PathBuf {
        self.keep_data = true;
        let code = self.proc.signal("TERM", Duration::from_secs(30));
        assert_eq!(code, Some(0), "nsqrd did not exit cleanly after SIGTERM");
        self.data_path.clone()
    }

    /// SIGKILL (a crash); keeps the data directory.
    pub fn kill_keep(mut self) -> PathBuf {
        self.keep_data = true;
        self.proc.kill();
        self.data_path.clone()
    }
}

impl Drop for KvServer {
    fn drop(&mut self) {
        self.proc.kill();
        if !self.keep_data {
            let _ = std::fs::remove_dir_all(&self.data_path);
        }
    }
}

/// A RESP client speaking raw frames.
pub struct Client {
    pub s: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        let s = TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
        s.set_nodelay(true).unwrap();
        Client { s, buf: Vec::new() }
    }

    pub fn send_raw(&mut self, b: &[u8]) {
        self.s.write_all(b).expect("write");
    }

    pub fn send(&mut self, args: &[&[u8]]) {
        let mut b = Vec::new();
        resp_wire::encode_request(args, &mut b);
        self.send_raw(&b);
    }

    /// One command, its reply.
    pub fn cmd(&mut self, args: &[&str]) -> Frame {
        let a: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
        self.send(&a);
        self.read()
    }

    /// The next reply; panics on timeout or close.
    pub fn read(&mut self) -> Frame {
        self.try_read().expect("connection closed before a reply")
    }

    /// The next reply, or `None` if the server closed the connection.
    pub fn try_read(&mut self) -> Option<Frame> {
        loop {
            if let Some((f, n)) = resp_wire::decode(&self.buf).expect("bad reply") {
                self.buf.drain(..n);
                return Some(f);
            }
            let mut chunk = [0u8; 65536];
            match self.s.read(&mut chunk) {
                Ok(0) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return None,
                Err(e) => panic!("read: {e}"),
            }
        }
    }

    /// Reads until the server closes; whatever replies came first.
    pub fn read_to_close(&mut self) -> Vec<Frame> {
        let mut out = Vec::new();
        while let Some(f) = self.try_read() {
            out.push(f);
        }
        out
    }
}

/// `Frame::Simple` / `Frame::Bulk` of a string.
pub fn simple(s: &str) -> Frame {
    Frame::Simple(s.as_bytes().to_vec())
}

pub fn bulk(s: &str) -> Frame {
    Frame::Bulk(s.as_bytes().to_vec())
}

pub fn err(s: &str) -> Frame {
    Frame::Error(s.as_bytes().to_vec())
}

pub fn int(n: i64) -> Frame {
    Frame::Integer(n)
}

/// An NSQ consumer on the TCP port, reading message bodies (for the change feed).
pub struct NsqConsumer {
    s: TcpStream,
}

impl NsqConsumer {
    pub fn subscribe(addr: SocketAddr, topic: &str, channel: &str) -> NsqConsumer {
        let mut s = TcpStream::connect(addr).expect("nsq connect");
        s.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
        s.write_all(b"  V2").unwrap();
        s.write_all(format!("SUB {topic} {channel}\n").as_bytes())
            .unwrap();
        let mut c = NsqConsumer { s };
        let (kind, body) = c.frame();
        assert_eq!((kind, body.as_slice()), (0, &b"OK"[..]));
        c.s.write_all(b"RDY 1000\n").unwrap();
        c
    }

    fn frame(&mut self) -> (u32, Vec<u8>) {
        let mut head = [0u8; 8];
        self.s.read_exact(&mut head).expect("nsq frame");
        let size = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let kind = u32::from_be_bytes([head[4], head[5], head[6], head[7]]);
        let mut body = vec![0u8; size - 4];
        self.s.read_exact(&mut body).expect("nsq frame body");
        (kind, body)
    }

    /// The next message's body, parsed as JSON, FIN'd.
    pub fn next(&mut self) -> serde_json::Value {
        loop {
            let (kind, body) = self.frame();
            match kind {
                0 if body == b"_heartbeat_" => self.s.write_all(b"NOP\n").unwrap(),
                2 => {
                    let id = &body[10..26];
                    let mut fin = b"FIN ".to_vec();
                    fin.extend_from_slice(id);
                    fin.push(b'\n');
                    self.s.write_all(&fin).unwrap();
                    return serde_json::from_slice(&body[26..]).expect("json body");
                }
                _ => panic!(
                    "unexpected frame {kind}: {}",
                    String::from_utf8_lossy(&body)
                ),
            }
        }
    }
}
