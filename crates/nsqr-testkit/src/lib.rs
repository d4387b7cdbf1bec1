//! What the black-box test harnesses of nsqrd, nsqrlookupd and nsqr-client have in common: a
//! daemon as a child process with its log and a kill on drop (`Daemon`), unique temporary
//! directories, a minimal HTTP/1.1 client (so tests see the exact bytes a daemon sends, with no
//! client library normalising them), raw-socket checks, bounded polling, running a binary to its
//! exit with a deadline, and building the other package's daemon (`daemon_bin`). Only std, with
//! a timeout on every read, so a hung server fails a test instead of hanging it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod daemon;

pub use daemon::{temp_dir, Daemon};

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long any single read may block before the test fails.
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// An HTTP response.
#[derive(Debug, Clone)]
pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("bad json {e}: {}", self.text()))
    }
}

/// A minimal HTTP/1.1 request (`Connection: close`; Content-Length or chunked responses).
pub fn http_request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> HttpResponse {
    let mut s = TcpStream::connect(addr).expect("http connect");
    s.set_read_timeout(Some(READ_TIMEOUT)).expect("timeout");
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    let mut out = req.into_bytes();
    out.extend_from_slice(body);
    s.write_all(&out).expect("http write");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("http read");
    parse_http_response(&raw)
}

/// Split a raw response into status, headers and (de-chunked) body.
pub fn parse_http_response(raw: &[u8]) -> HttpResponse {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no header end in {:?}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .expect("status code");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            Some((k.trim().to_string(), v.trim().to_string()))
        })
        .collect();
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let body = if chunked {
        dechunk(&raw[split + 4..])
    } else {
        raw[split + 4..].to_vec()
    };
    HttpResponse {
        status,
        headers,
        body,
    }
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(nl) = b.windows(2).position(|w| w == b"\r\n") {
        let len = String::from_utf8_lossy(&b[..nl]);
        let len = usize::from_str_radix(len.trim().split(';').next().unwrap_or("0"), 16)
            .expect("chunk size");
        if len == 0 {
            break;
        }
        let start = nl + 2;
        out.extend_from_slice(&b[start..start + len]);
        b = &b[start + len + 2..];
    }
    out
}

/// True if the peer closed `s` (EOF or reset) within its read timeout; anything it sends
/// before that is discarded.
pub fn expect_closed(s: &mut TcpStream) -> bool {
    let mut b = [0u8; 1024];
    loop {
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return true,
            // A signal interrupted the wait (a read with a timeout is not restarted).
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return false,
        }
    }
}

/// True if nothing at all arrives on `s` within `t` (the connection stays open); the read
/// timeout is `READ_TIMEOUT` afterwards. What broke the silence (bytes, EOF or an error) is
/// printed, so a failing test says which.
pub fn expect_silence(s: &TcpStream, t: Duration) -> bool {
    let deadline = Instant::now() + t;
    let mut seen = [0u8; 64];
    let silent = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break true;
        }
        s.set_read_timeout(Some(left)).expect("timeout");
        let broken = match s.peek(&mut seen) {
            Ok(0) => "EOF".to_string(),
            Ok(n) => format!("{n} bytes: {:?}", String::from_utf8_lossy(&seen[..n])),
            // A signal interrupted the wait (a read with a timeout is not restarted).
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                break true
            }
            Err(e) => format!("error {e:?}"),
        };
        let (local, peer) = (s.local_addr(), s.peer_addr());
        eprintln!("expect_silence: {local:?} <- {peer:?} got {broken}");
        break false;
    };
    s.set_read_timeout(Some(READ_TIMEOUT)).expect("timeout");
    silent
}

/// Poll `f` every 10 ms until it returns true or `timeout` passes; returns the last result.
pub fn wait_until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if f() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The ports `free_port` hands out: below the kernel's ephemeral range (32768-60999 by
/// default), so no socket bound to port 0 anywhere on the machine (another test's server, a
/// client's outgoing connection) can take one between the check and the daemon's own bind.
const FREE_PORTS: std::ops::Range<u16> = 20_000..32_768;

