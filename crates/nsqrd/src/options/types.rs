//! The value types behind nsqd's options and the text rules that read them.
//!
//! One `Kind` per way nsqd's Go `flag` set reads a value (string, int, duration, bool, list, log
//! level, TLS modes). `Value` carries a typed value between the flag table and the three places
//! that read or write options: argv, the TOML config file and `/config/:opt`. The number parsers
//! follow Go's `strconv` rules so that `-mem-queue-size=0x10` or `-snappy=F` mean what they mean
//! to nsqd.

use std::str::FromStr;
use std::time::Duration;

use nsq_common::duration::{self, DurationError};
use nsq_common::logging::LevelFilter;

/// Log verbosity (`nsq_common::logging`, shared with nsqrlookupd).
pub use nsq_common::logging::LogLevel;

/// The tracing filter that shows what nsqd shows at `level`.
pub fn level_filter(level: LogLevel) -> LevelFilter {
    match level {
        LogLevel::Debug => LevelFilter::DEBUG,
        LogLevel::Info => LevelFilter::INFO,
        LogLevel::Warn => LevelFilter::WARN,
        LogLevel::Error | LogLevel::Fatal => LevelFilter::ERROR,
    }
}

/// `--tls-required`: whether clients must upgrade to TLS (and whether HTTP is exempt).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsRequired {
    /// `false`: TLS is optional (0 in `/config/tls_required`).
    False = 0,
    /// `tcp-https`: TCP clients must use TLS, plain HTTP is refused, HTTPS allowed (1).
    TcpHttps = 1,
    /// `true`: TLS required on TCP, plain HTTP still served (2).
    True = 2,
}

impl TlsRequired {
    /// The value as written on the command line.
    pub fn name(self) -> &'static str {
        match self {
            TlsRequired::False => "false",
            TlsRequired::TcpHttps => "tcp-https",
            TlsRequired::True => "true",
        }
    }

    /// nsqd's integer for the mode (0, 1, 2).
    pub fn as_int(self) -> i64 {
        self as i64
    }
}

impl FromStr for TlsRequired {
    type Err = ValueError;

    /// `tcp-https` (any case) or anything Go's `strconv.ParseBool` accepts.
    fn from_str(s: &str) -> Result<Self, ValueError> {
        if s.eq_ignore_ascii_case("tcp-https") {
            return Ok(TlsRequired::TcpHttps);
        }
        match parse_go_bool(&s.to_ascii_lowercase()) {
            Some(true) => Ok(TlsRequired::True),
            Some(false) => Ok(TlsRequired::False),
            None => Err(ValueError::Other(format!(
                "strconv.ParseBool: parsing {s:?}: invalid syntax"
            ))),
        }
    }
}

/// TLS protocol versions as the TLS wire constants nsqd reports.
pub const TLS_1_0: u16 = 0x0301;
pub const TLS_1_1: u16 = 0x0302;
pub const TLS_1_2: u16 = 0x0303;
pub const TLS_1_3: u16 = 0x0304;

const TLS_VERSIONS: [(&str, u16); 4] = [
    ("tls1.0", TLS_1_0),
    ("tls1.1", TLS_1_1),
    ("tls1.2", TLS_1_2),
    ("tls1.3", TLS_1_3),
];

/// `tls1.0` … `tls1.3`, case-insensitive; `""` means the default (TLS 1.0). `ssl3.0` is refused.
pub fn parse_tls_version(s: &str) -> Result<u16, ValueError> {
    let lower = s.to_ascii_lowercase();
    if lower.is_empty() {
        return Ok(TLS_1_0);
    }
    TLS_VERSIONS
        .iter()
        .find(|(name, _)| *name == lower)
        .map(|&(_, v)| v)
        .ok_or_else(|| ValueError::Other(format!("unknown tlsVersionOption {lower:?}")))
}

/// The name of a TLS version constant (`0x0303` → `tls1.2`).
pub fn tls_version_name(v: u16) -> Option<&'static str> {
    TLS_VERSIONS.iter().find(|e| e.1 == v).map(|e| e.0)
}

