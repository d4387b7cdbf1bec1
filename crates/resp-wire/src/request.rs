//! Requests: what a client sends. A request is either a multibulk array of bulk strings
//! (`*2\r\n$3\r\nGET\r\n$1\r\nk\r\n`, what every client library sends) or an inline line
//! (`GET k\r\n`, what a human types). Many requests may sit in one buffer (pipelining).
//!
//! [`RequestParser`] is resumable: when a request is incomplete it remembers how far it got, so
//! a 100 MB value arriving in many reads is scanned once, not once per read. It follows Redis's
//! `processMultibulkBuffer` / `processInlineBuffer` rule for rule, including their limits: no
//! length read from the wire is ever allocated up front (a `$` of 2^40 is refused, a `*` of 2^31
//! - 1 grows the argument list only as arguments arrive), and a line with no end is refused at
//!   64 KiB.

use std::ops::Range;

use crate::error::ProtocolError;
use crate::number::parse_i64;

/// Redis's `PROTO_INLINE_MAX_SIZE`: the longest inline request or length line.
pub const INLINE_MAX: usize = 64 * 1024;
/// Redis's default `proto-max-bulk-len`.
pub const DEFAULT_MAX_BULK: u64 = 512 * 1024 * 1024;
/// Most arguments of one request (Redis: `INT_MAX`).
pub const MAX_MULTIBULK: i64 = i32::MAX as i64;
/// Before AUTH (when a password is required) Redis allows at most 10 arguments ...
pub const UNAUTH_MAX_MULTIBULK: i64 = 10;
/// ... of at most 16 KiB each.
pub const UNAUTH_MAX_BULK: u64 = 16 * 1024;
/// Arguments reserved at once when a count arrives (the rest grow as they are parsed).
const ARGS_RESERVE: usize = 1024;

/// The parser's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest bulk string (`proto-max-bulk-len`).
    pub max_bulk: u64,
    /// Whether the client must still authenticate (tightens the limits as Redis does).
    pub unauthenticated: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bulk: DEFAULT_MAX_BULK,
            unauthenticated: false,
        }
    }
}

/// The outcome of one [`RequestParser::parse`] call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed {
    /// A request of this many bytes is complete; read it with [`RequestParser::args`] before
    /// the bytes are dropped from the buffer.
    Request(usize),
    /// This many bytes held no request (`*0`, `*-1`, an empty line): drop them and go on.
    Empty(usize),
    /// More bytes are needed.
    Incomplete,
}

/// Where a multibulk request stands between calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Nothing of the current request is known yet.
    Start,
    /// Inside a multibulk request: `remaining` arguments still to read, the next starting at
    /// `pos`; `bulk` is its length once its `$` line has been read.
    Multibulk {
        pos: usize,
        remaining: i64,
        bulk: Option<usize>,
    },
}

/// Splits requests off the front of a buffer.
#[derive(Debug)]
pub struct RequestParser {
    limits: Limits,
    state: State,
    /// Ranges of the arguments: into the caller's buffer (multibulk) or into `inline`.
    args: Vec<Range<usize>>,
    /// The unescaped arguments of an inline request.
    inline: Vec<u8>,
    /// Whether the last complete request was inline.
    was_inline: bool,
}

impl Default for RequestParser {
    fn default() -> Self {
        RequestParser::new(Limits::default())
    }
}

