//! Messaging patterns on NSQ's model, next to their ZeroMQ names.
//!
//! - **Publish-subscribe** (PUB/SUB): every channel of a topic gets every message. Give each
//!   subscriber its own channel (an `#ephemeral` one if it should vanish with the
//!   subscriber); each then sees the whole stream.
//! - **Work queue** (PUSH/PULL): the consumers of one channel share its messages, each
//!   delivered to one of them (at least once: a message not finished in time goes to
//!   another). Give every worker the same channel.
//! - **Request-reply** (ROUTER/DEALER): [`Requester`] and [`Responder`], with a reply topic
//!   per requester and a timeout per request; see [`request_reply`].
//!
//! `docs/client.md` in the repository shows all three.

mod caller_buffer;
mod envelope;
mod request_buffers;
pub mod request_reply;

pub use request_reply::{PendingReply, Request, RequestRef, Requester, Responder};
