//! nsqd's options: the 57 flags of the reference (§1), the `--config` TOML file (§1.12),
//! startup validation (§1.13) and `/config/:opt` (§12.4).
//!
//! nsqrd is a drop-in for nsqd, so its command line is Go's `flag` syntax rather than clap's,
//! and every option is described once, in `table.rs`; argv, the config file, `/config/:opt` and
//! the usage text are all driven by that table.
//!
//! ```text
//! let mut opts = Options::parse(std::env::args().skip(1))?;   // flags, then --config file
//! opts.validate()?;                                          // FATAL checks
//! ```

mod duration;
mod error;
mod flags;
mod table;
mod types;

pub use duration::{format as format_go_duration, parse as parse_go_duration, DurationError};
pub use error::OptionsError;
pub use table::Options;
pub use types::{LogLevel, TlsRequired, TLS_1_0, TLS_1_1, TLS_1_2, TLS_1_3};

impl Options {
    /// Parses argv (without the program name), then the `--config` file if one is named.
    /// Precedence: flag given on the command line > config file > default. With `--version`
    /// the config file is not read. On error, `OptionsError::exit_code` and `shows_usage` tell
    /// what nsqd would do (usage + exit 2 for flag errors, usage + exit 0 for `-h`).
    pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Options, OptionsError> {
        let mut opts = Options::default();
        flags::parse_args(&mut opts, args)?;
        Ok(opts)
    }

    /// Usage text listing every flag with its default, in Go's layout (`Usage of nsqd:` …).
    pub fn usage() -> String {
        flags::usage()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[allow(dead_code)]
    fn config_file(name: &str, text: &str) -> String {
        let dir = std::env::temp_dir().join(format!("nsqr-options-mod-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    }

    #[test]
    fn no_arguments_give_defaults() {
        assert_eq!(Options::parse(Vec::new()).unwrap(), Options::default());
    }

    #[test]
    fn help_and_flag_errors_carry_exit_codes() {
        let e = Options::parse(args(&["--help"])).unwrap_err();
        assert_eq!((e.exit_code(), e.shows_usage()), (0, true));
        let e = Options::parse(args(&["--bogus"])).unwrap_err();
        assert_eq!(e.to_string(), "flag provided but not defined: -bogus");
        assert_eq!((e.exit_code(), e.shows_usage()), (2, true));
        assert!(Options::usage().contains("  -config string\n"));
    }
}
