//! Go's `%q` formatting, because nsqd quotes names in error strings with it
//! (`E_BAD_TOPIC PUB topic name "a b" is not valid`) and clients match those strings.

/// Quote bytes as Go's `strconv.Quote` does for the strings nsqd puts in errors.
pub fn go_quote(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(b);
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_like_go() {
        assert_eq!(go_quote(b"abc"), "\"abc\"");
        assert_eq!(go_quote(b"a b"), "\"a b\"");
        assert_eq!(go_quote(b"a\"b"), "\"a\\\"b\"");
        assert_eq!(go_quote(b"a\x01"), "\"a\\x01\"");
        assert_eq!(go_quote(b""), "\"\"");
    }
}
