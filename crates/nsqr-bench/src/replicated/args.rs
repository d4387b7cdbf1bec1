//! `replicated`'s flags. Defaults are issue 30's load: 3 nodes with `replicas = 3`, 200 B
//! messages in MPUB batches of 200 from 4 publishers to the topic's leader, against one
//! unreplicated nsqrd under the same load.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use crate::body::MAX_PUBLISHERS;
use crate::cli::{at_least, parse_duration, within, BodySize};

/// nsqrd's `--durability`, given to every node of both sides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Durability {
    /// nsqd's contract: an `OK` once written (replicated: in 2 of 3 nodes' page cache).
    Default,
    /// An `OK` once fsynced (replicated: on 2 of 3 nodes).
    Strict,
}

impl Durability {
    pub fn flag(self) -> &'static str {
        match self {
            Durability::Default => "--durability=default",
            Durability::Strict => "--durability=strict",
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct ReplicatedCmd {
    /// Nodes of the replicated side, and the topic's `replicas`.
    #[arg(long, default_value_t = 3, value_parser = within(2usize, 7))]
    pub replicas: usize,

    /// Publishing connections, all to the topic's leader (or the single node).
    #[arg(long, default_value_t = 4, value_parser = within(1usize, MAX_PUBLISHERS - 1))]
    pub publishers: usize,

    /// Messages per MPUB.
    #[arg(long, default_value_t = 200, value_parser = at_least(1usize))]
    pub batch_size: usize,

    /// MPUBs a publisher has in flight before it waits for the oldest `OK` (1: bench_writer's).
    #[arg(long, default_value_t = 1, value_parser = at_least(1usize))]
    pub pipeline: usize,

    #[command(flatten)]
    pub body: BodySize,

    /// Messages published (then consumed) per side and round.
    #[arg(long, default_value_t = 400_000, value_parser = at_least(1u64))]
    pub count: u64,

    /// Consuming connections, on the leader (or the single node).
    #[arg(long, default_value_t = 4, value_parser = within(1usize, 256))]
    pub consumers: usize,

    /// RDY per consuming connection (nsqd's default --max-rdy-count).
    #[arg(long, default_value_t = 2500, value_parser = at_least(1u32))]
    pub rdy: u32,

    /// Rounds; each runs the replicated side then the single node (A B A B ...), every side
    /// on freshly started nodes.
    #[arg(long, default_value_t = 3, value_parser = within(1usize, 50))]
    pub rounds: usize,

    /// The nodes' --durability.
    #[arg(long, value_enum, default_value = "default")]
    pub durability: Durability,

    /// Skip the single unreplicated nsqrd.
    #[arg(long)]
    pub no_single: bool,

    /// The nsqrd binary (default: nsqrd next to this executable, else target/release).
    #[arg(long)]
    pub nsqrd: Option<PathBuf>,

    /// An extra flag for every node (repeatable), e.g. --server-arg=--log-level=warn.
    #[arg(long, allow_hyphen_values = true)]
    pub server_arg: Vec<String>,

    /// How long the consumers may see nothing before the run counts the rest as lost.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub drain_timeout: Duration,

    /// Print the results as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}
