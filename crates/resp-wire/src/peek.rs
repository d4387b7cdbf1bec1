//! A look ahead at the pipelined requests waiting in a buffer, without parsing them for real.
//!
//! A server that knows which keys the next requests name can bring those keys' memory into
//! the CPU cache together, so their misses overlap instead of coming one request at a time
//! (nsqrd's keyspace does so for each pipelined batch). This only reads: it stops at the first
//! request that is incomplete, inline, or anything but plain well-formed multibulk, and
//! [`crate::RequestParser`] remains the one judge of what a request is (and of every error).

/// One complete multibulk request ahead in the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peeked<'a> {
    /// Its first argument (the command's name).
    pub name: &'a [u8],
    /// Its second argument, if it has one (the key, for most commands).
    pub first_arg: Option<&'a [u8]>,
    /// Its third and fourth arguments, if it has them (a field or member, for most commands on
    /// a hash, a set or a sorted set: HSET's field, SADD's first member, ZADD's member after
    /// its score).
    pub more_args: [Option<&'a [u8]>; 2],
    /// Where it ends in the buffer (where the next one starts).
    pub end: usize,
}

/// The complete multibulk requests at the front of `buf`, in order.
pub fn peek(buf: &[u8]) -> Peek<'_> {
    Peek { buf, pos: 0 }
}

/// Iterator of [`peek()`].
#[derive(Debug, Clone)]
pub struct Peek<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Iterator for Peek<'a> {
    type Item = Peeked<'a>;

    fn next(&mut self) -> Option<Peeked<'a>> {
        let (count, mut at) = length_line(self.buf, self.pos, b'*')?;
        if count == 0 {
            return None;
        }
        let mut name: &[u8] = &[];
        let mut first_arg = None;
        let mut more_args = [None; 2];
        for i in 0..count {
            let (len, start) = length_line(self.buf, at, b'$')?;
            let end = start.checked_add(len)?;
            let arg = self.buf.get(start..end)?;
            if self.buf.get(end..end.checked_add(2)?)? != b"\r\n" {
                return None;
            }
            match i {
                0 => name = arg,
                1 => first_arg = Some(arg),
                2 | 3 => more_args[i - 2] = Some(arg),
                _ => {}
            }
            at = end + 2;
        }
        self.pos = at;
        Some(Peeked {
            name,
            first_arg,
            more_args,
            end: at,
        })
    }
}

/// A `<kind><digits>\r\n` line at `pos`: the number and where the line ends; `None` unless
/// the line is complete and its number a plain non-negative decimal of at most 9 digits
/// without leading zeros.
fn length_line(buf: &[u8], pos: usize, kind: u8) -> Option<(usize, usize)> {
    let rest = buf.get(pos..)?;
    if rest.first() != Some(&kind) {
        return None;
    }
    let digits = rest.get(1..)?;
    let n = digits.iter().take(10).position(|&b| b == b'\r')?;
    if n == 0 || rest.get(1 + n + 1) != Some(&b'\n') || (n > 1 && digits[0] == b'0') {
        return None;
    }
    let mut value = 0usize;
    for &d in &digits[..n] {
        if !d.is_ascii_digit() {
            return None;
        }
        value = value * 10 + usize::from(d - b'0');
    }
    Some((value, pos + 1 + n + 2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{encode_request, Parsed, RequestParser};
    use proptest::prelude::*;

    fn encoded(reqs: &[Vec<Vec<u8>>]) -> Vec<u8> {
        let mut buf = Vec::new();
        for r in reqs {
            encode_request(r, &mut buf);
        }
        buf
    }

    #[test]
    fn sees_pipelined_requests_and_stops_at_an_incomplete_one() {
        let mut buf = b"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n*1\r\n$4\r\nPING\r\n".to_vec();
        let whole = buf.len();
        buf.extend_from_slice(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nval");
        let got: Vec<_> = peek(&buf).collect();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].name, b"GET");
        assert_eq!(got[0].first_arg, Some(&b"key"[..]));
        assert_eq!(got[1].name, b"PING");
        assert_eq!(got[1].first_arg, None);
        assert_eq!(got[0].more_args, [None, None]);
        let hset = peek(b"*5\r\n$4\r\nHSET\r\n$1\r\nh\r\n$1\r\nf\r\n$1\r\nv\r\n$1\r\nw\r\n")
            .next()
            .map(|p| p.more_args);
        assert_eq!(hset, Some([Some(&b"f"[..]), Some(&b"v"[..])]));
        assert_eq!(got[1].end, whole);
    }

    #[test]
    fn stops_at_what_it_does_not_understand() {
        assert_eq!(peek(b"GET k\r\n").count(), 0, "inline");
        assert_eq!(peek(b"*1\r\n$x\r\nPING\r\n").count(), 0, "bad length");
        assert_eq!(
            peek(b"*1\r\n$4\r\nPINGxx").count(),
            0,
            "no CRLF after the data"
        );
        assert_eq!(peek(b"*-1\r\n").count(), 0, "negative count");
        assert_eq!(peek(b"*0\r\n").count(), 0, "empty request");
        assert_eq!(peek(b"*1\r\n$99999999999\r\n").count(), 0, "huge length");
        assert_eq!(peek(b"*1\r\n$04\r\nPING\r\n").count(), 0, "leading zero");
        assert_eq!(peek(b"").count(), 0);
    }

    proptest! {
        /// What peek sees is what the parser parses, request for request.
        #[test]
        fn agrees_with_the_parser(
            reqs in prop::collection::vec(
                prop::collection::vec(prop::collection::vec(any::<u8>(), 0..20), 1..5), 0..8),
            cut in 0usize..400,
        ) {
            let buf = encoded(&reqs);
            let buf = &buf[..cut.min(buf.len())];
            let mut parser = RequestParser::default();
            let mut at = 0;
            for p in peek(buf) {
                let n = match parser.parse(&buf[at..]) {
                    Ok(Parsed::Request(n)) => n,
                    other => panic!("peek saw a request the parser did not: {other:?}"),
                };
                let args = parser.args(&buf[at..at + n]);
                prop_assert_eq!(p.name, args.get(0));
                prop_assert_eq!(p.first_arg, (args.len() > 1).then(|| args.get(1)));
                at += n;
                prop_assert_eq!(p.end, at);
            }
        }

        /// Any bytes: no panic, and every request seen ends inside the buffer.
        #[test]
        fn never_panics(buf in prop::collection::vec(any::<u8>(), 0..200)) {
            let mut last = 0;
            for p in peek(&buf) {
                prop_assert!(p.end > last && p.end <= buf.len());
                last = p.end;
            }
        }
    }
}
