//! MPUB body splitting: the walk the parser and HTTP `/mpub?binary=true` share
//! (`split_mpub`), and the [`Bodies`] built on a layout it accepts.
//!
//! Input: `[mode][body...]`, mode bit 0: small limits. Checks: a body the walk accepts is a
//! valid prefixed layout whose bodies are the walk's ranges, and so are the same bodies as
//! ranges or copied back to back; an MPUB command carrying it (within the body limit) parses to those bodies; ranges
//! taken from the input never let `Bodies` read out of bounds.

use bytes::{Bytes, BytesMut};
use nsq_wire::command::split_mpub;
use nsq_wire::{parse, Bodies, ClientState, Command, Limits};

pub fn mpub_bodies(data: &[u8]) {
    let [mode, body @ ..] = data else {
        return;
    };
    let limits = if mode & 1 != 0 {
        Limits {
            max_msg_size: 16,
            max_body_size: 128,
            ..Limits::default()
        }
    } else {
        Limits::default()
    };
    let mut ranges = Vec::new();
    let walked = split_mpub(body, &limits, |a, b| ranges.push(a..b));
    let prefixed = Bodies::prefixed(Bytes::copy_from_slice(body.get(4..).unwrap_or_default()));
    if let Ok(b) = &prefixed {
        let framing = 4 * b.len();
        assert_eq!(b.total_bytes() + framing, body.len().saturating_sub(4));
        assert_eq!(b.iter().count(), b.len());
    }
    if walked.is_ok() {
        let expected: Vec<&[u8]> = ranges.iter().map(|r| &body[r.clone()]).collect();
        let Ok(bodies) = prefixed else {
            panic!("split_mpub accepted a layout Bodies::prefixed refuses: {prefixed:?}");
        };
        assert!(bodies.iter().eq(expected.iter().copied()));
        let listed = Bodies::from_ranges(Bytes::copy_from_slice(body), ranges.clone());
        assert_eq!(listed.as_ref(), Ok(&bodies));
        let concat = Bodies::concat(expected.iter().copied());
        assert_eq!(concat.as_ref(), Ok(&bodies));
        if body.len() as i64 <= limits.max_body_size {
            assert_eq!(parsed_mpub(body, &limits), Some(bodies));
        }
    }
    // Arbitrary ranges: refused or in bounds.
    let pairs = body
        .chunks_exact(2)
        .map(|p| usize::from(p[0])..usize::from(p[1]));
    if let Ok(b) = Bodies::from_ranges(Bytes::copy_from_slice(body), pairs) {
        for x in b.iter() {
            assert!(x.len() <= body.len());
        }
    }
}

/// The bodies of `MPUB t` carrying `body`, as the TCP parser returns them.
fn parsed_mpub(body: &[u8], limits: &Limits) -> Option<Bodies> {
    let mut wire = BytesMut::from(&b"MPUB t\n"[..]);
    wire.extend_from_slice(&u32::try_from(body.len()).ok()?.to_be_bytes());
    wire.extend_from_slice(body);
    match parse(&mut wire, limits, ClientState::Init) {
        Ok(Some(Command::Mpub { bodies, .. })) => Some(bodies),
        other => panic!("an MPUB body split_mpub accepts does not parse: {other:?}"),
    }
}
