//! Publishing from the same process: `Bytes` in, no wire types.
//!
//! A body is handed to the topic as it is (one reference count, no copy) and reaches every
//! channel as a reference to the same buffer, so a subscriber's [`Delivery`](crate::Delivery)
//! body is the very buffer that was published. Each call returns a [`Ticket`]: done at once
//! unless the message must reach the disk first (strict durability), in which case awaiting
//! it is how a caller learns the publish is acknowledged.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use nsq_wire::Bodies;
use parking_lot::Mutex;

use crate::durability::Ticket;
use crate::error::BrokerError;
use crate::registry::Registry;
use crate::topic::{PutOptions, Topic};

/// Publishes to one topic; from [`Broker::publisher`](crate::Broker::publisher). Cheap to
/// share between tasks (`Arc<Publisher>`); a topic deleted meanwhile is created again on the
/// next publish, as nsqd does for a PUB.
pub struct Publisher {
    reg: Arc<Registry>,
    topic: Mutex<Arc<Topic>>,
}

impl Publisher {
    pub(crate) fn new(reg: Arc<Registry>, topic: Arc<Topic>) -> Publisher {
        Publisher {
            reg,
            topic: Mutex::new(topic),
        }
    }

    /// The topic's name.
    pub fn topic(&self) -> String {
        self.topic.lock().name().to_string()
    }

    /// Publish one message.
    pub fn publish(&self, body: impl Into<Bytes>) -> Result<Ticket, BrokerError> {
        let b = self.bodies(body.into())?;
        self.put(&[b], Duration::ZERO)
    }

    /// Publish several messages at once, in order (nsqd's MPUB): each keeps its own buffer.
    pub fn publish_batch<I>(&self, bodies: I) -> Result<Ticket, BrokerError>
    where
        I: IntoIterator,
        I::Item: Into<Bytes>,
    {
        let batch = bodies
            .into_iter()
            .map(|b| self.bodies(b.into()))
            .collect::<Result<Vec<Bodies>, BrokerError>>()?;
        if batch.is_empty() {
            return Ok(Ticket::done());
        }
        self.put(&batch, Duration::ZERO)
    }

    /// Publish several messages that lie in one buffer, at `ranges` of `data`, in order (an
    /// MPUB whose bodies are slices of one allocation): the broker keeps one reference to the
    /// buffer for the whole batch instead of one per message. A range outside `data`, empty,
    /// or over `max_msg_size` fails the whole publish.
    pub fn publish_slices<R>(&self, data: Bytes, ranges: R) -> Result<Ticket, BrokerError>
    where
        R: IntoIterator<Item = std::ops::Range<usize>>,
    {
        let bodies = Bodies::from_ranges(data, ranges)
            .map_err(|e| BrokerError::InvalidBodySize { size: e.0 })?;
        for (a, b) in bodies.ranges() {
            self.check_size((b - a) as usize)?;
        }
        if bodies.is_empty() {
            return Ok(Ticket::done());
        }
        self.put(&[bodies], Duration::ZERO)
    }

    /// Publish one message that becomes deliverable after `delay` (nsqd's DPUB), at most
    /// the broker's `max_req_timeout`.
    pub fn publish_deferred(
        &self,
        body: impl Into<Bytes>,
        delay: Duration,
    ) -> Result<Ticket, BrokerError> {
        let b = self.bodies(body.into())?;
        self.put(&[b], delay.min(self.reg.cfg().max_req_timeout))
    }

    /// Publish one message with a delay, a time to live or an ordering key.
    pub fn publish_with(
        &self,
        body: impl Into<Bytes>,
        options: &PutOptions,
    ) -> Result<Ticket, BrokerError> {
        let b = self.bodies(body.into())?;
        self.put_with(&[b], options)
    }

    fn bodies(&self, body: Bytes) -> Result<Bodies, BrokerError> {
        let size = body.len();
        self.check_size(size)?;
        Bodies::one(body).map_err(|_| BrokerError::InvalidBodySize { size })
    }

    /// A body of `size` bytes is neither empty nor over `max_msg_size`.
    fn check_size(&self, size: usize) -> Result<(), BrokerError> {
        if size == 0 || size as u64 > self.reg.cfg().max_msg_size {
            return Err(BrokerError::InvalidBodySize { size });
        }
        Ok(())
    }

    fn put(&self, bodies: &[Bodies], defer: Duration) -> Result<Ticket, BrokerError> {
        self.put_with(bodies, &PutOptions::default().defer(defer))
    }

    fn put_with(&self, bodies: &[Bodies], options: &PutOptions) -> Result<Ticket, BrokerError> {
        let topic = Arc::clone(&self.topic.lock());
        match topic.put_with(bodies, options) {
            Err(BrokerError::Exiting) if topic.is_deleted() && !self.reg.is_exiting() => {
                let fresh = self.reg.get_or_create_topic(topic.name())?;
                *self.topic.lock() = Arc::clone(&fresh);
                fresh.put_with(bodies, options)
            }
            r => r,
        }
    }
}

impl std::fmt::Debug for Publisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Publisher")
            .field("topic", &self.topic())
            .finish()
    }
}
