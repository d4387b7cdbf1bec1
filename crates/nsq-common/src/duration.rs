//! Go `time.Duration` text: parsing (`time.ParseDuration`) and formatting (`Duration.String`).
//!
//! It is here because nsqd's and nsqlookupd's duration flags and config values, and the bench
//! CLI's `--duration`, are all written in Go's syntax (`1m`, `250ms`, `1h30m`, `1.5s`, `100us`,
//! `100µs`), and both daemons print defaults in their usage text as Go does (`1m0s`, `5m0s`).
//!
//! Two views of the same parser: [`parse`] gives a `std::time::Duration` and refuses negative
//! durations (accepted by Go, meaningless for every nsqd option); [`parse_nanos`] gives Go's
//! signed int64 nanoseconds, so a negative nsqlookupd timeout behaves as it does upstream.

use std::time::Duration;

/// Why a duration text was rejected; the messages follow Go's `time.ParseDuration`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("time: invalid duration {0:?}")]
    Invalid(String),
    #[error("time: missing unit in duration {0:?}")]
    MissingUnit(String),
    #[error("time: unknown unit {unit:?} in duration {text:?}")]
    UnknownUnit { unit: String, text: String },
    /// Only from [`parse`]: `std::time::Duration` cannot be negative.
    #[error("time: negative duration {0:?} is not allowed")]
    Negative(String),
}

/// Largest value Go's `Duration` (int64 nanoseconds) can hold.
const MAX_NANOS: u64 = i64::MAX as u64;
/// The magnitude of the smallest (most negative) Go `Duration`.
const MIN_NANOS_MAGNITUDE: u64 = 1 << 63;

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

/// Consumes leading ASCII digits; `None` on overflow of Go's int64 range.
fn leading_int(s: &str) -> Option<(u64, &str)> {
    let end = s
        .bytes()
        .position(|c| !c.is_ascii_digit())
        .unwrap_or(s.len());
    let mut v: u64 = 0;
    for c in s[..end].bytes() {
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
        if v > MAX_NANOS + 1 {
            return None;
        }
    }
    Some((v, &s[end..]))
}

/// Consumes leading digits of a fraction: (value, scale, rest). Digits past what fits are dropped.
fn leading_fraction(s: &str) -> (u64, f64, &str) {
    let end = s
        .bytes()
        .position(|c| !c.is_ascii_digit())
        .unwrap_or(s.len());
    let (mut x, mut scale, mut overflow) = (0u64, 1f64, false);
    for c in s[..end].bytes() {
        if overflow {
            continue;
        }
        match x
            .checked_mul(10)
            .and_then(|y| y.checked_add(u64::from(c - b'0')))
        {
            Some(y) if y <= MAX_NANOS => {
                x = y;
                scale *= 10.0;
            }
            _ => overflow = true,
        }
    }
    (x, scale, &s[end..])
}

