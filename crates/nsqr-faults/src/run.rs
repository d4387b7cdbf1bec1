//! One run: the cluster started, the clients started, the faults injected one after another
//! (each held, healed, and the cluster given time to publish again), a final drain, then the
//! checker. Every wait is bounded; every process is killed at the end, also on SIGINT or
//! SIGTERM.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::cluster::{Cluster, Disks};
use crate::consumer::{Consumer, RDY};
use crate::history::{History, NodeNum};
use crate::nemesis::{self, Fault};
use crate::node::NodeError;
use crate::publisher::Publisher;
use crate::report::{CatchUp, Recovery, Report};
use crate::Args;

/// The replicated topic, the consumers' channel, and the ordered channel of the order check.
const TOPIC: &str = "faults";
const CHANNEL: &str = "check";
const ORDERED_CHANNEL: &str = "ordered";
/// How long the cluster may take to acknowledge its first publish, or its first one after
/// a heal.
const RECOVERY_TIMEOUT: Duration = Duration::from_secs(60);
/// The final drain ends when every acknowledged message was delivered, when nothing was
/// delivered for `DRAIN_IDLE`, or after `DRAIN_LIMIT`.
const DRAIN_IDLE: Duration = Duration::from_secs(30);
const DRAIN_LIMIT: Duration = Duration::from_secs(180);

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Node(#[from] NodeError),
    #[error("{0}")]
    Setup(String),
    #[error("no publish acknowledged within {RECOVERY_TIMEOUT:?} of the start")]
    NoLeader,
    #[error("interrupted")]
    Interrupted,
}

