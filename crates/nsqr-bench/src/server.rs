//! Starting a server for `compare` and `cluster`: a fresh temporary data directory, ephemeral
//! ports (`--tcp-address=127.0.0.1:0`, the address read back from its "TCP: listening on" log
//! line; a lookupd's HTTP address likewise), and a guard that kills the process and removes the
//! directory when dropped, on success, error, panic or Ctrl-C alike.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use crate::fail::{err, Result};

const LOG_LINES_KEPT: usize = 40;
const START_TIMEOUT: Duration = Duration::from_secs(15);

pub struct Server {
    child: Child,
    pub pid: u32,
    pub tcp: String,
    /// The HTTP listener, when the process logged one before its TCP line (or `Launch::http`
    /// asked to wait for it).
    pub http: Option<String>,
    /// The keyspace's RESP address, when nsqrd was started with `--kv-address`.
    pub kv: String,
    data_dir: Option<PathBuf>,
    log: Arc<Mutex<VecDeque<String>>>,
}

/// How to start a process that logs nsqd's "TCP: listening on" (and "HTTP: listening on") lines.
#[derive(Debug, Default)]
pub struct Launch {
    pub program: PathBuf,
    /// Words before the program, e.g. `ip netns exec NAME` (which execs it: same pid).
    pub wrapper: Vec<String>,
    pub args: Vec<String>,
    /// A temporary directory removed when the server is dropped (passed by the caller in
    /// `args`, e.g. as `--data-path`).
    pub data_dir: Option<PathBuf>,
    /// Also wait for the "HTTP: listening on" line.
    pub http: bool,
}

/// nsqd's listener flags on `host` (port 0: any free port) with `data_dir`.
pub fn nsqd_flags(host: &str, data_dir: &Path) -> Vec<String> {
    vec![
        format!("--tcp-address={host}:0"),
        format!("--http-address={host}:0"),
        "--https-address=".into(),
        format!("--broadcast-address={host}"),
        format!("--data-path={}", data_dir.display()),
    ]
}

impl Launch {
    /// The command: the program (behind its wrapper, if any) with its arguments, stdin closed,
    /// stdout and stderr piped.
    fn command(&self) -> Command {
        let mut words = self.wrapper.iter();
        let mut cmd = match words.next() {
            Some(first) => {
                let mut c = Command::new(first);
                c.args(words).arg(&self.program);
                c
            }
            None => Command::new(&self.program),
        };
        cmd.args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }
}

/// Read `child`'s stderr and stdout on a thread each: every line is sent to the returned
/// receiver, and the last [`LOG_LINES_KEPT`] are kept in the returned log.
fn follow_output(child: &mut Child) -> (Arc<Mutex<VecDeque<String>>>, mpsc::Receiver<String>) {
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
    (log, rx)
}

impl Server {
    /// Start `bin` with nsqd's flags; returns once its TCP listener is up.
    pub async fn start(bin: &Path, extra: &[String]) -> Result<Server> {
        Self::start_with(bin, &[], extra).await
    }

    /// Start `bin` with `leading` arguments (a subcommand) before nsqd's flags.
    pub async fn start_with(bin: &Path, leading: &[&str], extra: &[String]) -> Result<Server> {
        let data_dir = temp_dir()?;
        let mut args: Vec<String> = leading.iter().map(|s| s.to_string()).collect();
        args.extend(nsqd_flags("127.0.0.1", &data_dir));
        args.extend(extra.iter().cloned());
        Self::launch(Launch {
            program: bin.to_path_buf(),
            args,
            data_dir: Some(data_dir),
            ..Default::default()
        })
        .await
    }

    /// Start a process as `l` says; returns once it logged its listeners.
    pub async fn launch(l: Launch) -> Result<Server> {
        let mut child = match l.command().spawn() {
            Ok(c) => c,
            Err(e) => {
                if let Some(d) = &l.data_dir {
                    let _ = std::fs::remove_dir_all(d);
                }
                return Err(err(format!("cannot start {}: {e}", l.program.display())));
            }
        };
        let (log, lines) = follow_output(&mut child);
        let mut server = Server {
            pid: child.id(),
            child,
            tcp: String::new(),
            http: None,
            kv: String::new(),
            data_dir: l.data_dir,
            log,
        };
        server
            .await_listeners(&lines, l.http, &l.program.display().to_string())
            .await?;
        Ok(server)
    }

    /// Read the startup log from `lines` until the TCP listener (and the HTTP one, if `http`)
    /// is reported; an error if the process exits or [`START_TIMEOUT`] passes first.
    async fn await_listeners(
        &mut self,
        lines: &mpsc::Receiver<String>,
        http: bool,
        name: &str,
    ) -> Result<()> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            while let Ok(line) = lines.try_recv() {
                self.note_listener(&line);
            }
            if !self.tcp.is_empty() && (!http || self.http.is_some()) {
                return Ok(());
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(err(format!(
                    "{name} exited during startup ({status}); log:\n{}",
                    self.log_tail()
                )));
            }
            if Instant::now() >= deadline {
                return Err(err(format!(
                    "{name} did not report its listeners within {START_TIMEOUT:?}; log:\n{}",
                    self.log_tail()
                )));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Take the address of a listener from a log line that reports one.
    fn note_listener(&mut self, line: &str) {
        if let Some(addr) = listen_addr(line, "TCP: listening on ")
            .or_else(|| listen_path(line, "TCP: listening on "))
        {
            self.tcp = addr;
        } else if let Some(addr) = listen_addr(line, "HTTP: listening on ") {
            self.http = Some(addr);
        }
        // nsqrd logs its keyspace listener before its TCP one.
        if let Some(addr) = listen_addr(line, "KV: listening on ") {
            self.kv = addr;
        }
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
        if let Some(d) = &self.data_dir {
            let _ = std::fs::remove_dir_all(d);
        }
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

/// "... TCP: listening on /tmp/x/nsqd.sock" -> "/tmp/x/nsqd.sock": a unix-socket listener.
fn listen_path(line: &str, marker: &str) -> Option<String> {
    let rest = &line[line.find(marker)? + marker.len()..];
    let path = rest.split_whitespace().next()?;
    path.starts_with('/').then(|| path.to_string())
}

/// A new directory under the system's temporary directory, unique to this process.
pub fn temp_dir() -> Result<PathBuf> {
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
    find_binary("nsqrd", "--nsqrd", flag)
}

/// A project binary: the path given with `flag_name`, else `name` next to this executable,
/// else `target/release/<name>`.
pub fn find_binary(name: &str, flag_name: &str, flag: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = flag {
        return Ok(p.to_path_buf());
    }
    let mut candidates = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        if let Some(dir) = exe.parent() {
            candidates.push(dir.join(name));
        }
    }
    candidates.push(PathBuf::from("target/release").join(name));
    candidates
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .ok_or_else(|| {
            err(format!(
                "{name} not found (looked at {}); build it with `cargo build --release -p {name}` or pass {flag_name} PATH",
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
        let u = "[nsqd] INFO: TCP: listening on /tmp/d/nsqd.sock";
        assert_eq!(listen_addr(u, "TCP: listening on "), None);
        assert_eq!(
            listen_path(u, "TCP: listening on "),
            Some("/tmp/d/nsqd.sock".into())
        );
        assert_eq!(listen_path(l, "TCP: listening on "), None);
        assert_eq!(
            listen_addr("TCP: listening on nowhere", "TCP: listening on "),
            None
        );
    }
}
