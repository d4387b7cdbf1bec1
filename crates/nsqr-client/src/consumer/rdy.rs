//! How much each connection may receive (RDY), and backoff, as go-nsq v1.1.0's `Consumer`
//! decides them:
//!
//! - max-in-flight is spread evenly, `max(1, max_in_flight / connections)` each, never past
//!   a server's `max_rdy_count` nor, summed, past max-in-flight (a new connection may get a
//!   part until others give theirs up);
//! - with more connections than max-in-flight (or while backing off) RDY is redistributed
//!   every `rdy_redistribute_interval`: connections idle for `low_rdy_idle_timeout`, or
//!   holding RDY for `low_rdy_timeout`, give it up and it goes to others at random;
//! - a failed message (requeued with backoff) sends RDY 0 everywhere for a backoff that
//!   doubles per consecutive failure, then lets one message through (RDY 1 on a random
//!   connection); each success shortens the backoff by a level, and at level 0 every
//!   connection gets its share back.
//!
//! All of it is under one lock that only RDY changes take: a FIN outside backoff reads one
//! atomic and goes on.

use std::collections::HashMap;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::task::AbortHandle;

use super::conn::Conn;
use super::shared::Shared;

/// How long a connection that could not get any RDY waits to try again (go-nsq's 5 s).
const RDY_RETRY: Duration = Duration::from_secs(5);

pub(crate) struct Rdy {
    state: Mutex<State>,
    max_in_flight: AtomicI64,
    /// Mirrors of `State::level` and `State::in_timeout` for the lock-free checks.
    level: AtomicU32,
    in_timeout: AtomicBool,
}

struct State {
    /// Sum of the RDY of every connection.
    total: i64,
    /// Backoff level: consecutive failures not yet made up for.
    level: u32,
    /// A backoff timer is running.
    in_timeout: bool,
    need_redistribute: bool,
    rng: u64,
    /// Pending retries of connections that got no RDY, by address.
    retries: HashMap<String, AbortHandle>,
}

enum Signal {
    Resume,
    Backoff,
    Continue,
}

impl Rdy {
    pub(crate) fn new(max_in_flight: u32) -> Rdy {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
            ^ 0x9E37_79B9_7F4A_7C15;
        Rdy {
            state: Mutex::new(State {
                total: 0,
                level: 0,
                in_timeout: false,
                need_redistribute: false,
                rng: seed | 1,
                retries: HashMap::new(),
            }),
            max_in_flight: AtomicI64::new(i64::from(max_in_flight)),
            level: AtomicU32::new(0),
            in_timeout: AtomicBool::new(false),
        }
    }

    pub(crate) fn max_in_flight(&self) -> i64 {
        self.max_in_flight.load(Relaxed)
    }

    /// The backoff level (0: not backing off).
    pub(crate) fn backoff_level(&self) -> u32 {
        self.level.load(Acquire)
    }

    /// Each connection's share of max-in-flight.
    fn per_conn(&self, conns: usize) -> i64 {
        let mif = self.max_in_flight();
        let share = mif / (conns.max(1) as i64);
        share.max(1).min(mif.max(0))
    }

    /// Give `conn` its share, unless backing off (a new connection, or max-in-flight
    /// changed).
    pub(crate) fn maybe_update(&self, sh: &Arc<Shared>, conn: &Arc<Conn>) {
        let mut st = self.state.lock();
        if st.level > 0 || st.in_timeout {
            return;
        }
        let count = self.per_conn(sh.conns.lock().live.len());
        self.update(&mut st, conn, count);
    }

    /// Set `conn`'s RDY to `count`, within the server's maximum and max-in-flight; false if
    /// it could not be sent.
    fn update(&self, st: &mut State, conn: &Arc<Conn>, count: i64) -> bool {
        if conn.is_closing() || conn.consumer.is_stopping() {
            return false;
        }
        let mut count = count.min(conn.max_rdy);
        if let Some(retry) = st.retries.remove(conn.name()) {
            retry.abort();
        }
        let rdy = conn.rdy.load(Relaxed);
        let max_possible = self.max_in_flight() - st.total + rdy;
        if max_possible > 0 && max_possible < count {
            count = max_possible;
        }
        if max_possible <= 0 && count > 0 {
            if rdy == 0 {
                // It wanted out of RDY 0 and could not: try again later, so it never
                // starves (any other RDY change for it cancels this).
                let c = Arc::clone(conn);
                let retry = tokio::spawn(async move {
                    tokio::time::sleep(RDY_RETRY).await;
                    let rdy = &c.consumer.rdy;
                    let mut st = rdy.state.lock();
                    st.retries.remove(c.name());
                    rdy.update(&mut st, &c, count);
                });
                st.retries
                    .insert(conn.name().to_string(), retry.abort_handle());
            }
            return false;
        }
        self.send(st, conn, count)
    }

    fn send(&self, st: &mut State, conn: &Conn, count: i64) -> bool {
        let last = conn.rdy.load(Relaxed);
        if count == 0 && last == 0 {
            return true;
        }
        st.total += count - last;
        conn.rdy.store(count, Relaxed);
        if count > 0 {
            conn.mark_rdy_sent();
        }
        if count == last {
            return true;
        }
        conn.send_rdy(count).is_ok()
    }

