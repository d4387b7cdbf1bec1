//! Redis's number rules. Lengths in the protocol and integer arguments of commands are read by
//! one function in Redis (`string2ll`): an optional `-`, decimal digits, no `+`, no spaces, no
//! leading zeros, and the value must fit in 64 bits. Using the same rule here means `*01`,
//! `$+4` and `EXPIRE k " 5"` are refused exactly where Redis refuses them.

/// Parses `s` as Redis's `string2ll` does; `None` for anything it refuses.
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s {
        [] => return None,
        [b'0'] => return Some(0),
        [b'-', rest @ ..] => (true, rest),
        _ => (false, s),
    };
    // Leading zeros (and "-0") are refused, as is an empty digit string.
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    if neg {
        // i64::MIN's magnitude is one more than i64::MAX.
        if v > i64::MAX as u64 + 1 {
            None
        } else {
            Some((v as i64).wrapping_neg())
        }
    } else {
        i64::try_from(v).ok()
    }
}

/// Parses an unsigned 64-bit number with the same rules (no sign allowed): SCAN cursors.
pub fn parse_u64(s: &[u8]) -> Option<u64> {
    match s {
        [] => None,
        [b'0'] => Some(0),
        [b'1'..=b'9', ..] => s.iter().try_fold(0u64, |v, &c| {
            if c.is_ascii_digit() {
                v.checked_mul(10)?.checked_add(u64::from(c - b'0'))
            } else {
                None
            }
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accepts_what_string2ll_accepts() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-1"), Some(-1));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
    }

    #[test]
    fn refuses_what_string2ll_refuses() {
        for bad in [
            &b""[..],
            b"-",
            b"-0",
            b"01",
            b"+1",
            b" 1",
            b"1 ",
            b"1a",
            b"9223372036854775808",
            b"-9223372036854775809",
            b"99999999999999999999999",
        ] {
            assert_eq!(parse_i64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn cursors() {
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b"-1"), None);
        assert_eq!(parse_u64(b"00"), None);
    }

    proptest! {
        #[test]
        fn round_trips_every_i64(v in any::<i64>()) {
            prop_assert_eq!(parse_i64(v.to_string().as_bytes()), Some(v));
        }

        #[test]
        fn never_panics(s in proptest::collection::vec(any::<u8>(), 0..30)) {
            let _ = parse_i64(&s);
            let _ = parse_u64(&s);
        }
    }
}
