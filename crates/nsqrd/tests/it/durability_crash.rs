//! Crash tests: a server is SIGKILLed at random moments while pipelining publishers run, and
//! restarted on the same data directory each time. Afterwards every message the server
//! acknowledged must be delivered: lost = 0. Duplicates are allowed (at-least-once) and are
//! counted and printed.
//!
//! - `--durability=strict`: 10 kills under PUB / MPUB publishers and a FIN-ing consumer (a
//!   message in flight lives on disk until FIN in strict mode).
//! - default mode with `--mem-queue-size=0`: 5 kills while publishing only (a message in
//!   flight to a consumer lives in memory in default mode, as in nsqd), then a drain. Every
//!   message goes to disk, and an `OK` means the kernel has it. One topic has two channels,
//!   another none (its own queue takes the publishes; a channel created at the drain takes
//!   that backlog).
//! - An ignored side-by-side run of the default-mode test with 10 kills against nsqrd and the
//!   nsqd named by `NSQD_REF_BIN` (`cargo test -p nsqrd --test it durability_crash -- --ignored
//!   --nocapture`), printing lost / acknowledged for both.

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::*;

const STRICT_FLAGS: [&str; 3] = [
    "--durability=strict",
    "--mem-queue-size=50",
    "--max-bytes-per-file=65536",
];
const DEFAULT_FLAGS: [&str; 2] = ["--mem-queue-size=0", "--max-bytes-per-file=65536"];

/// Sequence numbers acknowledged by the server, per topic.
type Acked = Mutex<HashSet<u64>>;

/// Publishes to `topic` with up to `window` commands in flight until the connection breaks;
/// records what was acknowledged. One command in eight is a 5-message MPUB.
fn publisher(addr: SocketAddr, topic: &str, window: usize, next: &AtomicU64, acked: &Acked) {
    let Ok(mut sock) = TcpStream::connect(addr) else {
        return;
    };
    let _ = sock.set_read_timeout(Some(Duration::from_secs(5)));
    if sock.write_all(b"  V2").is_err() {
        return;
    }
    let mut reader = sock.try_clone().expect("clone");
    // Each outstanding command with the sequence numbers it carries.
    let mut outstanding: VecDeque<Vec<u64>> = VecDeque::new();
    let mut k = 0u64;
    loop {
        let mut buf = Vec::new();
        while outstanding.len() < window {
            k += 1;
            let n = if k.is_multiple_of(8) { 5 } else { 1 };
            let seqs: Vec<u64> = (0..n)
                .map(|_| next.fetch_add(1, Ordering::Relaxed))
                .collect();
            let body = |q: u64| format!("msg-{q:010}-{}", "x".repeat((q % 50) as usize));
            if n == 1 {
                let b = body(seqs[0]);
                buf.extend_from_slice(format!("PUB {topic}\n").as_bytes());
                buf.extend_from_slice(&(b.len() as u32).to_be_bytes());
                buf.extend_from_slice(b.as_bytes());
            } else {
                let mut mb = (n as u32).to_be_bytes().to_vec();
                for &q in &seqs {
                    let b = body(q);
                    mb.extend_from_slice(&(b.len() as u32).to_be_bytes());
                    mb.extend_from_slice(b.as_bytes());
                }
                buf.extend_from_slice(format!("MPUB {topic}\n").as_bytes());
                buf.extend_from_slice(&(mb.len() as u32).to_be_bytes());
                buf.extend_from_slice(&mb);
            }
            outstanding.push_back(seqs);
        }
        if !buf.is_empty() && sock.write_all(&buf).is_err() {
            return;
        }
        match read_frame(&mut reader) {
            Some((0, data)) if data == b"OK" => {
                if let Some(seqs) = outstanding.pop_front() {
                    acked.lock().unwrap().extend(seqs);
                }
            }
            Some((0, _)) => {} // heartbeat
            Some((t, data)) => panic!(
                "publisher got frame {t}: {}",
                String::from_utf8_lossy(&data)
            ),
            None => return,
        }
    }
}

/// Consumes (an nsqr-client consumer, max in flight 200) and FINs until the connection
/// breaks, nothing arrives for `idle`, or `stop`; records every delivery. (nsqd may deliver
/// a message read twice after a crash while the first copy is in flight: both carry one id,
/// so the second FIN fails, which the client takes quietly.)
fn consumer(
    addr: SocketAddr,
    topic: &str,
    channel: &str,
    got: &Mutex<Vec<u64>>,
    stop: &AtomicBool,
    idle: Duration,
) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let mut cfg = nsqr_client::Config::default();
        cfg.max_in_flight = 200;
        let Ok(mut c) = nsqr_client::Consumer::new(topic, channel, cfg) else {
            return;
        };
        if c.connect(&addr.to_string()).await.is_err() {
            return;
        }
        let mut heard = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            match tokio::time::timeout(Duration::from_millis(100), c.next()).await {
                Ok(Some(m)) => {
                    let body = String::from_utf8_lossy(m.body()).into_owned();
                    let seq: u64 = body[4..14].parse().expect("body");
                    got.lock().unwrap().push(seq);
                    let _ = m.finish();
                    heard = Instant::now();
                }
                Ok(None) => return,
                Err(_) if c.stats().connections == 0 || heard.elapsed() >= idle => return,
                Err(_) => {}
            }
        }
    });
}

