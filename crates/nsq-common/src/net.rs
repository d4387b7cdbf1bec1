//! The accept loop and graceful stop every listener of both daemons uses (nsqrd's HTTP and
//! HTTPS, nsqrlookupd's HTTP and TCP): accept until told to stop, one task per connection,
//! optionally at most so many at once (the rest wait in the kernel's accept backlog, as Go's
//! `netutil.LimitListener` makes them), back off briefly when `accept` fails (e.g. out of file
//! descriptors) instead of spinning, then tell every connection to stop and give them a
//! bounded grace period.
//!
//! What a daemon logs around it (accept errors, `closing <addr>`, connections cut) stays in the
//! daemon: the wording differs between nsqd and nsqlookupd.

use std::future::Future;
use std::io;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinSet;

/// Resolves at SIGINT or SIGTERM (at Ctrl-C where there are no such signals or their handlers
/// cannot be installed): both daemons' signal to shut down gracefully. The handlers are
/// installed when this is called, so a signal that arrives before the future is awaited still
/// counts.
pub fn shutdown_signal() -> impl Future<Output = ()> + Send {
    #[cfg(unix)]
    let handlers = {
        use tokio::signal::unix::{signal, SignalKind};
        (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        )
    };
    async move {
        #[cfg(unix)]
        if let (Ok(mut i), Ok(mut t)) = handlers {
            tokio::select! {
                _ = i.recv() => {}
                _ = t.recv() => {}
            }
            return;
        }
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// How long connections may run after shutdown begins.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// Pause after a failed `accept` so the loop does not spin.
pub const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// A connection's view of the listener's stop: resolves [`StopSignal::stopped`] at shutdown.
#[derive(Debug, Clone)]
pub struct StopSignal(watch::Receiver<bool>);

impl StopSignal {
    /// Resolves once the listener is stopping (or gone).
    pub async fn stopped(&mut self) {
        let _ = self.0.wait_for(|s| *s).await;
    }
}

/// The connection tasks of one listener.
pub struct Connections {
    tasks: JoinSet<()>,
    stop_tx: watch::Sender<bool>,
    stop_rx: watch::Receiver<bool>,
}

impl Default for Connections {
    fn default() -> Self {
        let (stop_tx, stop_rx) = watch::channel(false);
        Connections {
            tasks: JoinSet::new(),
            stop_tx,
            stop_rx,
        }
    }
}

impl Connections {
    /// Runs a connection task.
    pub fn spawn<F>(&mut self, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.tasks.spawn(task);
    }

    /// Runs a connection task on another runtime (a serving thread's own); it counts toward
    /// the bound and is stopped at shutdown as the others are.
    pub fn spawn_on<F>(&mut self, task: F, runtime: &tokio::runtime::Handle)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.tasks.spawn_on(task, runtime);
    }

    /// What a new connection watches to learn about shutdown.
    pub fn stop_signal(&self) -> StopSignal {
        StopSignal(self.stop_rx.clone())
    }

    /// Signals every connection to stop, waits up to `grace` for them to finish and aborts the
    /// rest. Returns how many were still running when the grace period ran out (0: all done).
    pub async fn shutdown(mut self, grace: Duration) -> usize {
        let _ = self.stop_tx.send(true);
        let drained = tokio::time::timeout(grace, async {
            while self.tasks.join_next().await.is_some() {}
        })
        .await;
        let cut = if drained.is_err() {
            self.tasks.len()
        } else {
            0
        };
        self.tasks.abort_all();
        cut
    }
}

/// Accepts until `shutdown` resolves. Each accepted connection goes to `on_accept`, which
/// spawns its task on the [`Connections`]; a failed accept goes to `on_error`, then the loop
/// pauses for [`ACCEPT_BACKOFF`]. Finished tasks are reaped as they end. The caller closes the
/// listener, then calls [`Connections::shutdown`].
pub async fn accept_until<T, A, AF>(
    shutdown: impl Future<Output = ()>,
    accept: A,
    on_accept: impl FnMut(T, &mut Connections),
    on_error: impl FnMut(io::Error),
) -> Connections
where
    A: FnMut() -> AF,
    AF: Future<Output = io::Result<T>>,
{
    let limit = Limit {
        max: usize::MAX,
        on_full: |_| {},
    };
    accept_bounded(shutdown, limit, accept, on_accept, on_error).await
}

/// At most `max` connections at once; `on_full(max)` runs each time the bound is reached.
pub struct Limit<F: FnMut(usize)> {
    pub max: usize,
    pub on_full: F,
}

/// [`accept_until`] with at most `limit.max` connection tasks running: at the bound the loop
/// stops accepting until one ends.
pub async fn accept_bounded<T, A, AF, F>(
    shutdown: impl Future<Output = ()>,
    mut limit: Limit<F>,
    mut accept: A,
    mut on_accept: impl FnMut(T, &mut Connections),
    mut on_error: impl FnMut(io::Error),
) -> Connections
where
    A: FnMut() -> AF,
    AF: Future<Output = io::Result<T>>,
    F: FnMut(usize),
{
    let mut conns = Connections::default();
    let mut was_full = false;
    tokio::pin!(shutdown);
    loop {
        let full = conns.tasks.len() >= limit.max;
        if full && !was_full {
            (limit.on_full)(limit.max);
        }
        was_full = full;
        tokio::select! {
            _ = &mut shutdown => break,
            accepted = accept(), if !full => match accepted {
                Ok(a) => on_accept(a, &mut conns),
                Err(e) => {
                    on_error(e);
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            },
            Some(_) = conns.tasks.join_next(), if !conns.tasks.is_empty() => {}
        }
    }
    conns
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[tokio::test]
    async fn accepts_until_shutdown_then_stops_connections() {
        let (tx, rx) = tokio::sync::mpsc::channel::<io::Result<u32>>(8);
        let rx = tokio::sync::Mutex::new(rx);
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let stopped = Arc::new(AtomicUsize::new(0));
        let (accepted, errors) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        for r in [Ok(1), Err(io::Error::other("boom")), Ok(2)] {
            tx.send(r).await.unwrap();
        }
        let (s, a, e) = (
            Arc::clone(&stopped),
            Arc::clone(&accepted),
            Arc::clone(&errors),
        );
        let lp = tokio::spawn(async move {
            let conns = accept_until(
                async {
                    let _ = stop_rx.await;
                },
                || async {
                    let next = rx.lock().await.recv().await;
                    next.unwrap_or_else(|| Err(io::Error::other("eof")))
                },
                |_n: u32, conns: &mut Connections| {
                    a.fetch_add(1, Ordering::SeqCst);
                    let (mut stop, s) = (conns.stop_signal(), Arc::clone(&s));
                    conns.spawn(async move {
                        stop.stopped().await;
                        s.fetch_add(1, Ordering::SeqCst);
                    });
                },
                |_| {
                    e.fetch_add(1, Ordering::SeqCst);
                },
            )
            .await;
            conns.shutdown(SHUTDOWN_GRACE).await
        });
        while accepted.load(Ordering::SeqCst) < 2 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(errors.load(Ordering::SeqCst), 1);
        // Both connections are still running: only the stop ends them.
        assert_eq!(stopped.load(Ordering::SeqCst), 0);
        stop_tx.send(()).unwrap();
        assert_eq!(lp.await.unwrap(), 0);
        assert_eq!(stopped.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn at_the_bound_nothing_is_accepted_until_a_connection_ends() {
        let (tx, rx) = tokio::sync::mpsc::channel::<u32>(8);
        let rx = Arc::new(tokio::sync::Mutex::new(rx));
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let accepted = Arc::new(AtomicUsize::new(0));
        let full = Arc::new(AtomicUsize::new(0));
        let (ends, ends_rx) = tokio::sync::watch::channel(0u32);
        let (a, f) = (Arc::clone(&accepted), Arc::clone(&full));
        let lp = tokio::spawn(async move {
            let limit = Limit {
                max: 2,
                on_full: move |max| {
                    assert_eq!(max, 2);
                    f.fetch_add(1, Ordering::SeqCst);
                },
            };
            let conns = accept_bounded(
                async {
                    let _ = stop_rx.await;
                },
                limit,
                || {
                    let rx = Arc::clone(&rx);
                    async move {
                        rx.lock()
                            .await
                            .recv()
                            .await
                            .ok_or_else(|| io::Error::other("eof"))
                    }
                },
                |n: u32, conns: &mut Connections| {
                    a.fetch_add(1, Ordering::SeqCst);
                    let mut ends = ends_rx.clone();
                    // Connection n runs until `ends` reaches n.
                    conns.spawn(async move {
                        let _ = ends.wait_for(|e| *e >= n).await;
                    });
                },
                |_| {},
            )
            .await;
            conns.shutdown(SHUTDOWN_GRACE).await
        });
        for n in 1..=3 {
            tx.send(n).await.unwrap();
        }
        while accepted.load(Ordering::SeqCst) < 2 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // The third waits: the loop does not even take it from the "listener".
        while full.load(Ordering::SeqCst) < 1 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
        ends.send(1).unwrap();
        while accepted.load(Ordering::SeqCst) < 3 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        ends.send(3).unwrap();
        stop_tx.send(()).unwrap();
        assert_eq!(lp.await.unwrap(), 0);
        assert_eq!(
            full.load(Ordering::SeqCst),
            2,
            "full again after the third came in"
        );
    }

    #[tokio::test]
    async fn shutdown_cuts_what_does_not_finish() {
        let mut conns = Connections::default();
        conns.spawn(std::future::pending());
        conns.spawn(async {});
        assert_eq!(conns.shutdown(Duration::from_millis(20)).await, 1);
    }
}
