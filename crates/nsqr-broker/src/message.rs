//! A message as the engine holds it. The body is a shared `Bytes` sliced straight out of the
//! publisher's read buffer, so fanning out to N channels copies 24 bytes of header per channel,
//! never the body.

use bytes::Bytes;
use nsq_wire::MessageId;

#[derive(Debug, Clone)]
pub struct Message {
    pub id: MessageId,
    /// Unix nanoseconds at publish; never changes (E2E latency is measured from it).
    pub timestamp: i64,
    /// Deliveries so far on this channel.
    pub attempts: u16,
    pub body: Bytes,
}
