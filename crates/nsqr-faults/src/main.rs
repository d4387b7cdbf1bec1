//! `nsqr-faults`: the fault-injection suite of replicated topics, Jepsen's way
//! (`docs/reliability.md`). It runs a cluster of nsqrd processes on 127.0.0.1 with one topic
//! replicated on every node, publishers and consumers that record everything they see, and a
//! schedule of faults; after the faults heal and a final drain, the checker prints what it
//! found and the run fails (exit 1) if an acknowledged message was lost or a node crashed.
//! Exit 2 is the harness's own failure (a node that cannot start, a bad flag).

mod checks;
mod client;
mod cluster;
mod consumer;
mod disk;
mod history;
mod nemesis;
mod node;
mod proxy;
mod publisher;
mod report;
mod run;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

use crate::nemesis::Fault;

/// Fault injection against a cluster of nsqrd nodes with a replicated topic.
#[derive(Parser, Debug)]
#[command(name = "nsqr-faults")]
pub struct Args {
    /// The nsqrd binary (default: `nsqrd` beside this program).
    #[arg(long)]
    nsqrd: Option<PathBuf>,
    /// Nodes in the cluster, every one a replica of the topic (3 or 5).
    #[arg(long, default_value_t = 3, value_parser = parse_nodes)]
    nodes: u8,
    /// Minimum length of the fault phase, in seconds; the run also goes on until every
    /// selected fault was injected at least once.
    #[arg(long, default_value_t = 0)]
    duration: u64,
    /// How long each fault is held before it heals, in milliseconds: above the time a
    /// follower waits before it stands for election (the leader's lease, 1 s, then the
    /// election timeout, 0.5-1 s).
    #[arg(long, default_value_t = 5000)]
    hold_ms: u64,
    /// Quiet time between a heal and the next fault, in milliseconds.
    #[arg(long, default_value_t = 2000)]
    quiet_ms: u64,
    /// Concurrent publishers.
    #[arg(long, default_value_t = 4)]
    publishers: usize,
    /// The faults to inject, comma-separated (default: all of them), in a shuffled order each
    /// round; a fault named twice comes twice per round.
    #[arg(long, value_delimiter = ',', value_parser = parse_fault)]
    faults: Vec<Fault>,
    /// Inject exactly this many faults, whatever `--duration` says: `--faults kill-leader
    /// --count 20` kills the leader 20 times.
    #[arg(long)]
    count: Option<u32>,
    /// Size of each node's own file system (a tmpfs on its data directory, mounted when a
    /// `full-disk-*` fault is selected), in MiB: room for a log segment (64 MiB) and more.
    #[arg(long, default_value_t = 256)]
    disk_mib: u64,
    /// Seed of the schedule's choices (default: random, printed).
    #[arg(long)]
    seed: Option<u64>,
    /// Where the nodes' directories and logs go (default: a new temporary directory, removed
    /// after a passing run).
    #[arg(long)]
    run_dir: Option<PathBuf>,
}

fn parse_nodes(s: &str) -> Result<u8, String> {
    match s {
        "3" => Ok(3),
        "5" => Ok(5),
        _ => Err(format!("{s:?}: a replicated topic has 3 or 5 replicas")),
    }
}

fn parse_fault(s: &str) -> Result<Fault, String> {
    Fault::parse(s).ok_or_else(|| {
        let names: Vec<_> = Fault::ALL.iter().map(|f| f.name()).collect();
        format!("unknown fault {s:?}; one of {}", names.join(", "))
    })
}

impl Args {
    fn hold(&self) -> Duration {
        Duration::from_millis(self.hold_ms)
    }

    fn quiet(&self) -> Duration {
        Duration::from_millis(self.quiet_ms)
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("nsqr-faults: runtime: {e}");
            return ExitCode::from(2);
        }
    };
    runtime.block_on(run::main(args))
}
