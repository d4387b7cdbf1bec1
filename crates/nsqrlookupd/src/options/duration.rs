//! Go `time.Duration` text for nsqlookupd's two duration flags: parsing as `time.ParseDuration`
//! does (`300s`, `1m30s`, `1.5h`, `250ms`, `-1s`) and formatting as `Duration.String` does for
//! the usage text (`5m0s`, `45s`).
//!
//! Values are Go's signed int64 nanoseconds, so a negative timeout behaves as in nsqlookupd
//! (every producer inactive, nothing tombstoned) instead of being refused. nsqrd has a richer
//! copy of this for `std::time::Duration`; this one stays small and self-contained.

/// Why a duration text was rejected (Go's `time.ParseDuration` messages).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("time: invalid duration {0:?}")]
    Invalid(String),
    #[error("time: missing unit in duration {0:?}")]
    MissingUnit(String),
    #[error("time: unknown unit {unit:?} in duration {text:?}")]
    UnknownUnit { unit: String, text: String },
}

fn unit_nanos(unit: &str) -> Option<u64> {
    Some(match unit {
        "ns" => 1,
        "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ => return None,
    })
}

/// Leading ASCII digits of `s` and their length.
fn digits(s: &str) -> usize {
    s.bytes().take_while(u8::is_ascii_digit).count()
}

/// Parses Go duration text into signed nanoseconds.
pub fn parse(text: &str) -> Result<i64, DurationError> {
    let invalid = || DurationError::Invalid(text.to_string());
    let (neg, mut s) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    // Go accumulates in uint64 and allows up to 1<<63 for a negative total.
    let limit: u64 = if neg { 1 << 63 } else { i64::MAX as u64 };
    let mut total: u64 = 0;
    while !s.is_empty() {
        let n = digits(s);
        let mut whole: u64 = 0;
        for c in s[..n].bytes() {
            whole = whole
                .checked_mul(10)
                .and_then(|w| w.checked_add(u64::from(c - b'0')))
                .filter(|w| *w <= 1 << 63)
                .ok_or_else(invalid)?;
        }
        s = &s[n..];
        let (mut frac, mut scale, mut has_frac) = (0u64, 1f64, false);
        if let Some(rest) = s.strip_prefix('.') {
            let m = digits(rest);
            has_frac = m > 0;
            for c in rest[..m].bytes() {
                // Digits beyond what fits are dropped, as in Go.
                if let Some(f) = frac
                    .checked_mul(10)
                    .and_then(|f| f.checked_add(u64::from(c - b'0')))
                {
                    if f <= i64::MAX as u64 {
                        frac = f;
                        scale *= 10.0;
                    }
                }
            }
            s = &rest[m..];
        }
        if n == 0 && !has_frac {
            return Err(invalid());
        }
        let unit_len = s
            .bytes()
            .position(|c| c == b'.' || c.is_ascii_digit())
            .unwrap_or(s.len());
        if unit_len == 0 {
            return Err(DurationError::MissingUnit(text.to_string()));
        }
        let unit = &s[..unit_len];
        s = &s[unit_len..];
        let per = unit_nanos(unit).ok_or_else(|| DurationError::UnknownUnit {
            unit: unit.to_string(),
            text: text.to_string(),
        })?;
        let mut v = whole.checked_mul(per).ok_or_else(invalid)?;
        if frac > 0 {
            // The same float arithmetic as Go, so fractions round identically.
            v = v
                .checked_add((frac as f64 * (per as f64 / scale)) as u64)
                .ok_or_else(invalid)?;
        }
        total = total
            .checked_add(v)
            .filter(|t| *t <= limit)
            .ok_or_else(invalid)?;
    }
    Ok(if neg {
        0i64.wrapping_sub_unsigned(total)
    } else {
        i64::try_from(total).map_err(|_| invalid())?
    })
}

/// `v` with `prec` implied fraction digits, trailing zeros trimmed (`1500`, 3 → `1.5`).
fn fixed_point(v: u64, prec: u32) -> String {
    let scale = 10u64.pow(prec);
    let (int, frac) = (v / scale, v % scale);
    if frac == 0 {
        return int.to_string();
    }
    let digits = format!("{frac:0width$}", width = prec as usize);
    format!("{int}.{}", digits.trim_end_matches('0'))
}

/// Formats like Go's `Duration.String()`: `0s`, `250ms`, `1.5µs`, `45s`, `5m0s`, `-1s`.
pub fn format(d: i64) -> String {
    let sign = if d < 0 { "-" } else { "" };
    let ns = d.unsigned_abs();
    if ns == 0 {
        return "0s".to_string();
    }
    let body = if ns < 1_000 {
        format!("{ns}ns")
    } else if ns < 1_000_000 {
        format!("{}\u{b5}s", fixed_point(ns, 3))
    } else if ns < 1_000_000_000 {
        format!("{}ms", fixed_point(ns, 6))
    } else {
        let secs = ns / 1_000_000_000;
        let (h, m) = (secs / 3600, (secs / 60) % 60);
        let mut out = String::new();
        if h > 0 {
            out.push_str(&format!("{h}h"));
        }
        if h > 0 || m > 0 {
            out.push_str(&format!("{m}m"));
        }
        out.push_str(&fixed_point(ns % 60_000_000_000, 9));
        out.push('s');
        out
    };
    format!("{sign}{body}")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;
    const S: i64 = 1_000_000_000;

    #[test]
    fn parses_go_syntax() {
        for (text, want) in [
            ("300s", 300 * S),
            ("5m", 300 * S),
            ("1m30s", 90 * S),
            ("1.5h", 5400 * S),
            ("250ms", 250 * MS),
            ("100us", 100_000),
            ("100\u{b5}s", 100_000),
            ("7ns", 7),
            ("0", 0),
            ("-0", 0),
            ("+5s", 5 * S),
            (".5s", 500 * MS),
            ("1.s", S),
            ("-1s", -S),
            ("2h45m30.5s", (2 * 3600 + 45 * 60) * S + 30_500 * MS),
            ("9223372036854775807ns", i64::MAX),
            ("-9223372036854775808ns", i64::MIN),
        ] {
            assert_eq!(parse(text), Ok(want), "{text}");
        }
    }

    #[test]
    fn rejects_like_go() {
        assert_eq!(
            parse("").unwrap_err().to_string(),
            "time: invalid duration \"\""
        );
        assert_eq!(
            parse("10").unwrap_err().to_string(),
            "time: missing unit in duration \"10\""
        );
        assert_eq!(
            parse("1x").unwrap_err().to_string(),
            "time: unknown unit \"x\" in duration \"1x\""
        );
        for bad in [
            "s",
            ".s",
            "-",
            "1s1",
            "9223372036854775808ns",
            "1e3s",
            " 1s",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn formats_like_go() {
        for (d, want) in [
            (0, "0s"),
            (300 * S, "5m0s"),
            (45 * S, "45s"),
            (250 * MS, "250ms"),
            (1_500, "1.5\u{b5}s"),
            (7, "7ns"),
            (3600 * S + 1, "1h0m0.000000001s"),
            (-S, "-1s"),
        ] {
            assert_eq!(format(d), want, "{d}");
        }
    }
}
