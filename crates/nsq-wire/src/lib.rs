//! nsq-wire: NSQ's TCP protocol V2 as pure functions over byte buffers.
//!
//! No sockets, no async, no clocks: the daemon, the client and the fuzz targets all share this
//! one parser and encoder, so the exact nsqd error strings live in one place and can be tested
//! byte for byte without a server.

pub mod bodies;
pub mod command;
pub mod error;
pub mod frame;
pub mod message;
pub mod names;
pub mod quote;

pub use bodies::Bodies;
pub use command::{error_at_eof, parse, parse_with, ClientState, Command, Handover, Limits};
pub use error::{Code, ParseError, ProtocolError};
pub use frame::{FrameType, MAGIC_V2};
pub use message::MessageId;
