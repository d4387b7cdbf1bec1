//! The commands followed by a sized body: IDENTIFY, AUTH, PUB, MPUB, DPUB.
//!
//! In nsqd's order: the line's checks (state, params, topic name, DPUB's timeout), then the
//! 4-byte size and its bounds, then the body itself (an MPUB's walked before anything is
//! consumed, so an error leaves nothing half-taken), then the handover: the body is split off
//! the read buffer or copied out of it (see [`Handover`]).

use bytes::{Buf, Bytes, BytesMut};

use super::line::Line;
use super::mpub::split_mpub;
use super::{err, invalid, lossy, parse_u64, read_i32, ClientState, Command, Handover, Limits};
use crate::bodies::{Bodies, TooLarge};
use crate::error::{Code, ParseError, ProtocolError};
use crate::names::is_valid_name;
use crate::quote::go_quote;

/// A publish at least this large is read into a buffer of its own and handed over without
/// copying its bodies (as nsqd reads a large body straight into its own allocation).
const ZERO_COPY_MIN: usize = 64 * 1024;
/// Room past such a command, so a reader that keeps a few KiB free need not grow the buffer
/// (which would copy the command) before the command is complete.
const ZERO_COPY_SLACK: usize = 8 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BodyKind {
    Identify,
    Auth,
    Pub,
    Mpub,
    Dpub,
}

impl BodyKind {
    /// The kind a command name announces; None for a command without a body.
    pub fn of(name: &[u8]) -> Option<BodyKind> {
        Some(match name {
            b"IDENTIFY" => BodyKind::Identify,
            b"AUTH" => BodyKind::Auth,
            b"PUB" => BodyKind::Pub,
            b"MPUB" => BodyKind::Mpub,
            b"DPUB" => BodyKind::Dpub,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            BodyKind::Identify => "IDENTIFY",
            BodyKind::Auth => "AUTH",
            BodyKind::Pub => "PUB",
            BodyKind::Mpub => "MPUB",
            BodyKind::Dpub => "DPUB",
        }
    }

    fn is_publish(self) -> bool {
        matches!(self, BodyKind::Pub | BodyKind::Mpub | BodyKind::Dpub)
    }
}

/// One body command whose line and size passed their checks: where its parts lie in the
/// buffer.
struct Found {
    kind: BodyKind,
    /// The first param's bytes (the topic of a publish), when there is one.
    topic: Option<(usize, usize)>,
    defer_ms: u64,
    /// Where the body starts: after the line and the 4-byte size.
    body_at: usize,
    /// Where the command ends.
    total: usize,
}

impl Found {
    fn topic_range(&self) -> (usize, usize) {
        self.topic.unwrap_or((0, 0))
    }