/// A port on 127.0.0.1 that nothing listens on, for a daemon that must be told its port before
/// it starts (a cluster node's `--cluster-address`, an address nothing answers on). Never the
/// same port twice in one test process; a random one of `FREE_PORTS` that could be bound.
pub fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    for _ in 0..1000 {
        let port = fastrand::u16(FREE_PORTS);
        if given.contains(&port) {
            continue;
        }
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            given.push(port);
            return port;
        }
    }
    panic!("no free port in {FREE_PORTS:?} after 1000 tries");
}

/// The address after `marker` in a log line (`TCP: listening on 127.0.0.1:4150`).
pub fn listen_addr(line: &str, marker: &str) -> Option<SocketAddr> {
    let rest = &line[line.find(marker)? + marker.len()..];
    rest.split_whitespace().next()?.parse().ok()
}

/// Run `cmd` (stdin closed, stdout and stderr captured) to its end; if it has not ended within
/// `limit` it is killed and the test fails, naming `what`.
pub fn output_within(cmd: &mut Command, limit: Duration, what: &str) -> std::process::Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start {what}: {e}"));
    let deadline = Instant::now() + limit;
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{what} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

/// Run `bin` with `args` to completion, killed after 10 s (startup and flag tests):
/// (exit code, stdout + stderr).
pub fn run_to_exit(bin: &Path, args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.code(), text)
}

/// The path of one of the workspace's daemons (`nsqrd` or `nsqrlookupd`), built if needed, for
/// a test of the *other* package (cargo only gives a package's tests its own binaries, as
/// `CARGO_BIN_EXE_<name>`). Both daemons are built together with
/// `cargo build -p nsqrd -p nsqrlookupd` (what `make cluster` builds, so they share one build),
/// with the cargo running the tests (`CARGO`), in the running test's profile and target
/// directory; once per test process. Panics with cargo's output if the build fails.
pub fn daemon_bin(name: &str) -> PathBuf {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let dir = BUILT.get_or_init(build_daemons);
    match dir {
        Ok(dir) => dir.join(name),
        Err(e) => panic!("building the daemons failed: {e}"),
    }
}

/// Build both daemons; returns the directory holding them (`<target>/<profile>`).
fn build_daemons() -> Result<PathBuf, String> {
    // A test executable lives in `<target>/<profile>/deps/`.
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or("test executable outside a target directory")?
        .to_path_buf();
    let target_dir = profile_dir.parent().ok_or("no target directory")?;
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => "dev".to_string(),
        Some(p) => p.to_string(),
        None => return Err("unnamed profile directory".into()),
    };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    // Cargo gives a test the variables of its own package (CARGO_MANIFEST_DIR, CARGO_PKG_*,
    // ...). Build scripts that track them (ring's) would see a change and rebuild, and the
    // test's next `cargo test` would rebuild again: the build runs without them.
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        if k == "OUT_DIR"
            || (k.starts_with("CARGO_")
                && !matches!(&*k, "CARGO_HOME" | "CARGO_TARGET_DIR" | "CARGO_BUILD_JOBS"))
        {
            cmd.env_remove(&*k);
        }
    }
    let out = cmd
        .args([
            "build",
            "--quiet",
            "-p",
            "nsqrd",
            "-p",
            "nsqrlookupd",
            "--profile",
        ])
        .arg(&profile)
        .arg("--target-dir")
        .arg(target_dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("running cargo: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(profile_dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_plain_and_chunked_responses() {
        let r = parse_http_response(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nOK");
        assert_eq!((r.status, r.text()), (200, "OK".to_string()));
        assert_eq!(r.header("content-type"), Some("text/plain"));
        let r = parse_http_response(
            b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=1\r\nde\r\n0\r\n\r\n",
        );
        assert_eq!((r.status, r.text()), (404, "abcde".to_string()));
    }

    #[test]
    fn finds_listen_addresses_and_polls_with_a_bound() {
        let line = "[nsqd] 2026/11/21 INFO: TCP: listening on 127.0.0.1:4150";
        assert_eq!(
            listen_addr(line, "TCP: listening on "),
            Some("127.0.0.1:4150".parse().unwrap())
        );
        assert_eq!(listen_addr(line, "HTTP: listening on "), None);
        let mut n = 0;
        assert!(wait_until(Duration::from_secs(1), || {
            n += 1;
            n == 3
        }));
        assert!(!wait_until(Duration::from_millis(30), || false));
    }
}
