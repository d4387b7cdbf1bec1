//! Finding the command line: up to `\n` (a `\r` before it dropped), split on single spaces,
//! bounded by [`MAX_LINE_LEN`]. Also the shortcut for a consumer's commonest line,
//! `FIN <16-byte id>\n`, which skips the tokenising.

use bytes::{Buf, BytesMut};

use super::{ClientState, IdToken, Limits, MAX_LINE_LEN};
use crate::error::ParseError;

/// Most tokens any command uses (`DPUB t ms`, `REQ id ms`, `SUB t c`); more are counted and
/// ignored, as nsqd ignores extra params.
const MAX_TOKENS: usize = 4;

/// The parsed command line: name and the byte ranges of its params (within the buffer).
pub(super) struct Line {
    /// Bytes up to and including `\n`.
    pub len: usize,
    /// Ranges of the first space-separated tokens; the first is the command name.
    ranges: [(usize, usize); MAX_TOKENS],
    /// How many tokens the line has in all (may exceed MAX_TOKENS).
    pub count: usize,
}

impl Line {
    /// Byte range of token `i` (< MAX_TOKENS; an absent token is an empty range).
    pub fn range(&self, i: usize) -> (usize, usize) {
        self.ranges[i]
    }

    /// Token `i` of the line scanned from `buf`.
    pub fn token<'b>(&self, buf: &'b [u8], i: usize) -> &'b [u8] {
        let (a, b) = self.ranges[i];
        &buf[a..b]
    }
}

/// The command line at the front of `buf`; None while it has no `\n` yet.
pub(super) fn scan_line(buf: &[u8]) -> Result<Option<Line>, ParseError> {
    let window = &buf[..buf.len().min(MAX_LINE_LEN)];
    let Some(nl) = memchr::memchr(b'\n', window) else {
        if buf.len() >= MAX_LINE_LEN {
            return Err(ParseError::LineTooLong(MAX_LINE_LEN));
        }
        return Ok(None);
    };
    let mut end = nl;
    if end > 0 && buf[end - 1] == b'\r' {
        end -= 1;
    }
    let mut ranges = [(0usize, 0usize); MAX_TOKENS];
    let mut count = 0;
    let mut start = 0;
    for i in memchr::memchr_iter(b' ', &buf[..end]) {
        if count < MAX_TOKENS {
            ranges[count] = (start, i);
        }
        count += 1;
        start = i + 1;
    }
    if count < MAX_TOKENS {
        ranges[count] = (start, end);
    }
    count += 1;
    Ok(Some(Line {
        len: nl + 1,
        ranges,
        count,
    }))
}

/// `FIN ` + 16-byte id + `\n`.
const FIN_LINE_LEN: usize = 21;

/// If `buf` starts with exactly `FIN <16-byte id>\n` and FIN is allowed now, consume it and
/// return the id. Anything else (a short id followed by CR LF or by the next line, a FIN the
/// state forbids) is left to the full parse, which produces the same result or nsqd's error.
pub(super) fn fin_fast_path(
    buf: &mut BytesMut,
    limits: &Limits,
    state: ClientState,
) -> Option<IdToken> {
    if buf.len() < FIN_LINE_LEN
        || buf[FIN_LINE_LEN - 1] != b'\n'
        || !buf.starts_with(b"FIN ")
        || state == ClientState::Init
        || limits.tls_pending
    {
        return None;
    }
    // The line is exactly `FIN <16-byte token>` iff the token holds no separator.
    let mut id = [0u8; 16];
    id.copy_from_slice(&buf[4..20]);
    if has_separator(&id) {
        return None;
    }
    buf.advance(FIN_LINE_LEN);
    Some(id)
}

/// True if the bytes contain a space, CR or LF (eight bytes at a time).
pub(crate) fn has_separator(b: &[u8; 16]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let has_byte = |x: u64, c: u8| {
        let v = x ^ (ONES * c as u64);
        v.wrapping_sub(ONES) & !v & HIGH != 0
    };
    b.chunks_exact(8).any(|w| {
        let mut a = [0u8; 8];
        a.copy_from_slice(w);
        let x = u64::from_ne_bytes(a);
        has_byte(x, b' ') || has_byte(x, b'\r') || has_byte(x, b'\n')
    })
}
