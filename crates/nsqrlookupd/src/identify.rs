//! The IDENTIFY body: the JSON an nsqd sends about itself, decoded with the rules of Go's
//! `encoding/json` that nsqlookupd relies on, so the same bodies are accepted and refused:
//!
//! - keys match field names case-insensitively (`TCP_PORT` sets `tcp_port`), the last one wins;
//! - `null` leaves a field unset, and a top-level `null` is an empty (then incomplete) body;
//! - ports are integer literals in int64 range (`1.0`, `1e3`, `"1"` are type errors), negative
//!   ports are accepted; any type error rejects the whole body;
//! - invalid UTF-8 and lone UTF-16 surrogate escapes inside strings become U+FFFD;
//! - unknown keys are ignored; `remote_address` is accepted and later overwritten.
//!
//! Pure: no IO, no clock. The one difference left is nesting depth inside ignored values
//! (serde_json stops at 128 levels, Go at 10000), documented in docs/compatibility.md.

use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;

/// What nsqd tells about itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IdentifyBody {
    pub broadcast_address: String,
    pub hostname: String,
    pub tcp_port: i64,
    pub http_port: i64,
    pub version: String,
    pub topology_zone: String,
    pub topology_region: String,
}

/// Why a body was refused; the texts follow `E_BAD_BODY IDENTIFY ...`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdentifyError {
    #[error("failed to decode JSON body")]
    Decode,
    #[error("missing fields")]
    MissingFields,
}

/// Decodes and checks a body: `broadcast_address`, `tcp_port`, `http_port` and `version` must
/// be set (non-empty, non-zero).
pub fn decode(body: &[u8]) -> Result<IdentifyBody, IdentifyError> {
    let text = fix_lone_surrogates(&go_lossy_utf8(body));
    let parsed: Option<Fields> = serde_json::from_str(&text).map_err(|_| IdentifyError::Decode)?;
    let b = parsed.map(|f| f.0).unwrap_or_default();
    if b.broadcast_address.is_empty() || b.tcp_port == 0 || b.http_port == 0 || b.version.is_empty()
    {
        return Err(IdentifyError::MissingFields);
    }
    Ok(b)
}

/// Invalid UTF-8 bytes each become U+FFFD (Go's decoder replaces byte by byte).
fn go_lossy_utf8(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len());
    for chunk in b.utf8_chunks() {
        out.push_str(chunk.valid());
        for _ in chunk.invalid() {
            out.push('\u{fffd}');
        }
    }
    out
}

fn hex4(b: &[u8]) -> Option<u16> {
    let s = std::str::from_utf8(b.get(..4)?).ok()?;
    if !s.bytes().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    u16::from_str_radix(s, 16).ok()
}

/// Rewrites `\uXXXX` escapes of unpaired surrogates as `\ufffd`, which Go accepts and serde_json
/// refuses. Backslashes only occur inside strings in valid JSON, and a backslash outside one
/// stays a syntax error, so a lexical pass is exact.
fn fix_lone_surrogates(s: &str) -> String {
    if !s.contains("\\u") {
        return s.to_string();
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        if b.get(i + 1) != Some(&b'u') {
            out.extend_from_slice(&b[i..(i + 2).min(b.len())]);
            i += 2;
            continue;
        }
        match hex4(&b[i + 2..]) {
            Some(0xD800..=0xDBFF)
                if b.get(i + 6..i + 8) == Some(b"\\u")
                    && matches!(hex4(&b[i + 8..]), Some(0xDC00..=0xDFFF)) =>
            {
                out.extend_from_slice(&b[i..i + 12]);
                i += 12;
            }
            Some(0xD800..=0xDFFF) => {
                out.extend_from_slice(b"\\ufffd");
                i += 6;
            }
            _ => {
                out.extend_from_slice(&b[i..i + 2]);
                i += 2;
            }
        }
    }
    // Only ASCII was inserted or removed, at ASCII boundaries, so this cannot fail.
    String::from_utf8(out).unwrap_or_default()
}

/// Go's `bytes.EqualFold` between a JSON key and an ASCII field name: ASCII case-insensitive,
/// plus the two non-ASCII runes that fold to ASCII letters (K KELVIN SIGN, ſ LONG S).
fn key_matches(key: &str, name: &str) -> bool {
    let mut k = key.chars().map(|c| match c {
        '\u{212a}' => 'k',
        '\u{17f}' => 's',
        c => c.to_ascii_lowercase(),
    });
    let mut n = name.chars();
    loop {
        match (k.next(), n.next()) {
            (None, None) => return true,
            (Some(a), Some(b)) if a == b => {}
            _ => return false,
        }
    }
}

/// A JSON object decoded into [`IdentifyBody`] field by field, in document order.
struct Fields(IdentifyBody);

/// An optional string field (`null` = keep the current value).
fn string_field<'de, A: MapAccess<'de>>(map: &mut A, slot: &mut String) -> Result<(), A::Error> {
    if let Some(s) = map.next_value::<Option<String>>()? {
        *slot = s;
    }
    Ok(())
}

/// An optional Go `int` field: integer literals only.
fn int_field<'de, A: MapAccess<'de>>(map: &mut A, slot: &mut i64) -> Result<(), A::Error> {
    if let Some(GoInt(n)) = map.next_value::<Option<GoInt>>()? {
        *slot = n;
    }
    Ok(())
}

struct GoInt(i64);