fn read_frame(r: &mut TcpStream) -> Option<(i32, Vec<u8>)> {
    let mut hdr = [0u8; 8];
    r.read_exact(&mut hdr).ok()?;
    let size = i32::from_be_bytes(hdr[0..4].try_into().ok()?);
    let t = i32::from_be_bytes(hdr[4..8].try_into().ok()?);
    let mut data = vec![0u8; usize::try_from(size - 4).ok()?];
    r.read_exact(&mut data).ok()?;
    Some((t, data))
}

fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

fn seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
        | 1
}

/// Everything acknowledged that `got` lacks, and how many extra deliveries `got` has.
fn audit(acked: &HashSet<u64>, got: &[u64]) -> (Vec<u64>, usize) {
    let mut counts: HashMap<u64, usize> = HashMap::new();
    for &q in got {
        *counts.entry(q).or_default() += 1;
    }
    let mut lost: Vec<u64> = acked
        .iter()
        .filter(|q| !counts.contains_key(q))
        .copied()
        .collect();
    lost.sort_unstable();
    let dups = counts.values().map(|c| c - 1).sum();
    (lost, dups)
}

/// A kill test: what runs during the cycles and what is read at the end.
struct Plan {
    bin: PathBuf,
    flags: Vec<&'static str>,
    cycles: usize,
    /// Kill after a random time in this range (ms).
    kill_after: (u64, u64),
    /// Commands in flight per publisher connection.
    window: usize,
    /// Topics published to during the cycles, with the channels created before the first one
    /// (none: the topic's own queue takes the publishes).
    topics: Vec<(&'static str, Vec<&'static str>)>,
    /// A FIN-ing consumer on the first channel of the first topic during the cycles.
    consume: bool,
    /// Channels read at the end: (topic, channel); a channel the topic lacks is created by
    /// the SUB and takes the topic's backlog.
    drain: Vec<(&'static str, &'static str)>,
}

/// The counts of one channel at the end.
struct ChannelCount {
    name: String,
    acked: usize,
    received: usize,
    lost: Vec<u64>,
    duplicates: usize,
}

struct Outcome {
    published: u64,
    acked: usize,
    channels: Vec<ChannelCount>,
}

impl Outcome {
    fn lost(&self) -> usize {
        self.channels.iter().map(|c| c.lost.len()).sum()
    }

    fn print(&self, label: &str) {
        println!(
            "{label}: published {}, acknowledged {}, lost {}",
            self.published,
            self.acked,
            self.lost()
        );
        for c in &self.channels {
            println!(
                "  {}: acknowledged {}, received {}, lost {} {:?}, duplicates {}",
                c.name,
                c.acked,
                c.received,
                c.lost.len(),
                &c.lost[..c.lost.len().min(10)],
                c.duplicates
            );
        }
    }

    fn assert_nothing_lost(&self) {
        assert!(
            self.acked > 100,
            "the publishers hardly got anything acknowledged"
        );
        for c in &self.channels {
            assert!(
                c.lost.is_empty(),
                "lost on {}: {} (first {:?})",
                c.name,
                c.lost.len(),
                &c.lost[..c.lost.len().min(20)]
            );
        }
    }
}

