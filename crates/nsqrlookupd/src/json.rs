//! JSON exactly as Go's `encoding/json` writes it, for the IDENTIFY reply and every HTTP body:
//! serde_json's output plus Go's HTML-safe escaping (`nsq_common::json`; an nsqd `hostname`
//! such as `a<b` must read `a\u003cb`, as nsqlookupd sends it). Field order is the caller's:
//! struct order for Go structs, sorted keys for Go maps.

use nsq_common::json::go_html_escape;
use serde::Serialize;

/// Serializes `v` as Go would; an unserializable value (never the case for our plain structs)
/// gives `null`.
pub fn to_go_json<T: Serialize>(v: &T) -> Vec<u8> {
    serde_json::to_vec(v)
        .map(go_html_escape)
        .unwrap_or_else(|_| b"null".to_vec())
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
