//! The V2 command parser: bytes in, one `Command` (or an nsqd error) out.
//!
//! `parse` looks at the front of the read buffer and either returns a complete command (and
//! removes its bytes), returns `Ok(None)` when more bytes are needed, or returns the exact error
//! nsqd would send. Checks run in nsqd's order, including the ones that depend on the client's
//! state, so that a bad command gets the same error text as from nsqd. Bodies are copied out of
//! the buffer into one exact-size `Bytes` per command, so the read buffer is never pinned, or,
//! with [`Handover::Split`], split off it without a copy (see `Handover`).
//!
//! The steps, one file each: `line` finds the command line and its tokens (and recognises
//! the common `FIN <id>` line without tokenising it), `simple` parses the commands that are
//! a line only, `body` the ones followed by a sized body (header checks, size checks,
//! waiting for the body, handing it over), `mpub` walks an MPUB body, and `eof` names what
//! was missing when a client hangs up mid-command. `parse_with` below only dispatches.

mod body;
mod eof;
mod line;
mod mpub;
mod simple;

use bytes::{Buf, Bytes, BytesMut};

use crate::bodies::Bodies;
use crate::defaults;
use crate::error::{Code, ParseError, ProtocolError};

pub use eof::error_at_eof;
pub use mpub::split_mpub;

pub(crate) use line::has_separator;

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
    /// nsqd's defaults, for a client that has not identified.
    fn default() -> Self {
        Limits {
            max_msg_size: defaults::MAX_MSG_SIZE,
            max_body_size: defaults::MAX_BODY_SIZE,
            max_rdy_count: defaults::MAX_RDY_COUNT,
            max_req_timeout_ms: defaults::MAX_REQ_TIMEOUT.as_millis() as i64,
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
    if let Some(id) = line::fin_fast_path(buf, limits, state) {
        return Ok(Some(Command::Fin(id)));
    }
    let Some(line) = line::scan_line(buf)? else {
        return Ok(None);
    };
    let name = line.token(buf, 0);
    if name != b"IDENTIFY" && limits.tls_pending {
        return Err(invalid(format!(
            "cannot {} in current state (TLS required)",
            lossy(name)
        )));
    }
    match body::BodyKind::of(name) {
        Some(kind) => body::parse(buf, &line, kind, limits, state, handover),
        None => {
            let cmd = simple::parse(buf, &line, limits, state)?;
            buf.advance(line.len);
            Ok(Some(cmd))
        }
    }
}

fn err(code: Code, text: impl Into<String>) -> ParseError {
    ParseError::Protocol(ProtocolError::new(code, text))
}

fn invalid(text: impl Into<String>) -> ParseError {
    err(Code::Invalid, text)
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
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

fn read_i32(b: &[u8]) -> i32 {
    i32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

#[cfg(test)]
mod tests;
