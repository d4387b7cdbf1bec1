//! Replies as values: the client side of the codec. The server never builds a [`Frame`] (it
//! writes straight into a [`Reply`]); tests, the benchmark and the fuzz target decode what a
//! server sent with [`decode`], and the property tests check that every reply the writer can
//! produce reads back as itself (RESP3) or as its RESP2 degradation.

use crate::error::DecodeError;
use crate::number::parse_i64;
use crate::reply::{Protocol, Reply};

/// Nesting deeper than this is refused when decoding (a hostile server cannot overflow the
/// stack of a client).
pub const MAX_DEPTH: usize = 64;

/// One reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    Simple(Vec<u8>),
    Error(Vec<u8>),
    Integer(i64),
    Bulk(Vec<u8>),
    /// `$-1`, `*-1` or `_`.
    Null,
    Array(Vec<Frame>),
    Map(Vec<(Frame, Frame)>),
    Set(Vec<Frame>),
    Push(Vec<Frame>),
    Double(f64),
    Boolean(bool),
    Verbatim([u8; 3], Vec<u8>),
    BigNumber(Vec<u8>),
}

impl Frame {
    /// Writes the frame into `out` in `out`'s protocol version.
    pub fn encode(&self, out: &mut Reply) {
        match self {
            Frame::Simple(s) => out.simple(s),
            Frame::Error(e) => out.error(&String::from_utf8_lossy(e)),
            Frame::Integer(n) => out.integer(*n),
            Frame::Bulk(b) => out.bulk(b),
            Frame::Null => out.null(),
            Frame::Array(items) => {
                out.array(items.len());
                items.iter().for_each(|f| f.encode(out));
            }
            Frame::Map(pairs) => {
                out.map(pairs.len());
                for (k, v) in pairs {
                    k.encode(out);
                    v.encode(out);
                }
            }
            Frame::Set(items) => {
                out.set(items.len());
                items.iter().for_each(|f| f.encode(out));
            }
            Frame::Push(items) => {
                out.push(items.len());
                items.iter().for_each(|f| f.encode(out));
            }
            Frame::Double(v) => out.double(*v),
            Frame::Boolean(b) => out.boolean(*b),
            Frame::Verbatim(fmt, text) => out.verbatim(fmt, text),
            Frame::BigNumber(d) => out.big_number(d),
        }
    }

    /// What a RESP2 client reads for this frame (Redis's degradation).
    pub fn to_resp2(&self) -> Frame {
        let all = |items: &[Frame]| items.iter().map(Frame::to_resp2).collect();
        match self {
            Frame::Array(items) | Frame::Set(items) | Frame::Push(items) => {
                Frame::Array(all(items))
            }
            Frame::Map(pairs) => Frame::Array(
                pairs
                    .iter()
                    .flat_map(|(k, v)| [k.to_resp2(), v.to_resp2()])
                    .collect(),
            ),
            Frame::Double(v) => Frame::Bulk(crate::reply::format_double(*v).into_bytes()),
            Frame::Boolean(b) => Frame::Integer(i64::from(*b)),
            Frame::Verbatim(_, text) => Frame::Bulk(text.clone()),
            Frame::BigNumber(d) => Frame::Bulk(d.clone()),
            other => other.clone(),
        }
    }

    /// The frame encoded in `proto`.
    pub fn to_bytes(&self, proto: Protocol) -> Vec<u8> {
        let mut r = Reply::new(proto);
        self.encode(&mut r);
        r.as_bytes().to_vec()
    }

    /// The bytes of a simple string, bulk string or verbatim string.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Frame::Simple(b) | Frame::Bulk(b) | Frame::Verbatim(_, b) => Some(b),
            _ => None,
        }
    }
}

/// Decodes one reply from the start of `buf`: the frame and its length, or `Ok(None)` if more
/// bytes are needed. RESP3 attributes (`|`) are read and dropped.
pub fn decode(buf: &[u8]) -> Result<Option<(Frame, usize)>, DecodeError> {
    decode_at(buf, 0, 0)
}

