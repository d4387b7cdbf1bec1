//! The V2 command parser: bytes in, one `Command` (or an nsqd error) out.
//!
//! `parse` looks at the front of the read buffer and either returns a complete command (and
//! removes its bytes), returns `Ok(None)` when more bytes are needed, or returns the exact error
//! nsqd would send. Checks run in nsqd's order, including the ones that depend on the client's
//! state, so that a bad command gets the same error text as from nsqd. Bodies are copied out of
//! the buffer into one exact-size `Bytes` per command, so the read buffer is never pinned, or,
//! with [`Handover::Split`], split off it without a copy (see `Handover`).

use bytes::{Buf, Bytes, BytesMut};

use crate::bodies::Bodies;
use crate::error::{Code, ParseError, ProtocolError};
use crate::names::is_valid_name;
use crate::quote::go_quote;

/// nsqd's per-connection read buffer: a command line longer than this drops the connection.
pub const MAX_LINE_LEN: usize = 16 * 1024;

/// A client's protocol state, as far as parsing cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientState {
    Init,
    Subscribed,
    Closing,
}

/// Limits from the server's flags, plus per-client facts that decide some errors.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_msg_size: i64,
    pub max_body_size: i64,
    pub max_rdy_count: i64,
    pub max_req_timeout_ms: i64,
    /// IDENTIFY set `heartbeat_interval: -1`, which forbids SUB.
    pub heartbeats_disabled: bool,
    /// TLS is required and this connection has not upgraded yet.
    pub tls_pending: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_msg_size: 1_048_576,
            max_body_size: 5_242_880,
            max_rdy_count: 2500,
            max_req_timeout_ms: 3_600_000,
            heartbeats_disabled: false,
            tls_pending: false,
        }
    }
}

/// A 16-byte message id token as the client sent it (nsqd only checks its length).
pub type IdToken = [u8; 16];

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Nop,
    Identify(Bytes),
    Auth(Bytes),
    Sub {
        topic: Bytes,
        channel: Bytes,
    },
    Rdy(i64),
    Fin(IdToken),
    /// Delay in ms as sent; the caller clamps it to [0, max-req-timeout].
    Req {
        id: IdToken,
        delay_ms: u64,
    },
    Touch(IdToken),
    Cls,
    Pub {
        topic: Bytes,
        body: Bytes,
    },
    /// The bodies: a slice of the read buffer, or copied back to back (see [`Handover`]).
    Mpub {
        topic: Bytes,
        bodies: Bodies,
    },
    Dpub {
        topic: Bytes,
        defer_ms: u64,
        body: Bytes,
    },
}

/// A publish at least this large is read into a buffer of its own and handed over without
/// copying its bodies (as nsqd reads a large body straight into its own allocation).
const ZERO_COPY_MIN: usize = 64 * 1024;
/// Room past such a command, so a reader that keeps a few KiB free need not grow the buffer
/// (which would copy the command) before the command is complete.
const ZERO_COPY_SLACK: usize = 8 * 1024;

fn err(code: Code, text: impl Into<String>) -> ParseError {
    ParseError::Protocol(ProtocolError::new(code, text))
}

fn invalid(text: impl Into<String>) -> ParseError {
    err(Code::Invalid, text)
}

/// nsqd's ByteToBase10: digits only, empty = 0.
fn parse_u64(b: &[u8]) -> Option<u64> {
    let mut v: u64 = 0;
    for &c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((c - b'0') as u64)?;
    }
    Some(v)
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn id_token(b: &[u8]) -> Result<IdToken, ParseError> {
    b.try_into().map_err(|_| invalid("invalid message ID"))
}

