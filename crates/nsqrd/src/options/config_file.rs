//! The `--config` TOML file, read the way nsqd reads it.
//!
//! Keys are the options' config keys (the flag table's `cfg`). A key given as a command-line flag
//! is skipped: flag > file > default. Durations are Go strings or integer milliseconds; lists
//! are TOML arrays or comma-separated strings; `tls_required` is a bool or text; unknown keys are
//! ignored as nsqd ignores them, and named in a warning at start (a misspelt key would
//! otherwise go unnoticed); any other wrong value aborts startup with a message naming the key.

use std::time::Duration;

use nsq_common::config_file::{self, ConfigFileError, UnknownKeys};

use super::error::OptionsError;
use super::table::{FlagSpec, Options, FLAGS};
use super::types::{parse_float, Kind, TlsRequired, Value};

/// The config file's table of queue settings (`queue_settings_file.rs`), not an option.
const QUEUE_SETTINGS_KEY: &str = "topics";

/// Reads the TOML file at `path` into `opts`, skipping options named in `given` (flag names).
/// Returns the keys the file has that nsqrd does not read.
pub fn apply_file(
    opts: &mut Options,
    path: &str,
    given: &[&str],
) -> Result<Option<UnknownKeys>, OptionsError> {
    let table = config_file::load(path).map_err(|e| load_failed(path, &e))?;
    apply_table(opts, path, &table, given)?;
    Ok(UnknownKeys::find(path, &table, |key| {
        key == QUEUE_SETTINGS_KEY || FlagSpec::by_cfg(key).is_some()
    }))
}

fn load_failed(path: &str, e: &ConfigFileError) -> OptionsError {
    OptionsError::ConfigFile {
        path: path.to_string(),
        reason: e.to_string(),
    }
}

/// Applies the file's `table` (read from `path`, used in messages) to `opts`.
fn apply_table(
    opts: &mut Options,
    path: &str,
    table: &toml::Table,
    given: &[&str],
) -> Result<(), OptionsError> {
    let keys = FLAGS.iter().filter_map(|f| f.cfg.map(|key| (key, f.name)));
    for (key, flag, raw) in config_file::applicable(table, keys, given) {
        let Some(spec) = FlagSpec::by_name(flag) else {
            continue;
        };
        let value = from_toml(spec.kind, raw).map_err(|reason| OptionsError::ConfigValue {
            path: path.to_string(),
            key: key.to_string(),
            reason,
        })?;
        (spec.set)(opts, value.normalized());
    }
    Ok(())
}

fn expected(kind: Kind) -> &'static str {
    match kind {
        Kind::Str => "a string",
        Kind::Int | Kind::Port => "an integer",
        Kind::Bool => "a boolean",
        Kind::Duration => "a duration string or integer milliseconds",
        Kind::StrList => "an array of strings or a comma-separated string",
        Kind::FloatList => "an array of numbers or a comma-separated string",
        Kind::LogLevel => "a log level name",
        Kind::TlsRequired => "true, false or \"tcp-https\"",
        Kind::TlsMinVersion => "a TLS version name",
    }
}

/// Items of a comma-separated list string, trimmed, empty ones dropped.
fn comma_items(s: &str) -> impl Iterator<Item = &str> {
    s.split(',').map(str::trim).filter(|x| !x.is_empty())
}

