//! JSON exactly as Go's `encoding/json` writes it, for the IDENTIFY reply and every HTTP body:
//! serde_json's output plus Go's HTML-safe escaping of `<`, `>`, `&`, U+2028 and U+2029 (an
//! nsqd `hostname` such as `a<b` must read `a\u003cb`, as nsqlookupd sends it). Field order is
//! the caller's: struct order for Go structs, sorted keys for Go maps.

use serde::Serialize;

/// Serializes `v` as Go would; an unserializable value (never the case for our plain structs)
/// gives `null`.
pub fn to_go_json<T: Serialize>(v: &T) -> Vec<u8> {
    serde_json::to_vec(v)
        .map(go_html_escape)
        .unwrap_or_else(|_| b"null".to_vec())
}

/// Go's HTML escaping of serialized JSON. Those bytes can only occur inside JSON strings, so a
/// byte-level rewrite is exact.
fn go_html_escape(json: Vec<u8>) -> Vec<u8> {
    const LS: &[u8] = "\u{2028}".as_bytes();
    const PS: &[u8] = "\u{2029}".as_bytes();
    let needs = json.iter().any(|&c| matches!(c, b'<' | b'>' | b'&'))
        || json.windows(3).any(|w| w == LS || w == PS);
    if !needs {
        return json;
    }
    let mut out = Vec::with_capacity(json.len() + 16);
    let mut i = 0;
    while i < json.len() {
        match &json[i..] {
            [b'<', ..] => out.extend_from_slice(b"\\u003c"),
            [b'>', ..] => out.extend_from_slice(b"\\u003e"),
            [b'&', ..] => out.extend_from_slice(b"\\u0026"),
            [0xE2, 0x80, 0xA8, ..] => {
                out.extend_from_slice(b"\\u2028");
                i += 2;
            }
            [0xE2, 0x80, 0xA9, ..] => {
                out.extend_from_slice(b"\\u2029");
                i += 2;
            }
            [c, ..] => out.push(*c),
            [] => break,
        }
        i += 1;
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn escapes_like_go() {
        assert_eq!(
            String::from_utf8(to_go_json(&"a<b>&c\u{2028}d\u{2029}é\u{1}\t")).unwrap(),
            r#""a\u003cb\u003e\u0026c\u2028d\u2029é\u0001\t""#
        );
        assert_eq!(
            to_go_json(&serde_json::json!({"b": 1, "a": [true]})),
            br#"{"a":[true],"b":1}"#.to_vec()
        );
    }
}
