//! A daemon under test as a child process: its stdout and stderr read line by line into a
//! channel (so a test can wait for "listening on" lines and look at what it logged), bounded
//! waits for its startup and exit, signals, and a kill on drop so no test leaks a process.
//! Also the per-test temporary directories, unique within and across test processes.

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::listen_addr;

/// A fresh, empty directory `nsqr-<tag>-<pid>-<n>` under the system's temporary directory. `n`
/// counts calls in this process, so tests running in parallel in one test binary never share a
/// directory; one left behind by an earlier process with the same id is emptied first.
pub fn temp_dir(tag: &str) -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let d = std::env::temp_dir().join(format!(
        "nsqr-{tag}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap_or_else(|e| panic!("create {}: {e}", d.display()));
    d
}

/// A running child process whose output lines the test can read; killed on drop.
pub struct Daemon {
    name: String,
    child: Child,
    log: mpsc::Receiver<String>,
    /// The lines [`Daemon::wait_for_log`] read, until [`Daemon::waited_lines`] takes them.
    waited: Vec<String>,
}

impl Daemon {
    /// Starts `cmd` with stdin closed and stdout and stderr captured.
    pub fn spawn(cmd: &mut Command) -> Daemon {
        let name = cmd.get_program().to_string_lossy().into_owned();
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {name}: {e}"));
        let (tx, log) = mpsc::channel::<String>();
        let pipes: [Option<Box<dyn Read + Send>>; 2] = [
            child.stderr.take().map(|p| Box::new(p) as _),
            child.stdout.take().map(|p| Box::new(p) as _),
        ];
        for pipe in pipes.into_iter().flatten() {
            let tx = tx.clone();
            // Lines are read as bytes: a server may log what a client sent, which need not be
            // UTF-8. Reading goes on after the test stops listening: a reader that stopped
            // would kill the server with SIGPIPE.
            std::thread::spawn(move || {
                let mut r = BufReader::new(pipe);
                let mut line = Vec::new();
                while matches!(r.read_until(b'\n', &mut line), Ok(n) if n > 0) {
                    let _ = tx.send(String::from_utf8_lossy(&line).trim_end().to_string());
                    line.clear();
                }
            });
        }
        // Only the reader threads hold senders now: once the process exits, recv fails at once.
        drop(tx);
        Daemon {
            name,
            child,
            log,
            waited: Vec::new(),
        }
    }

    /// Feeds each line the process logs to `done` until it returns true. If that takes longer
    /// than `limit`, or the process exits first, the process is killed and the test fails,
    /// showing the log.
    pub fn wait_for_log(&mut self, limit: Duration, mut done: impl FnMut(&str) -> bool) {
        let deadline = Instant::now() + limit;
        let mut seen = Vec::new();
        loop {
            match self
                .log
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok(line) => {
                    let finished = done(&line);
                    self.waited.push(line.clone());
                    seen.push(line);
                    if finished {
                        return;
                    }
                }
                Err(_) => {
                    self.kill();
                    panic!(
                        "{} did not log what the test waits for within {limit:?}; log:\n{}",
                        self.name,
                        seen.join("\n")
                    );
                }
            }
        }
    }

    /// The addresses the process logs after each of `markers` ("TCP: listening on "), in the
    /// order of `markers`, waiting at most `limit` for all of them.
    pub fn listeners(&mut self, limit: Duration, markers: &[&str]) -> Vec<SocketAddr> {
        let mut found: Vec<Option<SocketAddr>> = vec![None; markers.len()];
        self.wait_for_log(limit, |line| {
            for (slot, marker) in found.iter_mut().zip(markers) {
                *slot = slot.or_else(|| listen_addr(line, marker));
            }
            found.iter().all(Option::is_some)
        });
        found.into_iter().flatten().collect()
    }

    /// The process id (to send signals or read `/proc`).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The lines read while waiting for a line ([`Daemon::wait_for_log`], [`Daemon::listeners`]:
    /// what a server logged while starting), which [`Daemon::log_lines`] does not return.
    pub fn waited_lines(&mut self) -> Vec<String> {
        std::mem::take(&mut self.waited)
    }

    /// Lines logged since the last look.
    pub fn log_lines(&self) -> Vec<String> {
        self.log.try_iter().collect()
    }

    /// True while the process runs.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits at most `limit` for the process to exit; its exit code (None if it is still
    /// running or was killed by a signal).
    pub fn wait_exit(&mut self, limit: Duration) -> Option<i32> {
        let deadline = Instant::now() + limit;
        loop {
            if let Ok(Some(st)) = self.child.try_wait() {
                return st.code();
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends `signal` ("TERM", "INT", ...) and waits at most `limit` for the exit; the exit code.
    pub fn signal(&mut self, signal: &str, limit: Duration) -> Option<i32> {
        let _ = Command::new("kill")
            .args([format!("-{signal}"), self.child.id().to_string()])
            .status();
        self.wait_exit(limit)
    }

    /// SIGKILL, and reap the process.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.kill();
    }
}