/// Why a value text was rejected. Flag errors show Go's short reasons (`parse error`,
/// `value out of range`); config-file errors show the detail.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ValueError {
    #[error("parse error")]
    Parse,
    #[error("value out of range")]
    Range,
    #[error(transparent)]
    Duration(#[from] DurationError),
    #[error(transparent)]
    LogLevel(#[from] nsq_common::logging::LogLevelError),
    #[error("{0}")]
    Other(String),
}

impl ValueError {
    /// The reason Go's `flag` package prints: it hides the detail of duration errors.
    pub fn flag_reason(&self) -> String {
        match self {
            ValueError::Duration(_) => ValueError::Parse.to_string(),
            other => other.to_string(),
        }
    }
}

/// How a flag's text is read; also decides how `/config/:opt` renders the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Str,
    Int,
    Port,
    Bool,
    Duration,
    /// Repeatable flag; each occurrence adds one string.
    StrList,
    /// Repeatable flag; each occurrence adds comma-separated floats; kept sorted descending.
    FloatList,
    LogLevel,
    /// Bool-style flag that also takes `=tcp-https`.
    TlsRequired,
    TlsMinVersion,
}

impl Kind {
    /// Go's bool flags: a bare `-flag` means true and never takes the next argument.
    pub fn is_bool_style(self) -> bool {
        matches!(self, Kind::Bool | Kind::TlsRequired)
    }

    /// The type word Go's usage text shows after the flag name.
    pub fn usage_type(self) -> &'static str {
        match self {
            Kind::Str => "string",
            Kind::Int | Kind::Port => "int",
            Kind::Duration => "duration",
            Kind::Bool | Kind::TlsRequired => "",
            Kind::StrList | Kind::FloatList | Kind::LogLevel | Kind::TlsMinVersion => "value",
        }
    }

    /// Reads one occurrence of the value from text. For list kinds the result holds only the
    /// items of this text; the caller appends them.
    pub fn parse_text(self, s: &str) -> Result<Value, ValueError> {
        Ok(match self {
            Kind::Str => Value::Str(s.to_string()),
            Kind::Int => Value::Int(parse_go_int(s)?),
            Kind::Port => {
                Value::U16(u16::try_from(parse_go_int(s)?).map_err(|_| ValueError::Range)?)
            }
            Kind::Bool => Value::Bool(parse_go_bool(s).ok_or(ValueError::Parse)?),
            Kind::Duration => Value::Duration(duration::parse(s)?),
            Kind::StrList => Value::StrList(vec![s.to_string()]),
            Kind::FloatList => Value::FloatList(
                s.split(',')
                    .map(parse_float)
                    .collect::<Result<Vec<f64>, ValueError>>()?,
            ),
            Kind::LogLevel => Value::LogLevel(s.parse()?),
            Kind::TlsRequired => Value::TlsRequired(s.parse()?),
            Kind::TlsMinVersion => Value::U16(parse_tls_version(s)?),
        })
    }
}

/// A typed option value moving between the flag table and argv / TOML / `/config`.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Str(String),
    Int(i64),
    U16(u16),
    Bool(bool),
    Duration(Duration),
    StrList(Vec<String>),
    FloatList(Vec<f64>),
    LogLevel(LogLevel),
    TlsRequired(TlsRequired),
}

impl Value {
    /// The stored form of a value: percentiles sorted descending, as nsqd keeps them.
    pub fn normalized(self) -> Value {
        match self {
            Value::FloatList(mut v) => {
                v.sort_by(|a, b| b.total_cmp(a));
                Value::FloatList(v)
            }
            v => v,
        }
    }
}

/// The Rust types of `Options` fields, convertible to and from `Value`.
pub trait OptType: Sized {
    fn to_value(&self) -> Value;
    /// `None` when `v` is of another variant (a table bug, caught by the table's tests).
    fn from_value(v: Value) -> Option<Self>;
}

