//! Wake-ups from other threads, gathered per serving thread (`workers.rs`).
//!
//! Why: a task on a single-threaded tokio runtime woken from another thread costs that runtime
//! a lock and a write to its eventfd (tokio unparks the thread on every remote wake, busy or
//! not), and the thread's own `epoll_wait` to take it. A queue's disk writer finishing a pass
//! completes every publish of the pass, one remote wake per HTTP request waiting on it. A
//! future run through [`relayed`] on a serving thread is woken through the thread's relay
//! instead: the first wake of a batch wakes the relay's task (one remote wake), which wakes the
//! others from inside the thread, where a wake is a push on the run queue. A wake on the
//! serving thread itself goes straight to the task. The measurements are
//! `docs/decisions/0025-spilled-publish-wake-ups.md`.

use std::cell::RefCell;
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use parking_lot::Mutex;

thread_local! {
    /// The relay of the serving thread this is, if it is one.
    static CURRENT: RefCell<Option<Arc<Relay>>> = const { RefCell::new(None) };
}

/// One serving thread's relay: the wakers of its tasks woken from elsewhere, and the waker of
/// the task that wakes them.
#[derive(Default)]
pub struct Relay {
    state: Mutex<Pending>,
}

#[derive(Default)]
struct Pending {
    wakers: Vec<Waker>,
    relay_task: Option<Waker>,
}

impl Relay {
    /// Makes a relay this thread's and returns the task that must run on this thread's
    /// runtime for it to deliver its wakes.
    pub fn install() -> impl Future<Output = ()> {
        let relay = Arc::new(Relay::default());
        CURRENT.with(|c| *c.borrow_mut() = Some(Arc::clone(&relay)));
        let mut batch = Vec::new();
        std::future::poll_fn(move |cx| {
            relay.take(&mut batch, cx.waker());
            for w in batch.drain(..) {
                w.wake();
            }
            Poll::<()>::Pending
        })
    }

    /// Swaps the pending wakers into `out` and registers the relay task's waker.
    fn take(&self, out: &mut Vec<Waker>, task: &Waker) {
        let mut st = self.state.lock();
        std::mem::swap(&mut st.wakers, out);
        if !st.relay_task.as_ref().is_some_and(|w| w.will_wake(task)) {
            st.relay_task = Some(task.clone());
        }
    }

    /// A wake from another thread: queued; the first of a batch wakes the relay task.
    fn push(&self, w: Waker) {
        let first = {
            let mut st = self.state.lock();
            st.wakers.push(w);
            if st.wakers.len() == 1 {
                st.relay_task.clone()
            } else {
                None
            }
        };
        if let Some(t) = first {
            t.wake();
        }
    }

    fn is_current(self: &Arc<Self>) -> bool {
        CURRENT.with(|c| c.borrow().as_ref().is_some_and(|r| Arc::ptr_eq(r, self)))
    }
}

/// The waker a relayed future sees: its task's, through the relay.
struct RelayWaker {
    relay: Arc<Relay>,
    task: Waker,
}

impl Wake for RelayWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.relay.is_current() {
            self.task.wake_by_ref();
        } else {
            self.relay.push(self.task.clone());
        }
    }
}

/// Runs `fut`, woken through this thread's relay when the thread has one (directly otherwise).
pub async fn relayed<F: Future>(fut: F) -> F::Output {
    let Some(relay) = CURRENT.with(|c| c.borrow().clone()) else {
        return fut.await;
    };
    let mut fut = std::pin::pin!(fut);
    // The task's waker and the relay waker made for it, kept while the task stays the same.
    let mut cached: Option<(Waker, Waker)> = None;
    std::future::poll_fn(move |cx| {
        if cached
            .as_ref()
            .is_some_and(|(t, _)| !t.will_wake(cx.waker()))
        {
            cached = None;
        }
        let (_, waker) = cached.get_or_insert_with(|| {
            let w = Arc::new(RelayWaker {
                relay: Arc::clone(&relay),
                task: cx.waker().clone(),
            });
            (cx.waker().clone(), Waker::from(w))
        });
        fut.as_mut().poll(&mut Context::from_waker(waker))
    })
    .await
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// A single-threaded runtime on its own thread with a relay, as a serving thread has.
    fn serving_thread() -> (tokio::runtime::Handle, std::sync::mpsc::Sender<()>) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let handle = rt.handle().clone();
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        std::thread::spawn(move || {
            rt.spawn(Relay::install());
            rt.block_on(async {
                while stopped.try_recv().is_err() {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            });
        });
        (handle, stop)
    }

    #[test]
    fn futures_woken_from_another_thread_all_complete_through_the_relay() {
        let (handle, stop) = serving_thread();
        let done = Arc::new(AtomicUsize::new(0));
        let mut senders = Vec::new();
        let mut joins = Vec::new();
        for i in 0..100u32 {
            let (tx, rx) = tokio::sync::oneshot::channel::<u32>();
            senders.push(tx);
            let done = Arc::clone(&done);
            joins.push(handle.spawn(async move {
                let v = relayed(rx).await.unwrap();
                assert_eq!(v, i);
                done.fetch_add(1, Ordering::SeqCst);
            }));
        }
        // Let every task register its waker before the batch of wakes.
        std::thread::sleep(Duration::from_millis(50));
        for (i, tx) in senders.into_iter().enumerate() {
            tx.send(i as u32).unwrap();
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            for j in joins {
                tokio::time::timeout(Duration::from_secs(30), j)
                    .await
                    .unwrap()
                    .unwrap();
            }
        });
        assert_eq!(done.load(Ordering::SeqCst), 100);
        stop.send(()).unwrap();
    }

    #[test]
    fn without_a_relay_a_future_runs_as_it_is() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let v = rt.block_on(async {
            let (tx, rx) = tokio::sync::oneshot::channel::<u8>();
            std::thread::spawn(move || tx.send(7).unwrap());
            relayed(rx).await.unwrap()
        });
        assert_eq!(v, 7);
    }

    #[test]
    fn wakes_on_the_serving_thread_itself_go_straight_to_the_task() {
        let (handle, stop) = serving_thread();
        let (result_tx, result_rx) = std::sync::mpsc::channel();
        handle.spawn(async move {
            let (tx, rx) = tokio::sync::oneshot::channel::<u8>();
            tokio::spawn(async move {
                tokio::task::yield_now().await;
                tx.send(9).unwrap();
            });
            result_tx.send(relayed(rx).await.unwrap()).unwrap();
        });
        assert_eq!(result_rx.recv_timeout(Duration::from_secs(30)).unwrap(), 9);
        stop.send(()).unwrap();
    }
}
