//! A producer on the broker in this process: each publish is a call into the engine with the
//! caller's `Bytes`, which every channel then shares with its subscribers (no socket, no
//! copy). One `nsqr_broker::Publisher` per topic is kept, so a publish costs a map lookup and
//! the engine's own work; with `coalesce_publishes`, consecutive `publish_async`s to one topic
//! share one call (`coalesce.rs`).

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use nsqr_broker::{Broker, Publisher, Ticket};
use parking_lot::Mutex;

use super::coalesce::{Batch, Flush, Gathered, Outcome, Timer};
use crate::error::Error;

pub(crate) struct Inproc {
    broker: Broker,
    publishers: Mutex<HashMap<Arc<str>, Arc<Publisher>>>,
    /// Where the flusher and disk waits run: set when gathering `publish_async`s
    /// (`coalesce_publishes`, and made within a tokio runtime).
    rt: Option<tokio::runtime::Handle>,
    pending: Mutex<Option<Batch>>,
    timer: Arc<Timer>,
    me: Weak<Inproc>,
}

impl Inproc {
    pub(crate) fn new(broker: Broker, coalesce: bool) -> Arc<Inproc> {
        let rt = tokio::runtime::Handle::try_current()
            .ok()
            .filter(|_| coalesce);
        Arc::new_cyclic(|me| Inproc {
            broker,
            publishers: Mutex::new(HashMap::new()),
            rt,
            pending: Mutex::new(None),
            timer: Arc::default(),
            me: me.clone(),
        })
    }

    fn publisher(&self, topic: &str) -> Result<Arc<Publisher>, Error> {
        if let Some(p) = self.publishers.lock().get(topic) {
            return Ok(Arc::clone(p));
        }
        let p = Arc::new(self.broker.publisher(topic)?);
        self.publishers
            .lock()
            .insert(Arc::from(topic), Arc::clone(&p));
        Ok(p)
    }

    /// Publish now (any gathered publishes go first).
    pub(crate) fn publish(&self, topic: &str, body: Bytes) -> Result<Ticket, Error> {
        let _order = self.flush_pending();
        Ok(self.publisher(topic)?.publish(body)?)
    }

    /// Add `body` to the batch of `topic`; the body back when not coalescing (publish it).
    pub(crate) fn gather(&self, topic: &str, body: Bytes) -> Result<Arc<Outcome>, Bytes> {
        let Some(rt) = &self.rt else {
            return Err(body);
        };
        let mut pending = self.pending.lock();
        if pending.as_ref().is_some_and(|b| !b.takes_body(topic)) {
            self.send(pending.take());
        }
        let fresh = pending.is_none();
        let batch = pending.get_or_insert_with(|| Batch::of_bodies(Arc::from(topic)));
        let full = batch.push(body);
        Ok(self.gathered(rt, pending, full, fresh))
    }

    /// [`Inproc::gather`] for a request carved from carver buffer `buffer`: consecutive
    /// pieces of one buffer join into one run (`coalesce::Gathered::Run`).
    pub(crate) fn gather_piece(
        &self,
        topic: &str,
        piece: BytesMut,
        buffer: u64,
    ) -> Result<Arc<Outcome>, BytesMut> {
        let Some(rt) = &self.rt else {
            return Err(piece);
        };
        let mut pending = self.pending.lock();
        if pending
            .as_ref()
            .is_some_and(|b| !b.takes_piece(topic, &piece, buffer))
        {
            self.send(pending.take());
        }
        let fresh = pending.is_none();
        let batch = pending.get_or_insert_with(|| Batch::of_run(Arc::from(topic), buffer));
        let full = batch.push_piece(piece);
        Ok(self.gathered(rt, pending, full, fresh))
    }

    /// After a publish joined the pending batch: send it if full, else make sure the flusher
    /// will; the batch's outcome.
    fn gathered(
        &self,
        rt: &tokio::runtime::Handle,
        mut pending: parking_lot::MutexGuard<'_, Option<Batch>>,
        full: bool,
        fresh: bool,
    ) -> Arc<Outcome> {
        let outcome = pending
            .as_ref()
            .map_or_else(Arc::default, |b| Arc::clone(&b.outcome));
        if full {
            self.send(pending.take());
        } else if fresh {
            // Only a batch left waiting needs the flusher.
            self.timer.arm(rt, self.me.clone());
        }
        outcome
    }

    /// Hand the pending batch to the broker if `outcome` is its.
    pub(crate) fn flush(&self, outcome: &Arc<Outcome>) {
        if outcome.is_known() {
            return;
        }
        let mut pending = self.pending.lock();
        if pending
            .as_ref()
            .is_some_and(|b| Arc::ptr_eq(&b.outcome, outcome))
        {
            self.send(pending.take());
        }
    }

    /// Hand whatever is gathered to the broker; the lock held keeps later publishes behind.
    fn flush_pending(&self) -> Option<parking_lot::MutexGuard<'_, Option<Batch>>> {
        self.rt.as_ref()?;
        let mut pending = self.pending.lock();
        self.send(pending.take());
        Some(pending)
    }

    /// One broker call for a whole batch; its result goes to every publish in it.
    fn send(&self, batch: Option<Batch>) {
        let Some(b) = batch else { return };
        let r = self.publisher(&b.topic).and_then(|p| {
            Ok(match b.bodies {
                Gathered::Bodies(bodies) => p.publish_batch(bodies)?,
                Gathered::Run { data, ranges, .. } => p.publish_slices(data.freeze(), ranges)?,
            })
        });
        let outcome = b.outcome;
        match r {
            Err(e) => outcome.set(Err(e)),
            Ok(mut t) => match t.try_result() {
                Some(r) => outcome.set(r.map_err(Error::from)),
                None => match &self.rt {
                    Some(rt) => {
                        rt.spawn(async move { outcome.set(t.wait().await.map_err(Error::from)) });
                    }
                    None => outcome.set(Ok(())),
                },
            },
        }
    }

    /// Send what is gathered (the producer stops).
    pub(crate) fn flush_all(&self) {
        drop(self.flush_pending());
    }

    pub(crate) fn publish_batch(&self, topic: &str, bodies: Vec<Bytes>) -> Result<Ticket, Error> {
        let _order = self.flush_pending();
        Ok(self.publisher(topic)?.publish_batch(bodies)?)
    }

    pub(crate) fn publish_slices(
        &self,
        topic: &str,
        data: Bytes,
        ranges: Vec<std::ops::Range<usize>>,
    ) -> Result<Ticket, Error> {
        let _order = self.flush_pending();
        Ok(self.publisher(topic)?.publish_slices(data, ranges)?)
    }

    pub(crate) fn publish_deferred(
        &self,
        topic: &str,
        body: Bytes,
        delay: Duration,
    ) -> Result<Ticket, Error> {
        let _order = self.flush_pending();
        Ok(self.publisher(topic)?.publish_deferred(body, delay)?)
    }
}

impl Flush for Inproc {
    fn pending_since(&self) -> Option<Instant> {
        self.pending.lock().as_ref().map(|b| b.started)
    }

    fn flush_older(&self, started: Instant) {
        let mut pending = self.pending.lock();
        if pending.as_ref().is_some_and(|b| b.started <= started) {
            self.send(pending.take());
        }
    }
}

impl Drop for Inproc {
    fn drop(&mut self) {
        let batch = self.pending.get_mut().take();
        self.send(batch);
        self.timer.stop();
    }
}
