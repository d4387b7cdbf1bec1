//! What a consumer's connections, its supervisor and its handle share: the connections by
//! address, the channel new connections reach the reading side through, the counters, the
//! stop flag.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use tokio::sync::{mpsc, Notify};

use super::conn::Conn;
use super::rdy::Rdy;
use super::readers::ConnReader;
use crate::config::Config;

/// What the supervisor is told.
pub(crate) enum Event {
    /// A connection ended (try it again later, or ask lookupd).
    Closed(String),
    /// A lookupd address was added: start polling.
    LookupdAdded,
}

/// The connections, by address.
#[derive(Default)]
pub(crate) struct Conns {
    pub(crate) live: HashMap<String, Arc<Conn>>,
    /// Being connected.
    pub(crate) pending: HashSet<String>,
    /// nsqd addresses given directly: reconnected when they drop.
    pub(crate) nsqd: Vec<String>,
    /// nsqlookupd HTTP addresses.
    pub(crate) lookupd: Vec<String>,
}

/// Message counts since the consumer started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Messages received.
    pub received: u64,
    /// Messages finished.
    pub finished: u64,
    /// Messages requeued.
    pub requeued: u64,
    /// Messages finished without being handled because they were delivered more than
    /// `max_attempts` times.
    pub given_up: u64,
    /// Connections now open.
    pub connections: usize,
}

#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) received: AtomicU64,
    pub(crate) finished: AtomicU64,
    pub(crate) requeued: AtomicU64,
    pub(crate) given_up: AtomicU64,
}

pub(crate) struct Shared {
    pub(crate) topic: String,
    pub(crate) channel: String,
    pub(crate) cfg: Config,
    pub(crate) started: Instant,
    /// Where new connections go to be read.
    pub(crate) new_conns: mpsc::UnboundedSender<ConnReader>,
    /// Told when the consumer stops (a reader waiting in `next` returns).
    pub(crate) wake: Notify,
    pub(crate) conns: Mutex<Conns>,
    pub(crate) rdy: Rdy,
    pub(crate) counters: Counters,
    stopping: AtomicBool,
    /// Told when a connection closes (a stop waits for the last one).
    pub(crate) conn_gone: Notify,
    pub(crate) events: mpsc::UnboundedSender<Event>,
}

impl Shared {
    pub(crate) fn new(
        topic: String,
        channel: String,
        cfg: Config,
        events: mpsc::UnboundedSender<Event>,
        new_conns: mpsc::UnboundedSender<ConnReader>,
    ) -> Shared {
        let rdy = Rdy::new(cfg.max_in_flight);
        Shared {
            topic,
            channel,
            cfg,
            started: Instant::now(),
            new_conns,
            wake: Notify::new(),
            conns: Mutex::new(Conns::default()),
            rdy,
            counters: Counters::default(),
            stopping: AtomicBool::new(false),
            conn_gone: Notify::new(),
            events,
        }
    }

    pub(crate) fn is_stopping(&self) -> bool {
        self.stopping.load(Acquire)
    }

    /// A message was answered on `conn`.
    pub(crate) fn answered(&self, conn: &Arc<Conn>, finished: bool, backoff: bool) {
        if finished {
            self.counters.finished.fetch_add(1, Relaxed);
            self.rdy.on_success(conn);
        } else {
            self.counters.requeued.fetch_add(1, Relaxed);
            if backoff {
                self.rdy.on_failure(conn);
            } else {
                self.rdy.on_continue(conn);
            }
        }
    }

    /// The connections now open.
    pub(crate) fn live_conns(&self) -> Vec<Arc<Conn>> {
        self.conns.lock().live.values().cloned().collect()
    }

    /// A connection ended: forget it, move its RDY, tell the supervisor.
    pub(crate) fn conn_closed(&self, conn: &Arc<Conn>) {
        let left = {
            let mut c = self.conns.lock();
            if c.live
                .get(conn.name())
                .is_some_and(|live| Arc::ptr_eq(live, conn))
            {
                c.live.remove(conn.name());
            }
            c.live.len()
        };
        self.rdy.on_conn_closed(conn, left);
        self.conn_gone.notify_waiters();
        if !self.is_stopping() {
            let _ = self.events.send(Event::Closed(conn.name().to_string()));
        }
    }

    /// Stop: no more RDY, CLS on every connection, and a reader waiting in `next` returns.
    pub(crate) fn begin_stop(&self) {
        if self.stopping.swap(true, AcqRel) {
            return;
        }
        for c in self.live_conns() {
            c.start_close();
        }
        self.wake.notify_waiters();
        self.wake.notify_one();
    }

    pub(crate) fn stats(&self) -> Stats {
        Stats {
            received: self.counters.received.load(Relaxed),
            finished: self.counters.finished.load(Relaxed),
            requeued: self.counters.requeued.load(Relaxed),
            given_up: self.counters.given_up.load(Relaxed),
            connections: self.conns.lock().live.len(),
        }
    }
}
