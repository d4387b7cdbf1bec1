//! nsqd-style log lines on stderr: `<prefix>YYYY/MM/DD HH:MM:SS.uuuuuu LEVEL: message`, e.g.
//! `[nsqd] 2026/11/21 20:25:14.123456 INFO: TCP: listening on 127.0.0.1:4150`.
//!
//! It is here because nsqd and nsqlookupd share Go's `lg` package, so nsqrd and nsqrlookupd
//! write the same line shape (operators' log parsing and the test harnesses, which read the
//! `listening on` lines, rely on it). Each daemon keeps its own mapping from its `--log-level`
//! to a [`LevelFilter`], which is where the two differ.

use std::fmt;
use std::sync::OnceLock;

use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{reload, Registry};

pub use tracing_subscriber::filter::LevelFilter;

/// The `--log-level` values of nsqd and nsqlookupd, read case-insensitively (nothing is
/// trimmed); the numbers are nsqd's (`/config/log_level` reports them). Which lines each level
/// shows, and how a daemon names it in its usage text, stay in the daemon.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Debug = 1,
    Info = 2,
    Warn = 3,
    Error = 4,
    Fatal = 5,
}

/// A `--log-level` that names no level.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid log level '{0}' (debug, info, warn, error, fatal)")]
pub struct LogLevelError(pub String);

impl LogLevel {
    /// The level's lower-case name, as accepted on the command line.
    pub fn name(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Warn => "warn",
            LogLevel::Error => "error",
            LogLevel::Fatal => "fatal",
        }
    }

    /// nsqd's integer for the level (1 = debug … 5 = fatal).
    pub fn as_int(self) -> i64 {
        self as i64
    }
}

impl std::str::FromStr for LogLevel {
    type Err = LogLevelError;

    fn from_str(s: &str) -> Result<Self, LogLevelError> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "debug" => LogLevel::Debug,
            "info" => LogLevel::Info,
            "warn" => LogLevel::Warn,
            "error" => LogLevel::Error,
            "fatal" => LogLevel::Fatal,
            _ => return Err(LogLevelError(s.to_string())),
        })
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Formats an event as `<prefix><timestamp> <LEVEL>: <fields>`.
pub struct NsqFormat {
    pub prefix: String,
}

impl<S, N> FormatEvent<S, N> for NsqFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut w: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let level = match *event.metadata().level() {
            Level::ERROR => "ERROR",
            Level::WARN => "WARNING",
            Level::INFO => "INFO",
            _ => "DEBUG",
        };
        write!(w, "{}{} {level}: ", self.prefix, timestamp())?;
        ctx.field_format().format_fields(w.by_ref(), event)?;
        writeln!(w)
    }
}

/// The current time as the log lines show it: `YYYY/MM/DD HH:MM:SS.uuuuuu` in UTC.
pub fn timestamp() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = i64::try_from(now.as_secs()).unwrap_or(0);
    let c = crate::utc_date::Civil::from_unix(secs);
    format!(
        "{:04}/{:02}/{:02} {:02}:{:02}:{:02}.{:06}",
        c.year,
        c.month,
        c.day,
        c.hour,
        c.minute,
        c.second,
        now.subsec_micros()
    )
}

/// A FATAL line on stderr, printed whatever the level (nsqd's and nsqlookupd's `lg.LogFatal`):
/// the one line a daemon prints before it exits on a fatal error.
pub fn fatal(prefix: &str, message: &str) {
    eprintln!("{prefix}{} FATAL: {message}", timestamp());
}

static RELOAD: OnceLock<reload::Handle<LevelFilter, Registry>> = OnceLock::new();

/// Installs the global subscriber: nsqd-style lines with `prefix`, events above `level` hidden.
/// A second call (or another subscriber already installed) changes nothing.
pub fn init(prefix: &str, level: LevelFilter) {
    let (filter, handle) = reload::Layer::new(level);
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .event_format(NsqFormat {
            prefix: prefix.to_string(),
        });
    if tracing_subscriber::registry()
        .with(filter)
        .with(fmt)
        .try_init()
        .is_ok()
    {
        let _ = RELOAD.set(handle);
    }
}

/// Changes the level of the subscriber [`init`] installed (nsqd's `PUT /config/log_level`).
pub fn set_level(level: LevelFilter) {
    if let Some(h) = RELOAD.get() {
        let _ = h.modify(|f| *f = level);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamp_shape() {
        let t = timestamp();
        assert_eq!(t.len(), "2026/11/21 20:25:14.123456".len(), "{t}");
        assert_eq!(
            (&t[4..5], &t[7..8], &t[10..11], &t[19..20]),
            ("/", "/", " ", ".")
        );
    }
}
