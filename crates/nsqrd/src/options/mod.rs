//! nsqd's options: nsqd 1.3's 57 flags, the `--config` TOML file, startup validation and
//! `/config/:opt` (checked against nsqd by nsqrd's `startup_flags` and `http_config` tests).
//!
//! nsqrd is a drop-in for nsqd, so its command line is Go's `flag` syntax rather than clap's,
//! and every option is described once, in `table.rs`; argv, the config file, `/config/:opt` and
//! the usage text are all driven by that table.
//!
//! ```text
//! let mut opts = Options::parse(std::env::args().skip(1))?;   // flags, then --config file
//! opts.validate()?;                                          // FATAL checks
//! ```

pub mod addr;
mod cluster;
mod config_api;
mod config_file;
mod error;
mod flags;
mod table;
mod types;
mod validate;
mod warnings;

pub use addr::join_host_port;
pub use config_api::{ConfigPutError, ConfigValue};
pub use error::OptionsError;
pub use table::{hostname, Options};
pub use types::TlsRequired;
pub use warnings::OptionsWarning;

impl Options {
    /// Parses argv (without the program name), then the `--config` file if one is named.
    /// Precedence: flag given on the command line > config file > default. With `--version`
    /// the config file is not read. On error, `OptionsError::exit_code` and `shows_usage` tell
    /// what nsqd would do (usage + exit 2 for flag errors, usage + exit 0 for `-h`).
    pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Options, OptionsError> {
        Options::parse_with_warnings(args).map(|(opts, _)| opts)
    }

    /// [`Options::parse`], and the warnings to log at start: unknown config-file keys and
    /// the values nsqd accepts although they are likely mistakes ([`OptionsWarning`]).
    pub fn parse_with_warnings<I: IntoIterator<Item = String>>(
        args: I,
    ) -> Result<(Options, Vec<OptionsWarning>), OptionsError> {
        let mut opts = Options::default();
        let given = flags::parse_args(&mut opts, args)?;
        if opts.version_requested {
            return Ok((opts, Vec::new()));
        }
        let mut warnings = Vec::new();
        if !opts.config.is_empty() {
            let path = opts.config.clone();
            if let Some(unknown) = config_file::apply_file(&mut opts, &path, &given)? {
                warnings.push(unknown.into());
            }
        }
        warnings.extend(opts.value_warnings());
        Ok((opts, warnings))
    }

    /// The tracing filter of `--log-level`.
    pub fn log_filter(&self) -> nsq_common::logging::LevelFilter {
        types::level_filter(self.log_level)
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
    fn flag_beats_config_file_beats_default() {
        let path = config_file(
            "precedence.toml",
            "mem_queue_size = 5\nsync_every = 9\nmsg_timeout = 1500\n\
             nsqlookupd_tcp_addresses = [\"file:4160\"]\n",
        );
        let o = Options::parse(args(&[
            "--config",
            &path,
            "--mem-queue-size=7",
            "--lookupd-tcp-address=flag:4160",
        ]))
        .unwrap();
        assert_eq!(o.mem_queue_size, 7); // flag
        assert_eq!(o.sync_every, 9); // file
        assert_eq!(o.msg_timeout, Duration::from_millis(1500)); // file, integer = ms
        assert_eq!(o.nsqlookupd_tcp_addresses, ["flag:4160"]); // flag list replaces file list
        assert_eq!(o.max_rdy_count, 2500); // default
        assert_eq!(o.config, path);
    }

    #[test]
    fn flag_order_relative_to_config_does_not_matter() {
        let path = config_file("order.toml", "snappy = false\n");
        let o = Options::parse(args(&["--snappy=true", "--config", &path])).unwrap();
        assert!(o.snappy);
        let o = Options::parse(args(&["--config", &path])).unwrap();
        assert!(!o.snappy);
    }

    #[test]
    fn version_skips_the_config_file() {
        let o = Options::parse(args(&["--version", "--config=/nonexistent.toml"])).unwrap();
        assert!(o.version_requested);
        let e = Options::parse(args(&["--config=/nonexistent.toml"])).unwrap_err();
        assert_eq!(e.exit_code(), 1);
    }

    #[test]
    fn bad_config_values_abort() {
        let path = config_file("bad.toml", "max_deflate_level = \"six\"\n");
        let e = Options::parse(args(&["--config", &path])).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("failed to load config file {path} - invalid value for max_deflate_level: parse error")
        );
        assert!(!e.shows_usage());
    }

    #[test]
    fn parse_then_validate() {
        let mut o = Options::parse(args(&["--max-deflate-level=10"])).unwrap();
        assert_eq!(o.validate(), Err(OptionsError::MaxDeflateLevel));
        let mut o = Options::parse(args(&["--tls-required"])).unwrap();
        assert_eq!(o.validate(), Err(OptionsError::TlsRequiredWithoutCert));
        assert!(o.unsupported_flags().is_empty());
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
