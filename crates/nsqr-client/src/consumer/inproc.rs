//! A consumer on the broker in this process: a `Subscription` stands in for the connection,
//! and [`Consumer::next`](super::Consumer::next) takes deliveries from it directly (no task,
//! no queue in between, the body the very buffer that was published). Its RDY, set by the
//! same rules as a socket's (`rdy.rs`), is the subscription's max-in-flight; RDY 0 (backoff)
//! means not taking any. `next_batch` lends deliveries without making a `Message` of each and
//! FINs the finished ones together, under one channel lock: a FIN's own lock and
//! bookkeeping were most of what a small message cost the consumer.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use nsqr_broker::{Broker, Delivery, SubscribeOptions, Subscription};

use super::conn::{Conn, Transport};
use super::shared::Shared;
use crate::error::Error;
use crate::message::{Message, MessageRef, Reply};

/// FINs settled together at most, and their bodies' bytes.
const FIN_BATCH: usize = 256;
const FIN_BATCH_BYTES: usize = 256 << 10;

/// Address of the in-process "connection".
pub(crate) const INPROC: &str = "inproc://";

pub(crate) struct Source {
    sub: Subscription,
    conn: Arc<Conn>,
    /// The max-in-flight last given to the subscription.
    applied: i64,
}

impl Source {
    /// Subscribe to the consumer's topic and channel on `broker`.
    pub(crate) async fn connect(sh: &Arc<Shared>, broker: &Broker) -> Result<Source, Error> {
        let mut opts = SubscribeOptions::default().max_in_flight(1);
        if let Some(t) = sh.cfg.msg_timeout {
            opts = opts.msg_timeout(t);
        }
        let sub = broker.subscribe(&sh.topic, &sh.channel, opts).await?;
        let conn = Arc::new(Conn::new(
            INPROC.to_string(),
            Transport::Inproc(tokio::sync::Notify::new()),
            Arc::clone(sh),
            i64::from(u32::MAX),
        ));
        sh.conns
            .lock()
            .live
            .insert(INPROC.to_string(), Arc::clone(&conn));
        sh.rdy.maybe_update(sh, &conn);
        Ok(Source {
            sub,
            conn,
            applied: 1,
        })
    }

    /// The next delivery as a message; None once the subscription closes (broker shut down,
    /// channel deleted) or the consumer stops.
    pub(crate) async fn next(&mut self, sh: &Shared) -> Option<Message> {
        let d = self.next_delivery(sh).await?;
        Some(self.message(d))
    }

    /// The next delivery, waiting for one (RDY permitting).
    async fn next_delivery(&mut self, sh: &Shared) -> Option<Delivery> {
        loop {
            if sh.is_stopping() {
                return None;
            }
            let want = self.conn.rdy.load(Relaxed);
            if want > 0 && want != self.applied {
                self.sub
                    .set_max_in_flight(u32::try_from(want).unwrap_or(u32::MAX));
                self.applied = want;
            }
            let Transport::Inproc(rdy_changed) = &self.conn.transport else {
                return None;
            };
            if want <= 0 {
                tokio::select! {
                    _ = rdy_changed.notified() => {}
                    _ = sh.wake.notified() => {}
                }
                continue;
            }
            if let Some(d) = self.sub.try_next() {
                return Some(d);
            }
            tokio::select! {
                d = self.sub.next() => return d,
                _ = rdy_changed.notified() => {}
                _ = sh.wake.notified() => {}
            }
        }
    }

    /// A delivery that can be had without waiting (RDY permitting).
    pub(crate) fn try_next(&mut self) -> Option<Message> {
        let d = self.try_delivery()?;
        Some(self.message(d))
    }

    fn try_delivery(&mut self) -> Option<Delivery> {
        if self.conn.rdy.load(Relaxed) <= 0 {
            return None;
        }
        self.sub.try_next()
    }

    /// Wait for deliveries, lend up to `max` of those ready to `f` and answer each by what
    /// it returns; the finished ones are settled together, under one channel lock. The
    /// number handled; None once closed or stopping.
    pub(crate) async fn lend_batch(
        &mut self,
        sh: &Arc<Shared>,
        max: usize,
        f: &mut impl FnMut(MessageRef<'_>) -> Reply,
    ) -> Option<usize> {
        let mut next = Some(self.next_delivery(sh).await?);
        let mut fins = Vec::new();
        let mut fin_bytes = 0;
        let mut n = 0;
        while let Some(d) = next {
            n += 1;
            if let Some(d) = self.lend_one(sh, d, f) {
                fin_bytes += d.body().len();
                fins.push(d);
            }
            if fins.len() >= FIN_BATCH || fin_bytes >= FIN_BATCH_BYTES {
                // Bodies go back to the allocator while still in the cache.
                self.finish_all(sh, std::mem::take(&mut fins));
                fin_bytes = 0;
            }
            next = if n < max && !sh.is_stopping() {
                self.try_delivery()
            } else {
                None
            };
        }
        self.finish_all(sh, fins);
        Some(n)
    }

    /// Lend one delivery; it is given back if it is to be finished (by `f`, or given up on).
    fn lend_one(
        &self,
        sh: &Shared,
        d: Delivery,
        f: &mut impl FnMut(MessageRef<'_>) -> Reply,
    ) -> Option<Delivery> {
        let max = sh.cfg.max_attempts;
        if max > 0 && d.attempts() > max {
            tracing::warn!(
                "nsqr-client: message {} attempted {} times, giving up",
                String::from_utf8_lossy(&d.id().to_hex()),
                d.attempts()
            );
            sh.counters.given_up.fetch_add(1, Relaxed);
            return Some(d);
        }
        let reply = f(MessageRef {
            id: d.id().to_hex(),
            attempts: d.attempts(),
            timestamp: d.timestamp(),
            body: d.body(),
        });
        match reply {
            Reply::Finish => Some(d),
            Reply::Requeue(delay) => {
                let _ = self.message(d).requeue(delay);
                None
            }
            Reply::RequeueWithoutBackoff(delay) => {
                let _ = self.message(d).requeue_without_backoff(delay);
                None
            }
        }
    }

    /// FIN `fins` under one channel lock and count them as received and finished.
    fn finish_all(&self, sh: &Arc<Shared>, fins: Vec<Delivery>) {
        if fins.is_empty() {
            return;
        }
        let k = fins.len();
        sh.counters.received.fetch_add(k as u64, Relaxed);
        let _ = self.sub.fin_all(fins);
        for _ in 0..k {
            sh.answered(&self.conn, true, false);
        }
    }

    fn message(&self, d: Delivery) -> Message {
        let c = &self.conn;
        c.in_flight.fetch_add(1, Relaxed);
        c.consumer.counters.received.fetch_add(1, Relaxed);
        Message::inproc(d, Arc::clone(c))
    }

    /// Leave the channel (messages it held go back at once) and forget the connection.
    pub(crate) fn close(self) {
        let Source { sub, conn, .. } = self;
        drop(sub);
        conn.lost(&Error::Stopped);
    }
}