/// The sign and magnitude of Go duration text. The magnitude may not exceed `MAX_NANOS`, or
/// `negative_limit` when the text starts with `-`.
fn parse_magnitude(text: &str, negative_limit: u64) -> Result<(bool, u64), DurationError> {
    let invalid = || DurationError::Invalid(text.to_string());
    let (neg, mut s) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if s == "0" {
        return Ok((neg, 0));
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let limit = if neg { negative_limit } else { MAX_NANOS };
    let mut total: u64 = 0;
    while !s.is_empty() {
        if !matches!(s.as_bytes()[0], b'.' | b'0'..=b'9') {
            return Err(invalid());
        }
        let before = s.len();
        let (whole, rest) = leading_int(s).ok_or_else(invalid)?;
        let pre = rest.len() != before;
        s = rest;
        let (mut frac, mut scale, mut post) = (0u64, 1f64, false);
        if let Some(rest) = s.strip_prefix('.') {
            let before = rest.len();
            let (f, sc, rest) = leading_fraction(rest);
            (frac, scale, post) = (f, sc, rest.len() != before);
            s = rest;
        }
        if !pre && !post {
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
            // Same float arithmetic as Go, so `1.5s` and friends round identically.
            v = v
                .checked_add((frac as f64 * (per as f64 / scale)) as u64)
                .ok_or_else(invalid)?;
        }
        total = total.checked_add(v).ok_or_else(invalid)?;
        if total > limit {
            return Err(invalid());
        }
    }
    Ok((neg, total))
}

/// Parses a Go duration string such as `300ms`, `1.5h` or `2h45m`. `0` needs no unit; a
/// negative duration (other than `-0`) is refused with [`DurationError::Negative`].
pub fn parse(text: &str) -> Result<Duration, DurationError> {
    let (neg, total) = parse_magnitude(text, MAX_NANOS)?;
    if neg && total != 0 {
        return Err(DurationError::Negative(text.to_string()));
    }
    Ok(Duration::from_nanos(total))
}

/// Parses a Go duration string into Go's signed nanoseconds (`-1s` is `-1_000_000_000`), over
/// Go's whole range (`i64::MIN` ns to `i64::MAX` ns).
pub fn parse_nanos(text: &str) -> Result<i64, DurationError> {
    let (neg, total) = parse_magnitude(text, MIN_NANOS_MAGNITUDE)?;
    if neg {
        Ok(0i64.wrapping_sub_unsigned(total))
    } else {
        i64::try_from(total).map_err(|_| DurationError::Invalid(text.to_string()))
    }
}

/// `v` as a decimal with `prec` implied fraction digits, trailing zeros trimmed (`1500`,3 → `1.5`).
fn fixed_point(v: u128, prec: u32) -> String {
    let scale = 10u128.pow(prec);
    let (int, frac) = (v / scale, v % scale);
    if frac == 0 {
        return int.to_string();
    }
    let digits = format!("{frac:0width$}", width = prec as usize);
    format!("{int}.{}", digits.trim_end_matches('0'))
}

/// Formats like Go's `Duration.String()`: `0s`, `250ms`, `1.5µs`, `2s`, `1m0s`, `1h30m0s`.
pub fn format(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns == 0 {
        return "0s".to_string();
    }
    if ns < 1_000 {
        return format!("{ns}ns");
    }
    if ns < 1_000_000 {
        return format!("{}\u{b5}s", fixed_point(ns, 3));
    }
    if ns < 1_000_000_000 {
        return format!("{}ms", fixed_point(ns, 6));
    }
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
}

/// Formats Go's signed nanoseconds as `Duration.String()` does: [`format`] with a leading `-`
/// for a negative duration (`-1s`, `-1.5ms`).
pub fn format_nanos(ns: i64) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    format!("{sign}{}", format(Duration::from_nanos(ns.unsigned_abs())))
}