/// Converts one TOML value to the option's `Value`.
fn from_toml(kind: Kind, raw: &toml::Value) -> Result<Value, String> {
    use toml::Value as T;
    let wrong = || format!("expected {}, got {} {raw}", expected(kind), raw.type_str());
    Ok(match (kind, raw) {
        (Kind::Str, T::String(s)) => Value::Str(s.clone()),
        (Kind::Int, T::Integer(n)) => Value::Int(*n),
        (Kind::Port, T::Integer(n)) => {
            Value::U16(u16::try_from(*n).map_err(|_| format!("port {n} out of range"))?)
        }
        (Kind::Bool, T::Boolean(b)) => Value::Bool(*b),
        (Kind::TlsRequired, T::Boolean(b)) => Value::TlsRequired(if *b {
            TlsRequired::True
        } else {
            TlsRequired::False
        }),
        (Kind::Duration, T::Integer(ms)) => {
            let ms = u64::try_from(*ms).map_err(|_| format!("negative duration {ms}"))?;
            if ms > i64::MAX as u64 / 1_000_000 {
                return Err(format!("duration {ms}ms out of range"));
            }
            Value::Duration(Duration::from_millis(ms))
        }
        (Kind::StrList, T::String(s)) => {
            Value::StrList(comma_items(s).map(str::to_string).collect())
        }
        (Kind::StrList, T::Array(items)) => Value::StrList(
            items
                .iter()
                .map(|i| i.as_str().map(str::to_string).ok_or_else(wrong))
                .collect::<Result<_, _>>()?,
        ),
        (Kind::FloatList, T::String(s)) => Value::FloatList(
            comma_items(s)
                .map(|x| parse_float(x).map_err(|e| e.to_string()))
                .collect::<Result<_, _>>()?,
        ),
        (Kind::FloatList, T::Array(items)) => Value::FloatList(
            items
                .iter()
                .map(|i| match i {
                    T::Float(f) => Ok(*f),
                    T::Integer(n) => Ok(*n as f64),
                    _ => Err(wrong()),
                })
                .collect::<Result<_, _>>()?,
        ),
        (Kind::Str | Kind::StrList | Kind::FloatList, _) => return Err(wrong()),
        // Everything else may also be written as the same text as on the command line.
        (_, T::String(s)) => kind.parse_text(s).map_err(|e| e.to_string())?,
        _ => return Err(wrong()),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::options::types::LogLevel;

    fn load(text: &str, given: &[&str]) -> Result<Options, OptionsError> {
        let mut o = Options::default();
        let table = config_file::parse(text).map_err(|e| load_failed("nsqd.toml", &e))?;
        apply_table(&mut o, "nsqd.toml", &table, given)?;
        Ok(o)
    }

    #[test]
    fn reads_every_kind() {
        let o = load(
            r#"
            tcp_address = "127.0.0.1:14150"
            mem_queue_size = 5
            broadcast_http_port = 14151
            snappy = false
            msg_timeout = "90s"
            max_req_timeout = 2000
            nsqlookupd_tcp_addresses = ["a:4160", "b:4160"]
            auth_http_addresses = "x:1, y:2"
            e2e_processing_latency_percentiles = [0.5, 1, 0.99]
            log_level = "WARN"
            tls_required = "tcp-https"
            tls_min_version = "tls1.2"
            id = 7
            "#,
            &[],
        )
        .unwrap();
        assert_eq!(o.tcp_address, "127.0.0.1:14150");
        assert_eq!(o.mem_queue_size, 5);
        assert_eq!(o.broadcast_http_port, 14151);
        assert!(!o.snappy);
        assert_eq!(o.msg_timeout, Duration::from_secs(90));
        assert_eq!(o.max_req_timeout, Duration::from_secs(2)); // bare integers are ms
        assert_eq!(o.nsqlookupd_tcp_addresses, ["a:4160", "b:4160"]);
        assert_eq!(o.auth_http_addresses, ["x:1", "y:2"]);
        assert_eq!(o.e2e_processing_latency_percentiles, [1.0, 0.99, 0.5]);
        assert_eq!(o.log_level, LogLevel::Warn);
        assert_eq!(o.tls_required, TlsRequired::TcpHttps);
        assert_eq!(o.tls_min_version, 0x0303);
        assert_eq!(o.node_id, 7);
    }

    #[test]
    fn alternative_spellings() {
        let o = load(
            r#"
            tls_required = true
            tls_min_version = ""
            e2e_processing_latency_percentiles = "0.9,0.99"
            enable_experiment = ["topology-aware-consumption"]
            deflate = "false"
            max_rdy_count = "100"
            "#,
            &[],
        )
        .unwrap();
        assert_eq!(o.tls_required, TlsRequired::True);
        assert_eq!(o.tls_min_version, 0x0301);
        assert_eq!(o.e2e_processing_latency_percentiles, [0.99, 0.9]);
        assert_eq!(o.enable_experiment, ["topology-aware-consumption"]);
        assert!(!o.deflate);
        assert_eq!(o.max_rdy_count, 100);
    }

    #[test]
    fn given_flags_win_and_unknown_keys_are_ignored() {
        let o = load(
            "mem_queue_size = 5\nsync_every = 9\nno_such_option = 1\nverbose = true\nconfig = \"x\"",
            &["mem-queue-size"],
        )
        .unwrap();
        assert_eq!(o.mem_queue_size, 10_000);
        assert_eq!(o.sync_every, 9);
        assert!(!o.verbose);
        assert_eq!(o.config, "");
    }

    #[test]
    fn invalid_values_name_the_key() {
        let err = |t: &str| load(t, &[]).unwrap_err().to_string();
        assert_eq!(
            err("msg_timeout = \"10x\""),
            "failed to load config file nsqd.toml - invalid value for msg_timeout: \
             time: unknown unit \"x\" in duration \"10x\""
        );
        assert_eq!(
            err("mem_queue_size = \"lots\""),
            "failed to load config file nsqd.toml - invalid value for mem_queue_size: parse error"
        );
        assert_eq!(
            err("tcp_address = 4150"),
            "failed to load config file nsqd.toml - invalid value for tcp_address: \
             expected a string, got integer 4150"
        );
        assert!(err("msg_timeout = -5").contains("negative duration"));
        assert!(err("broadcast_tcp_port = 70000").contains("out of range"));
        assert!(err("log_level = \"loud\"").contains("invalid log level"));
        assert!(err("tls_required = \"maybe\"").contains("tls_required"));
        assert!(err("tls_min_version = \"ssl3.0\"").contains("tls_min_version"));
        assert!(err("nsqlookupd_tcp_addresses = [1, 2]").contains("nsqlookupd_tcp_addresses"));
        assert!(err("snappy = 1.5").contains("expected a boolean"));
    }

    #[test]
    fn syntax_errors_and_missing_files() {
        let e = load("a = 1\nb = = 2\n", &[]).unwrap_err();
        assert!(
            matches!(&e, OptionsError::ConfigFile { reason, .. } if reason.starts_with("toml: line 2:")),
            "{e}"
        );
        let mut o = Options::default();
        let e = apply_file(&mut o, "/nonexistent/nsqd.toml", &[]).unwrap_err();
        assert!(e.to_string().starts_with(
            "failed to load config file /nonexistent/nsqd.toml - open /nonexistent/nsqd.toml: "
        ));
        assert_eq!(e.exit_code(), 1);
    }
}
