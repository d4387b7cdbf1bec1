//! Go-style durations (`3s`, `500ms`, `1m30s`, `1.5h`, `250us`), as nsq's tools take them.

use std::time::Duration;

/// Parse a Go duration string. Negative durations are rejected; a bare `0` is allowed.
pub fn parse(s: &str) -> Result<Duration, String> {
    let bad = || format!("invalid duration {s:?} (examples: 3s, 500ms, 1m30s)");
    let t = s.trim();
    if t == "0" {
        return Ok(Duration::ZERO);
    }
    if t.is_empty() || t.starts_with('-') {
        return Err(bad());
    }
    let t = t.strip_prefix('+').unwrap_or(t);
    let mut rest = t;
    let mut total_ns: f64 = 0.0;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        if num_len == 0 {
            return Err(bad());
        }
        let value: f64 = rest[..num_len].parse().map_err(|_| bad())?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return Err(bad()),
        };
        rest = &rest[unit_len..];
        total_ns += value * scale;
    }
    if !total_ns.is_finite() || total_ns > u64::MAX as f64 {
        return Err(bad());
    }
    Ok(Duration::from_nanos(total_ns.round() as u64))
}

/// A short human form: `3s`, `500ms`, `1.25s`, `120µs`.
pub fn format(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns == 0 {
        "0s".to_string()
    } else if ns.is_multiple_of(1_000_000_000) {
        format!("{}s", ns / 1_000_000_000)
    } else if ns >= 1_000_000_000 {
        format!("{:.3}s", d.as_secs_f64())
    } else if ns.is_multiple_of(1_000_000) {
        format!("{}ms", ns / 1_000_000)
    } else if ns >= 1_000_000 {
        format!("{:.3}ms", ns as f64 / 1e6)
    } else if ns >= 1_000 {
        format!("{:.1}µs", ns as f64 / 1e3)
    } else {
        format!("{ns}ns")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_go_forms() {
        assert_eq!(parse("3s"), Ok(Duration::from_secs(3)));
        assert_eq!(parse("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse("1.5h"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse("250µs"), Ok(Duration::from_micros(250)));
        assert_eq!(parse("0"), Ok(Duration::ZERO));
        assert_eq!(parse("10ns"), Ok(Duration::from_nanos(10)));
    }

    #[test]
    fn rejects_garbage() {
        for s in ["", "3", "s", "-1s", "3x", "1.2.3s", "ms5"] {
            assert!(parse(s).is_err(), "{s} should not parse");
        }
    }

    #[test]
    fn formats() {
        assert_eq!(format(Duration::from_secs(3)), "3s");
        assert_eq!(format(Duration::from_millis(500)), "500ms");
        assert_eq!(format(Duration::from_millis(1250)), "1.250s");
    }
}
