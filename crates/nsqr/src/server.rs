//! Starting a server for `compare`: a fresh temporary data directory, ephemeral loopback ports
//! (`--tcp-address=127.0.0.1:0`, the address read back from its "TCP: listening on" log line),
//! and a guard that kills the process and removes the directory when dropped, on success,
//! error, panic or Ctrl-C alike.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use crate::client::{err, Result};

const LOG_LINES_KEPT: usize = 40;
const START_TIMEOUT: Duration = Duration::from_secs(15);

pub struct Server {
    child: Child,
    pub pid: u32,
    pub tcp: String,
    /// The keyspace's RESP address, when nsqrd was started with `--kv-address`.
    pub kv: String,
    data_dir: PathBuf,
    log: Arc<Mutex<VecDeque<String>>>,
}

impl Server {
    /// Start `bin` with nsqd's flags; returns once its TCP listener is up.
    pub async fn start(bin: &Path, extra: &[String]) -> Result<Server> {
        Self::start_with(bin, &[], extra).await
    }

    /// Start `bin` with `leading` arguments (a subcommand) before nsqd's flags.
    pub async fn start_with(bin: &Path, leading: &[&str], extra: &[String]) -> Result<Server> {
        let data_dir = temp_dir()?;
        let mut cmd = Command::new(bin);
        cmd.args(leading)
            .arg("--tcp-address=127.0.0.1:0")
            .arg("--http-address=127.0.0.1:0")
            .arg("--https-address=")
            .arg("--broadcast-address=127.0.0.1")
            .arg(format!("--data-path={}", data_dir.display()))
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&data_dir);
                return Err(err(format!("cannot start {}: {e}", bin.display())));
            }
        };
        let log = Arc::new(Mutex::new(VecDeque::new()));
        let (tx, rx) = mpsc::channel::<String>();
        let pipes: [Option<Box<dyn Read + Send>>; 2] = [
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        ];
        for pipe in pipes.into_iter().flatten() {
            let (tx, log) = (tx.clone(), Arc::clone(&log));
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(|l| l.ok()) {
                    if let Ok(mut l) = log.lock() {
                        if l.len() == LOG_LINES_KEPT {
                            l.pop_front();
                        }
                        l.push_back(line.clone());
                    }
                    let _ = tx.send(line);
                }
            });
        }
        let mut server = Server {
            pid: child.id(),
            child,
            tcp: String::new(),
            kv: String::new(),
            data_dir,
            log,
        };
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            while let Ok(line) = rx.try_recv() {
                if let Some(addr) = listen_addr(&line, "TCP: listening on ") {
                    server.tcp = addr;
                }
                // nsqrd logs its keyspace listener before its TCP one.
                if let Some(addr) = listen_addr(&line, "KV: listening on ") {
                    server.kv = addr;
                }
            }
            if !server.tcp.is_empty() {
                break;
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                return Err(err(format!(
                    "{} exited during startup ({status}); log:\n{}",
                    bin.display(),
                    server.log_tail()
                )));
            }
            if Instant::now() >= deadline {
                return Err(err(format!(
                    "{} did not report \"TCP: listening on\" within {START_TIMEOUT:?}; log:\n{}",
                    bin.display(),
                    server.log_tail()
                )));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(server)
    }

    /// The last lines the server logged.
    pub fn log_tail(&self) -> String {
        self.log
            .lock()
            .map(|l| l.iter().cloned().collect::<Vec<_>>().join("\n"))
            .unwrap_or_default()
    }

    /// None while the process is still running.
    pub fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(st)) => Some(st.to_string()),
            _ => None,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.data_dir);
    }
}

/// "... TCP: listening on 127.0.0.1:4150" -> "127.0.0.1:4150".
fn listen_addr(line: &str, marker: &str) -> Option<String> {
    let rest = &line[line.find(marker)? + marker.len()..];
    let addr = rest.split_whitespace().next()?;
    addr.parse::<std::net::SocketAddr>()
        .ok()
        .map(|a| a.to_string())
}

fn temp_dir() -> Result<PathBuf> {
    static N: AtomicU32 = AtomicU32::new(0);
    let d = std::env::temp_dir().join(format!(
        "nsqr-bench-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&d).map_err(|e| err(format!("create {}: {e}", d.display())))?;
    Ok(d)
}

/// The nsqrd binary: `--nsqrd`, else `nsqrd` next to this executable, else target/release.
pub fn find_nsqrd(flag: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = flag {
        return Ok(p.to_path_buf());
    }
    let mut candidates = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        if let Some(dir) = exe.parent() {
            candidates.push(dir.join("nsqrd"));
        }
    }
    candidates.push(PathBuf::from("target/release/nsqrd"));
    candidates
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .ok_or_else(|| {
            err(format!(
                "nsqrd not found (looked at {}); build it with `cargo build --release -p nsqrd` or pass --nsqrd PATH",
                candidates
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
}

/// First line of `bin --version`, e.g. "nsqd v1.3.0 (built w/go1.22)".
pub fn version(bin: &Path) -> String {
    Command::new(bin)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .ok()
        .and_then(|o| {
            let s = if o.stdout.is_empty() {
                o.stderr
            } else {
                o.stdout
            };
            String::from_utf8(s).ok()
        })
        .and_then(|s| s.lines().next().map(str::to_string))
        .unwrap_or_else(|| bin.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_listen_lines() {
        let l = "[nsqd] 2024/01/01 00:00:00.000000 INFO: TCP: listening on 127.0.0.1:41234";
        assert_eq!(
            listen_addr(l, "TCP: listening on "),
            Some("127.0.0.1:41234".into())
        );
        assert_eq!(listen_addr(l, "HTTP: listening on "), None);
        assert_eq!(
            listen_addr("TCP: listening on nowhere", "TCP: listening on "),
            None
        );
    }
}
