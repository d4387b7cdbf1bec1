//! Proposals per second of one group on three local nodes (one process, 127.0.0.1), for
//! batches of 1, 16 and 256 messages of 200 bytes, without and with fsync: `concurrency`
//! proposers on the leader, each proposing its next batch as soon as the last committed.
//!
//! `cargo run --release -p nsqr-replication --example propose_bench -- --duration-secs 5`
//! (figures and their command: docs/replication.md, "Speed").

#![allow(clippy::unwrap_used, clippy::expect_used)] // a benchmark: a failed expect is a failed run

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::Parser;
use nsqr_replication::{
    ClusterConfig, ClusterNode, Command, GroupConfig, Message, MessageId, Peers, ReplicatedLog,
};
use tokio::net::TcpListener;

#[derive(Parser)]
struct Args {
    /// Seconds each cell runs.
    #[arg(long, default_value_t = 5)]
    duration_secs: u64,
    /// Proposers running at once on the leader.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Where the nodes' logs go (a real disk, so fsync means something).
    #[arg(long, default_value = "target/propose-bench")]
    dir: PathBuf,
}

struct Node {
    node: ClusterNode,
    log: Arc<ReplicatedLog>,
}

async fn start(dir: &Path, fsync: bool) -> Vec<Node> {
    let mut listeners = Vec::new();
    let mut peers = BTreeMap::new();
    for id in 1..=3u64 {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        peers.insert(id, listener.local_addr().expect("addr").to_string());
        listeners.push((id, listener));
    }
    let peers = Peers::new(peers).expect("peers");
    let mut nodes = Vec::new();
    for (id, listener) in listeners {
        let address = peers.address(id).expect("own address").to_owned();
        let config =
            ClusterConfig::new(id, address, peers.clone(), b"bench".to_vec()).expect("config");
        let node = ClusterNode::start_on(config, listener)
            .await
            .expect("start");
        let mut group = GroupConfig::new("bench", dir.join(format!("node-{id}")));
        group.fsync = fsync;
        let (log, mut committed) = node.open_group(group).await.expect("open");
        // The broker's side: take every committed entry.
        tokio::spawn(async move { while committed.recv().await.is_some() {} });
        nodes.push(Node {
            node,
            log: Arc::new(log),
        });
    }
    nodes[0].log.initialize().await.expect("initialize");
    nodes
}

async fn leader(nodes: &[Node]) -> Arc<ReplicatedLog> {
    for _ in 0..3000 {
        if let Some(n) = nodes.iter().find(|n| n.log.status().is_leader) {
            return n.log.clone();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no leader elected within 30 s");
}

fn batch(proposer: usize, seq: u64, size: usize) -> Command {
    let body = Bytes::from(vec![b'x'; 200]);
    let messages = (0..size).map(|i| {
        let mut id = [0u8; 16];
        id[..8].copy_from_slice(&seq.to_be_bytes());
        id[8..12].copy_from_slice(&(proposer as u32).to_be_bytes());
        id[12..].copy_from_slice(&(i as u32).to_be_bytes());
        Message {
            id: MessageId(id),
            timestamp_ns: 0,
            deliver_at_ms: None,
            body: body.clone(),
        }
    });
    Command::Publish(messages.collect())
}

/// Runs proposers for `duration`; returns (proposals, latencies in µs, sorted).
async fn run(log: Arc<ReplicatedLog>, size: usize, args: &Args) -> (u64, Vec<u64>) {
    let until = Instant::now() + Duration::from_secs(args.duration_secs);
    let mut tasks = Vec::new();
    for p in 0..args.concurrency {
        let log = log.clone();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut seq = 0;
            while Instant::now() < until {
                let started = Instant::now();
                log.propose(batch(p, seq, size)).await.expect("propose");
                latencies.push(started.elapsed().as_micros() as u64);
                seq += 1;
            }
            latencies
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.expect("proposer"));
    }
    all.sort_unstable();
    (all.len() as u64, all)
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(i).copied().unwrap_or(0) as f64 / 1000.0
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    println!(
        "3 nodes, {} proposers, {} s per cell, 200 B messages, logs in {}",
        args.concurrency,
        args.duration_secs,
        args.dir.display()
    );
    println!("| fsync | batch | proposals/s | messages/s | p50 ms | p99 ms |");
    println!("|---|---:|---:|---:|---:|---:|");
    for fsync in [false, true] {
        for size in [1usize, 16, 256] {
            let dir = args.dir.join(format!("fsync-{fsync}-batch-{size}"));
            let _ = std::fs::remove_dir_all(&dir);
            let nodes = start(&dir, fsync).await;
            let log = leader(&nodes).await;
            let (count, latencies) = run(log, size, &args).await;
            let rate = count as f64 / args.duration_secs as f64;
            println!(
                "| {} | {size} | {rate:.0} | {:.0} | {:.2} | {:.2} |",
                if fsync { "on" } else { "off" },
                rate * size as f64,
                percentile(&latencies, 0.5),
                percentile(&latencies, 0.99),
            );
            for node in nodes {
                if let Ok(log) = Arc::try_unwrap(node.log) {
                    log.shutdown().await;
                }
                node.node.shutdown();
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}
