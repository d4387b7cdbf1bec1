//! The client's errors, one type for every transport. A server's error frame keeps nsqd's text
//! unchanged and its `E_*` code as a value ([`Error::code`]), so a caller can match on
//! `E_BAD_TOPIC` without parsing strings; the in-process transport reports the broker's own
//! errors, whose texts are nsqd's too.

use std::io;

use nsq_wire::client::{EncodeError, FrameError};
use nsq_wire::compress::CodecError;

pub use nsq_wire::Code as ErrorCode;

/// What can go wrong talking to nsqd, nsqlookupd or an in-process broker.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An error frame from the server, e.g. `E_BAD_TOPIC PUB topic name "a b" is not valid`.
    #[error("{text}")]
    Protocol {
        /// Its code; None for a code this client does not know.
        code: Option<ErrorCode>,
        /// The frame's whole text, code first, as nsqd sent it.
        text: String,
    },
    /// The address is not `tcp://host:port`, `unix:///path`, `inproc://` or `host:port`.
    #[error("bad address {addr:?}: {why}")]
    Address {
        /// The address given.
        addr: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A setting out of range (see [`Config::validate`](crate::Config::validate)).
    #[error("invalid config: {0}")]
    Config(String),
    /// `inproc://` without a broker in the config ([`Config::inproc`](crate::Config::inproc)).
    #[error("inproc:// needs a broker: use Config::inproc(broker)")]
    NoBroker,
    /// Connecting failed.
    #[error("connect to {addr}: {source}")]
    Connect {
        /// The address.
        addr: String,
        /// Why.
        source: io::Error,
    },
    /// Reading or writing an established connection failed.
    #[error("{addr}: {source}")]
    Io {
        /// The server's address.
        addr: String,
        /// Why.
        source: io::Error,
    },
    /// Nothing arrived within the read timeout, a write did not finish within the write
    /// timeout, or a connect, handshake or request-reply took too long.
    #[error("{0} timed out")]
    Timeout(String),
    /// The TLS upgrade or its configuration failed.
    #[error("TLS: {0}")]
    Tls(String),
    /// A handshake step (IDENTIFY, an upgrade, AUTH, SUB) got an answer it cannot use.
    #[error("handshake: {0}")]
    Handshake(String),
    /// The server asks for AUTH and no secret is configured.
    #[error("the server requires AUTH and no auth_secret is configured")]
    AuthRequired,
    /// The server's bytes are not NSQ frames.
    #[error("bad frame from {addr}: {source}")]
    Frame {
        /// The server's address.
        addr: String,
        /// What was wrong.
        source: FrameError,
    },
    /// A compressed stream from the server could not be decoded.
    #[error("{0}")]
    Codec(#[from] CodecError),
    /// The text of a [`Codec`](Error::Codec) error, for the other commands it failed.
    #[error("{0}")]
    Corrupt(String),
    /// A command that cannot be put on the wire (bad topic or channel name, body over 2 GiB).
    #[error("{0}")]
    Encode(#[from] EncodeError),
    /// A message body nsqd would refuse: empty.
    #[error("message body is empty")]
    EmptyBody,
    /// A body's range lies outside the buffer it was to be sliced from
    /// ([`Producer::multi_publish_slices_async`](crate::Producer::multi_publish_slices_async)).
    #[error("message body {range:?} lies outside its buffer of {len} bytes")]
    BodyOutOfRange {
        /// The range asked for.
        range: std::ops::Range<usize>,
        /// The buffer's length.
        len: usize,
    },
    /// A request of a batch laid out wrongly
    /// ([`Requester::send_batch`](crate::patterns::Requester::send_batch)): outside its
    /// buffer, overlapping the one before, or without room for its envelope.
    #[error("request {range:?} of the batch {why}")]
    RequestLayout {
        /// The request's range.
        range: std::ops::Range<usize>,
        /// What is wrong with it.
        why: String,
    },
    /// The connection closed before this command was answered (whether the server acted on
    /// it is unknown), or it is closing.
    #[error("connection to {0} closed")]
    Closed(String),
    /// The producer or consumer was stopped.
    #[error("stopped")]
    Stopped,
    /// An in-process broker refused (its text is nsqd's).
    #[error("{0}")]
    Broker(#[from] nsqr_broker::BrokerError),
    /// An in-process publish was accepted but could not be written to disk.
    #[error("{0}")]
    Disk(#[from] nsqr_broker::DiskError),
    /// An HTTP request to nsqd or nsqlookupd failed ([`http::get`](crate::http::get)).
    #[error("HTTP {addr}: {why}")]
    Http {
        /// The `host:port` asked.
        addr: String,
        /// What went wrong.
        why: String,
    },
    /// nsqlookupd could not be asked, or answered something unusable.
    #[error("lookupd {addr}: {why}")]
    Lookupd {
        /// The lookupd's HTTP address.
        addr: String,
        /// What went wrong.
        why: String,
    },
    /// A request-reply peer answered with an error.
    #[error("remote error: {0}")]
    Remote(String),
}

impl Error {
    /// The protocol's error code, for an error frame from the server.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Error::Protocol { code, .. } => *code,
            _ => None,
        }
    }

    /// The same error again, for every caller waiting on one failed operation (a batch, a
    /// connect). Kinds that hold a non-clonable source keep its text.
    pub(crate) fn duplicate(&self) -> Error {
        match self {
            Error::Protocol { code, text } => Error::Protocol {
                code: *code,
                text: text.clone(),
            },
            Error::Address { addr, why } => Error::Address {
                addr: addr.clone(),
                why,
            },
            Error::Config(s) => Error::Config(s.clone()),
            Error::NoBroker => Error::NoBroker,
            Error::Connect { addr, source } => Error::Connect {
                addr: addr.clone(),
                source: io::Error::new(source.kind(), source.to_string()),
            },
            Error::Io { addr, source } => Error::Io {
                addr: addr.clone(),
                source: io::Error::new(source.kind(), source.to_string()),
            },
            Error::Timeout(s) => Error::Timeout(s.clone()),
            Error::Tls(s) => Error::Tls(s.clone()),
            Error::Handshake(s) => Error::Handshake(s.clone()),
            Error::AuthRequired => Error::AuthRequired,
            Error::Frame { addr, source } => Error::Frame {
                addr: addr.clone(),
                source: source.clone(),
            },
            Error::Codec(e) => Error::Corrupt(e.to_string()),
            Error::Encode(e) => Error::Encode(e.clone()),
            Error::EmptyBody => Error::EmptyBody,
            Error::BodyOutOfRange { range, len } => Error::BodyOutOfRange {
                range: range.clone(),
                len: *len,
            },
            Error::RequestLayout { range, why } => Error::RequestLayout {
                range: range.clone(),
                why: why.clone(),
            },
            Error::Closed(s) => Error::Closed(s.clone()),
            Error::Stopped => Error::Stopped,
            Error::Broker(e) => Error::Broker(e.clone()),
            Error::Disk(e) => Error::Disk(e.clone()),
            Error::Http { addr, why } => Error::Http {
                addr: addr.clone(),
                why: why.clone(),
            },
            Error::Lookupd { addr, why } => Error::Lookupd {
                addr: addr.clone(),
                why: why.clone(),
            },
            Error::Remote(s) => Error::Remote(s.clone()),
            Error::Corrupt(s) => Error::Corrupt(s.clone()),
        }
    }

    /// An error frame's text as an error.
    pub(crate) fn from_frame(text: &[u8]) -> Error {
        Error::Protocol {
            code: ErrorCode::of_frame(text),
            text: String::from_utf8_lossy(text).into_owned(),
        }
    }
}

/// The client's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_keep_their_text_and_code() {
        let e = Error::from_frame(b"E_BAD_TOPIC PUB topic name \"a b\" is not valid");
        assert_eq!(e.code(), Some(ErrorCode::BadTopic));
        assert_eq!(
            e.to_string(),
            "E_BAD_TOPIC PUB topic name \"a b\" is not valid"
        );
        let e = Error::from_frame(b"E_SOMETHING_NEW");
        assert_eq!(e.code(), None);
        assert_eq!(e.to_string(), "E_SOMETHING_NEW");
        assert_eq!(Error::Stopped.code(), None);
    }
}
