//! `nsqr-bench`: the measuring lab, apart from the user's tools (`nsqr`). `nsqr-bench <mode>`
//! measures an nsqd-compatible server (nsqrd or nsqd) over the TCP protocol, nsqrd's HTTP
//! queues, its keyspace, a cluster, the embedded broker and the transports against libzmq;
//! `compare` runs nsqrd against a reference; `floor` is the do-nothing publish server that
//! shows the machine's limit; `http-pub` runs wrk against nsqrd's, nsqd's and the floor's HTTP
//! `/pub`.
//!
//! Exit status: 0 done, 1 the benchmark could not run, 2 messages were lost (or duplicated,
//! as each mode counts), 64 a usage error, 130 interrupted.

mod body;
mod cli;
mod cluster;
mod compare;
mod fail;
mod floor;
mod http_pub;
mod kv;
mod lookupd;
mod machine;
mod modes;
mod procstat;
mod progress;
mod publisher;
mod queues;
mod replicated;
mod report;
mod server;
mod stats;
mod subscriber;
mod tracker;
mod transports;

use std::process::ExitCode;

use clap::{CommandFactory, Parser};

use cli::{Cli, Command};

/// Exit status when messages were lost.
const EXIT_LOSS: u8 = 2;
/// Exit status of a usage error (sysexits' EX_USAGE), apart from a loss's.
const EXIT_USAGE: u8 = 64;

fn main() -> ExitCode {
    let command = match Cli::try_parse() {
        Ok(Cli { command }) => command,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(EXIT_USAGE)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    if let Err(msg) = command.check() {
        let mut cli = Cli::command();
        let name = command.name();
        let e = match cli.find_subcommand_mut(name) {
            Some(c) => c
                .clone()
                .bin_name(format!("nsqr-bench {name}"))
                .error(clap::error::ErrorKind::ValueValidation, msg),
            None => cli.error(clap::error::ErrorKind::ValueValidation, msg),
        };
        let _ = e.print();
        return ExitCode::from(EXIT_USAGE);
    }
    if let Command::Floor(args) = &command {
        return floor_main(args);
    }
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("nsqr-bench: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = rt.block_on(bench(command));
    rt.shutdown_timeout(std::time::Duration::from_millis(100));
    code
}

/// `nsqr-bench floor`: serve until killed.
fn floor_main(args: &floor::FloorArgs) -> ExitCode {
    let r = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .and_then(|rt| rt.block_on(floor::run(args)));
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nsqr-bench floor: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Run one mode; Ok(false) when messages were lost.
async fn dispatch(command: &Command) -> fail::Result<bool> {
    use modes::Single;
    match command {
        Command::Pub(a) => modes::run_pub(a).await,
        Command::Sub(a) => modes::run_pubsub(Single::Sub, a).await,
        Command::Pubsub(a) => modes::run_pubsub(Single::Pubsub, a).await,
        Command::Latency(a) => modes::run_latency(a).await,
        Command::Matrix(a) => modes::run_matrix(a).await,
        Command::Compare(a) => {
            if a.reference.is_some() {
                let ok = compare::run(a).await?;
                if a.kv_reference.is_some() {
                    return kv::compare(a).await.map(|kv| kv && ok);
                }
                Ok(ok)
            } else {
                kv::compare(a).await
            }
        }
        Command::Inproc(a) => modes::inproc::main(a).await,
        Command::Cluster(a) => cluster::run(a).await,
        Command::Replicated(a) => replicated::run(a).await,
        Command::Kv(a) => kv::run(a).await,
        Command::HttpConsume(a) => queues::http_consume(a).await,
        Command::Sse(a) => queues::sse(a).await,
        Command::Ordered(a) => queues::ordered(a).await,
        Command::Transports(a) => transports::run(a).await,
        Command::HttpPub(a) => http_pub::run(a).await,
        Command::Floor(_) => Err(fail::err("floor is a server, not a benchmark")),
    }
}

async fn bench(command: Command) -> ExitCode {
    let name = command.name();
    tokio::select! {
        r = dispatch(&command) => match r {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => {
                eprintln!("nsqr-bench: messages were lost");
                ExitCode::from(EXIT_LOSS)
            }
            Err(e) => {
                eprintln!("nsqr-bench {name}: {e}");
                ExitCode::FAILURE
            }
        },
        _ = interrupted() => {
            eprintln!("\nnsqr-bench: interrupted");
            ExitCode::from(130)
        }
    }
}

/// Resolves on SIGINT or SIGTERM. Dropping the benchmark future on the way out kills any
/// servers a mode started (their guards kill on drop).
async fn interrupted() {
    nsq_common::net::shutdown_signal().await;
}
