//! nsqrlookupd: a drop-in replacement for NSQ's nsqlookupd, the directory nsqd instances
//! register their topics and channels with and consumers query. Parses nsqlookupd's flags,
//! serves its TCP protocol V1 and HTTP API, and stops gracefully on SIGINT / SIGTERM.

mod http;
mod identify;
mod json;
mod logging;
mod options;
mod protocol;
mod registry;
mod server;
mod tcp;

use std::process::ExitCode;

use options::Options;

fn main() -> ExitCode {
    let (opts, unknown_keys) = match Options::parse_with_warnings(std::env::args().skip(1)) {
        Ok(parsed) => parsed,
        Err(options::OptionsError::Flag(e)) => {
            e.print(
                &Options::usage(),
                &nsq_common::goflag::invoked_as("nsqrlookupd"),
            );
            return ExitCode::from(e.exit_code());
        }
        Err(e) => {
            logging::fatal("[nsqlookupd] ", &e.to_string());
            return ExitCode::from(e.exit_code());
        }
    };
    if opts.version {
        println!(
            "nsqrlookupd v{} (nsqlookupd v{} compatible)",
            env!("CARGO_PKG_VERSION"),
            http::VERSION
        );
        return ExitCode::SUCCESS;
    }
    logging::init(&opts.log_prefix, opts.log_level);
    if let Some(unknown) = unknown_keys {
        tracing::warn!("{unknown}");
    }
    let prefix = opts.log_prefix.clone();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            logging::fatal(&prefix, &format!("failed to start runtime - {e}"));
            return ExitCode::from(1);
        }
    };
    match rt.block_on(server::run(opts)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            logging::fatal(&prefix, &e);
            ExitCode::from(1)
        }
    }
}
