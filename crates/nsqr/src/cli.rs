//! Command-line interface: one subcommand per tool, each with NSQ's flag spellings.

use std::time::Duration;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "nsqr",
    version,
    about = "nsqr tools: publish to, tail, watch and save NSQ topics"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Publish lines (or whole files) from stdin or files to a topic, like NSQ's to_nsq.
    Pub(crate::tools::publish::PubArgs),
    /// Print a topic's messages, like NSQ's nsq_tail.
    Tail(crate::tools::tail::TailArgs),
    /// A live per-interval view of a channel's rates and depths, like NSQ's nsq_stat.
    Stat(crate::tools::stat::StatArgs),
    /// Write topics to rolling files, like NSQ's nsq_to_file.
    ToFile(crate::tools::to_file::ToFileArgs),
}

/// A Go duration (`3s`, `500ms`, `1m30s`, `1.5h`, `250us`), as nsq's tools take them; surrounding
/// spaces are ignored and negative durations refused.
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    nsq_common::duration::parse(s.trim())
        .map_err(|_| format!("invalid duration {s:?} (examples: 3s, 500ms, 1m30s)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_as_go_does() {
        assert_eq!(parse_duration("3s"), Ok(Duration::from_secs(3)));
        assert_eq!(parse_duration(" 1m30s "), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("250µs"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        for bad in ["", "3", "s", "-1s", "3x", "1.2.3s", "ms5"] {
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            parse_duration("3x"),
            Err("invalid duration \"3x\" (examples: 3s, 500ms, 1m30s)".to_string())
        );
    }

    #[test]
    fn every_tool_parses() {
        for tool in ["pub", "tail", "stat", "to-file"] {
            assert!(Cli::try_parse_from(["nsqr", tool, "--help"])
                .is_err_and(|e| { e.kind() == clap::error::ErrorKind::DisplayHelp }));
        }
    }
}
