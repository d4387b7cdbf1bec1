//! What to tell a client that hung up mid-command: nsqd reads a body with a blocking read, so
//! EOF there produces an error frame naming what it was reading (the size, the body, an MPUB
//! message), which nsqd sends before it closes.

use bytes::BytesMut;

use super::body::BodyKind;
use super::line::scan_line;
use super::mpub::split_mpub;
use super::{lossy, parse, ClientState, Limits};
use crate::error::{Code, ParseError, ProtocolError};

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
    let kind = BodyKind::of(line.token(buf, 0))?;
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
    let topic = (kind == BodyKind::Mpub && line.count > 1).then(|| lossy(line.token(buf, 1)));
    Some(match topic {
        Some(topic) => ParseError::ProtocolAfterTopic { error: e, topic },
        None => ParseError::Protocol(e),
    })
}
