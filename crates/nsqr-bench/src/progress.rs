//! Shared counters and the live progress line (stderr, only when stderr is a terminal).

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;

/// Running totals, updated by the connection tasks once per batch / read.
#[derive(Debug, Default)]
pub struct Counters {
    pub sent: AtomicU64,
    pub acked: AtomicU64,
    pub received: AtomicU64,
    pub finned: AtomicU64,
}

impl Counters {
    pub fn new() -> Arc<Counters> {
        Arc::new(Counters::default())
    }
}

/// Prints `[label] 1.2s  acked 1,234,000 (1.02M/s)  received ...` every 250 ms until dropped.
pub struct Progress {
    task: Option<JoinHandle<()>>,
}

impl Progress {
    pub fn start(enabled: bool, label: &str, c: &Arc<Counters>) -> Progress {
        if !enabled || !std::io::stderr().is_terminal() {
            return Progress { task: None };
        }
        let label = label.to_string();
        let c = Arc::clone(c);
        let task = tokio::spawn(async move {
            let start = Instant::now();
            let every = Duration::from_millis(250);
            let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            let (mut last_a, mut last_r, mut last_t) = (0u64, 0u64, Instant::now());
            loop {
                tick.tick().await;
                let (a, r) = (c.acked.load(Relaxed), c.received.load(Relaxed));
                let dt = last_t.elapsed().as_secs_f64().max(1e-9);
                let mut line = format!("[{label}] {:.1}s", start.elapsed().as_secs_f64());
                if a > 0 {
                    line += &format!("  acked {} ({}/s)", group(a), si((a - last_a) as f64 / dt));
                }
                if r > 0 {
                    line += &format!(
                        "  received {} ({}/s)",
                        group(r),
                        si((r - last_r) as f64 / dt)
                    );
                }
                (last_a, last_r, last_t) = (a, r, Instant::now());
                let mut e = std::io::stderr().lock();
                let _ = write!(e, "\r\x1b[2K{line}");
                let _ = e.flush();
            }
        });
        Progress { task: Some(task) }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
            let mut e = std::io::stderr().lock();
            let _ = write!(e, "\r\x1b[2K");
            let _ = e.flush();
        }
    }
}

/// 1234567 -> "1,234,567".
pub fn group(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// 1234567.0 -> "1.23M".
pub fn si(v: f64) -> String {
    if v >= 1e9 {
        format!("{:.2}G", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_numbers() {
        assert_eq!(group(0), "0");
        assert_eq!(group(1234), "1,234");
        assert_eq!(group(1234567), "1,234,567");
        assert_eq!(si(1_234_567.0), "1.23M");
        assert_eq!(si(950.0), "950");
    }
}
