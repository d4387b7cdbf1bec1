//! The `--config` TOML file, read the way nsqlookupd reads it: keys are the flag names with `_`
//! (`tcp_address`, `tombstone_lifetime`, ...), a key also given as a flag is skipped, unknown
//! keys are ignored (and named in a warning at start), durations are Go strings or integer milliseconds, and a bad `log_level`
//! aborts with nsqlookupd's `failed parsing log_level <v>`.

use nsq_common::config_file::{self, ConfigFileError, UnknownKeys};
use nsq_common::duration;

use super::{LogLevel, Options, OptionsError, Value};

/// (config key, flag name) of every option the file can set. `config`, `version` and the
/// deprecated `verbose` are flags only, as in nsqlookupd.
const KEYS: &[(&str, &str)] = &[
    ("log_level", "log-level"),
    ("log_prefix", "log-prefix"),
    ("tcp_address", "tcp-address"),
    ("http_address", "http-address"),
    ("broadcast_address", "broadcast-address"),
    ("inactive_producer_timeout", "inactive-producer-timeout"),
    ("tombstone_lifetime", "tombstone-lifetime"),
];

/// Reads the file at `path` into `opts`, skipping the flags named in `given`. Returns the keys
/// the file has that nsqlookupd does not read.
pub fn apply_file(
    opts: &mut Options,
    path: &str,
    given: &[&str],
) -> Result<Option<UnknownKeys>, OptionsError> {
    let table = config_file::load(path).map_err(|e| load_failed(path, e))?;
    apply_table(opts, &table, given)?;
    Ok(UnknownKeys::find(path, &table, |key| {
        KEYS.iter().any(|(k, _)| *k == key)
    }))
}

/// nsqlookupd's text for a file that cannot be loaded; a TOML error is not given a line.
fn load_failed(path: &str, e: ConfigFileError) -> OptionsError {
    let reason = match e {
        ConfigFileError::Syntax { message, .. } => format!("toml: {message}"),
        e => e.to_string(),
    };
    OptionsError::ConfigFile {
        path: path.to_string(),
        reason,
    }
}

/// Applies the file's `table` to `opts`.
fn apply_table(
    opts: &mut Options,
    table: &toml::Table,
    given: &[&str],
) -> Result<(), OptionsError> {
    // nsqlookupd validates log_level before anything else, whether or not the flag was given.
    let log_level = match table.get("log_level") {
        Some(v) => {
            let text = match v {
                toml::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            Some(text.parse::<LogLevel>().map_err(|_| {
                OptionsError::ConfigValue(format!("failed parsing log_level {text}"))
            })?)
        }
        None => None,
    };
    for (key, flag, raw) in config_file::applicable(table, KEYS.iter().copied(), given) {
        let coerce_err = |reason: String| {
            OptionsError::ConfigValue(format!(
                "Resolve failed to coerce value {raw} for {key} - {reason}"
            ))
        };
        let value = match (flag, raw) {
            ("log-level", _) => match log_level {
                Some(l) => Value::LogLevel(l),
                None => continue,
            },
            ("inactive-producer-timeout" | "tombstone-lifetime", toml::Value::String(s)) => {
                Value::Duration(duration::parse_nanos(s).map_err(|e| coerce_err(e.to_string()))?)
            }
            ("inactive-producer-timeout" | "tombstone-lifetime", toml::Value::Integer(ms)) => {
                Value::Duration(ms.saturating_mul(1_000_000))
            }
            ("inactive-producer-timeout" | "tombstone-lifetime", other) => {
                return Err(coerce_err(format!(
                    "invalid time.Duration value type {}",
                    other.type_str()
                )))
            }
            (_, toml::Value::String(s)) => Value::Str(s.clone()),
            (_, other) => {
                return Err(coerce_err(format!(
                    "expected a string, got {}",
                    other.type_str()
                )))
            }
        };
        opts.set(flag, value);
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn apply(text: &str, given: &[&str]) -> Result<Options, OptionsError> {
        let mut o = Options::default();
        let table = config_file::parse(text).map_err(|e| load_failed("f.toml", e))?;
        apply_table(&mut o, &table, given).map(|()| o)
    }

    #[test]
    fn unknown_keys_are_returned_by_name() {
        let dir = std::env::temp_dir().join(format!("nsqrlookupd-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("l.toml");
        std::fs::write(
            &path,
            "tcp_address = \"127.0.0.1:1\"\ntombstone_lifetimee = 5\n",
        )
        .unwrap();
        let path = path.display().to_string();
        let mut o = Options::default();
        let unknown = apply_file(&mut o, &path, &[]).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(o.tcp_address, "127.0.0.1:1");
        assert_eq!(
            unknown.map(|u| u.keys),
            Some(vec!["tombstone_lifetimee".to_string()])
        );
    }

    #[test]
    fn keys_and_precedence() {
        let o = apply(
            "tcp_address = \"127.0.0.1:1\"\nhttp_address = \"127.0.0.1:2\"\n\
             inactive_producer_timeout = 1500\ntombstone_lifetime = \"1m\"\n\
             log_level = \"debug\"\nunknown_key = 5\nverbose = true\n",
            &["http-address"],
        )
        .unwrap();
        assert_eq!(o.tcp_address, "127.0.0.1:1");
        assert_eq!(o.http_address, "0.0.0.0:4161"); // given as a flag: the file is skipped
        assert_eq!(o.inactive_producer_timeout, 1_500_000_000); // integer = ms
        assert_eq!(o.tombstone_lifetime, 60_000_000_000);
        assert_eq!(o.log_level, LogLevel::Debug);
        assert!(!o.verbose);
    }

    #[test]
    fn bad_values_abort() {
        let text = |t: &str| apply(t, &[]).unwrap_err().to_string();
        assert_eq!(
            text("log_level = \"loud\""),
            "failed parsing log_level loud"
        );
        assert_eq!(text("log_level = 3"), "failed parsing log_level 3");
        // A bad log_level aborts even when the flag overrides it (nsqlookupd validates first).
        assert!(apply("log_level = \"loud\"", &["log-level"]).is_err());
        assert!(text("tombstone_lifetime = \"10\"").contains("missing unit"));
        assert!(text("tombstone_lifetime = true").contains("tombstone_lifetime"));
        assert!(text("tcp_address = 5").contains("tcp_address"));
        assert!(text("tcp_address = ").starts_with("failed to load config file f.toml - toml: "));
        // nsqlookupd's TOML error text has no line number (nsqrd's has).
        assert!(!text("tcp_address = ").contains("toml: line"));
        let mut o = Options::default();
        let e = apply_file(&mut o, "/nonexistent/l.toml", &[]).unwrap_err();
        assert!(e.to_string().starts_with(
            "failed to load config file /nonexistent/l.toml - open /nonexistent/l.toml: "
        ));
        let e = apply("x = [", &[]).unwrap_err();
        assert_eq!(e.exit_code(), 1);
        assert!(!matches!(e, OptionsError::Flag(_)));
    }
}
