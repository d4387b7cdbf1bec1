//! Replies: what the server writes. One writer serves both protocol versions: a connection
//! starts in RESP2 and switches after `HELLO 3`. RESP3's richer types degrade to RESP2 exactly
//! as Redis degrades them: a map becomes a flat array of keys and values, a set and a push an
//! array, a double a bulk string, a boolean the integer 1 or 0, a null `$-1` (or `*-1` for a
//! missing array), a verbatim string and a big number bulk strings.

/// The protocol version a connection speaks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Protocol {
    #[default]
    Resp2,
    Resp3,
}

impl Protocol {
    /// The number `HELLO` takes and reports (2 or 3).
    pub fn number(self) -> i64 {
        match self {
            Protocol::Resp2 => 2,
            Protocol::Resp3 => 3,
        }
    }
}

/// An output buffer that encodes replies in the connection's protocol version.
#[derive(Debug, Default, Clone)]
pub struct Reply {
    buf: Vec<u8>,
    proto: Protocol,
}

impl Reply {
    pub fn new(proto: Protocol) -> Reply {
        Reply {
            buf: Vec::new(),
            proto,
        }
    }

    pub fn with_capacity(proto: Protocol, cap: usize) -> Reply {
        Reply {
            buf: Vec::with_capacity(cap),
            proto,
        }
    }

    /// Writes after what `buf` holds (a buffer kept for reuse).
    pub fn from_buf(proto: Protocol, buf: Vec<u8>) -> Reply {
        Reply { buf, proto }
    }

    pub fn protocol(&self) -> Protocol {
        self.proto
    }

