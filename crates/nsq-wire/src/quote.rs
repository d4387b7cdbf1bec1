//! Go's `%q` formatting, because nsqd quotes names in error strings with it
//! (`E_BAD_TOPIC PUB topic name "a b" is not valid`) and clients match those strings.

/// Quote bytes as Go's `strconv.Quote` does for the strings nsqd puts in errors: the usual
/// escapes, `\xNN` for control bytes and for each byte that is not valid UTF-8, and `\uNNNN`
/// for characters Go does not print (other controls, spaces other than ' ', format
/// characters). Go decides "printable" from Unicode's categories; this covers the ones a name
/// or a command can plausibly carry.
pub fn go_quote(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len() + 2);
    out.push('"');
    for chunk in b.utf8_chunks() {
        for ch in chunk.valid().chars() {
            push_char(&mut out, ch);
        }
        for byte in chunk.invalid() {
            out.push_str(&format!("\\x{byte:02x}"));
        }
    }
    out.push('"');
    out
}

fn push_char(out: &mut String, ch: char) {
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
        c if !go_prints(c) => {
            if (c as u32) < 0x10000 {
                out.push_str(&format!("\\u{:04x}", c as u32));
            } else {
                out.push_str(&format!("\\U{:08x}", c as u32));
            }
        }
        c => out.push(c),
    }
}

/// Whether Go's `strconv.IsPrint` holds, for the characters that matter here: controls,
/// separators other than the ASCII space, and the common format characters are not printed.
fn go_prints(c: char) -> bool {
    !(c.is_control()
        || (c.is_whitespace() && c != ' ')
        || matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{feff}'))
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
        // Bytes that are not UTF-8 come out one \\x each, as Go's %q prints them.
        assert_eq!(go_quote(b"a\xff\xfeb"), "\"a\\xff\\xfeb\"");
        assert_eq!(
            go_quote("é\u{a0}\u{85}x".as_bytes()),
            "\"é\\u00a0\\u0085x\""
        );
        assert_eq!(go_quote("\u{feff}".as_bytes()), "\"\\ufeff\"");
    }
}
