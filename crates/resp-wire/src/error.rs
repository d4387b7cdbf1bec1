//! Protocol errors: a request the server cannot frame. Each carries Redis's exact text (from
//! `networking.c`); the server answers `-ERR <text>` and closes the connection after the reply,
//! as Redis does, because the byte stream cannot be resynchronised.

/// Why a request could not be framed. `Display` is Redis's text without the `ERR ` prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    /// An inline request with no newline within the inline limit (64 KiB).
    #[error("Protocol error: too big inline request")]
    TooBigInline,
    /// An inline request with an unterminated quote, or a closing quote followed by a non-space.
    #[error("Protocol error: unbalanced quotes in request")]
    UnbalancedQuotes,
    /// A `*<count>` line with no `\r` within the inline limit.
    #[error("Protocol error: too big mbulk count string")]
    TooBigMultibulkCount,
    /// A `*<count>` that is not an integer, or above 2^31 - 1.
    #[error("Protocol error: invalid multibulk length")]
    InvalidMultibulkLength,
    /// More than 10 arguments before AUTH when a password is required.
    #[error("Protocol error: unauthenticated multibulk length")]
    UnauthenticatedMultibulkLength,
    /// A `$<len>` line with no `\r` within the inline limit.
    #[error("Protocol error: too big bulk count string")]
    TooBigBulkCount,
    /// An array element that does not start with `$`.
    #[error("Protocol error: expected '$', got '{}'", char::from(*.0))]
    ExpectedBulk(u8),
    /// A `$<len>` that is not an integer, negative, or above the bulk limit (512 MiB).
    #[error("Protocol error: invalid bulk length")]
    InvalidBulkLength,
    /// A bulk longer than 16 KiB before AUTH when a password is required.
    #[error("Protocol error: unauthenticated bulk length")]
    UnauthenticatedBulkLength,
}

/// Why a reply could not be decoded (client side: tests, benchmarks).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("unknown reply type byte {0:#04x}")]
    UnknownType(u8),
    #[error("invalid length or number in reply: {0:?}")]
    BadNumber(String),
    #[error("reply nested deeper than {0} levels")]
    TooDeep(usize),
    #[error("bulk data not followed by CRLF")]
    MissingCrlf,
    #[error("invalid value in reply: {0}")]
    BadValue(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_redis_texts() {
        assert_eq!(
            ProtocolError::ExpectedBulk(b'x').to_string(),
            "Protocol error: expected '$', got 'x'"
        );
        assert_eq!(
            ProtocolError::InvalidBulkLength.to_string(),
            "Protocol error: invalid bulk length"
        );
    }
}
