//! nsqd's command line: Go `flag` package rules (`nsq_common::goflag`, shared with
//! nsqrlookupd) applied to nsqd's flag table, list flags that repeat, and the usage text.

use super::error::OptionsError;
use super::table::{FlagSpec, Options, FLAGS};
use super::types::{tls_version_name, Kind, TlsRequired, Value};
use nsq_common::{duration, goflag};

/// Applies `args` (without the program name) to `opts`. Returns the names of the flags given,
/// which the config file must not override.
pub fn parse_args<I: IntoIterator<Item = String>>(
    opts: &mut Options,
    args: I,
) -> Result<Vec<&'static str>, OptionsError> {
    let kind = |name: &str| FlagSpec::by_name(name).map(|s| s.kind.is_bool_style());
    let mut given: Vec<&'static str> = Vec::new();
    for occurrence in goflag::Flags::new(args, kind) {
        let goflag::Occurrence { name, value: text } = occurrence?;
        let Some(spec) = FlagSpec::by_name(&name) else {
            return Err(goflag::FlagError::unknown(name).into());
        };
        let value = spec.kind.parse_text(&text).map_err(|e| {
            goflag::FlagError::bad_value(spec.kind.is_bool_style(), &name, &text, e.flag_reason())
        })?;
        add(opts, spec, value);
        if !given.contains(&spec.name) {
            given.push(spec.name);
        }
    }
    Ok(given)
}

/// Stores a flag occurrence: scalars replace, lists append (percentiles stay sorted).
fn add(opts: &mut Options, spec: &FlagSpec, value: Value) {
    let value = match (value, (spec.get)(opts)) {
        (Value::StrList(new), Value::StrList(mut cur)) => {
            cur.extend(new);
            Value::StrList(cur)
        }
        (Value::FloatList(new), Value::FloatList(mut cur)) => {
            cur.extend(new);
            Value::FloatList(cur).normalized()
        }
        (v, _) => v,
    };
    (spec.set)(opts, value);
}

/// The default as Go's usage shows it, or `None` for a zero value (which Go omits).
fn default_text(kind: Kind, v: Value) -> Option<String> {
    match v {
        Value::Str(s) if !s.is_empty() => Some(format!("{s:?}")),
        Value::Int(n) if n != 0 => Some(n.to_string()),
        Value::U16(n) if kind == Kind::TlsMinVersion => {
            Some(tls_version_name(n).map_or_else(|| n.to_string(), str::to_string))
        }
        Value::U16(n) if n != 0 => Some(n.to_string()),
        Value::Bool(true) => Some("true".to_string()),
        Value::Duration(d) if !d.is_zero() => Some(duration::format(d)),
        Value::LogLevel(l) => Some(l.name().to_string()),
        Value::TlsRequired(t) if t != TlsRequired::False => Some(t.name().to_string()),
        _ => None,
    }
}