    pub fn set_protocol(&mut self, proto: Protocol) {
        self.proto = proto;
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    /// The buffer itself, to write it out and drain what was written.
    pub fn buf_mut(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    pub fn clear(&mut self) {
        self.buf.clear();
    }

    /// Appends bytes that are already encoded (a reply built elsewhere).
    pub fn raw(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    fn line(&mut self, tag: u8, n: i64) {
        self.buf.push(tag);
        self.buf
            .extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
        self.buf.extend_from_slice(b"\r\n");
    }

    fn len_line(&mut self, tag: u8, n: usize) {
        self.buf.push(tag);
        self.buf
            .extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
        self.buf.extend_from_slice(b"\r\n");
    }

    /// `+<s>`: the caller passes text without CR or LF (command names, "OK", "PONG").
    pub fn simple(&mut self, s: &[u8]) {
        self.buf.push(b'+');
        self.buf.extend_from_slice(s);
        self.buf.extend_from_slice(b"\r\n");
    }

    pub fn ok(&mut self) {
        self.buf.extend_from_slice(b"+OK\r\n");
    }

    /// `-<msg>`: `msg` starts with its code (`ERR ...`, `WRONGPASS ...`). CR and LF in it
    /// become spaces, as Redis does, so a client-supplied name cannot break the framing.
    pub fn error(&mut self, msg: &str) {
        self.buf.push(b'-');
        self.buf.extend(
            msg.bytes()
                .map(|c| if c == b'\r' || c == b'\n' { b' ' } else { c }),
        );
        self.buf.extend_from_slice(b"\r\n");
    }

    pub fn integer(&mut self, n: i64) {
        self.line(b':', n);
    }

    pub fn bulk(&mut self, data: &[u8]) {
        self.len_line(b'$', data.len());
        self.buf.extend_from_slice(data);
        self.buf.extend_from_slice(b"\r\n");
    }

    /// A missing value: `$-1` in RESP2, `_` in RESP3.
    pub fn null(&mut self) {
        match self.proto {
            Protocol::Resp2 => self.buf.extend_from_slice(b"$-1\r\n"),
            Protocol::Resp3 => self.buf.extend_from_slice(b"_\r\n"),
        }
    }

    /// A missing array: `*-1` in RESP2, `_` in RESP3.
    pub fn null_array(&mut self) {
        match self.proto {
            Protocol::Resp2 => self.buf.extend_from_slice(b"*-1\r\n"),
            Protocol::Resp3 => self.buf.extend_from_slice(b"_\r\n"),
        }
    }

    /// The header of an array of `n` elements (the caller writes them).
    pub fn array(&mut self, n: usize) {
        self.len_line(b'*', n);
    }

    /// The header of a map of `n` pairs (RESP2: an array of `2n`).
    pub fn map(&mut self, n: usize) {
        match self.proto {
            Protocol::Resp2 => self.len_line(b'*', n * 2),
            Protocol::Resp3 => self.len_line(b'%', n),
        }
    }

    /// The header of a set of `n` elements (RESP2: an array).
    pub fn set(&mut self, n: usize) {
        match self.proto {
            Protocol::Resp2 => self.len_line(b'*', n),
            Protocol::Resp3 => self.len_line(b'~', n),
        }
    }

    /// The header of an out-of-band push of `n` elements (RESP2: an array).
    pub fn push(&mut self, n: usize) {
        match self.proto {
            Protocol::Resp2 => self.len_line(b'*', n),
            Protocol::Resp3 => self.len_line(b'>', n),
        }
    }

    /// `,<v>` in RESP3, a bulk string in RESP2.
    pub fn double(&mut self, v: f64) {
        let mut digits = itoa::Buffer::new();
        let general;
        let text = match exact_integer(v) {
            Some(n) => digits.format(n),
            None => {
                general = format_general(v);
                general.as_str()
            }
        };
        match self.proto {
            Protocol::Resp2 => self.bulk(text.as_bytes()),
            Protocol::Resp3 => {
                self.buf.push(b',');
                self.buf.extend_from_slice(text.as_bytes());
                self.buf.extend_from_slice(b"\r\n");
            }
        }
    }

    /// `#t` / `#f` in RESP3, `:1` / `:0` in RESP2.
    pub fn boolean(&mut self, v: bool) {
        match (self.proto, v) {
            (Protocol::Resp2, true) => self.buf.extend_from_slice(b":1\r\n"),
            (Protocol::Resp2, false) => self.buf.extend_from_slice(b":0\r\n"),
            (Protocol::Resp3, true) => self.buf.extend_from_slice(b"#t\r\n"),
            (Protocol::Resp3, false) => self.buf.extend_from_slice(b"#f\r\n"),
        }
    }

    /// Text with a 3-letter format (`txt`, `mkd`) in RESP3; a bulk string of the text in RESP2.
    pub fn verbatim(&mut self, format: &[u8; 3], text: &[u8]) {
        match self.proto {
            Protocol::Resp2 => self.bulk(text),
            Protocol::Resp3 => {
                self.len_line(b'=', text.len() + 4);
                self.buf.extend_from_slice(format);
                self.buf.push(b':');
                self.buf.extend_from_slice(text);
                self.buf.extend_from_slice(b"\r\n");
            }
        }
    }

    /// `(<digits>` in RESP3, a bulk string in RESP2.
    pub fn big_number(&mut self, digits: &[u8]) {
        match self.proto {
            Protocol::Resp2 => self.bulk(digits),
            Protocol::Resp3 => {
                self.buf.push(b'(');
                self.buf.extend_from_slice(digits);
                self.buf.extend_from_slice(b"\r\n");
            }
        }
    }
}

/// A double as Redis 7.0 writes it (`addReplyDouble`): `inf`, `-inf`, `nan`, otherwise C's
/// `%.17g` (17 significant digits, trailing zeros cut, an exponent of at least two digits
/// below 1e-4 and from 1e17 on): `0.1` is `0.10000000000000001`, `1e20` is `1e+20`.
pub fn format_double(v: f64) -> String {
    match exact_integer(v) {
        Some(n) => itoa::Buffer::new().format(n).to_string(),
        None => format_general(v),
    }
}

/// Below 2^53 in magnitude every integer is exact and `%.17g` writes it as plain digits, which
/// `itoa` writes without the float formatting machinery (a sorted set's scores are often
/// integers). `-0` is left to [`format_general`], which keeps its sign.
fn exact_integer(v: f64) -> Option<i64> {
    const EXACT: f64 = 9_007_199_254_740_992.0;
    (v.fract() == 0.0 && v.abs() < EXACT && !(v == 0.0 && v.is_sign_negative())).then_some(v as i64)
}

/// [`format_double`] for any double.
fn format_general(v: f64) -> String {
    if v.is_nan() {
        return "nan".to_string();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    // 17 significant digits in exponent form, to read the exponent `%g` decides by.
    let sci = format!("{v:.16e}");
    let Some((mantissa, exp)) = sci.split_once('e') else {
        return sci;
    };
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..17).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{}e{sign}{:02}", trim_zeros(mantissa), exp.unsigned_abs());
    }
    let decimals = (16 - exp).max(0) as usize;
    trim_zeros(&format!("{v:.decimals$}")).to_string()
}

/// `1.500` as `1.5`, `2.000` as `2` (numbers with a point only).
fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn both(f: impl Fn(&mut Reply)) -> (String, String) {
        let mut r2 = Reply::new(Protocol::Resp2);
        let mut r3 = Reply::new(Protocol::Resp3);
        f(&mut r2);
        f(&mut r3);
        (
            String::from_utf8(r2.as_bytes().to_vec()).unwrap(),
            String::from_utf8(r3.as_bytes().to_vec()).unwrap(),
        )
    }

    #[test]
    fn integers_take_the_short_way_to_the_same_text() {
        let edges = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            9_007_199_254_740_991.0,
            -9_007_199_254_740_991.0,
        ];
        let near_limit = [
            9_007_199_254_740_992.0,
            1e16,
            1e17,
            123_456_789_012_345_680.0,
        ];
        for v in edges.into_iter().chain(near_limit) {
            assert_eq!(format_double(v), format_general(v), "{v}");
        }
        assert_eq!(format_double(-0.0), "-0");
        assert_eq!(format_double(1e17), "1e+17");
        let mut r = Reply::new(Protocol::Resp3);
        r.double(-42.0);
        r.double(0.5);
        assert_eq!(r.as_bytes(), b",-42\r\n,0.5\r\n");
    }

