//! Query strings with Go's `url.ParseQuery` rules, which decide nsqlookupd's answers: a bad `%`
//! escape or a `;` anywhere makes the whole query unparseable (400 `INVALID_REQUEST`), `+` is a
//! space, a key without `=` has the empty value (present, so not `MISSING_ARG_*`), and for a
//! repeated key the first value counts.

/// The decoded pairs of a query, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    pairs: Vec<(String, String)>,
}

/// The query could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid query")]
pub struct QueryError;

impl Query {
    /// Parses the raw query (after `?`, undecoded).
    pub fn parse(raw: Option<&str>) -> Result<Query, QueryError> {
        let mut pairs = Vec::new();
        let mut bad = false;
        for part in raw.unwrap_or("").split('&') {
            if part.contains(';') {
                bad = true;
                continue;
            }
            if part.is_empty() {
                continue;
            }
            let (k, v) = part.split_once('=').unwrap_or((part, ""));
            match (unescape(k), unescape(v)) {
                (Some(k), Some(v)) => pairs.push((k, v)),
                _ => bad = true,
            }
        }
        if bad {
            Err(QueryError)
        } else {
            Ok(Query { pairs })
        }
    }

    /// The first value of `key`, if the key is present.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

fn hex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).and_then(|d| u8::try_from(d).ok())
}

/// Go's `QueryUnescape`; the bytes are read as UTF-8 with invalid sequences replaced (such a
/// name can never be valid anyway, and serializes the same as Go's).
fn unescape(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                out.push(hex(*b.get(i + 1)?)? << 4 | hex(*b.get(i + 2)?)?);
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
    Some(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn go_rules() {
        let q = Query::parse(Some("topic=a%20b&topic=c&x+y=1+2&flag&&node=h%3A1")).unwrap();
        assert_eq!(q.get("topic"), Some("a b"));
        assert_eq!(q.get("x y"), Some("1 2"));
        assert_eq!(q.get("flag"), Some(""));
        assert_eq!(q.get("node"), Some("h:1"));
        assert_eq!(q.get("nosuch"), None);
        assert_eq!(Query::parse(None).unwrap(), Query::default());
        for raw in ["topic=%zz", "x=%", "a=1&%zz", "a=%2", "a=1;b=2", "%g0=1"] {
            assert_eq!(Query::parse(Some(raw)), Err(QueryError), "{raw}");
        }
    }
}
