//! nsqr-client: an NSQ client for Rust.
#![warn(missing_docs)]

mod address;
mod config;
mod consumer;
mod error;
pub mod http;
pub mod lookupd;
mod message;
pub mod patterns;
mod producer;
pub mod tls;
mod wire;

pub use address::Address;
pub use config::{BackoffStrategy, Compression, Config, TlsConfig};
pub use consumer::{handler_fn, Consumer, FnHandler, Handler, HandlerError, Stats, Stopper};
pub use error::{Error, ErrorCode, Result};
pub use message::{Message, MessageRef, Reply};
pub use producer::{Producer, Publish};
