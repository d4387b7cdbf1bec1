//! Go's `encoding/json` HTML-safe escaping, applied to serde_json's output.
//!
//! It is here because nsqd and nsqlookupd both answer with Go-encoded JSON (HTTP bodies, the
//! lookupd IDENTIFY reply), where `<`, `>`, `&`, U+2028 and U+2029 inside strings come out as
//! `\u003c`, `\u003e`, `\u0026`, `\u2028`, `\u2029` (a hostname `a<b` reads `a\u003cb`).

/// Go's HTML escaping of serialized JSON. Those bytes can only occur inside JSON strings, so a
/// byte-level rewrite of serde's output is exact.
pub fn go_html_escape(json: Vec<u8>) -> Vec<u8> {
    if !needs_escape(&json) {
        return json;
    }
    let mut out = Vec::with_capacity(json.len() + 16);
    let mut i = 0;
    while i < json.len() {
        match json[i] {
            b'<' => out.extend_from_slice(b"\\u003c"),
            b'>' => out.extend_from_slice(b"\\u003e"),
            b'&' => out.extend_from_slice(b"\\u0026"),
            0xE2 if json.get(i + 1) == Some(&0x80)
                && matches!(json.get(i + 2), Some(0xA8 | 0xA9)) =>
            {
                out.extend_from_slice(if json[i + 2] == 0xA8 {
                    b"\\u2028"
                } else {
                    b"\\u2029"
                });
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    out
}

/// Whether `json` holds a byte Go would escape: a vectorised scan, since nearly every answer
/// (a page of `/channel/receive` deliveries, `/stats`) has none and is returned as it is.
fn needs_escape(json: &[u8]) -> bool {
    memchr::memchr3(b'<', b'>', b'&', json).is_some()
        || memchr::memchr_iter(0xE2, json)
            .any(|i| json.get(i + 1) == Some(&0x80) && matches!(json.get(i + 2), Some(0xA8 | 0xA9)))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn html_escape_like_go() {
        let j = "\"a<b>&c\u{2028}d\u{2029}é\\u0001\\t\"".as_bytes().to_vec();
        assert_eq!(
            String::from_utf8(go_html_escape(j)).unwrap(),
            r#""a\u003cb\u003e\u0026c\u2028d\u2029é\u0001\t""#
        );
        assert_eq!(go_html_escape(b"{\"a\":1}".to_vec()), b"{\"a\":1}");
    }

    #[test]
    fn each_escape_is_found_alone() {
        let one = |s: &str| String::from_utf8(go_html_escape(s.as_bytes().to_vec())).unwrap();
        let long = "x".repeat(100);
        assert_eq!(one(&format!("{long}<")), format!("{long}\\u003c"));
        assert_eq!(one(&format!(">{long}")), format!("\\u003e{long}"));
        assert_eq!(
            one(&format!("{long}&{long}")),
            format!("{long}\\u0026{long}")
        );
        assert_eq!(one(&format!("{long}\u{2029}")), format!("{long}\\u2029"));
        // Other characters starting with 0xE2 stay as they are: U+2027, U+20AC (the euro).
        let other = format!("{long}\u{2027}\u{20AC}{long}");
        assert_eq!(one(&other), other);
    }
}
