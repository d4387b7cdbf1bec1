//! Background work around the engine that is no part of the message path: registration with
//! nsqlookupd (`lookupd`, over `lookup_peer` and `lookupd_channels`) and the statsd push
//! (`statsd`). Each runs in its own tasks and reads the engine through its public API and
//! lifecycle events, so none of it can slow down or block a publisher or a consumer.

pub mod lookup_peer;
pub mod lookupd;
pub mod lookupd_channels;
pub mod statsd;
