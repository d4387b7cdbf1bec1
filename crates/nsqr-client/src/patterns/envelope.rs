//! The few bytes request-reply puts in front of a body, since NSQ messages have no headers:
//!
//! ```text
//! request: [0x01][u64 correlation id][u8 n][reply topic, n bytes][payload]
//! reply:   [0x02][u64 correlation id][payload]          (0x03: the payload is an error text)
//! ```
//!
//! Built in one buffer the payload is written into (no second copy), and read back as slices
//! of the received body.

use bytes::{BufMut, Bytes, BytesMut};

const REQUEST: u8 = 1;
const REPLY: u8 = 2;
const FAILURE: u8 = 3;

/// Bytes before a reply's payload.
pub(crate) const REPLY_HEADER: usize = 9;

/// Bytes before a request's payload.
pub(crate) fn request_header(reply_to: &str) -> usize {
    10 + reply_to.len()
}

/// A request's header, `len` bytes of payload room after it (to fill).
pub(crate) fn request(correlation: u64, reply_to: &str, len: usize) -> (BytesMut, usize) {
    let mut b = BytesMut::with_capacity(request_header(reply_to) + len);
    let header = put_request(&mut b, correlation, reply_to, len);
    (b, header)
}

/// Append a request's header and `len` zeroed bytes of payload room to `b`; where the
/// payload starts, counted from where the request starts.
pub(crate) fn put_request(b: &mut BytesMut, correlation: u64, reply_to: &str, len: usize) -> usize {
    let start = b.len();
    b.put_u8(REQUEST);
    b.put_u64(correlation);
    // Topic names are at most 64 bytes.
    b.put_u8(reply_to.len() as u8);
    b.put_slice(reply_to.as_bytes());
    b.resize(b.len() + len, 0);
    b.len() - start - len
}

/// Write a request's header into `room` (exactly [`request_header`] bytes, in front of the
/// payload in a buffer the caller laid out).
pub(crate) fn write_request(room: &mut [u8], correlation: u64, reply_to: &str) {
    let mut w = room;
    w.put_u8(REQUEST);
    w.put_u64(correlation);
    // Topic names are at most 64 bytes.
    w.put_u8(reply_to.len() as u8);
    w.put_slice(reply_to.as_bytes());
}

/// A reply's header and `len` bytes of room (`ok` false: the payload is an error's text).
pub(crate) fn reply(correlation: u64, ok: bool, len: usize) -> BytesMut {
    let mut b = BytesMut::with_capacity(REPLY_HEADER + len);
    b.put_u8(if ok { REPLY } else { FAILURE });
    b.put_u64(correlation);
    b.resize(REPLY_HEADER + len, 0);
    b
}

/// A decoded request: correlation id, reply topic (checked to be UTF-8; a slice of the
/// body, not a copy: most requests are never replied to by name), payload.
pub(crate) fn open_request(body: &Bytes) -> Option<(u64, Bytes, Bytes)> {
    let (correlation, reply_to, _) = parse_request(body)?;
    std::str::from_utf8(reply_to).ok()?;
    let at = 10 + reply_to.len();
    Some((correlation, body.slice(10..at), body.slice(at..)))
}

/// A request's parts borrowed from its body: correlation id, reply topic (not checked to be
/// UTF-8: a one-way request never uses it), payload.
pub(crate) fn parse_request(body: &[u8]) -> Option<(u64, &[u8], &[u8])> {
    if *body.first()? != REQUEST || body.len() < 10 {
        return None;
    }
    let correlation = u64::from_be_bytes(body.get(1..9)?.try_into().ok()?);
    let n = usize::from(body[9]);
    Some((correlation, body.get(10..10 + n)?, body.get(10 + n..)?))
}

/// A decoded reply: correlation id, and the payload or the error text.
pub(crate) fn open_reply(body: &Bytes) -> Option<(u64, Result<Bytes, String>)> {
    let kind = *body.first()?;
    let correlation = u64::from_be_bytes(body.get(1..REPLY_HEADER)?.try_into().ok()?);
    let payload = body.slice(REPLY_HEADER..);
    match kind {
        REPLY => Some((correlation, Ok(payload))),
        FAILURE => Some((
            correlation,
            Err(String::from_utf8_lossy(&payload).into_owned()),
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let (mut b, at) = request(7, "reply.x#ephemeral", 3);
        b[at..].copy_from_slice(b"abc");
        let b = b.freeze();
        let (c, t, p) = open_request(&b).unwrap();
        assert_eq!(
            (c, &t[..], &p[..]),
            (7, &b"reply.x#ephemeral"[..], &b"abc"[..])
        );
        assert_eq!(
            parse_request(&b),
            Some((7, &b"reply.x#ephemeral"[..], &b"abc"[..]))
        );
        // Requests built one after another in one buffer, each split off.
        let mut arena = BytesMut::with_capacity(256);
        let mut reqs = Vec::new();
        for (id, p) in [(1u64, &b"x"[..]), (2, b"yz")] {
            let at = put_request(&mut arena, id, "r#ephemeral", p.len());
            assert_eq!(at, request_header("r#ephemeral"));
            let mut one = arena.split();
            one[at..].copy_from_slice(p);
            reqs.push(one.freeze());
        }
        assert_eq!(
            parse_request(&reqs[0]),
            Some((1, &b"r#ephemeral"[..], &b"x"[..]))
        );
        assert_eq!(
            parse_request(&reqs[1]),
            Some((2, &b"r#ephemeral"[..], &b"yz"[..]))
        );
        // A request laid out by its sender: header room, then the payload, written in place.
        let mut laid = vec![0xee; request_header("r#ephemeral") + 3];
        let at = request_header("r#ephemeral");
        laid[at..].copy_from_slice(b"pay");
        write_request(&mut laid[..at], 5, "r#ephemeral");
        assert_eq!(
            parse_request(&laid),
            Some((5, &b"r#ephemeral"[..], &b"pay"[..]))
        );
        let mut r = reply(9, true, 2);
        r[REPLY_HEADER..].copy_from_slice(b"ok");
        assert_eq!(open_reply(&r.freeze()), Some((9, Ok(Bytes::from("ok")))));
        let mut r = reply(9, false, 4);
        r[REPLY_HEADER..].copy_from_slice(b"oops");
        assert_eq!(open_reply(&r.freeze()), Some((9, Err("oops".into()))));
        for junk in [
            &b""[..],
            b"\x01",
            b"\x02abc",
            b"\x09123456789",
            b"\x01\0\0\0\0\0\0\0\x01\x05ab",
        ] {
            let j = Bytes::copy_from_slice(junk);
            assert!(open_request(&j).is_none(), "{junk:?}");
            assert!(parse_request(&j).is_none(), "{junk:?}");
            assert!(open_reply(&j).is_none(), "{junk:?}");
        }
    }
}