macro_rules! opt_type {
    ($ty:ty, $variant:ident) => {
        impl OptType for $ty {
            fn to_value(&self) -> Value {
                Value::$variant(<$ty as Clone>::clone(self))
            }
            fn from_value(v: Value) -> Option<Self> {
                match v {
                    Value::$variant(x) => Some(x),
                    _ => None,
                }
            }
        }
    };
}

opt_type!(String, Str);
opt_type!(i64, Int);
opt_type!(u16, U16);
opt_type!(bool, Bool);
opt_type!(Duration, Duration);
opt_type!(Vec<String>, StrList);
opt_type!(Vec<f64>, FloatList);
opt_type!(LogLevel, LogLevel);
opt_type!(TlsRequired, TlsRequired);

pub use nsq_common::goflag::parse_bool as parse_go_bool;

/// Go's rule for `_` in base-0 integer literals: only between digits (a base prefix counts).
fn underscores_ok(s: &str) -> bool {
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    let b = s.as_bytes();
    let (mut i, mut saw, mut hex) = (0, b'^', false);
    if b.len() >= 2 && b[0] == b'0' && matches!(b[1].to_ascii_lowercase(), b'b' | b'o' | b'x') {
        (i, saw, hex) = (2, b'0', b[1].eq_ignore_ascii_case(&b'x'));
    }
    for &c in &b[i..] {
        if c.is_ascii_digit() || (hex && c.is_ascii_hexdigit()) {
            saw = b'0';
        } else if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
        } else {
            if saw == b'_' {
                return false;
            }
            saw = b'!';
        }
    }
    saw != b'_'
}

/// Go's `strconv.ParseInt(s, 0, 64)`: optional sign, `0x`/`0o`/`0b`/leading-`0` prefixes, `_`.
pub fn parse_go_int(s: &str) -> Result<i64, ValueError> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = body.to_ascii_lowercase();
    let (base, digits) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d)
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d)
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..])
    } else {
        (10, lower.as_str())
    };
    if digits.contains('_') && !underscores_ok(s) {
        return Err(ValueError::Parse);
    }
    let mut n: u64 = 0;
    let mut any = false;
    for c in digits.chars().filter(|&c| c != '_') {
        let d = c.to_digit(base).ok_or(ValueError::Parse)?;
        n = n
            .checked_mul(u64::from(base))
            .and_then(|n| n.checked_add(u64::from(d)))
            .ok_or(ValueError::Range)?;
        any = true;
    }
    if !any {
        return Err(ValueError::Parse);
    }
    if neg {
        if n > i64::MAX as u64 + 1 {
            return Err(ValueError::Range);
        }
        Ok((n as i64).wrapping_neg())
    } else {
        i64::try_from(n).map_err(|_| ValueError::Range)
    }
}

/// A float as written for `--e2e-processing-latency-percentile`.
pub fn parse_float(s: &str) -> Result<f64, ValueError> {
    s.trim()
        .parse::<f64>()
        .map_err(|e| ValueError::Other(format!("strconv.ParseFloat: parsing {s:?}: {e}")))
}