/// A duration as Go's integer nanoseconds, saturating at `i64::MAX`.
pub fn as_go_nanos(d: Duration) -> i64 {
    i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;
    const S: i64 = 1_000_000_000;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn parses_go_syntax() {
        assert_eq!(parse("1m").unwrap(), Duration::from_secs(60));
        assert_eq!(parse("250ms").unwrap(), ms(250));
        assert_eq!(parse("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse("1.5s").unwrap(), ms(1500));
        assert_eq!(parse("100us").unwrap(), Duration::from_micros(100));
        assert_eq!(parse("100µs").unwrap(), Duration::from_micros(100));
        assert_eq!(parse("100\u{3bc}s").unwrap(), Duration::from_micros(100));
        assert_eq!(parse("7ns").unwrap(), Duration::from_nanos(7));
        assert_eq!(parse("0").unwrap(), Duration::ZERO);
        assert_eq!(parse("+5s").unwrap(), Duration::from_secs(5));
        assert_eq!(parse("-0").unwrap(), Duration::ZERO);
        assert_eq!(parse(".5s").unwrap(), ms(500));
        assert_eq!(parse("1.s").unwrap(), ms(1000));
        assert_eq!(
            parse("2h45m30.5s").unwrap(),
            ms((2 * 3600 + 45 * 60) * 1000 + 30_500)
        );
        assert_eq!(
            parse("1.0000000001s").unwrap(),
            Duration::from_nanos(1_000_000_000)
        );
    }

    #[test]
    fn parses_signed_go_nanos() {
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
            assert_eq!(parse_nanos(text), Ok(want), "{text}");
        }
        for bad in [
            "",
            "10",
            "1x",
            "s",
            ".s",
            "-",
            "1s1",
            "9223372036854775808ns",
            "-9223372036854775809ns",
            "1e3s",
            " 1s",
        ] {
            assert!(parse_nanos(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rejects_bad_text_with_go_messages() {
        assert_eq!(
            parse("").unwrap_err().to_string(),
            "time: invalid duration \"\""
        );
        assert_eq!(
            parse("1").unwrap_err().to_string(),
            "time: missing unit in duration \"1\""
        );
        assert_eq!(
            parse("1x").unwrap_err().to_string(),
            "time: unknown unit \"x\" in duration \"1x\""
        );
        assert_eq!(
            parse("s").unwrap_err(),
            DurationError::Invalid("s".to_string())
        );
        assert_eq!(
            parse(".s").unwrap_err(),
            DurationError::Invalid(".s".to_string())
        );
        assert_eq!(
            parse("1s1").unwrap_err(),
            DurationError::MissingUnit("1s1".to_string())
        );
        assert!(matches!(
            parse("-1s").unwrap_err(),
            DurationError::Negative(_)
        ));
        // Past i64::MAX ns is invalid whatever the sign for `parse`.
        assert!(matches!(
            parse("-9223372036854775808ns").unwrap_err(),
            DurationError::Invalid(_)
        ));
        assert!(matches!(
            parse("9999999999999999999h").unwrap_err(),
            DurationError::Invalid(_)
        ));
        assert!(matches!(
            parse("3000000h").unwrap_err(),
            DurationError::Invalid(_)
        ));
    }

    #[test]
    fn formats_like_go() {
        assert_eq!(format(Duration::ZERO), "0s");
        assert_eq!(format(Duration::from_nanos(7)), "7ns");
        assert_eq!(format(Duration::from_nanos(1500)), "1.5µs");
        assert_eq!(format(ms(25)), "25ms");
        assert_eq!(format(ms(250)), "250ms");
        assert_eq!(format(Duration::from_secs(2)), "2s");
        assert_eq!(format(ms(1500)), "1.5s");
        assert_eq!(format(Duration::from_secs(60)), "1m0s");
        assert_eq!(format(Duration::from_secs(600)), "10m0s");
        assert_eq!(format(Duration::from_secs(3600)), "1h0m0s");
        assert_eq!(format(Duration::from_secs(5400)), "1h30m0s");
        assert_eq!(format(ms(3_723_004)), "1h2m3.004s");
    }

    #[test]
    fn formats_signed_nanos_like_go() {
        for (d, want) in [
            (0, "0s"),
            (300 * S, "5m0s"),
            (45 * S, "45s"),
            (250 * MS, "250ms"),
            (1_500, "1.5\u{b5}s"),
            (7, "7ns"),
            (3600 * S + 1, "1h0m0.000000001s"),
            (-S, "-1s"),
            (i64::MIN, "-2562047h47m16.854775808s"),
        ] {
            assert_eq!(format_nanos(d), want, "{d}");
        }
    }

    #[test]
    fn format_then_parse_round_trips() {
        for d in [
            ms(1),
            ms(25),
            ms(1500),
            Duration::from_secs(86_400),
            ms(61_001),
        ] {
            assert_eq!(parse(&format(d)).unwrap(), d);
        }
        for ns in [i64::MIN, -S, 0, 1, i64::MAX] {
            assert_eq!(parse_nanos(&format_nanos(ns)), Ok(ns));
        }
    }

    #[test]
    fn go_nanos_saturate() {
        assert_eq!(as_go_nanos(Duration::from_secs(60)), 60_000_000_000);
        assert_eq!(as_go_nanos(Duration::MAX), i64::MAX);
    }
}
