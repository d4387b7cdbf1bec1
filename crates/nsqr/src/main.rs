//! `nsqr`: the command-line tools for nsqr on nsqr-client. `nsqr pub`, `tail`, `stat` and
//! `to-file` are NSQ's to_nsq, nsq_tail, nsq_stat and nsq_to_file with their flags, so scripts
//! written for NSQ's apps keep working. Benchmarks live in the `nsqr-bench` crate.

mod cli;
mod fail;
mod tools;

use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command};

fn main() -> ExitCode {
    let Cli { command } = Cli::parse();
    match command {
        Command::Pub(a) => tools::run("pub", tools::publish::run(a)),
        Command::Tail(a) => tools::run("tail", tools::tail::run(a)),
        Command::Stat(a) => tools::run("stat", tools::stat::run(a)),
        Command::ToFile(a) => tools::run("to-file", tools::to_file::run(a)),
    }
}