/// Formats a float like Go's `%v` (`0.5`, `2`, `1e+06`, `1e-05`), for messages nsqd prints.
pub fn go_format_float(v: f64) -> String {
    if v.is_nan() {
        return "NaN".to_string();
    }
    if v.is_infinite() {
        return if v > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    let sci = format!("{:e}", v); // shortest digits, e.g. "-1.5e6"
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn go_ints() {
        assert_eq!(parse_go_int("10000"), Ok(10000));
        assert_eq!(parse_go_int("-5"), Ok(-5));
        assert_eq!(parse_go_int("+5"), Ok(5));
        assert_eq!(parse_go_int("0x10"), Ok(16));
        assert_eq!(parse_go_int("0X1f"), Ok(31));
        assert_eq!(parse_go_int("010"), Ok(8));
        assert_eq!(parse_go_int("0o17"), Ok(15));
        assert_eq!(parse_go_int("0b101"), Ok(5));
        assert_eq!(parse_go_int("1_000"), Ok(1000));
        assert_eq!(parse_go_int("0"), Ok(0));
        assert_eq!(parse_go_int("-9223372036854775808"), Ok(i64::MIN));
        assert_eq!(parse_go_int("9223372036854775808"), Err(ValueError::Range));
        assert_eq!(parse_go_int("99999999999999999999"), Err(ValueError::Range));
        for bad in [
            "", "-", "abc", "1.5", "08", "0x", "1__0", "_1", "1_", " 1", "1e3",
        ] {
            assert_eq!(parse_go_int(bad), Err(ValueError::Parse), "{bad:?}");
        }
    }

    #[test]
    fn go_bools() {
        for t in ["1", "t", "T", "true", "TRUE", "True"] {
            assert_eq!(parse_go_bool(t), Some(true));
        }
        for f in ["0", "f", "F", "false", "FALSE", "False"] {
            assert_eq!(parse_go_bool(f), Some(false));
        }
        assert_eq!(parse_go_bool("yes"), None);
        assert_eq!(parse_go_bool("tRue"), None);
    }

    #[test]
    fn kinds_parse_text() {
        assert_eq!(Kind::Port.parse_text("4151"), Ok(Value::U16(4151)));
        assert_eq!(Kind::Port.parse_text("65536"), Err(ValueError::Range));
        assert_eq!(Kind::Port.parse_text("-1"), Err(ValueError::Range));
        assert_eq!(
            Kind::FloatList.parse_text("1.0,0.99"),
            Ok(Value::FloatList(vec![1.0, 0.99]))
        );
        assert!(Kind::FloatList.parse_text("0.5,x").is_err());
        assert_eq!(
            Kind::StrList.parse_text("a,b"),
            Ok(Value::StrList(vec!["a,b".to_string()]))
        );
        assert_eq!(
            Kind::LogLevel.parse_text("WARN"),
            Ok(Value::LogLevel(LogLevel::Warn))
        );
        assert!(Kind::LogLevel.parse_text("loud").is_err());
        assert_eq!(
            Kind::Duration.parse_text("1x").unwrap_err().flag_reason(),
            "parse error"
        );
    }

    #[test]
    fn tls_texts() {
        assert_eq!("tcp-https".parse(), Ok(TlsRequired::TcpHttps));
        assert_eq!("TCP-HTTPS".parse(), Ok(TlsRequired::TcpHttps));
        assert_eq!("true".parse(), Ok(TlsRequired::True));
        assert_eq!("1".parse(), Ok(TlsRequired::True));
        assert_eq!("FALSE".parse(), Ok(TlsRequired::False));
        assert_eq!(
            "maybe".parse::<TlsRequired>().unwrap_err().to_string(),
            "strconv.ParseBool: parsing \"maybe\": invalid syntax"
        );
        assert_eq!(parse_tls_version("TLS1.2"), Ok(TLS_1_2));
        assert_eq!(parse_tls_version("tls1.3"), Ok(0x0304));
        assert_eq!(parse_tls_version(""), Ok(TLS_1_0));
        assert_eq!(
            parse_tls_version("ssl3.0").unwrap_err().to_string(),
            "unknown tlsVersionOption \"ssl3.0\""
        );
        assert_eq!(tls_version_name(771), Some("tls1.2"));
    }

    #[test]
    fn floats_format_like_go() {
        assert_eq!(go_format_float(1.5), "1.5");
        assert_eq!(go_format_float(2.0), "2");
        assert_eq!(go_format_float(0.0), "0");
        assert_eq!(go_format_float(-0.5), "-0.5");
        assert_eq!(go_format_float(0.0001), "0.0001");
        assert_eq!(go_format_float(0.00001), "1e-05");
        assert_eq!(go_format_float(100000.0), "100000");
        assert_eq!(go_format_float(1e6), "1e+06");
        assert_eq!(go_format_float(1.25e7), "1.25e+07");
        assert_eq!(go_format_float(f64::NAN), "NaN");
        assert_eq!(go_format_float(f64::INFINITY), "+Inf");
    }
}