/// Usage text in Go's `PrintDefaults` layout: flags sorted by name, the type word, the help on
/// the next line, and the default when it is not the zero value.
pub fn usage() -> String {
    let defaults = Options::default();
    let mut specs: Vec<&FlagSpec> = FLAGS.iter().collect();
    specs.sort_by_key(|f| f.name);
    goflag::usage(
        "nsqd",
        specs.into_iter().map(|f| goflag::UsageLine {
            name: f.name,
            type_word: f.kind.usage_type(),
            help: f.help,
            default: default_text(f.kind, (f.get)(&defaults)),
        }),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::options::types::LogLevel;
    use std::time::Duration;

    fn run(args: &[&str]) -> Result<(Options, Vec<&'static str>), OptionsError> {
        let mut o = Options::default();
        let given = parse_args(&mut o, args.iter().map(|s| s.to_string()))?;
        Ok((o, given))
    }

    fn opts(args: &[&str]) -> Options {
        run(args).unwrap().0
    }

    #[test]
    fn all_four_go_syntaxes() {
        for args in [
            &["-tcp-address", "127.0.0.1:1"][..],
            &["-tcp-address=127.0.0.1:1"],
            &["--tcp-address=127.0.0.1:1"],
            &["--tcp-address", "127.0.0.1:1"],
        ] {
            assert_eq!(opts(args).tcp_address, "127.0.0.1:1", "{args:?}");
        }
    }

    #[test]
    fn values_may_start_with_a_dash_or_contain_equals() {
        assert_eq!(opts(&["--log-prefix", "-x-"]).log_prefix, "-x-");
        assert_eq!(opts(&["--log-prefix=a=b"]).log_prefix, "a=b");
        assert_eq!(opts(&["--log-prefix="]).log_prefix, "");
    }

    #[test]
    fn bools_take_values_only_after_equals() {
        assert!(!opts(&["--snappy=false"]).snappy);
        assert!(!opts(&["-deflate=0"]).deflate);
        assert!(opts(&["--statsd-exclude-ephemeral"]).statsd_exclude_ephemeral);
        // A bare bool does not eat the next argument.
        let o = opts(&["--snappy", "--mem-queue-size", "5"]);
        assert!(o.snappy);
        assert_eq!(o.mem_queue_size, 5);
        // "false" after a bare bool is a positional argument: parsing stops there.
        let o = opts(&["--snappy", "false", "--mem-queue-size", "5"]);
        assert!(o.snappy);
        assert_eq!(o.mem_queue_size, 10_000);
        assert_eq!(
            run(&["--snappy=nope"]).unwrap_err().to_string(),
            "invalid boolean value \"nope\" for -snappy: parse error"
        );
    }

    #[test]
    fn tls_required_is_bool_style_with_tcp_https() {
        assert_eq!(opts(&["--tls-required"]).tls_required, TlsRequired::True);
        assert_eq!(
            opts(&["--tls-required=tcp-https"]).tls_required,
            TlsRequired::TcpHttps
        );
        assert_eq!(
            opts(&["--tls-required=false"]).tls_required,
            TlsRequired::False
        );
        // The space form does not carry the value (Go's bool-flag rule).
        let o = opts(&["--tls-required", "tcp-https", "--snappy=false"]);
        assert_eq!(o.tls_required, TlsRequired::True);
        assert!(o.snappy);
        assert_eq!(
            run(&["--tls-required=sometimes"]).unwrap_err().to_string(),
            "invalid boolean value \"sometimes\" for -tls-required: \
             strconv.ParseBool: parsing \"sometimes\": invalid syntax"
        );
    }

    #[test]
    fn repeatable_list_flags() {
        let o = opts(&[
            "--lookupd-tcp-address=a:4160",
            "-lookupd-tcp-address",
            "b:4160",
            "--auth-http-address=x,y",
            "--enable-experiment=topology-aware-consumption",
        ]);
        assert_eq!(o.nsqlookupd_tcp_addresses, ["a:4160", "b:4160"]);
        assert_eq!(o.auth_http_addresses, ["x,y"]); // no comma split, as Go's StringArray
        assert_eq!(o.enable_experiment, ["topology-aware-consumption"]);
    }

    #[test]
    fn percentiles_repeat_split_on_commas_and_sort_descending() {
        let o = opts(&[
            "--e2e-processing-latency-percentile=0.5,1.0",
            "--e2e-processing-latency-percentile",
            "0.99",
        ]);
        assert_eq!(o.e2e_processing_latency_percentiles, [1.0, 0.99, 0.5]);
        let e = run(&["--e2e-processing-latency-percentile=0.5,abc"]).unwrap_err();
        assert!(
            matches!(
                e,
                OptionsError::Flag(goflag::FlagError::InvalidValue { .. })
            ),
            "{e}"
        );
    }

    #[test]
    fn typed_values() {
        let o = opts(&[
            "--msg-timeout=1m30s",
            "--sync-timeout",
            "250ms",
            "--max-rdy-count=0x100",
            "--broadcast-http-port=14151",
            "--log-level=DEBUG",
            "--tls-min-version=tls1.2",
        ]);
        assert_eq!(o.msg_timeout, Duration::from_secs(90));
        assert_eq!(o.sync_timeout, Duration::from_millis(250));
        assert_eq!(o.max_rdy_count, 256);
        assert_eq!(o.broadcast_http_port, 14151);
        assert_eq!(o.log_level, LogLevel::Debug);
        assert_eq!(o.tls_min_version, 0x0303);
    }

    #[test]
    fn later_occurrence_wins_and_given_names_are_recorded() {
        let (o, given) = run(&["--mem-queue-size=1", "--mem-queue-size=2", "--snappy"]).unwrap();
        assert_eq!(o.mem_queue_size, 2);
        assert_eq!(given, ["mem-queue-size", "snappy"]);
    }

    #[test]
    fn errors_have_go_texts() {
        let text = |args: &[&str]| run(args).unwrap_err().to_string();
        assert_eq!(text(&["--nope"]), "flag provided but not defined: -nope");
        assert_eq!(text(&["-nope=1"]), "flag provided but not defined: -nope");
        assert_eq!(
            text(&["--mem-queue-size=abc"]),
            "invalid value \"abc\" for flag -mem-queue-size: parse error"
        );
        assert_eq!(
            text(&["--mem-queue-size", "99999999999999999999"]),
            "invalid value \"99999999999999999999\" for flag -mem-queue-size: value out of range"
        );
        assert_eq!(
            text(&["--msg-timeout=10"]),
            "invalid value \"10\" for flag -msg-timeout: parse error"
        );
        assert_eq!(
            text(&["--broadcast-tcp-port=70000"]),
            "invalid value \"70000\" for flag -broadcast-tcp-port: value out of range"
        );
        assert_eq!(
            text(&["--log-level=loud"]),
            "invalid value \"loud\" for flag -log-level: \
             invalid log level 'loud' (debug, info, warn, error, fatal)"
        );
        assert_eq!(
            text(&["--tls-min-version=ssl3.0"]),
            "invalid value \"ssl3.0\" for flag -tls-min-version: unknown tlsVersionOption \"ssl3.0\""
        );
        assert_eq!(text(&["--data-path"]), "flag needs an argument: -data-path");
        assert_eq!(text(&["---data-path"]), "bad flag syntax: ---data-path");
        assert_eq!(text(&["-=x"]), "bad flag syntax: -=x");
    }

    #[test]
    fn help_flags() {
        for h in ["-h", "--h", "-help", "--help"] {
            assert_eq!(
                run(&[h]).unwrap_err(),
                OptionsError::from(goflag::SyntaxError::Help)
            );
        }
        // An earlier error wins over a later -h, as in Go.
        assert!(matches!(
            run(&["--nope", "-h"]).unwrap_err(),
            OptionsError::Flag(goflag::FlagError::Syntax(goflag::SyntaxError::Unknown(_)))
        ));
    }

    #[test]
    fn parsing_stops_at_non_flags_and_double_dash() {
        assert_eq!(opts(&["x", "--mem-queue-size=1"]).mem_queue_size, 10_000);
        assert_eq!(opts(&["-", "--mem-queue-size=1"]).mem_queue_size, 10_000);
        assert_eq!(opts(&["--", "--nope"]).mem_queue_size, 10_000);
        assert_eq!(
            opts(&["--mem-queue-size=1", "--", "--nope"]).mem_queue_size,
            1
        );
    }

    #[test]
    fn usage_lists_every_flag_go_style() {
        let u = usage();
        assert!(u.starts_with("Usage of nsqd:\n  -auth-http-address value\n    \t"));
        for f in FLAGS {
            assert!(u.contains(&format!("  -{}", f.name)), "{}", f.name);
        }
        assert!(u.contains(
            "  -tcp-address string\n    \t<addr>:<port> (or unix socket path) to listen on for TCP clients (default \"0.0.0.0:4150\")\n"
        ));
        assert!(u.contains("  -msg-timeout duration\n"));
        assert!(u.contains("(default 1m0s)\n"));
        assert!(u.contains("(default 25ms)\n"));
        assert!(u.contains("  -snappy\n    \t"));
        assert!(u.contains("  -tls-required\n    \t"));
        assert!(u.contains("(default tls1.0)\n"));
        assert!(u.contains("(default info)\n"));
        assert!(u.contains("(default 10000)\n"));
        // Zero defaults are not shown.
        assert!(u.contains("  -data-path string\n    \tdirectory for disk-backed messages and metadata (default is the working directory)\n"));
        assert_eq!(u.lines().count(), 1 + 2 * FLAGS.len());
    }
}
