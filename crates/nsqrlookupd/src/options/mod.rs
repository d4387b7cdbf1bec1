//! nsqlookupd's options: its 10 flags in Go `flag` syntax, then the `--config` TOML file.
//! Precedence as in nsqlookupd: flag given on the command line > config file > default.
//!
//! nsqrlookupd is a drop-in for nsqlookupd, so service files written for it must keep working:
//! `-flag value`, `--flag value`, `-flag=value`, `--flag=value`, bare booleans (`--verbose`
//! never eats the next argument), parsing stops at the first non-flag or `--`, and the error
//! texts and exit codes are Go's (usage + 2 for a bad flag, usage + 0 for `-h`).
//!
//! The Go flag syntax, its error texts and how they are printed are `nsq_common::goflag`,
//! shared with nsqrd; this module keeps nsqlookupd's small table and its value rules.

mod config_file;

use nsq_common::config_file::UnknownKeys;
use nsq_common::{duration, goflag};

pub use nsq_common::logging::LogLevel;

/// The name nsqlookupd prints for a level (the usage text's default).
fn level_name(level: LogLevel) -> &'static str {
    match level {
        LogLevel::Debug => "DEBUG",
        LogLevel::Info => "INFO",
        LogLevel::Warn => "WARNING",
        LogLevel::Error => "ERROR",
        LogLevel::Fatal => "FATAL",
    }
}

/// Every option, with nsqlookupd's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    pub version: bool,
    pub config: String,
    pub log_level: LogLevel,
    pub log_prefix: String,
    pub verbose: bool,
    pub tcp_address: String,
    pub http_address: String,
    pub broadcast_address: String,
    /// Go nanoseconds (may be negative, as in nsqlookupd).
    pub inactive_producer_timeout: i64,
    pub tombstone_lifetime: i64,
}

/// The OS hostname (nsqlookupd's default `--broadcast-address` and its IDENTIFY `hostname`).
pub fn hostname() -> String {
    gethostname::gethostname().to_string_lossy().into_owned()
}

impl Default for Options {
    fn default() -> Self {
        Options {
            version: false,
            config: String::new(),
            log_level: LogLevel::Info,
            log_prefix: "[nsqlookupd] ".to_string(),
            verbose: false,
            tcp_address: "0.0.0.0:4160".to_string(),
            http_address: "0.0.0.0:4161".to_string(),
            broadcast_address: hostname(),
            inactive_producer_timeout: 300_000_000_000,
            tombstone_lifetime: 45_000_000_000,
        }
    }
}

/// Why the options were refused. The texts are Go's `flag` package's and nsqlookupd's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionsError {
    /// A command-line error (`-h` included): Go's texts, usage, exit 0 or 2.
    #[error(transparent)]
    Flag(#[from] goflag::FlagError),
    #[error("failed to load config file {path} - {reason}")]
    ConfigFile { path: String, reason: String },
    #[error("{0}")]
    ConfigValue(String),
}

impl From<goflag::SyntaxError> for OptionsError {
    fn from(e: goflag::SyntaxError) -> OptionsError {
        OptionsError::Flag(e.into())
    }
}