    /// Large publishes get (and may be split off) a buffer of their own.
    fn is_large(&self) -> bool {
        self.kind.is_publish() && self.total >= ZERO_COPY_MIN
    }
}

/// Parse the body command `kind` whose line is `line`; Ok(None) until all of it is in `buf`.
pub(super) fn parse(
    buf: &mut BytesMut,
    line: &Line,
    kind: BodyKind,
    limits: &Limits,
    state: ClientState,
    handover: Handover<'_>,
) -> Result<Option<Command>, ParseError> {
    let defer_ms = check_line(buf, line, kind, limits, state)?;
    if buf.len() < line.len + 4 {
        return Ok(None);
    }
    let size = read_i32(&buf[line.len..line.len + 4]);
    let topic = (line.count > 1).then(|| line.range(1));
    let size = check_size(kind, size, limits, || topic_name(buf, topic))?;
    let found = Found {
        kind,
        topic,
        defer_ms,
        body_at: line.len + 4,
        total: line.len + 4 + size,
    };
    if buf.len() < found.total {
        make_room(buf, &found, handover);
        return Ok(None);
    }
    // MPUB: validate before consuming. The bodies then keep their wire layout (length
    // prefixes), so this walk is the only one.
    let mut count = 0u32;
    if kind == BodyKind::Mpub {
        split_mpub(&buf[found.body_at..found.total], limits, |_, _| count += 1).map_err(
            |error| ParseError::ProtocolAfterTopic {
                error,
                topic: topic_name(buf, found.topic),
            },
        )?;
    }
    if should_split(buf, &found, handover, count) {
        split_off(buf, &found, count).map(Some)
    } else {
        copy_out(buf, &found, count).map(Some)
    }
}

/// The checks nsqd makes on the line before it reads the size: state, params, topic name and
/// DPUB's timeout (returned; 0 for the others).
fn check_line(
    buf: &[u8],
    line: &Line,
    kind: BodyKind,
    limits: &Limits,
    state: ClientState,
) -> Result<u64, ParseError> {
    let name = kind.name();
    match kind {
        BodyKind::Identify | BodyKind::Auth => {
            if state != ClientState::Init {
                return Err(invalid(format!("cannot {name} in current state")));
            }
            if kind == BodyKind::Auth && line.count != 1 {
                return Err(invalid("AUTH invalid number of parameters"));
            }
            Ok(0)
        }
        BodyKind::Pub | BodyKind::Mpub | BodyKind::Dpub => {
            let need = if kind == BodyKind::Dpub { 3 } else { 2 };
            if line.count < need {
                return Err(invalid(format!("{name} insufficient number of parameters")));
            }
            let topic = line.token(buf, 1);
            if !is_valid_name(topic) {
                // nsqd's MPUB repeats the code in the text.
                let prefix = if kind == BodyKind::Mpub {
                    "E_BAD_TOPIC "
                } else {
                    ""
                };
                return Err(err(
                    Code::BadTopic,
                    format!("{prefix}{name} topic name {} is not valid", go_quote(topic)),
                ));
            }
            if kind == BodyKind::Dpub {
                dpub_timeout(line.token(buf, 2), limits)
            } else {
                Ok(0)
            }
        }
    }
}

fn dpub_timeout(token: &[u8], limits: &Limits) -> Result<u64, ParseError> {
    let defer_ms = parse_u64(token)
        .ok_or_else(|| invalid(format!("DPUB could not parse timeout {}", lossy(token))))?;
    let max = limits.max_req_timeout_ms.max(0) as u64;
    if defer_ms > max {
        return Err(invalid(format!(
            "DPUB timeout {defer_ms} out of range 0-{max}"
        )));
    }
    Ok(defer_ms)
}

/// The topic for errors that nsqd sends after creating it (MPUB's).
fn topic_name(buf: &[u8], topic: Option<(usize, usize)>) -> String {
    topic.map(|(a, b)| lossy(&buf[a..b])).unwrap_or_default()
}

/// The 4-byte size's bounds, with each command's own words and codes; the size once it is
/// known to be positive.
fn check_size(
    kind: BodyKind,
    size: i32,
    limits: &Limits,
    topic_name: impl FnOnce() -> String,
) -> Result<usize, ParseError> {
    let name = kind.name();
    match kind {
        BodyKind::Identify | BodyKind::Auth => {
            if size as i64 > limits.max_body_size {
                return Err(err(
                    Code::BadBody,
                    format!("{name} body too big {size} > {}", limits.max_body_size),
                ));
            }
            if size <= 0 {
                return Err(err(
                    Code::BadBody,
                    format!("{name} invalid body size {size}"),
                ));
            }
        }
        BodyKind::Pub | BodyKind::Dpub => {
            if size <= 0 {
                return Err(err(
                    Code::BadMessage,
                    format!("{name} invalid message body size {size}"),
                ));
            }
            if size as i64 > limits.max_msg_size {
                return Err(err(
                    Code::BadMessage,
                    format!("{name} message too big {size} > {}", limits.max_msg_size),
                ));
            }
        }
        BodyKind::Mpub => {
            let text = if size <= 0 {
                Some(format!("MPUB invalid body size {size}"))
            } else if size as i64 > limits.max_body_size {
                Some(format!(
                    "MPUB body too big {size} > {}",
                    limits.max_body_size
                ))
            } else {
                None
            };
            if let Some(text) = text {
                return Err(ParseError::ProtocolAfterTopic {
                    error: ProtocolError::new(Code::BadBody, text),
                    topic: topic_name(),
                });
            }
        }
    }
    // Each arm refused sizes <= 0.
    Ok(size as usize)
}

/// The command is incomplete: make sure the rest can be read without moving what is there
/// more often than needed.
fn make_room(buf: &mut BytesMut, found: &Found, handover: Handover<'_>) {
    let total = found.total;
    if found.is_large() && buf.capacity() < total {
        // A large publish gets a buffer of its own, read into directly and then handed over
        // whole (`split_off`): no second copy of its bodies.
        let mut own = BytesMut::with_capacity(total + ZERO_COPY_SLACK);
        own.extend_from_slice(buf);
        *buf = own;
    } else if buf.capacity() < total && handover == Handover::Copy {
        // Make room only when the command cannot fit where it is: reserving moves the
        // buffered bytes, which would otherwise happen at every batch boundary. (A caller that
        // splits publishes off manages its buffer itself: it must keep reading into it, and
        // make room when the free space runs low.)
        buf.reserve(total - buf.len());
    }
}

/// Whether the complete command leaves the buffer by a split (no copy) rather than a copy.
fn should_split(buf: &BytesMut, found: &Found, handover: Handover<'_>, count: u32) -> bool {
    match (found.kind, handover) {
        (BodyKind::Pub | BodyKind::Mpub, Handover::Split(None)) => true,
        (BodyKind::Pub | BodyKind::Mpub, Handover::Split(Some(t))) => {
            let (a, b) = found.topic_range();
            t == &buf[a..b]
        }
        // A large publish that fills (nearly) all that is left of its own buffer: what it
        // keeps alive is essentially itself, and its length prefixes stay a small share (under
        // 0.4%).
        _ => {
            found.is_large()
                && buf.capacity() <= found.total + ZERO_COPY_SLACK
                && (found.kind != BodyKind::Mpub
                    || found.total - found.body_at >= count as usize * 1024)
        }
    }
}

/// Hand the command over as slices of the read buffer, which it then shares.
fn split_off(buf: &mut BytesMut, found: &Found, count: u32) -> Result<Command, ParseError> {
    let whole = buf.split_to(found.total).freeze();
    let (a, b) = found.topic_range();
    let body = if found.kind == BodyKind::Mpub {
        whole.slice(found.body_at + 4..)
    } else {
        whole.slice(found.body_at..)
    };
    build(found, whole.slice(a..b), body, count)
}

/// Copy the command out rather than split the read buffer: the buffer is then never pinned by
/// a queued message and is reused rather than reallocated. One exact-size allocation per
/// command; an MPUB's bodies are copied with their length prefixes, in one copy.
fn copy_out(buf: &mut BytesMut, found: &Found, count: u32) -> Result<Command, ParseError> {
    let (a, b) = found.topic_range();
    let topic = Bytes::copy_from_slice(&buf[a..b]);
    let body = &buf[found.body_at..found.total];
    let body = if found.kind == BodyKind::Mpub {
        body.get(4..).unwrap_or_default()
    } else {
        body
    };
    let cmd = build(found, topic, Bytes::copy_from_slice(body), count)?;
    buf.advance(found.total);
    Ok(cmd)
}

/// The command from its parts; for MPUB, `body` holds its `count` length-prefixed bodies.
fn build(found: &Found, topic: Bytes, body: Bytes, count: u32) -> Result<Command, ParseError> {
    Ok(match found.kind {
        BodyKind::Identify => Command::Identify(body),
        BodyKind::Auth => Command::Auth(body),
        BodyKind::Pub => Command::Pub { topic, body },
        BodyKind::Dpub => Command::Dpub {
            topic,
            defer_ms: found.defer_ms,
            body,
        },
        BodyKind::Mpub => Command::Mpub {
            topic,
            bodies: Bodies::prefixed_checked(body, count).map_err(bodies_err)?,
        },
    })
}

/// MPUB's body size is an i32, so its bodies always fit 32-bit ranges; this is never sent.
fn bodies_err(e: TooLarge) -> ParseError {
    ParseError::Protocol(ProtocolError::new(Code::BadBody, e.to_string()))
}
