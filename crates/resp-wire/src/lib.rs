//! resp-wire: the Redis protocol (RESP2 and RESP3) as pure functions over byte buffers.
//!
//! No sockets, no async, no clocks, as `nsq-wire` is for NSQ: nsqrd's keyspace server, the
//! benchmark client, the tests and the fuzz target share this one parser and writer, so Redis's
//! limits and error strings live in one place and are tested byte for byte without a server.
//!
//! - [`RequestParser`]: requests (multibulk and inline, pipelined), resumable across reads.
//! - [`Reply`]: the reply writer for both protocol versions.
//! - [`Frame`] / [`decode`]: replies as values, for clients.
//! - [`peek()`]: a look at the pipelined requests ahead, to warm the cache for their keys.
//! - [`parse_i64`]: Redis's integer rule, for lengths and command arguments alike.
//! - [`parse`]: one request from a byte slice; [`fuzz::check`]: the fuzz target's body.

pub mod error;
pub mod frame;
pub mod fuzz;
mod inline;
pub mod number;
pub mod peek;
pub mod reply;
pub mod request;

pub use error::{DecodeError, ProtocolError};
pub use frame::{decode, Frame};
pub use number::{parse_i64, parse_u64};
pub use peek::{peek, Peeked};
pub use reply::{format_double, Protocol, Reply};
pub use request::{
    encode_request, parse, Args, Limits, OwnedArgs, OwnedRequest, OwnedRequests, Parsed,
    RequestParser,
};
