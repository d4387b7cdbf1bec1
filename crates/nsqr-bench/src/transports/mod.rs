//! `nsqr-bench transports`: the transport matrix against libzmq, replicating ServerLink's
//! comparison.
//!
//! Cells are pattern x transport x size (pubsub and reqrep at 64 B x 100k, 1 KB x 50k, 8 KB x
//! 10k, 64 KB x 1k; fanout to 2 / 4 / 8 subscribers of 10k x 64 B), each measured `--reps`
//! times, nsqr and libzmq alternating so a burst of load on the machine hits both, timed at
//! the receiver and checked for exact counts. nsqr reaches a broker: over tcp and unix an
//! nsqrd this harness starts (ephemeral port or a socket in a temporary directory, killed at
//! the end), in process the embedded broker; libzmq is brokerless, so every nsqr message takes
//! one hop more (publisher -> broker -> subscriber) and the report says so.
//!
//! libzmq is compiled in only with the `libzmq` feature (it builds libzmq from source);
//! without it the matrix runs nsqr's side alone and says that libzmq was not built in.

mod args;
mod bodies;
pub(crate) mod cells;
mod heap;
mod nsqr_side;
mod report;
#[cfg(feature = "libzmq")]
mod zmq_side;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nsqr_broker::{Broker, BrokerConfig};

pub use args::TransportsArgs;
use cells::{Cell, Plan, Sample, Transport};
use nsqr_side::Endpoint;
use report::{CellReport, Report, Side};

use crate::cli::TransportsCmd;
use crate::fail::{err, Result};
use crate::machine::{load, Machine};
use crate::server::{self, Launch, Server};

/// Run the matrix, print it; Ok(false) when a cell did not get exactly its messages.
pub async fn run(a: &TransportsCmd) -> Result<bool> {
    let t = &a.transports;
    heap::keep_freed_memory();
    let zmq = libzmq_version().filter(|_| !t.no_libzmq);
    let plan = Plan {
        patterns: &t.patterns,
        transports: &t.transports,
        sizes: &a.sizes,
        counts: &t.counts,
        scale: t.scale,
        fanout_receivers: &t.fanout_subscribers,
        fanout_count: t.fanout_count,
        fanout_size: t.fanout_size,
    };
    let mut machine = Machine::probe();
    let scratch = Scratch(server::temp_dir()?);
    let mut cells = Vec::new();
    let mut nsqrd = None;
    for &transport in plan.transports {
        let todo = plan.cells(transport);
        let target = Target::start(transport, a, &scratch.0).await?;
        if let Some(bin) = &target.binary {
            nsqrd.get_or_insert_with(|| server::version(bin));
        }
        for cell in todo {
            cells.push(measure(&target.endpoint, &cell, t, zmq.is_some(), &scratch.0).await);
        }
        target.stop().await;
    }
    machine.load_after = load();
    let report = Report {
        machine,
        libzmq_built_in: libzmq_version().is_some(),
        libzmq: zmq.unwrap_or_else(|| match libzmq_version() {
            Some(v) => format!("{v} (not measured: --no-libzmq)"),
            None => "libzmq (not built in: build nsqr-bench with --features libzmq)".into(),
        }),
        nsqrd,
        reps: t.reps,
        warmup: t.warmup,
        ok: cells.iter().all(CellReport::ok),
        cells,
    };
    crate::report::emit(&report, a.json)?;
    Ok(report.ok)
}

/// A temporary directory (libzmq's ipc sockets), removed on the way out.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What nsqr's side of one transport talks to: an nsqrd process, or the embedded broker.
struct Target {
    endpoint: Endpoint,
    /// Killed (and its data directory removed) when dropped.
    server: Option<Server>,
    broker: Option<Broker>,
    binary: Option<PathBuf>,
}

impl Target {
    async fn start(t: Transport, a: &TransportsCmd, scratch: &Path) -> Result<Target> {
        let config = crate::publisher::bench_config();
        let mem_queue = format!("--mem-queue-size={}", a.mem_queue_size);
        match t {
            Transport::Inproc => {
                let broker = Broker::start(BrokerConfig {
                    mem_queue_size: a.mem_queue_size as usize,
                    ..BrokerConfig::default()
                })
                .await
                .map_err(|e| err(format!("embedded broker: {e}")))?;
                let mut config = config;
                config.broker = Some(broker.clone());
                Ok(Target {
                    endpoint: Endpoint {
                        addr: "inproc://".into(),
                        config,
                        server_pid: None,
                    },
                    server: None,
                    broker: Some(broker),
                    binary: None,
                })
            }
            Transport::Tcp | Transport::Unix => {
                let bin = server::find_nsqrd(a.nsqrd.as_deref())?;
                let srv = if t == Transport::Tcp {
                    Server::start(&bin, &[mem_queue]).await?
                } else {
                    start_unix(&bin, &mem_queue, scratch).await?
                };
                let scheme = if t == Transport::Tcp { "tcp" } else { "unix" };
                Ok(Target {
                    endpoint: Endpoint {
                        addr: format!("{scheme}://{}", srv.tcp),
                        config,
                        server_pid: Some(srv.pid),
                    },
                    server: Some(srv),
                    broker: None,
                    binary: Some(bin),
                })
            }
        }
    }

