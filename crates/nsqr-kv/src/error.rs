//! Why a keyspace operation failed. `Display` is the whole Redis error text, code first, so a
//! server writes `-{error}` and nothing else.

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KvError {
    /// A command of one type on a key holding another.
    #[error("WRONGTYPE Operation against a key holding the wrong kind of value")]
    WrongType,
    /// INCR family on a value that is not a 64-bit integer (or an increment that is not one).
    #[error("ERR value is not an integer or out of range")]
    NotInteger,
    /// HINCRBY on a field whose value is not a 64-bit integer.
    #[error("ERR hash value is not an integer")]
    HashNotInteger,
    /// HINCRBYFLOAT on a field whose value is not a float.
    #[error("ERR hash value is not a float")]
    HashNotFloat,
    #[error("ERR increment or decrement would overflow")]
    Overflow,
    /// INCRBYFLOAT on a value (or with an increment) that is not a float.
    #[error("ERR value is not a valid float")]
    NotFloat,
    #[error("ERR increment would produce NaN or Infinity")]
    NotFinite,
    /// LSET past either end of the list.
    #[error("ERR index out of range")]
    IndexOutOfRange,
    /// RENAME of a key that does not exist (and LSET of one).
    #[error("ERR no such key")]
    NoSuchKey,
    /// APPEND beyond `proto-max-bulk-len`.
    #[error("ERR string exceeds maximum allowed size (proto-max-bulk-len)")]
    TooLarge,
    /// A write while over `maxmemory` with nothing left to evict.
    #[error("OOM command not allowed when used memory > 'maxmemory'.")]
    OutOfMemory,
    /// The append-only log cannot be written (strict mode refuses writes until it can).
    #[error("MISCONF Errors writing to the AOF file: {0}")]
    Log(String),
    /// The change feed could not take a change (strict mode: the write is not acknowledged).
    #[error("ERR change feed unavailable: {0}")]
    Feed(String),
    #[error(transparent)]
    Stream(#[from] crate::streams::StreamError),
    /// A PF command on a string that is not an HLL.
    #[error("WRONGTYPE Key is not a valid HyperLogLog string value.")]
    NotHll,
    /// A PF command on an HLL whose registers cannot be read.
    #[error("INVALIDOBJ Corrupted HLL object detected")]
    CorruptHll,
    /// ZADD INCR / ZINCRBY adding `inf` and `-inf`.
    #[error("ERR resulting score is not a number (NaN)")]
    ScoreNan,
}
