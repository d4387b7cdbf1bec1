//! nsq-wire: NSQ's TCP protocol V2 as pure functions over byte buffers.
//!
//! No sockets, no async, no clocks: the daemon, the client and the fuzz targets all share this
//! one parser and encoder, so the exact nsqd error strings live in one place and can be tested
//! byte for byte without a server.
//!
//! The server's side: [`command`] parses what clients send, [`frame`] encodes the answers.
//! The client's side: [`client`] encodes commands and decodes frames. Both sides: [`identify`]
//! (the IDENTIFY request, its validation and the reply), nsqd's [`defaults`], `compress` (snappy and deflate
//! streams, with the `compress` feature, on by default), [`bodies`], [`message`] ids, topic
//! and channel [`names`].

pub mod bodies;
pub mod client;
pub mod command;
#[cfg(feature = "compress")]
pub mod compress;
pub mod defaults;
pub mod error;
pub mod frame;
pub mod identify;
pub mod message;
pub mod names;
pub mod quote;
pub mod spliced;

pub use bodies::Bodies;
pub use client::{Frame, FrameDecoder};
pub use command::{error_at_eof, parse, parse_with, ClientState, Command, Handover, Limits};
pub use defaults::NSQD_VERSION;
pub use error::{Code, ParseError, ProtocolError};
pub use frame::{FrameType, MAGIC_V2};
pub use message::MessageId;
