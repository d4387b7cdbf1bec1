//! URL query parsing with Go's `url.ParseQuery` rules, because nsqd's and nsqlookupd's answers
//! depend on them: any bad `%` escape or a `;` separator makes the whole query unparseable (400
//! `INVALID_REQUEST`), `+` is a space, a key without `=` has the empty value (present, so not
//! `MISSING_ARG_*`), and when a key repeats the first value is the one handlers use.

/// Why a query could not be parsed (the daemons only answer `INVALID_REQUEST`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    #[error("invalid semicolon separator in query")]
    Semicolon,
    #[error("invalid URL escape {0:?}")]
    BadEscape(String),
}

/// The decoded `key=value` pairs of a query, in request order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    pairs: Vec<(String, String)>,
}

impl Query {
    /// Parse the raw query string (the part after `?`, not decoded).
    pub fn parse(raw: Option<&str>) -> Result<Query, QueryError> {
        let mut pairs = Vec::new();
        let mut first_err = None;
        for part in raw.unwrap_or("").split('&') {
            if part.contains(';') {
                first_err.get_or_insert(QueryError::Semicolon);
                continue;
            }
            if part.is_empty() {
                continue;
            }
            let (k, v) = part.split_once('=').unwrap_or((part, ""));
            match (unescape(k), unescape(v)) {
                (Ok(k), Ok(v)) => pairs.push((k, v)),
                (Err(e), _) | (_, Err(e)) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(Query { pairs }),
        }
    }

    /// Every value given for `key`, in request order.
    pub fn get_all<'a>(&'a self, key: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.pairs
            .iter()
            .filter(move |(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The decoded pairs, in request order (repeated keys included).
    pub fn pairs(&self) -> impl ExactSizeIterator<Item = (&str, &str)> + '_ {
        self.pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The first value given for `key`, if the key appears at all.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Go's `QueryUnescape`: `%XX` escapes and `+` as space. The bytes are taken as UTF-8 with
/// invalid sequences replaced (such names can never be valid topics or options anyway).
fn unescape(s: &str) -> Result<String, QueryError> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hi = b.get(i + 1).and_then(|c| hex(*c));
                let lo = b.get(i + 2).and_then(|c| hex(*c));
                match (hi, lo) {
                    (Some(h), Some(l)) => out.push(h << 4 | l),
                    _ => {
                        let end = (i + 3).min(b.len());
                        let bad = String::from_utf8_lossy(&b[i..end]).into_owned();
                        return Err(QueryError::BadEscape(bad));
                    }
                }
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(String::from_utf8(out)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
}

/// The value of one hex digit.
pub(crate) fn hex(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Go's `url.QueryEscape`: unreserved bytes as they are, a space as `+`, the rest `%XX` (the
/// query nsqd sends auth servers).
pub fn escape(s: &str) -> String {
    escape_with(s, "+")
}

/// Percent-encoding of a query value: as [`escape`] but a space as `%20` (the topic nsqd
/// sends lookupd's `/channels`; topic names have no spaces, so only `#` is ever encoded).
pub fn escape_percent(s: &str) -> String {
    escape_with(s, "%20")
}

fn escape_with(s: &str, space: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push_str(space),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn first_value_wins_and_decoding() {
        let q = Query::parse(Some("topic=a%20b&topic=c&x+y=1+2&flag&=v&&node=h%3A1")).unwrap();
        assert_eq!(q.get("topic"), Some("a b"));
        assert_eq!(q.get("x y"), Some("1 2"));
        assert_eq!(q.get("flag"), Some(""));
        assert_eq!(q.get(""), Some("v"));
        assert_eq!(q.get("node"), Some("h:1"));
        assert_eq!(q.get("nosuch"), None);
        assert_eq!(q.pairs().len(), 6);
        assert_eq!(q.pairs().nth(1), Some(("topic", "c")));
        assert_eq!(Query::parse(None).unwrap(), Query::default());
        assert_eq!(Query::parse(Some("")).unwrap(), Query::default());
        assert_eq!(
            Query::parse(Some("t=%23ephemeral")).unwrap().get("t"),
            Some("#ephemeral")
        );
    }

    #[test]
    fn unparseable_queries() {
        for raw in ["topic=%zz", "x=%", "a=1&%zz", "a=%2", "a=1;b=2", "%g0=1"] {
            assert!(Query::parse(Some(raw)).is_err(), "{raw}");
        }
        assert_eq!(Query::parse(Some("a;b")), Err(QueryError::Semicolon));
        assert_eq!(
            Query::parse(Some("a=%zz")),
            Err(QueryError::BadEscape("%zz".into()))
        );
    }

    #[test]
    fn escapes_like_go() {
        assert_eq!(escape("a b&c=d/é*"), "a+b%26c%3Dd%2F%C3%A9%2A");
        assert_eq!(escape("AZaz09-_.~"), "AZaz09-_.~");
        assert_eq!(escape_percent("a b"), "a%20b");
        assert_eq!(escape_percent("a.b#ephemeral"), "a.b%23ephemeral");
    }
}