impl OptionsError {
    /// nsqlookupd's exit code: 0 after `-h`, 2 for flag errors, 1 for config-file errors.
    pub fn exit_code(&self) -> u8 {
        match self {
            OptionsError::Flag(f) => f.exit_code(),
            OptionsError::ConfigFile { .. } | OptionsError::ConfigValue(_) => 1,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Bool,
    Str,
    Duration,
    LogLevel,
}

/// One flag: its name, type, help text and where its value goes.
struct FlagSpec {
    name: &'static str,
    kind: Kind,
    help: &'static str,
}

/// The 10 flags, sorted by name as Go's usage lists them.
const FLAGS: &[FlagSpec] = &[
    FlagSpec {
        name: "broadcast-address",
        kind: Kind::Str,
        help: "address of this lookupd node, (default to the OS hostname)",
    },
    FlagSpec {
        name: "config",
        kind: Kind::Str,
        help: "path to config file",
    },
    FlagSpec {
        name: "http-address",
        kind: Kind::Str,
        help: "<addr>:<port> to listen on for HTTP clients",
    },
    FlagSpec {
        name: "inactive-producer-timeout",
        kind: Kind::Duration,
        help: "duration of time a producer will remain in the active list since its last ping",
    },
    FlagSpec {
        name: "log-level",
        kind: Kind::LogLevel,
        help: "set log verbosity: debug, info, warn, error, or fatal",
    },
    FlagSpec {
        name: "log-prefix",
        kind: Kind::Str,
        help: "log message prefix",
    },
    FlagSpec {
        name: "tcp-address",
        kind: Kind::Str,
        help: "<addr>:<port> to listen on for TCP clients",
    },
    FlagSpec {
        name: "tombstone-lifetime",
        kind: Kind::Duration,
        help: "duration of time a producer will remain tombstoned if registration remains",
    },
    FlagSpec {
        name: "verbose",
        kind: Kind::Bool,
        help: "[deprecated] has no effect, use --log-level",
    },
    FlagSpec {
        name: "version",
        kind: Kind::Bool,
        help: "print version string",
    },
];

/// A parsed flag or config value.
enum Value {
    Bool(bool),
    Str(String),
    Duration(i64),
    LogLevel(LogLevel),
}

impl Options {
    /// Parses argv (without the program name), then the `--config` file if one is named and
    /// `--version` was not given. Also returns the config file's keys nsqlookupd does not read
    /// (ignored as nsqlookupd ignores them; `main` names them in a warning).
    pub fn parse_with_warnings<I: IntoIterator<Item = String>>(
        args: I,
    ) -> Result<(Options, Option<UnknownKeys>), OptionsError> {
        let mut opts = Options::default();
        let given = opts.parse_flags(args)?;
        let mut unknown = None;
        if !opts.version && !opts.config.is_empty() {
            let path = opts.config.clone();
            unknown = config_file::apply_file(&mut opts, &path, &given)?;
        }
        Ok((opts, unknown))
    }

    fn set(&mut self, name: &str, value: Value) {
        match (name, value) {
            ("broadcast-address", Value::Str(s)) => self.broadcast_address = s,
            ("config", Value::Str(s)) => self.config = s,
            ("http-address", Value::Str(s)) => self.http_address = s,
            ("inactive-producer-timeout", Value::Duration(d)) => self.inactive_producer_timeout = d,
            ("log-level", Value::LogLevel(l)) => self.log_level = l,
            ("log-prefix", Value::Str(s)) => self.log_prefix = s,
            ("tcp-address", Value::Str(s)) => self.tcp_address = s,
            ("tombstone-lifetime", Value::Duration(d)) => self.tombstone_lifetime = d,
            ("verbose", Value::Bool(b)) => self.verbose = b,
            ("version", Value::Bool(b)) => self.version = b,
            _ => {}
        }
    }

    /// Go `flag` rules (`nsq_common::goflag`). Returns the names of the flags given (the
    /// config file must not override them).
    fn parse_flags<I: IntoIterator<Item = String>>(
        &mut self,
        args: I,
    ) -> Result<Vec<&'static str>, OptionsError> {
        let kind = |name: &str| {
            FLAGS
                .iter()
                .find(|f| f.name == name)
                .map(|f| f.kind == Kind::Bool)
        };
        let mut given = Vec::new();
        for occurrence in goflag::Flags::new(args, kind) {
            let goflag::Occurrence { name, value: text } = occurrence?;
            let Some(spec) = FLAGS.iter().find(|f| f.name == name) else {
                return Err(goflag::FlagError::unknown(name).into());
            };
            let value = if spec.kind == Kind::Bool {
                Value::Bool(goflag::parse_bool(&text).ok_or_else(|| {
                    goflag::FlagError::bad_value(true, &name, &text, "parse error".into())
                })?)
            } else {
                parse_value(spec.kind, &text)
                    .map_err(|reason| goflag::FlagError::bad_value(false, &name, &text, reason))?
            };
            self.set(spec.name, value);
            if !given.contains(&spec.name) {
                given.push(spec.name);
            }
        }
        Ok(given)
    }

    /// Usage text in Go's `PrintDefaults` layout.
    pub fn usage() -> String {
        let d = Options::default();
        goflag::usage(
            "nsqlookupd",
            FLAGS.iter().map(|f| goflag::UsageLine {
                name: f.name,
                type_word: match f.kind {
                    Kind::Bool => "",
                    Kind::Str => "string",
                    Kind::Duration => "duration",
                    Kind::LogLevel => "value",
                },
                help: f.help,
                default: match f.name {
                    "broadcast-address" => Some(format!("{:?}", d.broadcast_address)),
                    "http-address" => Some(format!("{:?}", d.http_address)),
                    "tcp-address" => Some(format!("{:?}", d.tcp_address)),
                    "log-prefix" => Some(format!("{:?}", d.log_prefix)),
                    "log-level" => Some(level_name(d.log_level).to_string()),
                    "inactive-producer-timeout" => {
                        Some(duration::format_nanos(d.inactive_producer_timeout))
                    }
                    "tombstone-lifetime" => Some(duration::format_nanos(d.tombstone_lifetime)),
                    _ => None,
                },
            }),
        )
    }
}

/// A non-bool flag's text; the error is the reason Go's flag package prints.
fn parse_value(kind: Kind, text: &str) -> Result<Value, String> {
    Ok(match kind {
        Kind::Str => Value::Str(text.to_string()),
        Kind::Duration => Value::Duration(duration::parse_nanos(text).map_err(|_| "parse error")?),
        Kind::LogLevel => Value::LogLevel(
            text.parse()
                .map_err(|e: nsq_common::logging::LogLevelError| e.to_string())?,
        ),
        Kind::Bool => Value::Bool(goflag::parse_bool(text).ok_or("parse error")?),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Options, OptionsError> {
        Options::parse_with_warnings(args.iter().map(|s| s.to_string())).map(|(o, _)| o)
    }

    #[test]
    fn defaults() {
        let o = parse(&[]).unwrap();
        assert_eq!(o.tcp_address, "0.0.0.0:4160");
        assert_eq!(o.http_address, "0.0.0.0:4161");
        assert_eq!(o.broadcast_address, hostname());
        assert_eq!(o.inactive_producer_timeout, 300_000_000_000);
        assert_eq!(o.tombstone_lifetime, 45_000_000_000);
        assert_eq!(
            (o.log_level, o.log_prefix.as_str()),
            (LogLevel::Info, "[nsqlookupd] ")
        );
    }

    #[test]
    fn go_flag_syntaxes() {
        for args in [
            &["-tcp-address", "127.0.0.1:1"][..],
            &["-tcp-address=127.0.0.1:1"],
            &["--tcp-address=127.0.0.1:1"],
            &["--tcp-address", "127.0.0.1:1"],
        ] {
            assert_eq!(parse(args).unwrap().tcp_address, "127.0.0.1:1", "{args:?}");
        }
        let o = parse(&[
            "--inactive-producer-timeout=200ms",
            "-tombstone-lifetime",
            "-1s",
            "--log-level=WARN",
            "--log-prefix=",
            "--broadcast-address=b",
        ])
        .unwrap();
        assert_eq!(o.inactive_producer_timeout, 200_000_000);
        assert_eq!(o.tombstone_lifetime, -1_000_000_000);
        assert_eq!(o.log_level, LogLevel::Warn);
        assert_eq!(
            (o.log_prefix.as_str(), o.broadcast_address.as_str()),
            ("", "b")
        );
    }

    #[test]
    fn bools_and_stops() {
        let o = parse(&["--verbose", "--version=false", "--tcp-address", "x:1"]).unwrap();
        assert!(o.verbose && !o.version);
        assert_eq!(o.tcp_address, "x:1");
        // A bare bool does not take the next argument; "false" ends the flags.
        let o = parse(&["--version", "false", "--tcp-address=x:1"]).unwrap();
        assert!(o.version);
        assert_eq!(o.tcp_address, "0.0.0.0:4160");
        assert_eq!(parse(&["--", "--nope"]).unwrap(), Options::default());
        assert_eq!(parse(&["x", "--nope"]).unwrap(), Options::default());
    }

    #[test]
    fn errors_have_go_texts_and_exit_codes() {
        let err = |args: &[&str]| parse(args).unwrap_err();
        assert_eq!(
            err(&["--nope"]).to_string(),
            "flag provided but not defined: -nope"
        );
        assert_eq!(err(&["--nope"]).exit_code(), 2);
        assert_eq!(
            err(&["--tcp-address"]).to_string(),
            "flag needs an argument: -tcp-address"
        );
        assert_eq!(err(&["---x"]).to_string(), "bad flag syntax: ---x");
        assert_eq!(
            err(&["--verbose=maybe"]).to_string(),
            "invalid boolean value \"maybe\" for -verbose: parse error"
        );
        assert_eq!(
            err(&["--tombstone-lifetime=10"]).to_string(),
            "invalid value \"10\" for flag -tombstone-lifetime: parse error"
        );
        assert_eq!(
            err(&["--log-level=loud"]).to_string(),
            "invalid value \"loud\" for flag -log-level: \
             invalid log level 'loud' (debug, info, warn, error, fatal)"
        );
        for h in ["-h", "--help", "-help"] {
            let e = err(&[h]);
            assert_eq!(
                (e.clone(), e.exit_code()),
                (OptionsError::from(goflag::SyntaxError::Help), 0)
            );
        }
    }

    #[test]
    fn usage_matches_go_layout() {
        let u = Options::usage();
        assert!(u.starts_with("Usage of nsqlookupd:\n  -broadcast-address string\n    \t"));
        assert!(u.contains(
            "  -inactive-producer-timeout duration\n    \tduration of time a producer will \
             remain in the active list since its last ping (default 5m0s)\n"
        ));
        assert!(u.contains("(default 45s)\n"));
        assert!(u.contains("  -log-level value\n    \tset log verbosity: debug, info, warn, error, or fatal (default INFO)\n"));
        assert!(u.contains("  -tcp-address string\n    \t<addr>:<port> to listen on for TCP clients (default \"0.0.0.0:4160\")\n"));
        assert!(u.ends_with("  -version\n    \tprint version string\n"));
        assert_eq!(u.lines().count(), 1 + 2 * FLAGS.len());
    }
}
