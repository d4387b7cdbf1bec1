//! The CLI's error plumbing: a boxed error with a message, and the time any single network
//! step may take.

use std::time::Duration;

pub type Error = Box<dyn std::error::Error + Send + Sync>;
pub type Result<T> = std::result::Result<T, Error>;

/// An error from a message.
pub fn err(msg: impl Into<String>) -> Error {
    msg.into().into()
}

/// How long a connection attempt or a wait for one response may take.
pub const IO_TIMEOUT: Duration = Duration::from_secs(30);
