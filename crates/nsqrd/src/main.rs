//! nsqrd: a drop-in replacement for nsqd. Parses nsqd's flags, validates them as nsqd does,
//! and runs the server (`lib.rs`) until SIGINT / SIGTERM.

use std::process::ExitCode;

use nsq_common::logging::fatal;
use nsqrd::Options;

/// Fault injection for black-box tests on machines where no small file system can be mounted:
/// while the file named by `NSQRD_FAULT_ENOSPC_FILE` exists, every disk write fails with
/// ENOSPC (`crates/nsqrd/tests/it/durability_disk_full.rs`). Only the binary reads it; the
/// libraries take the hook as configuration.
fn test_hooks() -> nsqrd::Hooks {
    let Some(path) = std::env::var_os("NSQRD_FAULT_ENOSPC_FILE").map(std::path::PathBuf::from)
    else {
        return nsqrd::Hooks::default();
    };
    nsqrd::Hooks {
        disk_faults: Some(nsqr_broker::DiskFaults::new(move || {
            path.exists().then(|| std::io::Error::from_raw_os_error(28))
        })),
    }
}

fn main() -> ExitCode {
    let (mut opts, warnings) = match Options::parse_with_warnings(std::env::args().skip(1)) {
        Ok(parsed) => parsed,
        Err(nsqrd::OptionsError::Flag(e)) => {
            e.print(&Options::usage(), &nsq_common::goflag::invoked_as("nsqrd"));
            return ExitCode::from(e.exit_code());
        }
        // Config-file errors are FATAL as in nsqd (logged with the default prefix).
        Err(e) => {
            fatal("[nsqd] ", &e.to_string());
            return ExitCode::from(1);
        }
    };
    if opts.version_requested {
        println!(
            "nsqrd v{} (nsqd v{} compatible)",
            env!("CARGO_PKG_VERSION"),
            nsqrd::NSQD_COMPAT_VERSION
        );
        return ExitCode::SUCCESS;
    }
    nsq_common::logging::init(&opts.log_prefix, opts.log_filter());
    for w in &warnings {
        tracing::warn!("{w}");
    }
    nsqrd::raise_open_files_limit();
    let prefix = opts.log_prefix.clone();
    if let Err(e) = opts.validate() {
        fatal(&prefix, &e.to_string());
        return ExitCode::from(1);
    }
    let unsupported = opts.unsupported_flags();
    if !unsupported.is_empty() {
        for f in &unsupported {
            fatal(&prefix, &format!("not supported yet: {f}"));
        }
        return ExitCode::from(1);
    }
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            fatal(&prefix, &format!("failed to start runtime - {e}"));
            return ExitCode::from(1);
        }
    };
    match rt.block_on(nsqrd::run(opts, test_hooks())) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            fatal(&prefix, &e.to_string());
            ExitCode::from(1)
        }
    }
}
