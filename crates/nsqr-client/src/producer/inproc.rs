//! A producer on the broker in this process: each publish is a call into the engine with the
//! caller's `Bytes`, which every channel then shares with its subscribers (no socket, no
//! copy). One `nsqr_broker::Publisher` per topic is kept, so a publish costs a map lookup and
//! the engine's own work.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use nsqr_broker::{Broker, Publisher, Ticket};
use parking_lot::Mutex;

use crate::error::Error;

pub(crate) struct Inproc {
    broker: Broker,
    publishers: Mutex<HashMap<Arc<str>, Arc<Publisher>>>,
}

impl Inproc {
    pub(crate) fn new(broker: Broker) -> Inproc {
        Inproc {
            broker,
            publishers: Mutex::new(HashMap::new()),
        }
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

    pub(crate) fn publish(&self, topic: &str, body: Bytes) -> Result<Ticket, Error> {
        Ok(self.publisher(topic)?.publish(body)?)
    }

    pub(crate) fn publish_batch(&self, topic: &str, bodies: Vec<Bytes>) -> Result<Ticket, Error> {
        Ok(self.publisher(topic)?.publish_batch(bodies)?)
    }

    pub(crate) fn publish_deferred(
        &self,
        topic: &str,
        body: Bytes,
        delay: Duration,
    ) -> Result<Ticket, Error> {
        Ok(self.publisher(topic)?.publish_deferred(body, delay)?)
    }
}
