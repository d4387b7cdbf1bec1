//! The threads that serve HTTP(S) connections: each runs its own single-threaded tokio
//! runtime, and every connection lives on one of them from accept to close (round robin). The
//! accept loop stays on nsqrd's shared runtime and keeps counting and stopping the connections
//! (`nsq_common::net`); only where they run changes.
//!
//! Why not the shared multi-threaded runtime: an HTTP client sends a request and waits for its
//! answer, so a connection costs a read, a handler and a write per request; on the shared
//! runtime each wake-up may also hop between worker threads (futex wakes, context switches),
//! which on a loaded machine cost more than the request. The measurement that decided it is
//! `docs/decisions/0015-http-per-core-runtimes.md`. Each thread has a wake relay
//! (`wake_relay.rs`) for the wake-ups other threads send its tasks.

use std::sync::atomic::{AtomicUsize, Ordering};

use thiserror::Error;
use tokio::runtime::Handle;
use tokio::sync::oneshot;

use super::wake_relay::Relay;

/// A serving thread could not be started.
#[derive(Debug, Error)]
#[error("failed to start an HTTP thread - {0}")]
pub struct StartError(#[from] std::io::Error);

/// The serving threads of the HTTP and HTTPS listeners. Dropping this stops them (each
/// listener holds it until its connections are done).
pub struct Workers {
    runtimes: Vec<Handle>,
    next: AtomicUsize,
    /// Dropped to stop the threads.
    _stops: Vec<oneshot::Sender<()>>,
}

impl Workers {
    /// Starts `n` threads (at least one).
    pub fn start(n: usize) -> Result<Workers, StartError> {
        let mut w = Workers {
            runtimes: Vec::new(),
            next: AtomicUsize::new(0),
            _stops: Vec::new(),
        };
        for i in 0..n.max(1) {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let (stop, stopped) = oneshot::channel::<()>();
            w.runtimes.push(rt.handle().clone());
            std::thread::Builder::new()
                .name(format!("http-{i}"))
                .spawn(move || {
                    rt.spawn(Relay::install());
                    let _ = rt.block_on(stopped);
                    // What is left (connections cut at shutdown) is dropped; a blocking task
                    // still running is not waited for.
                    rt.shutdown_background();
                })?;
            w._stops.push(stop);
        }
        Ok(w)
    }

    /// The runtime the next connection goes to.
    pub fn next(&self) -> &Handle {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.runtimes.len();
        &self.runtimes[i]
    }
}

/// `--http-threads`, or by default (0) half the cores, at least one: clients on the same
/// machine and nsqrd's own tasks need the rest.
pub fn threads(flag: i64) -> usize {
    match usize::try_from(flag) {
        Ok(n) if n > 0 => n,
        _ => (std::thread::available_parallelism().map_or(1, |n| n.get()) / 2).max(1),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn connections_go_round_robin_and_run_on_the_serving_threads() {
        let w = Workers::start(2).unwrap();
        let names: Vec<String> = (0..4)
            .map(|_| {
                let (tx, rx) = std::sync::mpsc::channel();
                w.next().spawn(async move {
                    let name = std::thread::current().name().map(str::to_owned);
                    tx.send(name).unwrap();
                });
                rx.recv().unwrap().unwrap()
            })
            .collect();
        assert_eq!(names, ["http-0", "http-1", "http-0", "http-1"]);
        drop(w);
    }

    #[test]
    fn the_default_is_half_the_cores_at_least_one() {
        assert_eq!(threads(3), 3);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(threads(0), (cores / 2).max(1));
        assert_eq!(threads(-1), threads(0));
    }
}