impl RequestParser {
    pub fn new(limits: Limits) -> RequestParser {
        RequestParser {
            limits,
            state: State::Start,
            args: Vec::new(),
            inline: Vec::new(),
            was_inline: false,
        }
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Changes the limits (after AUTH); takes effect from the next request.
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    /// Bytes the current request still needs at least, when a bulk's length is known: lets the
    /// caller grow its buffer once for a large value.
    pub fn wanted(&self, buffered: usize) -> Option<usize> {
        match self.state {
            State::Multibulk {
                pos,
                bulk: Some(len),
                ..
            } => Some((pos + len + 2).saturating_sub(buffered)),
            _ => None,
        }
    }

    /// Parses the request at the start of `buf`. `buf` must start where the previous request
    /// ended, and keep the bytes of an incomplete request between calls (more may be appended).
    pub fn parse(&mut self, buf: &[u8]) -> Result<Parsed, ProtocolError> {
        let r = match (self.state, buf.first()) {
            (State::Start, None) => Ok(Parsed::Incomplete),
            (State::Start, Some(b'*')) => self.multibulk_count(buf),
            (State::Start, Some(_)) => self.inline_request(buf),
            (State::Multibulk { .. }, _) => self.multibulk_args(buf),
        };
        if r.is_err() {
            self.state = State::Start;
        }
        r
    }

    /// The arguments of the request just returned by `parse` as `Request(_)`; `buf` must be
    /// the buffer given to that call.
    pub fn args<'a>(&'a self, buf: &'a [u8]) -> Args<'a> {
        Args {
            src: if self.was_inline { &self.inline } else { buf },
            ranges: &self.args,
        }
    }

    fn inline_request(&mut self, buf: &[u8]) -> Result<Parsed, ProtocolError> {
        let Some(nl) = memchr::memchr(b'\n', buf) else {
            return if buf.len() > INLINE_MAX {
                Err(ProtocolError::TooBigInline)
            } else {
                Ok(Parsed::Incomplete)
            };
        };
        let line = match buf[..nl].last() {
            Some(b'\r') => &buf[..nl - 1],
            _ => &buf[..nl],
        };
        crate::inline::split(line, &mut self.inline, &mut self.args)?;
        self.was_inline = true;
        if self.args.is_empty() {
            Ok(Parsed::Empty(nl + 1))
        } else {
            Ok(Parsed::Request(nl + 1))
        }
    }

    /// A length line starting at `pos` (`*N\r\n` or `$N\r\n`): the number and the position
    /// after the line, or `None` if the line is not complete. As in Redis, the byte after `\r`
    /// is skipped without being checked.
    fn length_line(
        buf: &[u8],
        pos: usize,
        too_big: ProtocolError,
    ) -> Result<Option<(Option<i64>, usize)>, ProtocolError> {
        let rest = &buf[pos..];
        let Some(cr) = memchr::memchr(b'\r', rest) else {
            return if rest.len() > INLINE_MAX {
                Err(too_big)
            } else {
                Ok(None)
            };
        };
        if cr + 2 > rest.len() {
            return Ok(None);
        }
        // The type byte (`*` or `$`) is checked by the caller; a line that is only `\r\n`
        // has no digits.
        let digits = rest.get(1..cr).unwrap_or_default();
        Ok(Some((parse_i64(digits), pos + cr + 2)))
    }

    fn multibulk_count(&mut self, buf: &[u8]) -> Result<Parsed, ProtocolError> {
        let Some((n, next)) = Self::length_line(buf, 0, ProtocolError::TooBigMultibulkCount)?
        else {
            return Ok(Parsed::Incomplete);
        };
        let n = match n {
            Some(n) if n <= MAX_MULTIBULK => n,
            _ => return Err(ProtocolError::InvalidMultibulkLength),
        };
        if n > UNAUTH_MAX_MULTIBULK && self.limits.unauthenticated {
            return Err(ProtocolError::UnauthenticatedMultibulkLength);
        }
        if n <= 0 {
            return Ok(Parsed::Empty(next));
        }
        self.args.clear();
        self.args.reserve((n as usize).min(ARGS_RESERVE));
        self.state = State::Multibulk {
            pos: next,
            remaining: n,
            bulk: None,
        };
        self.multibulk_args(buf)
    }

    fn multibulk_args(&mut self, buf: &[u8]) -> Result<Parsed, ProtocolError> {
        while let State::Multibulk {
            pos,
            remaining,
            bulk,
        } = self.state
        {
            let len = match bulk {
                Some(len) => len,
                None => match self.bulk_header(buf, pos)? {
                    Some((len, next)) => {
                        self.state = State::Multibulk {
                            pos: next,
                            remaining,
                            bulk: Some(len),
                        };
                        continue;
                    }
                    None => return Ok(Parsed::Incomplete),
                },
            };
            if buf.len() < pos + len + 2 {
                return Ok(Parsed::Incomplete);
            }
            self.args.push(pos..pos + len);
            let next = pos + len + 2;
            if remaining == 1 {
                self.state = State::Start;
                self.was_inline = false;
                return Ok(Parsed::Request(next));
            }
            self.state = State::Multibulk {
                pos: next,
                remaining: remaining - 1,
                bulk: None,
            };
        }
        Ok(Parsed::Incomplete)
    }

    /// A `$<len>\r\n` line at `pos`: the length and where the data starts.
    fn bulk_header(&self, buf: &[u8], pos: usize) -> Result<Option<(usize, usize)>, ProtocolError> {
        let Some((n, next)) = Self::length_line(buf, pos, ProtocolError::TooBigBulkCount)? else {
            return Ok(None);
        };
        if buf[pos] != b'$' {
            return Err(ProtocolError::ExpectedBulk(buf[pos]));
        }
        let len = match n {
            Some(n) if n >= 0 && n as u64 <= self.limits.max_bulk => n as u64,
            _ => return Err(ProtocolError::InvalidBulkLength),
        };
        if len > UNAUTH_MAX_BULK && self.limits.unauthenticated {
            return Err(ProtocolError::UnauthenticatedBulkLength);
        }
        let len = usize::try_from(len).map_err(|_| ProtocolError::InvalidBulkLength)?;
        Ok(Some((len, next)))
    }
}

/// The arguments of one request, borrowed from the buffer (or the parser, for inline ones).
#[derive(Debug, Clone, Copy)]
pub struct Args<'a> {
    src: &'a [u8],
    ranges: &'a [Range<usize>],
}

impl<'a> Args<'a> {
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Argument `i` (0 is the command name), or an empty slice past the end.
    pub fn get(&self, i: usize) -> &'a [u8] {
        self.ranges
            .get(i)
            .and_then(|r| self.src.get(r.clone()))
            .unwrap_or(&[])
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = &'a [u8]> + '_ {
        (0..self.ranges.len()).map(|i| self.get(i))
    }

