//! The V2 command parser as a connection drives it: bytes arrive in pieces, commands are
//! parsed until more bytes are needed, an error closes the connection, and EOF asks what was
//! missing. Every client state (init, subscribed, closing, TLS pending, heartbeats disabled),
//! both limit sets, and each handover are picked by the mode byte.
//!
//! Input: `[mode][piece][stream...]`. mode bits 0-1: state (init, subscribed, closing,
//! closing); bit 2: TLS pending; bit 3: heartbeats disabled; bit 4: small limits; bits 5-6:
//! handover compared with `Copy` (copy, split any topic, split topic `t`, copy); bit 7: follow
//! the state changes a connection makes (SUB subscribes, CLS closes, IDENTIFY ends TLS pending).
//!
//! Checks: the copy and split handovers return the same results and leave the same bytes; a
//! command consumes bytes and anything else consumes none; a parsed command re-encoded by the
//! client side parses back to itself.

use bytes::BytesMut;
use nsq_wire::client::{put_command, EncodeError};
use nsq_wire::{error_at_eof, parse_with, ClientState, Command, Handover, Limits};

struct Mode {
    state: ClientState,
    limits: Limits,
    handover: Handover<'static>,
    follow: bool,
}

impl Mode {
    fn of(mode: u8) -> Mode {
        let state = match mode & 3 {
            0 => ClientState::Init,
            1 => ClientState::Subscribed,
            _ => ClientState::Closing,
        };
        let sizes = if mode & 16 != 0 {
            Limits {
                max_msg_size: 64,
                max_body_size: 256,
                max_rdy_count: 10,
                max_req_timeout_ms: 1000,
                ..Limits::default()
            }
        } else {
            Limits::default()
        };
        Mode {
            state,
            limits: Limits {
                tls_pending: mode & 4 != 0,
                heartbeats_disabled: mode & 8 != 0,
                ..sizes
            },
            handover: match (mode >> 5) & 3 {
                1 => Handover::Split(None),
                2 => Handover::Split(Some(b"t")),
                _ => Handover::Copy,
            },
            follow: mode & 128 != 0,
        }
    }

    /// What a connection changes after `cmd`.
    fn after(&mut self, cmd: &Command) {
        if !self.follow {
            return;
        }
        match cmd {
            Command::Sub { .. } => self.state = ClientState::Subscribed,
            Command::Cls => self.state = ClientState::Closing,
            Command::Identify(_) => self.limits.tls_pending = false,
            _ => {}
        }
    }
}

pub fn v2_parser(data: &[u8]) {
    let [mode, piece, stream @ ..] = data else {
        return;
    };
    let mut m = Mode::of(*mode);
    let piece = usize::from(*piece).max(1);
    let (mut copy, mut other) = (BytesMut::new(), BytesMut::new());
    for chunk in stream.chunks(piece) {
        copy.extend_from_slice(chunk);
        other.extend_from_slice(chunk);
        loop {
            let before = copy.len();
            let a = parse_with(&mut copy, &m.limits, m.state, Handover::Copy);
            let b = parse_with(&mut other, &m.limits, m.state, m.handover);
            assert_eq!(a, b, "copy and {:?} differ", m.handover);
            assert_eq!(
                &copy[..],
                &other[..],
                "copy and {:?} consumed differently",
                m.handover
            );
            match a {
                Ok(Some(cmd)) => {
                    assert!(copy.len() < before, "a command consumed nothing");
                    reencodes(&cmd, &m.limits, m.state);
                    m.after(&cmd);
                }
                Ok(None) | Err(_) => assert_eq!(copy.len(), before, "consumed without a command"),
            }
            match b {
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(_) => return, // the connection is closed
            }
        }
    }
    let _ = error_at_eof(&copy, &m.limits, m.state);
}

/// The client's encoding of a parsed command parses back to it, in the same state.
fn reencodes(cmd: &Command, limits: &Limits, state: ClientState) {
    let mut wire = Vec::new();
    match put_command(&mut wire, cmd) {
        Ok(()) => {}
        // The server takes any 16 bytes as an id; the client refuses ids that hold a CR (a
        // space or LF cannot be in a parsed token).
        Err(EncodeError::BadId(_)) => return,
        Err(e) => panic!("{cmd:?} parsed but cannot be encoded: {e}"),
    }
    let mut buf = BytesMut::from(&wire[..]);
    let back = parse_with(&mut buf, limits, state, Handover::Copy);
    assert_eq!(
        back.as_ref().ok().and_then(Option::as_ref),
        Some(cmd),
        "{back:?}"
    );
    assert!(buf.is_empty(), "re-encoded {cmd:?} left bytes over");
}
