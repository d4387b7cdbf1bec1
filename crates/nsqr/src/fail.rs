//! The tools' error plumbing: a boxed error with a message, printed as `nsqr <tool>: <what>`.

pub type Error = Box<dyn std::error::Error + Send + Sync>;
pub type Result<T> = std::result::Result<T, Error>;

/// An error from a message.
pub fn err(msg: impl Into<String>) -> Error {
    msg.into().into()
}
