//! Inline requests: `SET a "b c"\r\n`, what a human types into telnet. The line is split as
//! Redis's `sdssplitargs` does: whitespace separates arguments; "double quotes" take `\n`, `\r`,
//! `\t`, `\b`, `\a`, `\xHH` and `\<any>` escapes; 'single quotes' take only `\'`; a closing
//! quote must be followed by whitespace or the end of the line.

use std::ops::Range;

use crate::error::ProtocolError;

/// Whitespace skipped between arguments (C's `isspace`).
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn hex_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Splits `line` (without its line ending) into arguments, written one after the other into
/// `out` with their ranges in `args`. Both are cleared first.
pub fn split(
    line: &[u8],
    out: &mut Vec<u8>,
    args: &mut Vec<Range<usize>>,
) -> Result<(), ProtocolError> {
    out.clear();
    args.clear();
    let mut p = 0;
    loop {
        while p < line.len() && is_space(line[p]) {
            p += 1;
        }
        if p >= line.len() {
            return Ok(());
        }
        let start = out.len();
        p = split_one(line, p, out)?;
        args.push(start..out.len());
    }
}

/// Reads one argument starting at `p` into `out`; returns the position after it.
fn split_one(line: &[u8], mut p: usize, out: &mut Vec<u8>) -> Result<usize, ProtocolError> {
    #[derive(PartialEq)]
    enum Quote {
        None,
        Double,
        Single,
    }
    let at = |i: usize| line.get(i).copied();
    let mut quote = Quote::None;
    loop {
        let Some(c) = at(p) else {
            return if quote == Quote::None {
                Ok(p)
            } else {
                Err(ProtocolError::UnbalancedQuotes)
            };
        };
        match quote {
            Quote::Double => match c {
                b'\\'
                    if at(p + 1) == Some(b'x')
                        && at(p + 2).and_then(hex_value).is_some()
                        && at(p + 3).and_then(hex_value).is_some() =>
                {
                    let hi = at(p + 2).and_then(hex_value).unwrap_or(0);
                    let lo = at(p + 3).and_then(hex_value).unwrap_or(0);
                    out.push(hi * 16 + lo);
                    p += 3;
                }
                b'\\' if at(p + 1).is_some() => {
                    p += 1;
                    out.push(match line[p] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                }
                b'"' => return closing(line, p),
                _ => out.push(c),
            },
            Quote::Single => match c {
                b'\\' if at(p + 1) == Some(b'\'') => {
                    p += 1;
                    out.push(b'\'');
                }
                b'\'' => return closing(line, p),
                _ => out.push(c),
            },
            Quote::None => match c {
                b' ' | b'\n' | b'\r' | b'\t' => return Ok(p),
                b'"' => quote = Quote::Double,
                b'\'' => quote = Quote::Single,
                _ => out.push(c),
            },
        }
        p += 1;
    }
}

/// A closing quote at `p` must be followed by whitespace or the end of the line.
fn closing(line: &[u8], p: usize) -> Result<usize, ProtocolError> {
    match line.get(p + 1) {
        Some(&c) if !is_space(c) => Err(ProtocolError::UnbalancedQuotes),
        _ => Ok(p + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &[u8]) -> Result<Vec<Vec<u8>>, ProtocolError> {
        let (mut out, mut ranges) = (Vec::new(), Vec::new());
        split(line, &mut out, &mut ranges)?;
        Ok(ranges.into_iter().map(|r| out[r].to_vec()).collect())
    }

    fn ok(line: &str) -> Vec<String> {
        args(line.as_bytes())
            .unwrap()
            .into_iter()
            .map(|a| String::from_utf8(a).unwrap())
            .collect()
    }

    #[test]
    fn splits_on_whitespace() {
        assert_eq!(ok("  SET   a\tb  "), ["SET", "a", "b"]);
        assert!(ok("   ").is_empty());
    }

    #[test]
    fn quotes_and_escapes() {
        assert_eq!(ok(r#"SET "a b" 'c d'"#), ["SET", "a b", "c d"]);
        assert_eq!(ok(r#"ECHO "\x41\n\t\"q\"""#), ["ECHO", "A\n\t\"q\""]);
        assert_eq!(ok(r"ECHO 'it\'s'"), ["ECHO", "it's"]);
        assert_eq!(ok(r#"ECHO "\xZZ""#), ["ECHO", "xZZ"]);
        // A quote inside an unquoted word opens a quoted part of the same argument.
        assert_eq!(ok(r#"a"b c""#), ["ab c"]);
        assert_eq!(ok(r#"ECHO """#), ["ECHO", ""]);
    }

    #[test]
    fn unbalanced_quotes() {
        for bad in [
            r#"SET "a b"#,
            r#"SET "a"b c"#,
            "SET 'a",
            "SET 'a'b",
            r#"ECHO "\"#,
        ] {
            assert_eq!(
                args(bad.as_bytes()),
                Err(ProtocolError::UnbalancedQuotes),
                "{bad}"
            );
        }
    }
}