    async fn stop(self) {
        drop(self.server);
        if let Some(b) = self.broker {
            let _ = b.shutdown().await;
        }
    }
}

/// nsqrd with its TCP protocol on a unix socket (`--tcp-address=/path`), HTTP on loopback.
async fn start_unix(bin: &Path, mem_queue: &str, scratch: &Path) -> Result<Server> {
    let data = server::temp_dir()?;
    let sock = scratch.join("nsqrd.sock");
    Server::launch(Launch {
        program: bin.to_path_buf(),
        args: vec![
            format!("--tcp-address={}", sock.display()),
            "--http-address=127.0.0.1:0".into(),
            "--https-address=".into(),
            "--broadcast-address=127.0.0.1".into(),
            format!("--data-path={}", data.display()),
            mem_queue.to_string(),
        ],
        data_dir: Some(data),
        ..Default::default()
    })
    .await
}

/// Every repetition of one cell, nsqr then libzmq each time, after `--warmup` untimed ones
/// (each side's samples dropped, its failures kept).
async fn measure(
    ep: &Endpoint,
    cell: &Cell,
    t: &TransportsArgs,
    zmq: bool,
    scratch: &Path,
) -> CellReport {
    let (mut ns, mut ne) = (Vec::new(), Vec::new());
    let (mut zs, mut ze) = (Vec::new(), Vec::new());
    let progress = std::io::stderr().is_terminal();
    for _ in 0..t.warmup {
        if let Err(e) = nsqr_side::run(ep, cell, t.cell_timeout).await {
            ne.push(format!("warm-up: {e}"));
        }
        if zmq {
            if let Err(e) = zmq_sample(cell, t.cell_timeout, scratch).await {
                ze.push(format!("warm-up: {e}"));
            }
        }
    }
    for rep in 1..=t.reps {
        if progress {
            eprint!(
                "\rtransports: {} {} {} B x {} (x{}), rep {rep}/{}      ",
                cell.pattern.name(),
                cell.transport.name(),
                cell.size,
                cell.count,
                cell.receivers,
                t.reps
            );
        }
        push(
            nsqr_side::run(ep, cell, t.cell_timeout).await,
            &mut ns,
            &mut ne,
        );
        if zmq {
            push(
                zmq_sample(cell, t.cell_timeout, scratch).await,
                &mut zs,
                &mut ze,
            );
        }
    }
    if progress {
        eprint!("\r{:78}\r", "");
    }
    let libzmq = zmq.then(|| Side::of(cell, &zs, ze));
    CellReport::new(*cell, Side::of(cell, &ns, ne), libzmq)
}

fn push(r: std::result::Result<Sample, String>, ok: &mut Vec<Sample>, bad: &mut Vec<String>) {
    match r {
        Ok(s) => ok.push(s),
        Err(e) => bad.push(e),
    }
}

#[cfg(feature = "libzmq")]
fn libzmq_version() -> Option<String> {
    Some(zmq_side::version())
}

#[cfg(not(feature = "libzmq"))]
fn libzmq_version() -> Option<String> {
    None
}

/// One libzmq repetition, on a blocking thread (libzmq's calls block).
#[cfg(feature = "libzmq")]
async fn zmq_sample(
    cell: &Cell,
    timeout: Duration,
    scratch: &Path,
) -> std::result::Result<Sample, String> {
    let (cell, dir) = (*cell, scratch.to_path_buf());
    tokio::task::spawn_blocking(move || zmq_side::run(&cell, timeout, &dir))
        .await
        .unwrap_or_else(|e| Err(format!("libzmq thread: {e}")))
}

#[cfg(not(feature = "libzmq"))]
async fn zmq_sample(
    _cell: &Cell,
    _timeout: Duration,
    _scratch: &Path,
) -> std::result::Result<Sample, String> {
    Err("libzmq is not built in".into())
}