fn read_i32(b: &[u8]) -> i32 {
    i32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// `FIN ` + 16-byte id + `\n`.
const FIN_LINE_LEN: usize = 21;

/// True if the bytes contain a space, CR or LF (eight bytes at a time).
fn has_separator(b: &[u8; 16]) -> bool {
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

/// Most tokens any command uses (`DPUB t ms`, `REQ id ms`, `SUB t c`); more are counted and
/// ignored, as nsqd ignores extra params.
const MAX_TOKENS: usize = 4;

/// The parsed command line: name and the byte ranges of its params (within `buf`).
struct Line {
    /// Bytes up to and including `\n`.
    len: usize,
    /// Ranges of the first space-separated tokens; the first is the command name.
    ranges: [(usize, usize); MAX_TOKENS],
    /// How many tokens the line has in all (may exceed MAX_TOKENS).
    count: usize,
}

impl Line {
    fn token(&self, i: usize) -> (usize, usize) {
        self.ranges[i]
    }
}

fn scan_line(buf: &[u8]) -> Result<Option<Line>, ParseError> {
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

/// How a publish's bodies leave the read buffer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Handover<'a> {
    /// Copied into one exact-size allocation per command, so the read buffer is never pinned
    /// (publishes of 64 KiB or more that fill their own buffer are still split off).
    #[default]
    Copy,
    /// PUB and MPUB are split off the buffer without a copy (their MPUB length prefixes stay in
    /// it), if their topic is this one, or whatever it is when None. The buffer is then shared
    /// with the queued messages. DPUB is always copied: it may wait an hour. The caller manages
    /// the buffer's room: an incomplete command under 64 KiB does not make the parser grow it.
    Split(Option<&'a [u8]>),
}

/// Parse one command from the front of `buf`, copying bodies out; see the module docs.
pub fn parse(
    buf: &mut BytesMut,
    limits: &Limits,
    state: ClientState,
) -> Result<Option<Command>, ParseError> {
    parse_with(buf, limits, state, Handover::Copy)
}

/// [`parse`], with publish bodies handed over as `handover` says.
pub fn parse_with(
    buf: &mut BytesMut,
    limits: &Limits,
    state: ClientState,
    handover: Handover<'_>,
) -> Result<Option<Command>, ParseError> {
    // Fast path for the commonest command of a consumer: `FIN <16-byte id>\n`.
    if buf.len() >= FIN_LINE_LEN
        && buf[FIN_LINE_LEN - 1] == b'\n'
        && buf.starts_with(b"FIN ")
        && state != ClientState::Init
        && !limits.tls_pending
    {
        // The line is exactly `FIN <16-byte token>` iff the token holds no separator; anything
        // else (a short id followed by CR LF or by the next line) gets the full parse.
        let mut id = [0u8; 16];
        id.copy_from_slice(&buf[4..20]);
        if !has_separator(&id) {
            buf.advance(FIN_LINE_LEN);
            return Ok(Some(Command::Fin(id)));
        }
    }
    let Some(line) = scan_line(buf)? else {
        return Ok(None);
    };
    let tok = |i: usize| -> &[u8] {
        let (a, b) = line.token(i);
        &buf[a..b]
    };
    let nparams = line.count;
    let name = tok(0);

    if name != b"IDENTIFY" && limits.tls_pending {
        return Err(invalid(format!(
            "cannot {} in current state (TLS required)",
            lossy(name)
        )));
    }

    // Commands without a body: validate, consume the line, return.
    let simple = match name {
        b"NOP" => Some(Command::Nop),
        b"RDY" => Some(parse_rdy(&tok, nparams, limits, state)?),
        b"FIN" => {
            check_in_flight_state(state, "FIN")?;
            if nparams < 2 {
                return Err(invalid("FIN insufficient number of params"));
            }
            Some(Command::Fin(id_token(tok(1))?))
        }
        b"REQ" => {
            check_in_flight_state(state, "REQ")?;
            if nparams < 3 {
                return Err(invalid("REQ insufficient number of params"));
            }
            let id = id_token(tok(1))?;
            let delay_ms = parse_u64(tok(2))
                .ok_or_else(|| invalid(format!("REQ could not parse timeout {}", lossy(tok(2)))))?;
            Some(Command::Req { id, delay_ms })
        }
        b"TOUCH" => {
            check_in_flight_state(state, "TOUCH")?;
            if nparams < 2 {
                return Err(invalid("TOUCH insufficient number of params"));
            }
            Some(Command::Touch(id_token(tok(1))?))
        }
        b"CLS" => {
            if state != ClientState::Subscribed {
                return Err(invalid("cannot CLS in current state"));
            }
            Some(Command::Cls)
        }
        b"SUB" => {
            if state != ClientState::Init {
                return Err(invalid("cannot SUB in current state"));
            }
            if limits.heartbeats_disabled {
                return Err(invalid("cannot SUB with heartbeats disabled"));
            }
            if nparams < 3 {
                return Err(invalid("SUB insufficient number of parameters"));
            }
            if !is_valid_name(tok(1)) {
                return Err(err(
                    Code::BadTopic,
                    format!("SUB topic name {} is not valid", go_quote(tok(1))),
                ));
            }
            if !is_valid_name(tok(2)) {
                return Err(err(
                    Code::BadChannel,
                    format!("SUB channel name {} is not valid", go_quote(tok(2))),
                ));
            }
            None
        }
        b"IDENTIFY" | b"AUTH" | b"PUB" | b"MPUB" | b"DPUB" => None,
        _ => return Err(invalid(format!("invalid command {}", lossy(name)))),
    };
    if let Some(cmd) = simple {
        buf.advance(line.len);
        return Ok(Some(cmd));
    }
    if name == b"SUB" {
        let (t, c) = (line.token(1), line.token(2));
        let cmd = Command::Sub {
            topic: Bytes::copy_from_slice(&buf[t.0..t.1]),
            channel: Bytes::copy_from_slice(&buf[c.0..c.1]),
        };
        buf.advance(line.len);
        return Ok(Some(cmd));
    }

    // Commands with a body: header checks first (nsqd checks these before reading the body).
    let kind = BodyKind::of(name);
    let name_str = kind.name();
    match kind {
        BodyKind::Identify | BodyKind::Auth => {
            if state != ClientState::Init {
                return Err(invalid(format!("cannot {name_str} in current state")));
            }
            if kind == BodyKind::Auth && nparams != 1 {
                return Err(invalid("AUTH invalid number of parameters"));
            }
        }
        BodyKind::Pub | BodyKind::Mpub | BodyKind::Dpub => {
            let need = if kind == BodyKind::Dpub { 3 } else { 2 };
            if nparams < need {
                return Err(invalid(format!(
                    "{name_str} insufficient number of parameters"
                )));
            }
            if !is_valid_name(tok(1)) {
                let prefix = if kind == BodyKind::Mpub {
                    "E_BAD_TOPIC "
                } else {
                    ""
                };
                return Err(err(
                    Code::BadTopic,
                    format!(
                        "{prefix}{name_str} topic name {} is not valid",
                        go_quote(tok(1))
                    ),
                ));
            }
        }
    }
    let mut defer_ms = 0;
    if kind == BodyKind::Dpub {
        defer_ms = parse_u64(tok(2))
            .ok_or_else(|| invalid(format!("DPUB could not parse timeout {}", lossy(tok(2)))))?;
        let max = limits.max_req_timeout_ms.max(0) as u64;
        if defer_ms > max {
            return Err(invalid(format!(
                "DPUB timeout {defer_ms} out of range 0-{max}"
            )));
        }
    }

    // The 4-byte size.
    if buf.len() < line.len + 4 {
        return Ok(None);
    }
    let size = read_i32(&buf[line.len..line.len + 4]);
    let topic_range = if nparams > 1 {
        Some(line.token(1))
    } else {
        None
    };
    let topic_name = || {
        topic_range
            .map(|(a, b)| lossy(&buf[a..b]))
            .unwrap_or_default()
    };
    match kind {
        BodyKind::Identify | BodyKind::Auth => {
            if size as i64 > limits.max_body_size {
                return Err(err(
                    Code::BadBody,
                    format!("{name_str} body too big {size} > {}", limits.max_body_size),
                ));
            }
            if size <= 0 {
                return Err(err(
                    Code::BadBody,
                    format!("{name_str} invalid body size {size}"),
                ));
            }
        }
        BodyKind::Pub | BodyKind::Dpub => {
            if size <= 0 {
                return Err(err(
                    Code::BadMessage,
                    format!("{name_str} invalid message body size {size}"),
                ));
            }
            if size as i64 > limits.max_msg_size {
                return Err(err(
                    Code::BadMessage,
                    format!(
                        "{name_str} message too big {size} > {}",
                        limits.max_msg_size
                    ),
                ));
            }
        }
        BodyKind::Mpub => {
            let after_topic = |e: ProtocolError| ParseError::ProtocolAfterTopic {
                error: e,
                topic: topic_name(),
            };
            if size <= 0 {
                return Err(after_topic(ProtocolError::new(
                    Code::BadBody,
                    format!("MPUB invalid body size {size}"),
                )));
            }
            if size as i64 > limits.max_body_size {
                return Err(after_topic(ProtocolError::new(
                    Code::BadBody,
                    format!("MPUB body too big {size} > {}", limits.max_body_size),
                )));
            }
        }
    }
    let size = size as usize;
    let total = line.len + 4 + size;
    let large = kind.is_publish() && total >= ZERO_COPY_MIN;
    if buf.len() < total {
        if large && buf.capacity() < total {
            // A large publish gets a buffer of its own, read into directly and then handed
            // over whole (below): no second copy of its bodies.
            let mut own = BytesMut::with_capacity(total + ZERO_COPY_SLACK);
            own.extend_from_slice(buf);
            *buf = own;
        } else if buf.capacity() < total && handover == Handover::Copy {
            // Make room only when the command cannot fit where it is: reserving moves the
            // buffered bytes, which would otherwise happen at every batch boundary. (A caller
            // that splits publishes off manages its buffer itself: it must keep reading into
            // it, and make room when the free space runs low.)
            buf.reserve(total - buf.len());
        }
        return Ok(None);
    }
    let body_at = line.len + 4;
    // MPUB: validate before consuming, so an error leaves nothing half-taken. The bodies then
    // keep their wire layout (length prefixes), so this walk is the only one.
    let mut count = 0u32;
    if kind == BodyKind::Mpub {
        let body = &buf[body_at..total];
        if let Err(e) = split_mpub(body, limits, |_, _| count += 1) {
            return Err(ParseError::ProtocolAfterTopic {
                error: e,
                topic: topic_name(),
            });
        }
    }
    let topic_at = topic_range.unwrap_or((0, 0));
    let split = match (kind, handover) {
        (BodyKind::Pub | BodyKind::Mpub, Handover::Split(None)) => true,
        (BodyKind::Pub | BodyKind::Mpub, Handover::Split(Some(t))) => {
            t == &buf[topic_at.0..topic_at.1]
        }
        // A large publish that fills (nearly) all that is left of its own buffer: what it keeps
        // alive is essentially itself, and its length prefixes stay a small share (under 0.4%).
        _ => {
            large
                && buf.capacity() <= total + ZERO_COPY_SLACK
                && (kind != BodyKind::Mpub || total - body_at >= count as usize * 1024)
        }
    };
    if split {
        let whole = buf.split_to(total).freeze();
        let topic = whole.slice(topic_at.0..topic_at.1);
        return Ok(Some(match kind {
            BodyKind::Pub => Command::Pub {
                topic,
                body: whole.slice(body_at..),
            },
            BodyKind::Dpub => Command::Dpub {
                topic,
                defer_ms,
                body: whole.slice(body_at..),
            },
            _ => Command::Mpub {
                topic,
                bodies: Bodies::prefixed_checked(whole.slice(body_at + 4..), count)
                    .map_err(bodies_err)?,
            },
        }));
    }
    // Otherwise copy out rather than split the read buffer: the buffer is then never pinned by
    // a queued message and is reused rather than reallocated. One exact-size allocation per
    // command; an MPUB's bodies are copied with their length prefixes, in one copy.
    let topic = Bytes::copy_from_slice(&buf[topic_at.0..topic_at.1]);
    let body = &buf[body_at..total];
    let copy = || Bytes::copy_from_slice(body);
    let cmd = match kind {
        BodyKind::Identify => Command::Identify(copy()),
        BodyKind::Auth => Command::Auth(copy()),
        BodyKind::Pub => Command::Pub {
            topic,
            body: copy(),
        },
        BodyKind::Dpub => Command::Dpub {
            topic,
            defer_ms,
            body: copy(),
        },
        BodyKind::Mpub => Command::Mpub {
            topic,
            bodies: Bodies::prefixed_checked(
                Bytes::copy_from_slice(body.get(4..).unwrap_or_default()),
                count,
            )
            .map_err(bodies_err)?,
        },
    };
    buf.advance(total);
    Ok(Some(cmd))
}

/// MPUB's body size is an i32, so its bodies always fit 32-bit ranges; this is never sent.
fn bodies_err(e: crate::bodies::TooLarge) -> ParseError {
    ParseError::Protocol(ProtocolError::new(Code::BadBody, e.to_string()))
}

/// The client closed its side with an incomplete command in `buf`: the error nsqd sends when
/// its read hits EOF there (`PUB failed to read message body`, ...). None when the command line
/// itself is incomplete (nsqd closes silently then) or nothing is pending.
pub fn error_at_eof(buf: &[u8], limits: &Limits, state: ClientState) -> Option<ParseError> {
    let mut copy = BytesMut::from(buf);
    match parse(&mut copy, limits, state) {
        Ok(None) => {}
        Ok(Some(_)) => return None,
        Err(e) => return Some(e),
    }
    let line = scan_line(buf).ok()??;
    let (a, b) = line.token(0);
    let kind = match &buf[a..b] {
        b"IDENTIFY" | b"AUTH" | b"PUB" | b"MPUB" | b"DPUB" => BodyKind::of(&buf[a..b]),
        _ => return None,
    };
    let name = kind.name();
    let have_size = buf.len() >= line.len + 4;
    let e = match (kind, have_size) {
        (BodyKind::Identify | BodyKind::Auth, false) => {
            ProtocolError::new(Code::BadBody, format!("{name} failed to read body size"))
        }
        (BodyKind::Identify | BodyKind::Auth, true) => {
            ProtocolError::new(Code::BadBody, format!("{name} failed to read body"))
        }
        (BodyKind::Pub | BodyKind::Dpub, false) => ProtocolError::new(
            Code::BadMessage,
            format!("{name} failed to read message body size"),
        ),
        (BodyKind::Pub | BodyKind::Dpub, true) => ProtocolError::new(
            Code::BadMessage,
            format!("{name} failed to read message body"),
        ),
        (BodyKind::Mpub, false) => {
            ProtocolError::new(Code::BadBody, "MPUB failed to read body size")
        }
        (BodyKind::Mpub, true) => {
            // nsqd reads an MPUB body as a stream, so report where the stream ran out.
            match split_mpub(&buf[line.len + 4..], limits, |_, _| {}) {
                Err(e) => e,
                Ok(()) => ProtocolError::new(Code::BadMessage, "MPUB failed to read message body"),
            }
        }
    };
    let topic = (kind == BodyKind::Mpub && line.count > 1).then(|| {
        let (a, b) = line.token(1);
        lossy(&buf[a..b])
    });
    Some(match topic {
        Some(topic) => ParseError::ProtocolAfterTopic { error: e, topic },
        None => ParseError::Protocol(e),
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyKind {
    Identify,
    Auth,
    Pub,
    Mpub,
    Dpub,
}

impl BodyKind {
    fn is_publish(self) -> bool {
        matches!(self, BodyKind::Pub | BodyKind::Mpub | BodyKind::Dpub)
    }

    fn of(name: &[u8]) -> BodyKind {
        match name {
            b"IDENTIFY" => BodyKind::Identify,
            b"AUTH" => BodyKind::Auth,
            b"MPUB" => BodyKind::Mpub,
            b"DPUB" => BodyKind::Dpub,
            _ => BodyKind::Pub,
        }
    }

    fn name(self) -> &'static str {
        match self {
            BodyKind::Identify => "IDENTIFY",
            BodyKind::Auth => "AUTH",
            BodyKind::Pub => "PUB",
            BodyKind::Mpub => "MPUB",
            BodyKind::Dpub => "DPUB",
        }
    }
}

fn check_in_flight_state(state: ClientState, cmd: &str) -> Result<(), ParseError> {
    if state == ClientState::Init {
        return Err(invalid(format!("cannot {cmd} in current state")));
    }
    Ok(())
}

fn parse_rdy<'a>(
    tok: &impl Fn(usize) -> &'a [u8],
    nparams: usize,
    limits: &Limits,
    state: ClientState,
) -> Result<Command, ParseError> {
    if state == ClientState::Closing {
        // nsqd silently ignores RDY after CLS.
        return Ok(Command::Nop);
    }
    if state != ClientState::Subscribed {
        return Err(invalid("cannot RDY in current state"));
    }
    let mut count: i64 = 1;
    if nparams > 1 {
        let v = parse_u64(tok(1))
            .ok_or_else(|| invalid(format!("RDY could not parse count {}", lossy(tok(1)))))?;
        count = v as i64;
    }
    if count < 0 || count > limits.max_rdy_count {
        return Err(invalid(format!(
            "RDY count {count} out of range 0-{}",
            limits.max_rdy_count
        )));
    }
    Ok(Command::Rdy(count))
}

/// Walk an MPUB body (`[i32 n]([i32 size][data])*`) in nsqd's check order, calling `each` with
/// the byte range of every message. The body must be used up exactly (nsqd never checks this and
/// desynchronises the stream instead).
pub fn split_mpub(
    body: &[u8],
    limits: &Limits,
    mut each: impl FnMut(usize, usize),
) -> Result<(), ProtocolError> {
    if body.len() < 4 {
        return Err(ProtocolError::new(
            Code::BadBody,
            "MPUB failed to read message count",
        ));
    }
    let n = read_i32(body);
    let max_messages = (limits.max_body_size - 4) / 5;
    if n <= 0 || n as i64 > max_messages {
        return Err(ProtocolError::new(
            Code::BadBody,
            format!("MPUB invalid message count {n}"),
        ));
    }
    let mut pos = 4;
    for i in 0..n {
        if body.len() < pos + 4 {
            return Err(ProtocolError::new(
                Code::BadMessage,
                format!("MPUB failed to read message({i}) body size"),
            ));
        }
        let size = read_i32(&body[pos..]);
        pos += 4;
        if size <= 0 {
            return Err(ProtocolError::new(
                Code::BadMessage,
                format!("MPUB invalid message({i}) body size {size}"),
            ));
        }
        if size as i64 > limits.max_msg_size {
            return Err(ProtocolError::new(
                Code::BadMessage,
                format!("MPUB message too big {size} > {}", limits.max_msg_size),
            ));
        }
        let end = pos + size as usize;
        if body.len() < end {
            return Err(ProtocolError::new(
                Code::BadMessage,
                "MPUB failed to read message body",
            ));
        }
        each(pos, end);
        pos = end;
    }
    if pos != body.len() {
        return Err(ProtocolError::new(
            Code::BadBody,
            format!(
                "MPUB body size {} does not match its messages ({pos} bytes)",
                body.len()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
