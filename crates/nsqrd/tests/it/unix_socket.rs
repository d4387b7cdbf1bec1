//! Unix-socket listeners: a `--tcp-address` / `--http-address` that is not `host:port` is a socket
//! path. The V2 protocol and the HTTP API work over them, `/info` reports port -1 and a unix client
//! shows as `@` with empty ids. Passes against nsqd too (`NSQD_BIN`), except the removal of the
//! socket files at shutdown, which nsqd leaves behind (docs/compatibility.md).

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::{is_reference, server_bin, wait_until, Frame, READ_TIMEOUT};
use crate::layers_common::{cmd_bytes, read_frame_from};

struct UnixServer {
    child: Child,
    dir: PathBuf,
}

impl UnixServer {
    fn start() -> UnixServer {
        let dir = nsqr_testkit::temp_dir("unix");
        let child = Command::new(server_bin())
            .arg(format!("--tcp-address={}", dir.join("tcp.sock").display()))
            .arg(format!(
                "--http-address={}",
                dir.join("http.sock").display()
            ))
            .arg("--https-address=")
            .arg(format!("--data-path={}", dir.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let s = UnixServer { child, dir };
        let up = wait_until(Duration::from_secs(10), || {
            UnixStream::connect(s.tcp()).is_ok() && UnixStream::connect(s.http()).is_ok()
        });
        assert!(up, "unix listeners never came up");
        s
    }

    fn tcp(&self) -> PathBuf {
        self.dir.join("tcp.sock")
    }

    fn http(&self) -> PathBuf {
        self.dir.join("http.sock")
    }

    fn connect(&self) -> UnixStream {
        let mut s = UnixStream::connect(self.tcp()).unwrap();
        s.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
        s.write_all(b"  V2").unwrap();
        s
    }

    fn get(&self, path: &str) -> serde_json::Value {
        let mut s = UnixStream::connect(self.http()).unwrap();
        s.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut out = Vec::new();
        s.read_to_end(&mut out).unwrap();
        let text = String::from_utf8_lossy(&out).into_owned();
        let body = text.split_once("\r\n\r\n").map(|x| x.1).unwrap_or("");
        assert!(text.starts_with("HTTP/1.1 200"), "{text}");
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
    }
}

impl Drop for UnixServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn expect(s: &mut UnixStream, f: Frame) {
    assert_eq!(read_frame_from(s), Some(f));
}

#[test]
fn protocol_and_http_over_unix_sockets() {
    let srv = UnixServer::start();
    let mut c = srv.connect();
    c.write_all(&cmd_bytes("SUB ut ch", None)).unwrap();
    expect(&mut c, Frame::Response(b"OK".to_vec()));
    c.write_all(&cmd_bytes("RDY 1", None)).unwrap();
    let mut p = srv.connect();
    p.write_all(&cmd_bytes("PUB ut", Some(b"over unix")))
        .unwrap();
    expect(&mut p, Frame::Response(b"OK".to_vec()));
    match read_frame_from(&mut c) {
        Some(Frame::Message(m)) => assert_eq!(m.body, b"over unix"),
        other => panic!("expected a message, got {other:?}"),
    }
    let info = srv.get("/info");
    assert_eq!(info["tcp_port"], -1);
    assert_eq!(info["http_port"], -1);
    let stats = srv.get("/stats?format=json");
    let client = &stats["topics"][0]["channels"][0]["clients"][0];
    assert_eq!(client["remote_address"], "@");
    assert_eq!(client["client_id"], "");
    assert_eq!(client["hostname"], "");
}

#[test]
fn socket_files_removed_at_shutdown() {
    if is_reference() {
        return;
    }
    let mut srv = UnixServer::start();
    let pid = srv.child.id().to_string();
    let _ = Command::new("kill").args(["-TERM", &pid]).status();
    let _ = srv.child.wait();
    let gone = |p: &Path| !p.exists();
    assert!(gone(&srv.tcp()) && gone(&srv.http()));
}
