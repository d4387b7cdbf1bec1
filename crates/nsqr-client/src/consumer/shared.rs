//! What a consumer's connections, its supervisor and its handle share: the inbox messages wait
//! in until `next` takes them, the connections by address, the counters, the stop flag.
//! Connections add to the inbox a read at a time (one lock per read, not per message) and
//! `next` takes the whole inbox at once.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use tokio::sync::{mpsc, Notify};

use super::conn::Conn;
use super::rdy::Rdy;
use crate::config::Config;
use crate::message::Message;

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
    inbox: Mutex<VecDeque<Message>>,
    /// Told when the inbox gets messages or the consumer stops.
    pub(crate) arrived: Notify,
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
    ) -> Shared {
        let rdy = Rdy::new(cfg.max_in_flight);
        Shared {
            topic,
            channel,
            cfg,
            started: Instant::now(),
            inbox: Mutex::new(VecDeque::new()),
            arrived: Notify::new(),
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

    /// Messages from one read of a connection. While stopping they go back at once.
    pub(crate) fn deliver(&self, batch: &mut Vec<Message>) {
        self.counters
            .received
            .fetch_add(batch.len() as u64, Relaxed);
        if self.is_stopping() {
            batch.clear(); // dropped unanswered: requeued
            return;
        }
        self.inbox.lock().extend(batch.drain(..));
        self.arrived.notify_one();
    }

    /// Move everything in the inbox to `into` (which is empty).
    pub(crate) fn take_inbox(&self, into: &mut VecDeque<Message>) {
        let mut inbox = self.inbox.lock();
        std::mem::swap(&mut *inbox, into);
    }

    /// Requeue what waits in the inbox (stopping).
    pub(crate) fn clear_inbox(&self) {
        let waiting = std::mem::take(&mut *self.inbox.lock());
        drop(waiting);
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

    /// Stop: no more RDY, CLS on every connection, requeue what waits in the inbox.
    pub(crate) fn begin_stop(&self) {
        if self.stopping.swap(true, AcqRel) {
            return;
        }
        for c in self.live_conns() {
            c.start_close();
        }
        self.clear_inbox();
        self.arrived.notify_waiters();
        self.arrived.notify_one();
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
