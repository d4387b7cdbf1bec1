//! `cluster`'s own flags: the cluster's shape and where its nodes come from. Defaults are nsq's
//! bench.py's: 3 topics (one per load host), a bench_writer with 2 connections (GOMAXPROCS=2)
//! per node and topic, a bench_reader with 8 (GOMAXPROCS=8) per node and topic, i.e. 8 clients
//! per channel on every node.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::body::MAX_PUBLISHERS;
use crate::cli::{at_least, within};

/// bench.py's two runs: publishing only, or publishing and consuming at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClusterMode {
    /// Publish for --duration (no channel, as bench.py), then drain every topic through
    /// lookupd to count loss and duplicates (the drain is reported apart).
    Pub,
    /// Consumers subscribed through lookupd first, then publish for --duration and drain.
    Pubsub,
}

#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Cluster")]
pub struct ClusterArgs {
    /// How many nodes to start (ignored with --nsqd-tcp-addresses).
    #[arg(long, default_value_t = 3, value_parser = within(1usize, 64))]
    pub nodes: usize,

    /// bench.py's mode.
    #[arg(long = "mode", value_enum, default_value = "pubsub")]
    pub cluster_mode: ClusterMode,

    /// Topics (bench.py: one per load host, 3).
    #[arg(long, default_value_t = 3, value_parser = within(1usize, 64))]
    pub topics: usize,

    /// Publishing connections per node and topic (bench.py: bench_writer, 2).
    #[arg(long, default_value_t = 2, value_parser = within(1usize, MAX_PUBLISHERS))]
    pub writers: usize,

    /// Consumer clients per topic's channel; each finds every node through lookupd and holds
    /// a connection to each (bench.py: bench_reader, 8 per node).
    #[arg(long, default_value_t = 8, value_parser = at_least(1usize))]
    pub readers: usize,

    /// Use these running nodes (comma-separated, as they register with lookupd) instead of
    /// starting them; needs --lookupd-http-address.
    #[arg(long, value_delimiter = ',', requires = "lookupd_http_address")]
    pub nsqd_tcp_addresses: Vec<String>,

    /// Process ids of the given nodes (same order), for their CPU and memory.
    #[arg(long, value_delimiter = ',', requires = "nsqd_tcp_addresses")]
    pub nsqd_pids: Vec<u32>,

    /// The lookupd the given nodes register with (started nodes get a lookupd of their own).
    #[arg(long, requires = "nsqd_tcp_addresses")]
    pub lookupd_http_address: Option<String>,

    /// The lookupd binary to start [default: nsqrlookupd next to this executable, else
    /// target/release/nsqrlookupd].
    #[arg(long)]
    pub lookupd_bin: Option<PathBuf>,

    /// Put each node in a network namespace of its own, reached over a veth pair (needs root
    /// and iproute2; created here and removed on exit); only for nodes it starts.
    #[arg(long, conflicts_with = "nsqd_tcp_addresses")]
    pub netns: bool,

    /// With --netns: bandwidth of each node's link, each way (100mbit, 1gbit, 2.5gbit).
    #[arg(long, requires = "netns", value_parser = netns_rate)]
    pub netns_rate: Option<String>,

    /// With --netns: delay added to each node's link, each way (tc's syntax: 100us, 1ms;
    /// needs the kernel's netem qdisc).
    #[arg(long, requires = "netns", value_parser = netns_delay)]
    pub netns_delay: Option<String>,
}

impl ClusterArgs {
    /// The number of nodes: the given ones, else `--nodes`.
    pub fn node_count(&self) -> usize {
        if self.nsqd_tcp_addresses.is_empty() {
            self.nodes
        } else {
            self.nsqd_tcp_addresses.len()
        }
    }

    /// The rules on the given nodes' lists.
    pub fn check(&self) -> Result<(), String> {
        if self.nsqd_tcp_addresses.len() > 64 {
            return Err("--nsqd-tcp-addresses takes at most 64 nodes".into());
        }
        if !self.nsqd_pids.is_empty() && self.nsqd_pids.len() != self.nsqd_tcp_addresses.len() {
            return Err("--nsqd-pids needs one pid per --nsqd-tcp-addresses entry".into());
        }
        Ok(())
    }
}

fn netns_rate(r: &str) -> Result<String, String> {
    match super::rate_bits(r) {
        Some(_) => Ok(r.to_string()),
        None => Err(format!(
            "invalid --netns-rate {r:?} (bits per second, at least 8kbit: 100mbit, 1gbit, 2.5gbit)"
        )),
    }
}

fn netns_delay(d: &str) -> Result<String, String> {
    if d.is_empty() || !d.chars().all(|c| c.is_ascii_alphanumeric() || c == '.') {
        return Err(format!(
            "invalid --netns-delay {d:?} (tc's syntax: 100us, 1ms)"
        ));
    }
    Ok(d.to_string())
}