    /// `conn` is gone: its RDY no longer counts, and may have to move to another.
    pub(crate) fn on_conn_closed(&self, conn: &Conn, left: usize) {
        let mut st = self.state.lock();
        let rdy = conn.rdy.swap(0, Relaxed);
        st.total -= rdy;
        let had_retry = match st.retries.remove(conn.name()) {
            Some(r) => {
                r.abort();
                true
            }
            None => false,
        };
        if (had_retry || rdy > 0) && (left as i64 == self.max_in_flight() || st.level > 0) {
            st.need_redistribute = true;
        }
    }

    /// A message was finished.
    pub(crate) fn on_success(&self, conn: &Arc<Conn>) {
        if self.backoff_level() > 0 {
            self.signal(&conn.consumer, Signal::Resume);
        }
    }

    /// A message was requeued with backoff.
    pub(crate) fn on_failure(&self, conn: &Arc<Conn>) {
        self.signal(&conn.consumer, Signal::Backoff);
    }

    /// A message was requeued without backoff.
    pub(crate) fn on_continue(&self, conn: &Arc<Conn>) {
        if self.backoff_level() > 0 {
            self.signal(&conn.consumer, Signal::Continue);
        }
    }

    fn signal(&self, sh: &Arc<Shared>, signal: Signal) {
        let mut st = self.state.lock();
        // Answers arriving during a backoff neither deepen nor shorten it.
        if st.in_timeout {
            return;
        }
        let cfg = &sh.cfg;
        let mut updated = false;
        match signal {
            Signal::Resume if st.level > 0 => {
                st.level -= 1;
                updated = true;
            }
            Signal::Backoff => {
                let next = cfg.backoff_for(st.level + 1, next_f64(&mut st.rng));
                if next <= cfg.max_backoff_duration {
                    st.level += 1;
                    updated = true;
                }
            }
            _ => {}
        }
        self.level.store(st.level, Release);
        let conns = sh.live_conns();
        if st.level == 0 && updated {
            let count = self.per_conn(conns.len());
            tracing::info!("nsqr-client: exiting backoff, RDY {count} everywhere");
            for c in &conns {
                self.update(&mut st, c, count);
            }
        } else if st.level > 0 {
            let d = cfg
                .backoff_for(st.level, next_f64(&mut st.rng))
                .min(cfg.max_backoff_duration);
            tracing::info!(
                "nsqr-client: backing off for {d:?} (level {}), RDY 0 everywhere",
                st.level
            );
            for c in &conns {
                self.update(&mut st, c, 0);
            }
            self.start_timeout(&mut st, sh, d);
        }
    }

    fn start_timeout(&self, st: &mut State, sh: &Arc<Shared>, d: Duration) {
        st.in_timeout = true;
        self.in_timeout.store(true, Release);
        let sh = Arc::clone(sh);
        tokio::spawn(async move {
            tokio::time::sleep(d).await;
            sh.rdy.resume(&sh);
        });
    }

    /// The backoff timer fired: let one message through on a random connection.
    fn resume(&self, sh: &Arc<Shared>) {
        let mut st = self.state.lock();
        if sh.is_stopping() {
            st.in_timeout = false;
            self.in_timeout.store(false, Release);
            return;
        }
        let conns = sh.live_conns();
        let sent = if conns.is_empty() {
            false
        } else {
            let i = (next_u64(&mut st.rng) % conns.len() as u64) as usize;
            self.update(&mut st, &conns[i], 1)
        };
        if sent {
            st.in_timeout = false;
            self.in_timeout.store(false, Release);
        } else {
            self.start_timeout(&mut st, sh, Duration::from_secs(1));
        }
    }

    /// The periodic redistribution (see the module's description).
    pub(crate) fn redistribute(&self, sh: &Arc<Shared>) {
        let mut st = self.state.lock();
        if st.in_timeout {
            return;
        }
        let conns = sh.live_conns();
        if conns.is_empty() {
            return;
        }
        let mif = self.max_in_flight();
        if conns.len() as i64 > mif || (st.level > 0 && conns.len() > 1) {
            st.need_redistribute = true;
        }
        if !std::mem::take(&mut st.need_redistribute) {
            return;
        }
        let cfg = &sh.cfg;
        let now = Instant::now();
        for c in &conns {
            let (msg_idle, rdy_age) = c.idle_times(now);
            if c.rdy.load(Relaxed) > 0
                && (msg_idle > cfg.low_rdy_idle_timeout || rdy_age > cfg.low_rdy_timeout)
            {
                self.update(&mut st, c, 0);
            }
        }
        let mut available = if st.level > 0 {
            1 - st.total
        } else {
            mif - st.total
        };
        let mut possible = conns;
        while !possible.is_empty() && available > 0 {
            available -= 1;
            let i = (next_u64(&mut st.rng) % possible.len() as u64) as usize;
            let c = possible.swap_remove(i);
            self.update(&mut st, &c, 1);
        }
    }

    /// A new max-in-flight; every connection gets its new share.
    pub(crate) fn change_max_in_flight(&self, sh: &Arc<Shared>, n: u32) {
        if self.max_in_flight.swap(i64::from(n), Relaxed) == i64::from(n) {
            return;
        }
        for c in sh.live_conns() {
            self.maybe_update(sh, &c);
        }
    }
}

/// xorshift64*: plenty for picking a connection.
fn next_u64(s: &mut u64) -> u64 {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    s.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

fn next_f64(s: &mut u64) -> f64 {
    (next_u64(s) >> 11) as f64 / (1u64 << 53) as f64
}