/// A line (without CRLF) starting at `pos`, and the position after its CRLF.
fn line(buf: &[u8], pos: usize) -> Option<(&[u8], usize)> {
    let rest = buf.get(pos..)?;
    let cr = memchr::memchr(b'\r', rest)?;
    if cr + 1 >= rest.len() {
        return None;
    }
    Some((&rest[..cr], pos + cr + 2))
}

fn number(s: &[u8]) -> Result<i64, DecodeError> {
    parse_i64(s).ok_or_else(|| DecodeError::BadNumber(String::from_utf8_lossy(s).into_owned()))
}

fn count(s: &[u8]) -> Result<usize, DecodeError> {
    usize::try_from(number(s)?)
        .map_err(|_| DecodeError::BadNumber(String::from_utf8_lossy(s).into_owned()))
}

type Step = Result<Option<(Frame, usize)>, DecodeError>;

fn decode_at(buf: &[u8], pos: usize, depth: usize) -> Step {
    if depth > MAX_DEPTH {
        return Err(DecodeError::TooDeep(MAX_DEPTH));
    }
    let Some(&tag) = buf.get(pos) else {
        return Ok(None);
    };
    let Some((text, next)) = line(buf, pos + 1) else {
        return Ok(None);
    };
    let frame = match tag {
        b'+' => Frame::Simple(text.to_vec()),
        b'-' => Frame::Error(text.to_vec()),
        b':' => Frame::Integer(number(text)?),
        b'_' => Frame::Null,
        b'#' => match text {
            b"t" => Frame::Boolean(true),
            b"f" => Frame::Boolean(false),
            _ => return Err(DecodeError::BadValue("boolean".into())),
        },
        b',' => Frame::Double(parse_double(text)?),
        b'(' => Frame::BigNumber(text.to_vec()),
        b'$' | b'=' | b'!' => return blob(buf, tag, text, next),
        b'*' | b'~' | b'>' => return aggregate(buf, tag, text, next, depth),
        b'%' | b'|' => return map(buf, tag, text, next, depth),
        other => return Err(DecodeError::UnknownType(other)),
    };
    Ok(Some((frame, next)))
}

fn parse_double(text: &[u8]) -> Result<f64, DecodeError> {
    std::str::from_utf8(text)
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .ok_or_else(|| DecodeError::BadValue("double".into()))
}

fn blob(buf: &[u8], tag: u8, len_text: &[u8], pos: usize) -> Step {
    if tag == b'$' && len_text == b"-1" {
        return Ok(Some((Frame::Null, pos)));
    }
    let len = count(len_text)?;
    let Some(data) = buf.get(pos..pos.saturating_add(len).saturating_add(2)) else {
        return Ok(None);
    };
    if &data[len..] != b"\r\n" {
        return Err(DecodeError::MissingCrlf);
    }
    let data = &data[..len];
    let frame = match tag {
        b'$' => Frame::Bulk(data.to_vec()),
        b'!' => Frame::Error(data.to_vec()),
        _ => {
            if data.len() < 4 || data[3] != b':' {
                return Err(DecodeError::BadValue("verbatim string".into()));
            }
            Frame::Verbatim([data[0], data[1], data[2]], data[4..].to_vec())
        }
    };
    Ok(Some((frame, pos + len + 2)))
}

fn aggregate(buf: &[u8], tag: u8, n_text: &[u8], mut pos: usize, depth: usize) -> Step {
    if tag == b'*' && n_text == b"-1" {
        return Ok(Some((Frame::Null, pos)));
    }
    let n = count(n_text)?;
    // Never trust the count for an allocation: grow as elements arrive.
    let mut items = Vec::with_capacity(n.min(1024));
    for _ in 0..n {
        let Some((f, next)) = decode_at(buf, pos, depth + 1)? else {
            return Ok(None);
        };
        items.push(f);
        pos = next;
    }
    let frame = match tag {
        b'*' => Frame::Array(items),
        b'~' => Frame::Set(items),
        _ => Frame::Push(items),
    };
    Ok(Some((frame, pos)))
}

