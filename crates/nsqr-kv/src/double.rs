//! A double argument as Redis 7.0's `getDoubleFromObject` reads one: C's `strtod` over the
//! whole argument, refused when it starts with a space, is NaN, or is out of range (`strtod`'s
//! ERANGE: a finite number too large, which would read as infinity, or one too small, which
//! would read as zero; a subnormal result is kept). So `1e400` and `1e-400` are errors, `inf`,
//! `-Infinity` and hexadecimal floats (`0x1.8p3`) are numbers, as in Redis.

/// The double `s` stands for, if Redis would take it.
pub fn parse_double(s: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(s).ok()?;
    if text.is_empty() || text.starts_with(|c: char| c.is_ascii_whitespace()) {
        return None;
    }
    let (negative, body) = match text.as_bytes()[0] {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let lower = body.to_ascii_lowercase();
    let v = if lower == "inf" || lower == "infinity" {
        f64::INFINITY
    } else if let Some(hex) = lower.strip_prefix("0x") {
        parse_hex(hex)?
    } else {
        if !body.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
            return None;
        }
        let v: f64 = body.parse().ok()?;
        let mantissa = body.split(['e', 'E']).next().unwrap_or_default();
        let nonzero = mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b));
        if v.is_infinite() || (v == 0.0 && nonzero) {
            return None;
        }
        v
    };
    Some(if negative { -v } else { v })
}

/// The digits after `0x`: hexadecimal digits with an optional point, then an optional binary
/// exponent (`p` and a decimal integer).
fn parse_hex(s: &str) -> Option<f64> {
    let (digits, exp) = match s.split_once('p') {
        Some((d, e)) => (d, e.parse::<i32>().ok()?),
        None => (s, 0),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let mut mantissa: u128 = 0;
    let mut scale: i32 = 0;
    for (i, c) in int.chars().chain(frac.chars()).enumerate() {
        let d = c.to_digit(16)?;
        if mantissa >> 120 == 0 {
            mantissa = mantissa * 16 + u128::from(d);
            if i >= int.len() {
                scale -= 4;
            }
        } else if i < int.len() {
            scale += 4;
        }
    }
    let v = mantissa as f64 * 2f64.powi(exp.saturating_add(scale));
    let nonzero = mantissa != 0;
    (v.is_finite() && !(v == 0.0 && nonzero)).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_redis_reads_them() {
        for (text, v) in [
            ("1", 1.0),
            ("-2.5", -2.5),
            (".5", 0.5),
            ("1.", 1.0),
            ("+3e2", 300.0),
            ("inf", f64::INFINITY),
            ("-Infinity", f64::NEG_INFINITY),
            ("0x10", 16.0),
            ("0x1.8p3", 12.0),
            ("-0x.8", -0.5),
            ("1e-310", 1e-310),
            ("0e500", 0.0),
            ("1e308", 1e308),
        ] {
            assert_eq!(parse_double(text.as_bytes()), Some(v), "{text}");
        }
        for bad in [
            "",
            " 1",
            "1 ",
            "nan",
            "-nan",
            "1e400",
            "-1e400",
            "1e-400",
            "0x",
            "0xg",
            "1e",
            "abc",
            "1,5",
            "0x1p99999",
        ] {
            assert_eq!(parse_double(bad.as_bytes()), None, "{bad}");
        }
    }
}
