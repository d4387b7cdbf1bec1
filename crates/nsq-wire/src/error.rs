//! Protocol errors as values: the NSQ error code, the text after it, and whether the server must
//! close the connection after sending it (nsqd closes on every error except FIN/REQ/TOUCH
//! failures).

use std::fmt;

/// The `E_*` codes nsqd sends in error frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    Invalid,
    BadBody,
    BadTopic,
    BadChannel,
    BadMessage,
    PubFailed,
    MpubFailed,
    DpubFailed,
    FinFailed,
    ReqFailed,
    TouchFailed,
    SubFailed,
    IdentifyFailed,
    AuthFailed,
    AuthFirst,
    AuthDisabled,
    Unauthorized,
    AuthError,
    BadProtocol,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Invalid => "E_INVALID",
            Code::BadBody => "E_BAD_BODY",
            Code::BadTopic => "E_BAD_TOPIC",
            Code::BadChannel => "E_BAD_CHANNEL",
            Code::BadMessage => "E_BAD_MESSAGE",
            Code::PubFailed => "E_PUB_FAILED",
            Code::MpubFailed => "E_MPUB_FAILED",
            Code::DpubFailed => "E_DPUB_FAILED",
            Code::FinFailed => "E_FIN_FAILED",
            Code::ReqFailed => "E_REQ_FAILED",
            Code::TouchFailed => "E_TOUCH_FAILED",
            Code::SubFailed => "E_SUB_FAILED",
            Code::IdentifyFailed => "E_IDENTIFY_FAILED",
            Code::AuthFailed => "E_AUTH_FAILED",
            Code::AuthFirst => "E_AUTH_FIRST",
            Code::AuthDisabled => "E_AUTH_DISABLED",
            Code::Unauthorized => "E_UNAUTHORIZED",
            Code::AuthError => "E_AUTH_ERROR",
            Code::BadProtocol => "E_BAD_PROTOCOL",
        }
    }

    /// Every code, in declaration order.
    pub const ALL: [Code; 19] = [
        Code::Invalid,
        Code::BadBody,
        Code::BadTopic,
        Code::BadChannel,
        Code::BadMessage,
        Code::PubFailed,
        Code::MpubFailed,
        Code::DpubFailed,
        Code::FinFailed,
        Code::ReqFailed,
        Code::TouchFailed,
        Code::SubFailed,
        Code::IdentifyFailed,
        Code::AuthFailed,
        Code::AuthFirst,
        Code::AuthDisabled,
        Code::Unauthorized,
        Code::AuthError,
        Code::BadProtocol,
    ];

    /// The code an error frame's text starts with (`E_INVALID cannot ...` -> `Invalid`), as a
    /// client reads it; None for a code this crate does not know.
    pub fn of_frame(text: &[u8]) -> Option<Code> {
        let end = text.iter().position(|&b| b == b' ').unwrap_or(text.len());
        let word = &text[..end];
        Code::ALL
            .into_iter()
            .find(|c| c.as_str().as_bytes() == word)
    }

    /// nsqd keeps the connection open only after these.
    pub fn is_fatal(self) -> bool {
        !matches!(self, Code::FinFailed | Code::ReqFailed | Code::TouchFailed)
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error frame to send: `<CODE> <text>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ProtocolError {
    pub code: Code,
    pub text: String,
}

impl ProtocolError {
    pub fn new(code: Code, text: impl Into<String>) -> Self {
        ProtocolError {
            code,
            text: text.into(),
        }
    }

    pub fn invalid(text: impl Into<String>) -> Self {
        Self::new(Code::Invalid, text)
    }

    pub fn is_fatal(&self) -> bool {
        self.code.is_fatal()
    }

    /// The payload of the error frame.
    pub fn frame_text(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.text.is_empty() {
            f.write_str(self.code.as_str())
        } else {
            write!(f, "{} {}", self.code.as_str(), self.text)
        }
    }
}

/// What the parser can fail with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// Send this error frame (and close the connection if it is fatal).
    #[error("{0}")]
    Protocol(ProtocolError),
    /// Like `Protocol`, but nsqd has already created this topic when it failed (MPUB creates
    /// its topic before reading the body).
    #[error("{error}")]
    ProtocolAfterTopic { error: ProtocolError, topic: String },
    /// The command line exceeded the read buffer: nsqd drops the connection without a frame.
    #[error("command line longer than {0} bytes")]
    LineTooLong(usize),
}

impl From<ProtocolError> for ParseError {
    fn from(e: ProtocolError) -> Self {
        ParseError::Protocol(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_read_back_from_frames() {
        for c in Code::ALL {
            let frame = ProtocolError::new(c, "some text").frame_text();
            assert_eq!(Code::of_frame(frame.as_bytes()), Some(c));
            assert_eq!(Code::of_frame(c.as_str().as_bytes()), Some(c));
            assert_eq!(c.to_string(), c.as_str());
        }
        assert_eq!(Code::of_frame(b"E_NEW_THING text"), None);
        assert_eq!(Code::of_frame(b""), None);
    }
}
