//! Crash test for `--durability=strict`: a pipelined publisher (PUB and MPUB) and a FIN-ing
//! consumer run while the server is SIGKILLed at random moments, 10 times, on the same data
//! directory. Afterwards every message the server acknowledged must be delivered (on the
//! consumed channel and on a second channel nobody read during the crashes): lost = 0.
//! Duplicates are allowed (at-least-once) and are counted and printed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;

const CYCLES: usize = 10;
const WINDOW: usize = 64;
const FLAGS: [&str; 3] = [
    "--durability=strict",
    "--mem-queue-size=50",
    "--max-bytes-per-file=65536",
];

/// Publishes until the connection breaks; records what was acknowledged.
fn publisher(addr: SocketAddr, next: &AtomicU64, acked: &Mutex<HashSet<u64>>) {
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
        while outstanding.len() < WINDOW {
            k += 1;
            let n = if k.is_multiple_of(8) { 5 } else { 1 };
            let seqs: Vec<u64> = (0..n)
                .map(|_| next.fetch_add(1, Ordering::Relaxed))
                .collect();
            let body = |q: u64| format!("msg-{q:010}-{}", "x".repeat((q % 50) as usize));
            if n == 1 {
                let b = body(seqs[0]);
                buf.extend_from_slice(b"PUB crash\n");
                buf.extend_from_slice(&(b.len() as u32).to_be_bytes());
                buf.extend_from_slice(b.as_bytes());
            } else {
                let mut mb = (n as u32).to_be_bytes().to_vec();
                for &q in &seqs {
                    let b = body(q);
                    mb.extend_from_slice(&(b.len() as u32).to_be_bytes());
                    mb.extend_from_slice(b.as_bytes());
                }
                buf.extend_from_slice(b"MPUB crash\n");
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

/// Consumes and FINs until the connection breaks (or `stop`); records every delivery.
fn consumer(
    addr: SocketAddr,
    channel: &str,
    got: &Mutex<Vec<u64>>,
    stop: &AtomicBool,
    idle: Duration,
) {
    let Ok(mut sock) = TcpStream::connect(addr) else {
        return;
    };
    let _ = sock.set_read_timeout(Some(idle));
    let sub = format!("  V2SUB crash {channel}\nRDY 50\n");
    if sock.write_all(sub.as_bytes()).is_err() {
        return;
    }
    let mut reader = sock.try_clone().expect("clone");
    while !stop.load(Ordering::Relaxed) {
        match read_frame(&mut reader) {
            Some((2, data)) => {
                let body = String::from_utf8_lossy(&data[26..]).into_owned();
                let seq: u64 = body[4..14].parse().expect("body");
                got.lock().unwrap().push(seq);
                let mut fin = b"FIN ".to_vec();
                fin.extend_from_slice(&data[10..26]);
                fin.push(b'\n');
                if sock.write_all(&fin).is_err() {
                    return;
                }
            }
            Some((1, data)) => panic!("consumer error: {}", String::from_utf8_lossy(&data)),
            Some(_) => {}
            None => return,
        }
    }
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

#[test]
fn strict_mode_loses_no_acknowledged_message_across_sigkills() {
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
        | 1;
    println!("crash test seed {seed}");
    let next = Arc::new(AtomicU64::new(0));
    let acked = Arc::new(Mutex::new(HashSet::new()));
    let got = Arc::new(Mutex::new(Vec::new()));
    let s = Server::start(&FLAGS);
    // A second channel nobody reads until the end: everything piles up on its disk queue.
    assert_eq!(s.post("/topic/create?topic=crash", b"").status, 200);
    assert_eq!(
        s.post("/channel/create?topic=crash&channel=idle", b"")
            .status,
        200
    );
    assert_eq!(
        s.post("/channel/create?topic=crash&channel=c", b"").status,
        200
    );
    let (_, mut dir) = s.terminate_keep();
    let started = Instant::now();
    for cycle in 0..CYCLES {
        let s = Server::start_in(dir.clone(), &FLAGS);
        let addr = s.tcp;
        let stop = Arc::new(AtomicBool::new(false));
        let p = {
            let (next, acked) = (Arc::clone(&next), Arc::clone(&acked));
            std::thread::spawn(move || publisher(addr, &next, &acked))
        };
        let c = {
            let (got, stop) = (Arc::clone(&got), Arc::clone(&stop));
            std::thread::spawn(move || consumer(addr, "c", &got, &stop, Duration::from_secs(5)))
        };
        let ms = 150 + xorshift(&mut seed) % 350;
        std::thread::sleep(Duration::from_millis(ms));
        let pid = s.pid().to_string();
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid])
            .status();
        p.join().expect("publisher");
        c.join().expect("consumer");
        dir = s.kill_keep();
        println!(
            "cycle {cycle}: killed after {ms} ms; acked so far {}, received {}",
            acked.lock().unwrap().len(),
            got.lock().unwrap().len()
        );
    }

    // Drain both channels on a last start.
    let s = Server::start_in(dir, &FLAGS);
    let addr = s.tcp;
    let idle_got = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let drain = |channel: &'static str, into: Arc<Mutex<Vec<u64>>>| {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || consumer(addr, channel, &into, &stop, Duration::from_secs(2)))
    };
    let c1 = drain("c", Arc::clone(&got));
    let c2 = drain("idle", Arc::clone(&idle_got));
    c1.join().expect("drain c");
    c2.join().expect("drain idle");
    let acked = acked.lock().unwrap();
    let (lost, dups) = audit(&acked, &got.lock().unwrap());
    let (idle_lost, idle_dups) = audit(&acked, &idle_got.lock().unwrap());
    println!(
        "crash test: {CYCLES} SIGKILLs in {:.1}s; published {}, acknowledged {}; channel c: received {}, lost {}, duplicates {}; channel idle: received {}, lost {}, duplicates {}",
        started.elapsed().as_secs_f64(),
        next.load(Ordering::Relaxed),
        acked.len(),
        got.lock().unwrap().len(),
        lost.len(),
        dups,
        idle_got.lock().unwrap().len(),
        idle_lost.len(),
        idle_dups
    );
    assert!(
        acked.len() > 100,
        "the publisher hardly got anything acknowledged"
    );
    assert!(
        lost.is_empty(),
        "lost on channel c: {:?}",
        &lost[..lost.len().min(20)]
    );
    assert!(
        idle_lost.is_empty(),
        "lost on channel idle: {:?}",
        &idle_lost[..idle_lost.len().min(20)]
    );
    assert_eq!(s.terminate(), Some(0));
}