    proptest::proptest! {
        #[test]
        fn integer_scores_format_as_the_general_way(n in -(1i64 << 53)..(1i64 << 53)) {
            let v = n as f64;
            proptest::prop_assert_eq!(format_double(v), format_general(v));
        }
    }

    #[test]
    fn degradation_matches_redis() {
        assert_eq!(both(|r| r.null()), ("$-1\r\n".into(), "_\r\n".into()));
        assert_eq!(both(|r| r.null_array()), ("*-1\r\n".into(), "_\r\n".into()));
        assert_eq!(both(|r| r.map(2)), ("*4\r\n".into(), "%2\r\n".into()));
        assert_eq!(both(|r| r.set(3)), ("*3\r\n".into(), "~3\r\n".into()));
        assert_eq!(both(|r| r.push(3)), ("*3\r\n".into(), ">3\r\n".into()));
        assert_eq!(
            both(|r| r.double(2.5)),
            ("$3\r\n2.5\r\n".into(), ",2.5\r\n".into())
        );
        assert_eq!(
            both(|r| r.boolean(true)),
            (":1\r\n".into(), "#t\r\n".into())
        );
        assert_eq!(
            both(|r| r.verbatim(b"txt", b"hi")),
            ("$2\r\nhi\r\n".into(), "=6\r\ntxt:hi\r\n".into())
        );
        assert_eq!(
            both(|r| r.big_number(b"123")),
            ("$3\r\n123\r\n".into(), "(123\r\n".into())
        );
    }

    #[test]
    fn errors_cannot_break_framing() {
        let (r2, _) = both(|r| r.error("ERR unknown command 'a\r\nb'"));
        assert_eq!(r2, "-ERR unknown command 'a  b'\r\n");
    }

    #[test]
    fn doubles_are_printf_17g() {
        let cases = [
            (3.0, "3"),
            (0.1, "0.10000000000000001"),
            (f64::INFINITY, "inf"),
            (-f64::INFINITY, "-inf"),
            (f64::NAN, "nan"),
            (1e300, "1.0000000000000001e+300"),
            (-2.5e-7, "-2.4999999999999999e-07"),
            (2.5, "2.5"),
            (1e20, "1e+20"),
            (-0.0, "-0"),
            (1e-5, "1.0000000000000001e-05"),
            (0.0001, "0.0001"),
            (12345678901234567.0, "12345678901234568"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (f64::MAX, "1.7976931348623157e+308"),
            (5e-324, "4.9406564584124654e-324"),
        ];
        for (v, want) in cases {
            assert_eq!(format_double(v), want, "{v}");
        }
    }
}
