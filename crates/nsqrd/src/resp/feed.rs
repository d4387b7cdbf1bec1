//! The change feed into NSQ: every keyspace change, as the JSON body `nsqr-kv` builds
//! (`nsqr_kv::feed`), published on `--kv-events-topic`. NSQ consumers of that topic get
//! at-least-once changes that survive their disconnects and nsqrd's restarts. In strict mode a
//! write's reply waits until its change is fsynced in the topic's queues too.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use nsqr_broker::{Broker, Ticket};
use nsqr_kv::{ChangeFeed, FeedError, FeedWait};

/// Publishes changes on one topic.
pub struct BrokerFeed {
    broker: Arc<Broker>,
    topic: String,
    strict: bool,
}

impl BrokerFeed {
    /// Creates the topic now, so consumers can subscribe before the first change.
    pub fn new(broker: Arc<Broker>, topic: &str, strict: bool) -> Result<BrokerFeed, String> {
        broker
            .get_or_create_topic(topic)
            .map_err(|e| format!("failed to create the change-feed topic {topic} - {e}"))?;
        Ok(BrokerFeed {
            broker,
            topic: topic.to_string(),
            strict,
        })
    }
}

/// The one call that hands a change to the broker.
fn publish(broker: &Broker, topic: &str, body: Vec<u8>) -> Result<Ticket, String> {
    let bodies = nsq_wire::Bodies::one(Bytes::from(body)).map_err(|e| e.to_string())?;
    broker
        .get_or_create_topic(topic)
        .map_err(|e| e.to_string())?
        .put(&[bodies], Duration::ZERO)
        .map_err(|e| e.to_string())
}

impl ChangeFeed for BrokerFeed {
    fn publish(&self, body: Vec<u8>) -> Result<Option<FeedWait>, FeedError> {
        let ticket = publish(&self.broker, &self.topic, body).map_err(FeedError)?;
        if !self.strict || ticket.is_done() {
            return Ok(None);
        }
        Ok(Some(Box::pin(async move {
            ticket.wait().await.map_err(|e| FeedError(e.to_string()))
        })))
    }
}
