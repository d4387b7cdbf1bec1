//! The commands that are a line only: NOP, RDY, FIN, REQ, TOUCH, CLS, SUB. Each is checked in
//! nsqd's order (state first, then the number of params, then their values); the caller
//! consumes the line once one parses.

use bytes::Bytes;

use super::line::Line;
use super::{err, invalid, lossy, parse_u64, ClientState, Command, IdToken, Limits};
use crate::error::{Code, ParseError};
use crate::names::is_valid_name;
use crate::quote::go_quote;

/// The command on `line` (scanned from `buf`), or nsqd's error; `invalid command` for a name
/// that is no command at all.
pub(super) fn parse(
    buf: &[u8],
    line: &Line,
    limits: &Limits,
    state: ClientState,
) -> Result<Command, ParseError> {
    let params = Params { buf, line };
    match params.tok(0) {
        b"NOP" => Ok(Command::Nop),
        b"RDY" => rdy(&params, limits, state),
        b"FIN" => {
            check_in_flight_state(state, "FIN")?;
            Ok(Command::Fin(params.id("FIN")?))
        }
        b"REQ" => req(&params, state),
        b"TOUCH" => {
            check_in_flight_state(state, "TOUCH")?;
            Ok(Command::Touch(params.id("TOUCH")?))
        }
        b"CLS" => {
            if state != ClientState::Subscribed {
                return Err(invalid("cannot CLS in current state"));
            }
            Ok(Command::Cls)
        }
        b"SUB" => sub(&params, limits, state),
        name => Err(invalid(format!("invalid command {}", lossy(name)))),
    }
}

/// The line's tokens.
struct Params<'a> {
    buf: &'a [u8],
    line: &'a Line,
}

impl<'a> Params<'a> {
    fn tok(&self, i: usize) -> &'a [u8] {
        self.line.token(self.buf, i)
    }

    fn count(&self) -> usize {
        self.line.count
    }

    /// The message id that is `cmd`'s first param.
    fn id(&self, cmd: &str) -> Result<IdToken, ParseError> {
        if self.count() < 2 {
            return Err(invalid(format!("{cmd} insufficient number of params")));
        }
        id_token(self.tok(1))
    }
}

fn id_token(b: &[u8]) -> Result<IdToken, ParseError> {
    b.try_into().map_err(|_| invalid("invalid message ID"))
}

/// FIN, REQ and TOUCH need a subscription (or one being closed).
fn check_in_flight_state(state: ClientState, cmd: &str) -> Result<(), ParseError> {
    if state == ClientState::Init {
        return Err(invalid(format!("cannot {cmd} in current state")));
    }
    Ok(())
}

fn rdy(p: &Params<'_>, limits: &Limits, state: ClientState) -> Result<Command, ParseError> {
    if state == ClientState::Closing {
        // nsqd silently ignores RDY after CLS.
        return Ok(Command::Nop);
    }
    if state != ClientState::Subscribed {
        return Err(invalid("cannot RDY in current state"));
    }
    let mut count: i64 = 1;
    if p.count() > 1 {
        let v = parse_u64(p.tok(1))
            .ok_or_else(|| invalid(format!("RDY could not parse count {}", lossy(p.tok(1)))))?;
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

fn req(p: &Params<'_>, state: ClientState) -> Result<Command, ParseError> {
    check_in_flight_state(state, "REQ")?;
    if p.count() < 3 {
        return Err(invalid("REQ insufficient number of params"));
    }
    let id = id_token(p.tok(1))?;
    let delay_ms = parse_u64(p.tok(2))
        .ok_or_else(|| invalid(format!("REQ could not parse timeout {}", lossy(p.tok(2)))))?;
    Ok(Command::Req { id, delay_ms })
}

fn sub(p: &Params<'_>, limits: &Limits, state: ClientState) -> Result<Command, ParseError> {
    if state != ClientState::Init {
        return Err(invalid("cannot SUB in current state"));
    }
    if limits.heartbeats_disabled {
        return Err(invalid("cannot SUB with heartbeats disabled"));
    }
    if p.count() < 3 {
        return Err(invalid("SUB insufficient number of parameters"));
    }
    let (topic, channel) = (p.tok(1), p.tok(2));
    if !is_valid_name(topic) {
        return Err(err(
            Code::BadTopic,
            format!("SUB topic name {} is not valid", go_quote(topic)),
        ));
    }
    if !is_valid_name(channel) {
        return Err(err(
            Code::BadChannel,
            format!("SUB channel name {} is not valid", go_quote(channel)),
        ));
    }
    Ok(Command::Sub {
        topic: Bytes::copy_from_slice(topic),
        channel: Bytes::copy_from_slice(channel),
    })
}
