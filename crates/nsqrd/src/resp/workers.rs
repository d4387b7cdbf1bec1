//! The threads that serve keyspace clients: each runs its own single-threaded tokio runtime,
//! and every connection lives on one of them from accept to close (round robin).
//!
//! Why not nsqrd's shared multi-threaded runtime: a RESP client sends one small request and
//! waits, so a connection costs a read and a write per request and little else; on the shared
//! runtime each wake-up may also hop between worker threads (futex wakes, context switches).
//! The measurement that decided it is `docs/decisions/0004-keyspace-per-core-runtimes.md`.
//! Keys live in the shared, sharded keyspace, so any thread serves any key.

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use super::{conn, Shared};

type Job = (std::net::TcpStream, SocketAddr);

thread_local! {
    /// The index of the serving thread this is (0 elsewhere).
    static THIS_THREAD: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The serving thread the caller runs on.
pub fn this_thread() -> usize {
    THIS_THREAD.with(std::cell::Cell::get)
}

/// A serving thread's stack: scripts run there, and a script's reply is converted
/// recursively (at most `script::convert`'s depth). Reserved, not touched, until used.
const STACK: usize = 32 << 20;

/// How long connections may run after shutdown begins.
const GRACE: Duration = Duration::from_secs(5);

/// The serving threads: `n` taking turns, and one spare for the clients that connect while a
/// script holds its thread (so they are answered BUSY once it runs too long, and a `SCRIPT
/// KILL` can always be read).
pub struct Workers {
    queues: Vec<mpsc::UnboundedSender<Job>>,
    threads: Vec<JoinHandle<()>>,
    next: usize,
}

impl Workers {
    /// Starts `n` threads (at least one).
    pub fn start(n: usize, shared: &Arc<Shared>) -> Result<Workers, String> {
        let mut w = Workers {
            queues: Vec::new(),
            threads: Vec::new(),
            next: 0,
        };
        for i in 0..=n.max(1) {
            let (tx, rx) = mpsc::unbounded_channel();
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("failed to start a keyspace thread - {e}"))?;
            let shared = Arc::clone(shared);
            let t = std::thread::Builder::new()
                .name(format!("kv-{i}"))
                .stack_size(STACK)
                .spawn(move || {
                    THIS_THREAD.with(|t| t.set(i));
                    rt.block_on(serve(rx, shared))
                })
                .map_err(|e| format!("failed to start a keyspace thread - {e}"))?;
            w.queues.push(tx);
            w.threads.push(t);
        }
        Ok(w)
    }

    /// Hands an accepted connection to the next thread, or, while a script runs, to a thread
    /// that is not running it.
    pub fn dispatch(&mut self, stream: tokio::net::TcpStream, peer: SocketAddr, shared: &Shared) {
        let _ = stream.set_nodelay(true);
        let std = match stream.into_std() {
            Ok(s) => s,
            Err(e) => {
                tracing::error!("KV: cannot hand over a connection - {e}");
                return;
            }
        };
        let spare = self.queues.len() - 1;
        let to = match shared.scripts.running_thread() {
            Some(t) if t == spare => 0,
            Some(_) => spare,
            None => {
                self.next = (self.next + 1) % spare;
                self.next
            }
        };
        if self.queues[to].send((std, peer)).is_err() {
            tracing::error!("KV: a keyspace thread has stopped; connection from {peer} dropped");
        }
    }

    /// Closes every connection (after the grace period at most) and joins the threads.
    /// Blocking: call from a blocking context.
    pub fn shutdown(self) {
        drop(self.queues);
        for t in self.threads {
            let _ = t.join();
        }
    }
}

/// One thread: runs its connections until its queue closes, then stops them.
async fn serve(mut jobs: mpsc::UnboundedReceiver<Job>, shared: Arc<Shared>) {
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut tasks = JoinSet::new();
    loop {
        tokio::select! {
            job = jobs.recv() => match job {
                Some((std, peer)) => match tokio::net::TcpStream::from_std(std) {
                    Ok(s) => {
                        tasks.spawn(conn::run(Arc::clone(&shared), s, peer, stop_rx.clone()));
                    }
                    Err(e) => tracing::error!("KV: cannot take over a connection - {e}"),
                },
                None => break,
            },
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
    let _ = stop_tx.send(true);
    let drained =
        tokio::time::timeout(GRACE, async { while tasks.join_next().await.is_some() {} }).await;
    if drained.is_err() {
        tracing::warn!("KV: {} connections did not close in time", tasks.len());
        tasks.abort_all();
    }
}