    /// Owned copies of every argument (tests, fuzzing).
    pub fn to_vec(&self) -> Vec<Vec<u8>> {
        self.iter().map(<[u8]>::to_vec).collect()
    }
}

/// A request's arguments copied out of the read buffer, to run later (a command queued in a
/// transaction): one buffer for all of them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OwnedArgs {
    buf: Vec<u8>,
    ranges: Vec<Range<usize>>,
}

impl OwnedArgs {
    /// Copies `args`.
    pub fn new(args: &Args<'_>) -> OwnedArgs {
        let mut owned = OwnedArgs {
            buf: Vec::with_capacity(args.iter().map(<[u8]>::len).sum()),
            ranges: Vec::with_capacity(args.len()),
        };
        for a in args.iter() {
            owned.push(a);
        }
        owned
    }

    /// Copies each of `parts` as one argument (a command built by the server itself).
    pub fn from_parts<A: AsRef<[u8]>>(parts: &[A]) -> OwnedArgs {
        let mut owned = OwnedArgs::default();
        for p in parts {
            owned.push(p.as_ref());
        }
        owned
    }

    /// Empties it, keeping its buffers for the next request.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.ranges.clear();
    }

    /// Adds one argument.
    pub fn push(&mut self, arg: &[u8]) {
        self.ranges.push(self.buf.len()..self.buf.len() + arg.len());
        self.buf.extend_from_slice(arg);
    }

    /// The arguments, as the parser hands them out.
    pub fn args(&self) -> Args<'_> {
        Args {
            src: &self.buf,
            ranges: &self.ranges,
        }
    }

    /// Bytes held (arguments and their bounds), for limits on what is queued.
    pub fn size(&self) -> usize {
        self.buf.len() + self.ranges.len() * std::mem::size_of::<Range<usize>>()
    }
}

/// Requests copied one after another into shared buffers (a transaction's queue): their
/// bytes in one buffer, their arguments' bounds in another, so queueing a request allocates
/// nothing once the buffers have grown, and [`OwnedRequests::clear`] keeps them for reuse.
#[derive(Debug, Clone, Default)]
pub struct OwnedRequests {
    buf: Vec<u8>,
    ranges: Vec<Range<usize>>,
    /// Each request's arguments, as a range of `ranges`.
    requests: Vec<Range<usize>>,
}

impl OwnedRequests {
    /// Copies `args` as the last request.
    pub fn push(&mut self, args: &Args<'_>) {
        let first = self.ranges.len();
        for a in args.iter() {
            self.ranges.push(self.buf.len()..self.buf.len() + a.len());
            self.buf.extend_from_slice(a);
        }
        self.requests.push(first..self.ranges.len());
    }

    pub fn len(&self) -> usize {
        self.requests.len()
    }

    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    /// The requests, in the order they were pushed.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Args<'_>> + '_ {
        self.requests.iter().map(|r| Args {
            src: &self.buf,
            ranges: &self.ranges[r.clone()],
        })
    }

    /// Bytes the requests take (arguments and their bounds), for limits on what is queued.
    pub fn size(&self) -> usize {
        self.buf.len()
            + (self.ranges.len() + self.requests.len()) * std::mem::size_of::<Range<usize>>()
    }

    /// Bytes allocated, used or not.
    pub fn capacity(&self) -> usize {
        self.buf.capacity()
            + (self.ranges.capacity() + self.requests.capacity())
                * std::mem::size_of::<Range<usize>>()
    }

    /// Forgets every request, keeping the buffers.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.ranges.clear();
        self.requests.clear();
    }
}

/// Encodes a request as a multibulk array (what clients send).
pub fn encode_request<A: AsRef<[u8]>>(args: &[A], out: &mut Vec<u8>) {
    out.push(b'*');
    out.extend_from_slice(itoa::Buffer::new().format(args.len()).as_bytes());
    out.extend_from_slice(b"\r\n");
    for a in args {
        let a = a.as_ref();
        out.push(b'$');
        out.extend_from_slice(itoa::Buffer::new().format(a.len()).as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// A request's arguments (owned) and its length in bytes.
pub type OwnedRequest = (Vec<Vec<u8>>, usize);

/// One request from the start of `input`, with default limits: its arguments and its length in
/// bytes, `Ok(None)` if it is incomplete. Empty requests (`*0`, blank lines) are skipped. The
/// entry point for fuzzing (`fuzz/`) and for tests.
pub fn parse(input: &[u8]) -> Result<Option<OwnedRequest>, ProtocolError> {
    let mut parser = RequestParser::default();
    let mut at = 0;
    loop {
        match parser.parse(&input[at..])? {
            Parsed::Request(n) => {
                let args = parser.args(&input[at..]).to_vec();
                return Ok(Some((args, at + n)));
            }
            Parsed::Empty(n) => at += n,
            Parsed::Incomplete => return Ok(None),
        }
    }
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