pub async fn main(args: Args) -> ExitCode {
    let (run_dir, temporary) = match &args.run_dir {
        Some(d) => (d.clone(), false),
        None => (
            std::env::temp_dir().join(format!("nsqr-faults-{}", std::process::id())),
            true,
        ),
    };
    let seed = args.seed.unwrap_or_else(|| fastrand::u64(..));
    let result = async {
        let bin = nsqrd_path(&args)?;
        std::fs::create_dir_all(&run_dir)
            .map_err(|e| RunError::Setup(format!("{}: {e}", run_dir.display())))?;
        println!(
            "nsqr-faults: {} nodes ({}), topic {TOPIC} with replicas = {}, seed {seed}, in {}",
            args.nodes,
            bin.display(),
            args.nodes,
            run_dir.display()
        );
        let mut selected = if args.faults.is_empty() {
            Fault::ALL.to_vec()
        } else {
            args.faults.clone()
        };
        let disks = match selected.iter().any(|f| f.fills_disk()) {
            true => Disks::Tmpfs(args.disk_mib),
            false => Disks::Shared,
        };
        let (mut cluster, no_disks) =
            Cluster::new(&bin, usize::from(args.nodes), &run_dir, TOPIC, disks).await?;
        let mut skipped = None;
        if let Some(why) = no_disks {
            let mut faults: Vec<Fault> = selected
                .iter()
                .copied()
                .filter(|f| f.fills_disk())
                .collect();
            faults.sort();
            faults.dedup();
            selected.retain(|f| !f.fills_disk());
            let why = format!("no file system of their own for the nodes: {why}");
            println!("SKIPPED: {}: {why}", fault_names(&faults));
            if selected.is_empty() {
                return Err(RunError::Setup("every selected fault was skipped".into()));
            }
            skipped = Some((faults, why));
        }
        let outcome = tokio::select! {
            r = drive(&args, &selected, &mut cluster, seed) => r,
            () = interrupted() => Err(RunError::Interrupted),
        };
        let outcome = outcome.map(|mut report| {
            report.skipped = skipped;
            report
        });
        cluster.shutdown().await;
        outcome
    }
    .await;
    match result {
        Ok(report) => {
            report.print();
            if report.passed() {
                if temporary {
                    let _ = std::fs::remove_dir_all(&run_dir);
                }
                ExitCode::SUCCESS
            } else {
                println!("nodes' logs kept in {}", run_dir.display());
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("nsqr-faults: {e} (nodes' logs in {})", run_dir.display());
            ExitCode::from(2)
        }
    }
}

/// `--nsqrd`, or `nsqrd` beside this program (both are built into the same target directory).
fn nsqrd_path(args: &Args) -> Result<PathBuf, RunError> {
    let path = match &args.nsqrd {
        Some(p) => p.clone(),
        None => std::env::current_exe()
            .map_err(|e| RunError::Setup(format!("this program's path: {e}")))?
            .with_file_name("nsqrd"),
    };
    if path.is_file() {
        Ok(path)
    } else {
        Err(RunError::Setup(format!("no nsqrd at {}", path.display())))
    }
}

/// `a, b, c`.
pub fn fault_names(faults: &[Fault]) -> String {
    let names: Vec<&str> = faults.iter().map(|f| f.name()).collect();
    names.join(", ")
}

async fn interrupted() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => return std::future::pending().await,
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

/// Polls `done` every 100 ms for at most `limit`; whether it became true.
/// How often, and how long at most, each node is asked whether it leads the topic.
const LEAD_POLL: Duration = Duration::from_millis(100);
const LEAD_POLL_TIMEOUT: Duration = Duration::from_millis(300);

/// Records, every [`LEAD_POLL`] until `stop`, each node that says (`/metrics`) it leads the
/// topic: the split-brain check's view of who led when (a follower acknowledges the publishes
/// it forwards, so an `OK` does not tell). A paused node does not answer and is not counted.
async fn watch_leaders(
    http: Vec<std::net::SocketAddr>,
    history: Arc<History>,
    mut stop: watch::Receiver<bool>,
) {
    while !*stop.borrow() {
        let mut asks = JoinSet::new();
        for (i, &addr) in http.iter().enumerate() {
            asks.spawn(async move {
                let said =
                    tokio::time::timeout(LEAD_POLL_TIMEOUT, crate::node::leads_at(addr, TOPIC));
                (i + 1, said.await.ok().flatten())
            });
        }
        while let Some(asked) = asks.join_next().await {
            if let Ok((node, Some(term))) = asked {
                history.leads(node, term);
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(LEAD_POLL) => {}
            _ = stop.changed() => break,
        }
    }
}

async fn wait_for(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < deadline {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    done()
}

async fn drive(
    args: &Args,
    selected: &[Fault],
    cluster: &mut Cluster,
    seed: u64,
) -> Result<Report, RunError> {
    let history = Arc::new(History::new());
    for num in 1..=cluster.nodes.len() {
        cluster.start(num).await?;
    }
    let tcp: Vec<_> = cluster.nodes.iter().map(|n| n.tcp).collect();
    let (stop_publishing, publishing) = watch::channel(false);
    let (stop_consuming, consuming) = watch::channel(false);
    let mut clients = JoinSet::new();
    for (i, &addr) in tcp.iter().enumerate() {
        for (channel, ordered) in [(CHANNEL, false), (ORDERED_CHANNEL, true)] {
            let c = Consumer {
                node: i + 1,
                tcp: addr,
                topic: TOPIC.into(),
                channel: channel.into(),
                ordered,
                history: Arc::clone(&history),
            };
            clients.spawn(c.run(consuming.clone()));
        }
    }
    // Publishing starts once every node lists both channels, so each channel has every
    // acknowledged message (a channel created later would take none published before it).
    let deadline = tokio::time::Instant::now() + RECOVERY_TIMEOUT;
    loop {
        let mut listed = true;
        for node in &cluster.nodes {
            listed &= node
                .lists_channels(TOPIC, &[CHANNEL, ORDERED_CHANNEL])
                .await;
        }
        if listed {
            break;
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(RunError::Setup(format!(
                "the consumers' channels not on every node within {RECOVERY_TIMEOUT:?}"
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let http: Vec<_> = cluster.nodes.iter().map(|n| n.http).collect();
    clients.spawn(watch_leaders(http, Arc::clone(&history), consuming.clone()));
    for id in 0..args.publishers {
        let p = Publisher {
            id,
            topic: TOPIC.into(),
            tcp: tcp.clone(),
            history: Arc::clone(&history),
        };
        clients.spawn(p.run(publishing.clone()));
    }
    if !wait_for(RECOVERY_TIMEOUT, || history.last_ack().is_some()).await {
        return Err(RunError::NoLeader);
    }
    order_channel(cluster, &history).await?;

    let faults_start = history.now();
    let (injected, recoveries, catch_ups) =
        inject_faults(args, selected, cluster, &history, seed).await?;
    let faults_end = history.now();

    let _ = stop_publishing.send(true);
    println!(
        "[{:>7.1}s] publishers stopped; draining",
        history.now().as_secs_f64()
    );
    drain(&history).await;
    let _ = stop_consuming.send(true);
    while tokio::time::timeout(Duration::from_secs(10), clients.join_next())
        .await
        .is_ok_and(|r| r.is_some())
    {}
    clients.abort_all();
    cluster.check_crashes("at the end");
    cluster.check_panics();
    Ok(Report {
        verdict: history.check((faults_start, faults_end), cluster.nodes.len(), RDY),
        injected,
        recoveries,
        catch_ups,
        skipped: None,
        crashes: cluster.crashes.clone(),
        fault_phase: faults_end - faults_start,
    })
}

/// Makes the ordered channel ordered on the leader (the node of the latest `OK`), which
/// replicates the setting; its consumers created the channel.
async fn order_channel(cluster: &mut Cluster, history: &History) -> Result<(), RunError> {
    let leader = history.last_ack().map_or(1, |(n, _)| n);
    let path = format!("/channel/config?topic={TOPIC}&channel={ORDERED_CHANNEL}");
    cluster
        .node(leader)
        .post_until_ok(&path, r#"{"ordered":true}"#)
        .await?;
    history.ordered_from_now();
    Ok(())
}

/// What the fault phase recorded: the faults injected by kind, each one's recovery, and
/// each full disk's catch-up once its space came back.
type Injected = (BTreeMap<Fault, u32>, Vec<Recovery>, Vec<CatchUp>);

/// Whether the fault phase goes on: `--count` faults, or until every selected kind ran and
/// `--duration` has passed.
fn more_faults(
    args: &Args,
    injected: &BTreeMap<Fault, u32>,
    kinds: usize,
    end: tokio::time::Instant,
) -> bool {
    match args.count {
        Some(count) => injected.values().sum::<u32>() < count,
        None => injected.len() < kinds || tokio::time::Instant::now() < end,
    }
}

/// Faults one after another until [`more_faults`] says the phase is over.
async fn inject_faults(
    args: &Args,
    selected: &[Fault],
    cluster: &mut Cluster,
    history: &History,
    seed: u64,
) -> Result<Injected, RunError> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let end = tokio::time::Instant::now() + Duration::from_secs(args.duration);
    let kinds = selected
        .iter()
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let mut injected = BTreeMap::new();
    let mut recoveries = Vec::new();
    let mut catch_ups = Vec::new();
    let mut round = Vec::new();
    while more_faults(args, &injected, kinds, end) {
        if round.is_empty() {
            round = selected.to_vec();
            rng.shuffle(&mut round);
        }
        let Some(fault) = round.pop() else { break };
        tokio::time::sleep(args.quiet()).await;
        cluster.check_crashes(&format!("before {fault}"));
        cluster.heal().await?;
        let leader = current_leader(cluster, history).await;
        let at = history.now();
        let what = nemesis::inject(cluster, fault, leader, &mut rng).await?;
        // A disk is full once its ballast is written, which takes a while: the fault starts
        // then, and what was acknowledged meanwhile was written.
        let at = if fault.fills_disk() {
            history.now()
        } else {
            at
        };
        println!("[{:>7.1}s] {fault}: {what}", at.as_secs_f64());
        *injected.entry(fault).or_insert(0) += 1;
        tokio::time::sleep(args.hold()).await;
        cluster.check_crashes(&format!("during {fault}"));
        let healed = history.now();
        let freed = cluster.heal().await?;
        let resumed = wait_for(RECOVERY_TIMEOUT, || {
            history.first_ack_since(healed, 0).is_some()
        })
        .await;
        let recovery = Recovery::measure(fault, leader, at, history);
        println!(
            "[{:>7.1}s] healed; publishes resumed {}, deliveries {} after the fault{}",
            healed.as_secs_f64(),
            fmt_opt(recovery.publish),
            fmt_opt(recovery.deliver),
            if resumed {
                ""
            } else {
                " (none since the heal)"
            }
        );
        recoveries.push(recovery);
        // Every node catches up before the next fault, so each fault meets a whole cluster
        // (a failover with the other survivor still behind would measure two faults); only a
        // node whose disk was full fails the run if it does not.
        for node in 1..=cluster.nodes.len() {
            let took = cluster.catch_up(node, RECOVERY_TIMEOUT).await;
            if !freed.contains(&node) {
                if took.is_none() {
                    println!(
                        "[{:>7.1}s] node {node} did not apply every committed entry within {RECOVERY_TIMEOUT:?}",
                        history.now().as_secs_f64()
                    );
                }
                continue;
            }
            println!(
                "[{:>7.1}s] node {node}'s disk freed; it applied every committed entry {}",
                history.now().as_secs_f64(),
                took.map_or_else(
                    || format!("NOT within {RECOVERY_TIMEOUT:?}"),
                    |d| format!("{:.2} s later", d.as_secs_f64())
                )
            );
            catch_ups.push(CatchUp { fault, node, took });
        }
    }
    Ok((injected, recoveries, catch_ups))
}

/// The node that says (`/metrics`) it leads the topic, in the highest term if several do;
/// else the node of an `OK` younger than `FRESH` (waiting up to 5 s for one), else of the
/// latest. A follower forwards publishes to the leader, so the node of an `OK` is only a
/// guess.
async fn current_leader(cluster: &Cluster, history: &History) -> NodeNum {
    let mut leader = None;
    for node in &cluster.nodes {
        if let Some(term) = node.leads(TOPIC).await {
            if leader.is_none_or(|(_, t)| term > t) {
                leader = Some((node.num, term));
            }
        }
    }
    if let Some((num, _)) = leader {
        return num;
    }
    const FRESH: Duration = Duration::from_millis(300);
    let fresh = || {
        history
            .last_ack()
            .filter(|(_, at)| history.now().saturating_sub(*at) < FRESH)
    };
    wait_for(Duration::from_secs(5), || fresh().is_some()).await;
    history.last_ack().map_or(1, |(n, _)| n)
}

/// Waits until every acknowledged message was delivered, or delivery stalls.
async fn drain(history: &History) {
    let deadline = tokio::time::Instant::now() + DRAIN_LIMIT;
    let mut seen = history.delivery_count();
    let mut idle_since = tokio::time::Instant::now();
    while tokio::time::Instant::now() < deadline {
        if history.undelivered() == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = history.delivery_count();
        if now != seen {
            seen = now;
            idle_since = tokio::time::Instant::now();
        } else if idle_since.elapsed() > DRAIN_IDLE {
            return;
        }
    }
}

pub fn fmt_opt(d: Option<Duration>) -> String {
    d.map_or_else(
        || "never".to_string(),
        |d| format!("{:.2} s", d.as_secs_f64()),
    )
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[test]
    fn count_ends_the_fault_phase_after_exactly_that_many_faults() {
        let args = Args::parse_from(["nsqr-faults", "--faults", "kill-leader", "--count", "20"]);
        let far = tokio::time::Instant::now() + Duration::from_secs(3600);
        let mut injected = BTreeMap::new();
        for n in 0..20 {
            assert!(more_faults(&args, &injected, 1, far), "after {n}");
            *injected.entry(Fault::KillLeader).or_insert(0) += 1;
        }
        assert!(!more_faults(&args, &injected, 1, far));

        let args = Args::parse_from(["nsqr-faults", "--faults", "ring,kill-leader"]);
        let now = tokio::time::Instant::now();
        let one = BTreeMap::from([(Fault::Ring, 5)]);
        assert!(more_faults(&args, &one, 2, now), "every kind runs once");
        let both = BTreeMap::from([(Fault::Ring, 1), (Fault::KillLeader, 1)]);
        assert!(!more_faults(&args, &both, 2, now));
    }
}
