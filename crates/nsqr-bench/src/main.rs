//! `nsqr`: command-line tools for nsqr. `nsqr pub`, `tail`, `stat` and `to-file` are NSQ's
//! to_nsq, nsq_tail, nsq_stat and nsq_to_file on nsqr-client; `nsqr bench <mode>` measures an
//! nsqd-compatible server (nsqrd or nsqd) over the TCP protocol; `nsqr bench compare` runs
//! nsqrd against a reference; `nsqr floor` is the do-nothing publish server that shows the
//! machine's limit.

mod body;
mod cli;
mod cluster;
mod compare;
mod fail;
mod floor;
mod kv;
mod lookupd;
mod machine;
mod modes;
mod procstat;
mod progress;
mod publisher;
mod queues;
mod report;
mod server;
mod subscriber;
mod tools;
mod tracker;
mod transports;

use std::process::ExitCode;

use clap::Parser;

use cli::{BenchArgs, Cli, Command, Mode};

/// Exit status when messages were lost.
const EXIT_LOSS: u8 = 2;

fn main() -> ExitCode {
    let Cli { command } = Cli::parse();
    let args = match command {
        Command::Bench(args) => *args,
        Command::Floor(args) => return floor_main(&args),
        Command::Pub(a) => return tools::run("pub", tools::publish::run(a)),
        Command::Tail(a) => return tools::run("tail", tools::tail::run(a)),
        Command::Stat(a) => return tools::run("stat", tools::stat::run(a)),
        Command::ToFile(a) => return tools::run("to-file", tools::to_file::run(a)),
    };
    if let Err(e) = args.validate() {
        eprintln!("nsqr bench: {e}");
        return ExitCode::from(64);
    }
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("nsqr bench: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = rt.block_on(bench(args));
    rt.shutdown_timeout(std::time::Duration::from_millis(100));
    code
}

/// `nsqr floor`: serve until killed.
fn floor_main(args: &floor::FloorArgs) -> ExitCode {
    let r = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .and_then(|rt| rt.block_on(floor::run(args)));
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nsqr floor: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn bench(args: BenchArgs) -> ExitCode {
    let work = async {
        if args.mode == Mode::Compare {
            if args.reference.is_some() {
                let ok = compare::run(&args).await?;
                if args.kv_reference.is_some() {
                    return kv::compare(&args).await.map(|kv| kv && ok);
                }
                Ok(ok)
            } else {
                kv::compare(&args).await
            }
        } else if args.mode == Mode::Kv {
            kv::run(&args).await
        } else if args.mode == Mode::Inproc {
            inproc(&args).await
        } else if args.mode == Mode::Cluster {
            cluster::run(&args).await
        } else if args.mode == Mode::Transports {
            transports::run(&args).await
        } else if matches!(args.mode, Mode::HttpConsume | Mode::Sse | Mode::Ordered) {
            queues::run(args.mode, &args).await.map(|r| {
                if args.json {
                    match serde_json::to_string_pretty(&r) {
                        Ok(s) => println!("{s}"),
                        Err(e) => eprintln!("nsqr bench: {e}"),
                    }
                } else {
                    r.print_human();
                }
                r.ok()
            })
        } else {
            modes::run(args.mode, &args).await.map(|r| {
                if args.json {
                    match serde_json::to_string_pretty(&r) {
                        Ok(s) => println!("{s}"),
                        Err(e) => eprintln!("nsqr bench: {e}"),
                    }
                } else {
                    r.print_human();
                }
                r.ok
            })
        }
    };
    tokio::select! {
        r = work => match r {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => {
                eprintln!("nsqr bench: messages were lost");
                ExitCode::from(EXIT_LOSS)
            }
            Err(e) => {
                eprintln!("nsqr bench {}: {e}", args.mode.name());
                ExitCode::FAILURE
            }
        },
        _ = interrupted() => {
            eprintln!("\nnsqr bench: interrupted");
            ExitCode::from(130)
        }
    }
}

/// `nsqr bench inproc`: the embedded broker, printed as a table or JSON.
async fn inproc(args: &BenchArgs) -> fail::Result<bool> {
    let rows = modes::inproc::run(
        &args.sizes,
        args.count,
        args.rounds,
        args.batch_size,
        args.rdy.unwrap_or(2500),
    )
    .await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        modes::inproc::print(&rows);
    }
    Ok(rows.iter().all(|r| r.zero_copy))
}

/// Resolves on SIGINT or SIGTERM. Dropping the benchmark future on the way out kills any
/// servers `compare` started (their guards kill on drop).
async fn interrupted() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let (Ok(mut i), Ok(mut t)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) {
            tokio::select! {
                _ = i.recv() => {}
                _ = t.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
