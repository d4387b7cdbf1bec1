//! The change feed into NSQ: every keyspace change, as the JSON body `nsqr-kv` builds
//! (`nsqr_kv::feed`), published on `--kv-events-topic` through a broker [`Publisher`]. NSQ
//! consumers of that topic get at-least-once changes that survive their disconnects and
//! nsqrd's restarts. In strict mode a write's reply waits until its change is fsynced in the
//! topic's queues too.

use nsqr_broker::{Broker, Publisher};
use nsqr_kv::{ChangeFeed, FeedError, FeedWait};

/// Publishes changes on one topic.
pub struct BrokerFeed {
    publisher: Publisher,
    strict: bool,
}

impl BrokerFeed {
    /// Creates the topic now, so consumers can subscribe before the first change.
    pub fn new(broker: &Broker, topic: &str, strict: bool) -> Result<BrokerFeed, String> {
        let publisher = broker
            .publisher(topic)
            .map_err(|e| format!("failed to create the change-feed topic {topic} - {e}"))?;
        Ok(BrokerFeed { publisher, strict })
    }
}

impl ChangeFeed for BrokerFeed {
    fn publish(&self, body: Vec<u8>) -> Result<Option<FeedWait>, FeedError> {
        let ticket = self
            .publisher
            .publish(body)
            .map_err(|e| FeedError(e.to_string()))?;
        if !self.strict || ticket.is_done() {
            return Ok(None);
        }
        Ok(Some(Box::pin(async move {
            ticket.wait().await.map_err(|e| FeedError(e.to_string()))
        })))
    }
}
