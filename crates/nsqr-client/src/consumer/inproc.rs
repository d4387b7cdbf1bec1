//! A consumer on the broker in this process: a `Subscription` stands in for the connection,
//! and [`Consumer::next`](super::Consumer::next) takes deliveries from it directly (no task,
//! no queue in between, the body the very buffer that was published). Its RDY, set by the
//! same rules as a socket's (`rdy.rs`), is the subscription's max-in-flight; RDY 0 (backoff)
//! means not taking any.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use nsqr_broker::{Broker, Delivery, SubscribeOptions, Subscription};

use super::conn::{Conn, Transport};
use super::shared::Shared;
use crate::error::Error;
use crate::message::Message;

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
                return Some(self.message(d));
            }
            tokio::select! {
                d = self.sub.next() => match d {
                    Some(d) => return Some(self.message(d)),
                    None => return None,
                },
                _ = rdy_changed.notified() => {}
                _ = sh.wake.notified() => {}
            }
        }
    }

    /// A delivery that can be had without waiting (RDY permitting).
    pub(crate) fn try_next(&mut self) -> Option<Message> {
        if self.conn.rdy.load(Relaxed) <= 0 {
            return None;
        }
        let d = self.sub.try_next()?;
        Some(self.message(d))
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