fn run(plan: &Plan) -> Outcome {
    let mut seed = seed();
    println!("kill test seed {seed}, {} cycles", plan.cycles);
    let next = Arc::new(AtomicU64::new(0));
    let acked: HashMap<&str, Arc<Acked>> = plan
        .topics
        .iter()
        .map(|(t, _)| (*t, Arc::new(Mutex::new(HashSet::new()))))
        .collect();
    let got = Arc::new(Mutex::new(Vec::new()));
    let s = Server::start_bin_in(plan.bin.clone(), temp_dir(), &plan.flags);
    for (topic, channels) in &plan.topics {
        let r = s.post(&format!("/topic/create?topic={topic}"), b"");
        assert_eq!(r.status, 200);
        for ch in channels {
            let r = s.post(&format!("/channel/create?topic={topic}&channel={ch}"), b"");
            assert_eq!(r.status, 200);
        }
    }
    let (_, mut dir) = s.terminate_keep();
    let started = Instant::now();
    for cycle in 0..plan.cycles {
        let s = Server::start_bin_in(plan.bin.clone(), dir.clone(), &plan.flags);
        let addr = s.tcp;
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        for (topic, channels) in &plan.topics {
            let (next, acked) = (Arc::clone(&next), Arc::clone(&acked[topic]));
            let (topic, window) = (*topic, plan.window);
            threads.push(std::thread::spawn(move || {
                publisher(addr, topic, window, &next, &acked)
            }));
            if plan.consume && threads.len() == 1 {
                let (got, stop) = (Arc::clone(&got), Arc::clone(&stop));
                let channel = channels[0];
                threads.push(std::thread::spawn(move || {
                    consumer(addr, topic, channel, &got, &stop, Duration::from_secs(5))
                }));
            }
        }
        let (lo, hi) = plan.kill_after;
        let ms = lo + xorshift(&mut seed) % (hi - lo).max(1);
        std::thread::sleep(Duration::from_millis(ms));
        let pid = s.pid().to_string();
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid])
            .status();
        for t in threads {
            t.join().expect("client thread");
        }
        dir = s.kill_keep();
        let acked_now: usize = acked.values().map(|a| a.lock().unwrap().len()).sum();
        println!(
            "cycle {cycle}: killed after {ms} ms; acknowledged so far {acked_now}, received {}",
            got.lock().unwrap().len()
        );
    }
    println!(
        "{} kills in {:.1}s",
        plan.cycles,
        started.elapsed().as_secs_f64()
    );

    // Drain every channel on a last start.
    let s = Server::start_bin_in(plan.bin.clone(), dir, &plan.flags);
    let addr = s.tcp;
    let stop = Arc::new(AtomicBool::new(false));
    let drains: Vec<_> = plan
        .drain
        .iter()
        .enumerate()
        .map(|(i, &(topic, channel))| {
            // The channel consumed during the cycles adds to what it got then.
            let into = if plan.consume && i == 0 {
                Arc::clone(&got)
            } else {
                Arc::new(Mutex::new(Vec::new()))
            };
            let (stop, into2) = (Arc::clone(&stop), Arc::clone(&into));
            let t = std::thread::spawn(move || {
                consumer(addr, topic, channel, &into2, &stop, Duration::from_secs(3))
            });
            (topic, channel, into, t)
        })
        .collect();
    let mut channels = Vec::new();
    for (topic, channel, into, t) in drains {
        t.join().expect("drain");
        let acked = acked[topic].lock().unwrap();
        let got = into.lock().unwrap();
        let (lost, duplicates) = audit(&acked, &got);
        channels.push(ChannelCount {
            name: format!("{topic}/{channel}"),
            acked: acked.len(),
            received: got.len(),
            lost,
            duplicates,
        });
    }
    assert_eq!(s.terminate(), Some(0), "exit after the drain");
    Outcome {
        published: next.load(Ordering::Relaxed),
        acked: acked.values().map(|a| a.lock().unwrap().len()).sum(),
        channels,
    }
}

#[test]
fn strict_mode_loses_no_acknowledged_message_across_sigkills() {
    let out = run(&Plan {
        bin: server_bin(),
        flags: STRICT_FLAGS.to_vec(),
        cycles: 10,
        kill_after: (150, 500),
        window: 64,
        // A second channel nobody reads until the end: everything piles up on its disk queue.
        topics: vec![("crash", vec!["c", "idle"])],
        consume: true,
        drain: vec![("crash", "c"), ("crash", "idle")],
    });
    out.print("strict, 10 SIGKILLs, publishing and consuming");
    out.assert_nothing_lost();
}

fn default_mode_plan(bin: PathBuf, cycles: usize, kill_after: (u64, u64)) -> Plan {
    Plan {
        bin,
        flags: DEFAULT_FLAGS.to_vec(),
        cycles,
        kill_after,
        window: 256,
        topics: vec![("crash", vec!["c", "idle"]), ("nochan", vec![])],
        consume: false,
        drain: vec![("crash", "c"), ("crash", "idle"), ("nochan", "late")],
    }
}

#[test]
fn default_mode_with_mem_queue_size_0_loses_no_acknowledged_message_across_sigkills() {
    if is_reference() {
        return; // the side-by-side test below runs nsqd
    }
    let out = run(&default_mode_plan(server_bin(), 5, (150, 500)));
    out.print("default --mem-queue-size=0, 5 SIGKILLs, publishing only");
    out.assert_nothing_lost();
}

/// The kill test against nsqd (docs/reliability.md): nsqrd (or the server in `NSQD_BIN`) and
/// the nsqd in `NSQD_REF_BIN`, 10 kills each while publishing only, `--mem-queue-size=0`;
/// prints both, and fails if the server under test lost an acknowledged message. The
/// reference's losses are only printed (nsqd 1.3 loses the odd message, probably one its topic
/// had read, with the read position synced, and not yet written to every channel's queue when
/// it was killed).
#[test]
#[ignore = "side by side with nsqd: needs NSQD_REF_BIN; run with --ignored --nocapture"]
fn default_mode_kill_test_side_by_side_with_nsqd() {
    let reference = std::env::var_os("NSQD_REF_BIN")
        .map(PathBuf::from)
        .expect("set NSQD_REF_BIN to an nsqd binary");
    let ours = run(&default_mode_plan(server_bin(), 10, (300, 1500)));
    let theirs = run(&default_mode_plan(reference.clone(), 10, (300, 1500)));
    ours.print(&format!("{}", server_bin().display()));
    theirs.print(&format!("{}", reference.display()));
    println!(
        "side by side, 10 SIGKILLs, --mem-queue-size=0, publishing only: {} lost {} of {} acknowledged; {} lost {} of {} acknowledged",
        server_bin().display(),
        ours.lost(),
        ours.acked,
        reference.display(),
        theirs.lost(),
        theirs.acked
    );
    ours.assert_nothing_lost();
}