fn map(buf: &[u8], tag: u8, n_text: &[u8], mut pos: usize, depth: usize) -> Step {
    let n = count(n_text)?;
    let mut pairs = Vec::with_capacity(n.min(1024));
    for _ in 0..n {
        let Some((k, next)) = decode_at(buf, pos, depth + 1)? else {
            return Ok(None);
        };
        let Some((v, next)) = decode_at(buf, next, depth + 1)? else {
            return Ok(None);
        };
        pairs.push((k, v));
        pos = next;
    }
    if tag == b'|' {
        // An attribute: metadata about the reply that follows it.
        return decode_at(buf, pos, depth + 1);
    }
    Ok(Some((Frame::Map(pairs), pos)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn leaf() -> impl Strategy<Value = Frame> {
        let bytes = proptest::collection::vec(any::<u8>(), 0..20);
        let text = "[a-zA-Z0-9 ]{0,20}".prop_map(String::into_bytes);
        prop_oneof![
            text.clone().prop_map(Frame::Simple),
            "ERR [a-z ]{0,20}".prop_map(|s| Frame::Error(s.into_bytes())),
            any::<i64>().prop_map(Frame::Integer),
            bytes.clone().prop_map(Frame::Bulk),
            Just(Frame::Null),
            (-1e20f64..1e20).prop_map(Frame::Double),
            any::<bool>().prop_map(Frame::Boolean),
            bytes.prop_map(|b| Frame::Verbatim(*b"txt", b)),
            "-?[1-9][0-9]{0,30}".prop_map(|s| Frame::BigNumber(s.into_bytes())),
        ]
    }

    fn frame() -> impl Strategy<Value = Frame> {
        leaf().prop_recursive(4, 40, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Frame::Array),
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Frame::Set),
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Frame::Push),
                proptest::collection::vec((inner.clone(), inner), 0..4).prop_map(Frame::Map),
            ]
        })
    }

    /// Doubles go through text, so compare them as their text.
    fn normalise(f: &Frame) -> Frame {
        let all = |v: &[Frame]| v.iter().map(normalise).collect();
        match f {
            Frame::Double(v) => Frame::Double(
                crate::reply::format_double(*v)
                    .parse()
                    .expect("formatted double"),
            ),
            Frame::Array(v) => Frame::Array(all(v)),
            Frame::Set(v) => Frame::Set(all(v)),
            Frame::Push(v) => Frame::Push(all(v)),
            Frame::Map(p) => Frame::Map(
                p.iter()
                    .map(|(k, v)| (normalise(k), normalise(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    proptest! {
        #[test]
        fn resp3_round_trip(f in frame()) {
            let bytes = f.to_bytes(Protocol::Resp3);
            let (back, n) = decode(&bytes).unwrap().unwrap();
            prop_assert_eq!(n, bytes.len());
            prop_assert_eq!(normalise(&back), normalise(&f));
        }

        #[test]
        fn resp2_reads_the_degraded_frame(f in frame()) {
            let bytes = f.to_bytes(Protocol::Resp2);
            let (back, n) = decode(&bytes).unwrap().unwrap();
            prop_assert_eq!(n, bytes.len());
            prop_assert_eq!(back, f.to_resp2());
        }

        #[test]
        fn every_prefix_is_incomplete(f in frame()) {
            let bytes = f.to_bytes(Protocol::Resp3);
            for cut in 0..bytes.len() {
                prop_assert_eq!(decode(&bytes[..cut]), Ok(None));
            }
        }

        #[test]
        fn garbage_never_panics(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode(&data);
        }
    }

    #[test]
    fn resp2_nulls_and_attributes() {
        assert_eq!(decode(b"$-1\r\n"), Ok(Some((Frame::Null, 5))));
        assert_eq!(decode(b"*-1\r\n"), Ok(Some((Frame::Null, 5))));
        assert_eq!(
            decode(b"|1\r\n+a\r\n+b\r\n:5\r\n"),
            Ok(Some((Frame::Integer(5), 16)))
        );
    }

    #[test]
    fn depth_is_bounded() {
        let deep = "*1\r\n".repeat(MAX_DEPTH + 2);
        assert_eq!(
            decode(deep.as_bytes()),
            Err(DecodeError::TooDeep(MAX_DEPTH))
        );
    }
}