impl<'de> Deserialize<'de> for GoInt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = GoInt;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an integer")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<GoInt, E> {
                Ok(GoInt(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<GoInt, E> {
                i64::try_from(v)
                    .map(GoInt)
                    .map_err(|_| E::custom("out of range"))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Fields {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Fields;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields, A::Error> {
                let mut b = IdentifyBody::default();
                while let Some(key) = map.next_key::<String>()? {
                    let m = |name: &str| key_matches(&key, name);
                    if m("broadcast_address") {
                        string_field(&mut map, &mut b.broadcast_address)?;
                    } else if m("hostname") {
                        string_field(&mut map, &mut b.hostname)?;
                    } else if m("tcp_port") {
                        int_field(&mut map, &mut b.tcp_port)?;
                    } else if m("http_port") {
                        int_field(&mut map, &mut b.http_port)?;
                    } else if m("version") {
                        string_field(&mut map, &mut b.version)?;
                    } else if m("topology_zone") {
                        string_field(&mut map, &mut b.topology_zone)?;
                    } else if m("topology_region") {
                        string_field(&mut map, &mut b.topology_region)?;
                    } else if m("remote_address") {
                        // Decoded (so its type is checked, as in Go), then overwritten.
                        string_field(&mut map, &mut String::new())?;
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(Fields(b))
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const FULL: &str =
        r#"{"broadcast_address":"h","tcp_port":4150,"http_port":4151,"version":"1.3.0"}"#;

    #[test]
    fn what_nsqd_sends() {
        let b = decode(
            br#"{"broadcast_address":"10.0.0.1","hostname":"box","http_port":4151,"tcp_port":4150,
                "topology_region":"r","topology_zone":"z","version":"1.3.0","extra":{"a":[1,null]}}"#,
        )
        .unwrap();
        assert_eq!(
            b,
            IdentifyBody {
                broadcast_address: "10.0.0.1".into(),
                hostname: "box".into(),
                tcp_port: 4150,
                http_port: 4151,
                version: "1.3.0".into(),
                topology_zone: "z".into(),
                topology_region: "r".into(),
            }
        );
        assert_eq!(decode(FULL.as_bytes()).unwrap().hostname, "");
    }

    #[test]
    fn go_decoding_rules() {
        // Case-insensitive keys, last one wins, null keeps the earlier value.
        let b = decode(
            br#"{"BROADCAST_ADDRESS":"a","Tcp_Port":1,"tcp_port":null,"http_port":2,"HTTP_PORT":3,
                "version":"v","remote_address":"x"}"#,
        )
        .unwrap();
        assert_eq!(
            (b.broadcast_address.as_str(), b.tcp_port, b.http_port),
            ("a", 1, 3)
        );
        // Kelvin sign and long s fold to k / s.
        let b = decode("{\"broadcast_addre\u{17f}\u{17f}\":\"a\",\"tcp_port\":-1,\"http_port\":2,\"version\":\"v\"}".as_bytes()).unwrap();
        assert_eq!((b.broadcast_address.as_str(), b.tcp_port), ("a", -1));
        assert!(key_matches("\u{212a}EY", "key"));
        assert!(!key_matches("keys", "key"));
        // Lone surrogates and invalid UTF-8 become U+FFFD; a valid pair stays.
        let b = decode(b"{\"broadcast_address\":\"a\\ud800\\u0041\xff\",\"hostname\":\"\\ud83d\\ude00\\udc00\",\"tcp_port\":1,\"http_port\":2,\"version\":\"v\"}").unwrap();
        assert_eq!(b.broadcast_address, "a\u{fffd}A\u{fffd}");
        assert_eq!(b.hostname, "\u{1f600}\u{fffd}");
    }

    #[test]
    fn refusals() {
        for body in [
            &b""[..],
            b"{",
            b"[]",
            b"\"x\"",
            b"5",
            br#"{"broadcast_address":"a","tcp_port":1.0,"http_port":2,"version":"v"}"#,
            br#"{"broadcast_address":"a","tcp_port":1e3,"http_port":2,"version":"v"}"#,
            br#"{"broadcast_address":"a","tcp_port":"1","http_port":2,"version":"v"}"#,
            br#"{"broadcast_address":"a","tcp_port":9223372036854775808,"http_port":2,"version":"v"}"#,
            br#"{"broadcast_address":5,"tcp_port":1,"http_port":2,"version":"v"}"#,
            br#"{"broadcast_address":"a","tcp_port":1,"http_port":2,"version":"v","remote_address":1}"#,
            br#"{"broadcast_address":"a","tcp_port":1,"http_port":2,"version":"v"} x"#,
            b"{\"broadcast_address\":\"a\\x\",\"tcp_port\":1,\"http_port\":2,\"version\":\"v\"}",
        ] {
            assert_eq!(decode(body), Err(IdentifyError::Decode), "{}", String::from_utf8_lossy(body));
        }
        for body in [
            &b"null"[..],
            b"{}",
            br#"{"tcp_port":1,"http_port":2,"version":"v"}"#,
            br#"{"broadcast_address":"a","tcp_port":0,"http_port":2,"version":"v"}"#,
            br#"{"broadcast_address":"a","tcp_port":1,"version":"v"}"#,
            br#"{"broadcast_address":"a","tcp_port":1,"http_port":2,"version":""}"#,
        ] {
            assert_eq!(
                decode(body),
                Err(IdentifyError::MissingFields),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }
}
