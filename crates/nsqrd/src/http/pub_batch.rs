//! Strict `/pub`s put together per serving thread (`--durability=strict`).
//!
//! A strict `/pub` is answered once its message is fsynced, and a topic's disk writer fsyncs
//! once for everything queued while its previous fsync ran (group commit). Put one request at
//! a time, the first request of a wave (a serving thread reads every ready connection in one
//! turn of its runtime) starts the writer alone, which then fsyncs that one message while the
//! rest of the wave queues behind it: two fsyncs per wave, and each waits a whole fsync longer.
//! Here the plain publishes (no `defer`, `ttl` or `ordering_key`) a serving thread reads in one
//! turn are put together, one `put_with` per topic, by a task the first of them spawns: on a
//! single-threaded runtime it runs after the tasks already woken, so one pass of the writer
//! holds the wave. Each request still waits for its own message's fsync before its `200 OK`;
//! what waits is bounded by the requests the thread is serving (each holds its own body).

use std::cell::RefCell;
use std::sync::Arc;

use nsq_common::http::response::ApiError;
use nsq_wire::Bodies;
use nsqr_broker::{PutOptions, Topic};
use tokio::sync::oneshot;

use super::publish::{put_error, wait_error};

/// The publishes of one topic read in this turn, and the requests waiting for them.
struct Wave {
    topic: Arc<Topic>,
    bodies: Vec<Bodies>,
    waiting: Vec<oneshot::Sender<Result<(), ApiError>>>,
}

thread_local! {
    /// This serving thread's waves, one per topic, until its flush task takes them.
    static WAVES: RefCell<Vec<Wave>> = const { RefCell::new(Vec::new()) };
}

/// True where waves can be gathered: on a single-threaded runtime (a serving thread), where
/// the flush task runs on the thread whose waves it takes.
pub fn available() -> bool {
    tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread)
}

/// Publish `bodies` to `topic` with this turn's other plain publishes; resolves once they are
/// fsynced (or failed). Only where [`available`].
pub async fn put(topic: Arc<Topic>, bodies: Bodies) -> Result<(), ApiError> {
    let (tx, rx) = oneshot::channel();
    let first = WAVES.with(|w| {
        let mut waves = w.borrow_mut();
        let first = waves.is_empty();
        match waves.iter_mut().find(|w| Arc::ptr_eq(&w.topic, &topic)) {
            Some(w) => {
                w.bodies.push(bodies);
                w.waiting.push(tx);
            }
            None => waves.push(Wave {
                topic,
                bodies: vec![bodies],
                waiting: vec![tx],
            }),
        }
        first
    });
    if first {
        tokio::spawn(flush());
    }
    rx.await.unwrap_or_else(|_| Err(ApiError::exiting()))
}

/// Put every wave of this thread, then answer its requests as their group commit ends.
async fn flush() {
    let waves = WAVES.with(|w| std::mem::take(&mut *w.borrow_mut()));
    let mut pending = Vec::with_capacity(waves.len());
    for w in waves {
        let ticket = w.topic.put_with(&w.bodies, &PutOptions::default());
        pending.push((ticket, w.waiting));
    }
    for (ticket, waiting) in pending {
        let outcome = match ticket {
            Err(e) => Err(put_error(e)),
            Ok(t) if t.is_done() => Ok(()),
            // The disk writer completes a pass's publishes together: one wake-up of this thread.
            Ok(t) => super::wake_relay::relayed(t.wait())
                .await
                .map_err(wait_error),
        };
        for tx in waiting {
            let _ = tx.send(outcome.clone());
        }
    }
}
