//! The everyday tools, on nsqr-client, with the flags of NSQ's own apps: `nsqr pub` (to_nsq),
//! `nsqr tail` (nsq_tail), `nsqr stat` (nsq_stat) and `nsqr to-file` (nsq_to_file).
//!
//! Exit status a shell can rely on: 0 when the tool did its job (or was stopped with SIGINT /
//! SIGTERM and shut down cleanly), 1 when it could not (a server refused, unreachable or went
//! away for good, a file could not be written), 2 for a usage error (clap's), 130 when `pub`
//! was interrupted before its input ended. Errors go to stderr as `nsqr <tool>: <what>`.

pub mod publish;
mod rolling;
pub mod stat;
mod strftime;
pub mod tail;
pub mod to_file;

use std::future::Future;
use std::process::ExitCode;
use std::time::Duration;

use nsqr_client::Config;

use crate::fail::Result;

/// A tool's outcome besides success.
pub enum Outcome {
    /// Done.
    Done,
    /// Stopped by a signal before the input ended (pub).
    Interrupted,
}

/// Run a tool's future on a fresh runtime and turn its result into an exit status.
pub fn run<F>(name: &str, tool: F) -> ExitCode
where
    F: Future<Output = Result<Outcome>>,
{
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("nsqr {name}: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let r = rt.block_on(tool);
    rt.shutdown_timeout(Duration::from_millis(100));
    match r {
        Ok(Outcome::Done) => ExitCode::SUCCESS,
        Ok(Outcome::Interrupted) => ExitCode::from(130),
        Err(e) => {
            eprintln!("nsqr {name}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A usage error of `tool` (exit status 2), in clap's words.
pub fn usage(tool: &str, msg: &str) -> ! {
    use clap::CommandFactory;
    let mut cli = crate::cli::Cli::command();
    let cmd = cli
        .find_subcommand_mut(tool)
        .map(|c| c.clone().bin_name(format!("nsqr {tool}")));
    match cmd {
        Some(mut c) => c
            .error(clap::error::ErrorKind::ArgumentConflict, msg)
            .exit(),
        None => cli
            .error(clap::error::ErrorKind::ArgumentConflict, msg)
            .exit(),
    }
}

/// The client settings of a tool: its name as user agent, a patient connect.
pub fn config(tool: &str) -> Config {
    let mut c = Config::default();
    c.user_agent = format!("nsqr-{tool}/{}", env!("CARGO_PKG_VERSION"));
    c.dial_timeout = Duration::from_secs(5);
    c
}

/// `host:port` or `unix:///path`, as NSQ's tools take `--nsqd-tcp-address` (a bare path is a
/// unix socket, as nsqd's own `--tcp-address` takes it).
pub fn nsqd_address(a: &str) -> String {
    if a.starts_with('/') {
        format!("unix://{a}")
    } else {
        a.to_string()
    }
}

/// Resolves on SIGINT or SIGTERM.
pub async fn signalled() {
    nsq_common::net::shutdown_signal().await;
}

/// Connects a consumer to every nsqd address and lookupd given (`tail`, `to-file`).
pub async fn connect_consumer(
    c: &mut nsqr_client::Consumer,
    nsqds: &[String],
    lookupds: &[String],
) -> Result<()> {
    for addr in nsqds {
        c.connect(&nsqd_address(addr))
            .await
            .map_err(|e| crate::fail::err(e.to_string()))?;
    }
    for addr in lookupds {
        c.connect_to_lookupd(addr)
            .await
            .map_err(|e| crate::fail::err(e.to_string()))?;
    }
    Ok(())
}
