//! libzmq's side of the matrix (feature `libzmq`: the `zmq` crate, libzmq built from source),
//! set up as ServerLink's benchmark programs set it up: one context with one I/O thread per
//! repetition, a sender thread and receiver threads, high-water marks 0 (unlimited), timed at
//! the receiver.
//!
//! - pubsub / fanout: an XPUB (verbose, so every subscriber's subscription reaches it) and K
//!   SUBs; the publisher waits until it has all K subscriptions (the subscribers' readiness),
//!   the clock starts, it sends N messages; the clock stops when the last subscriber has its
//!   last message. XPUB is used over inproc too (ServerLink uses PUB there): waiting for the
//!   subscription is what guarantees that no message is dropped before it arrives.
//! - reqrep: two ROUTERs with fixed routing ids; the receiver sends READY to the sender (until
//!   ROUTER_MANDATORY accepts it, i.e. the connection is up) and starts its clock; the sender
//!   waits for READY and sends N messages addressed to the receiver.
//!
//! Receivers check every sequence number off, as nsqr's do, so both sides prove exact counts.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::cells::{next_tag, stamp, Cell, Pattern, Sample, Tally, Transport};
use crate::procstat::own_cpu_time;

type CellResult<T> = std::result::Result<T, String>;

/// libzmq's version, e.g. "libzmq 4.3.4".
pub fn version() -> String {
    let (a, b, c) = zmq::version();
    format!("libzmq {a}.{b}.{c}")
}

/// One repetition of `cell` (blocking: run it off the async runtime).
pub fn run(cell: &Cell, timeout: Duration, ipc_dir: &Path) -> CellResult<Sample> {
    let ctx = zmq::Context::new();
    ctx.set_io_threads(1).map_err(zerr("io threads"))?;
    let timeout_ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
    match cell.pattern {
        Pattern::Pubsub | Pattern::Fanout => pubsub(&ctx, cell, timeout_ms, ipc_dir),
        Pattern::Reqrep => router_router(&ctx, cell, timeout_ms, ipc_dir),
    }
}

fn zerr(what: &'static str) -> impl Fn(zmq::Error) -> String {
    move |e| format!("libzmq {what}: {e}")
}

/// Where the bound socket listens; tcp's port is read back after binding.
fn bind_address(t: Transport, ipc_dir: &Path) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    match t {
        Transport::Tcp => "tcp://127.0.0.1:*".into(),
        Transport::Unix => format!("ipc://{}/z{n}.sock", ipc_dir.display()),
        Transport::Inproc => format!("inproc://transports-{n}"),
    }
}

fn bind(s: &zmq::Socket, t: Transport, ipc_dir: &Path) -> CellResult<String> {
    s.bind(&bind_address(t, ipc_dir)).map_err(zerr("bind"))?;
    match s.get_last_endpoint().map_err(zerr("endpoint"))? {
        Ok(e) => Ok(e),
        Err(raw) => Err(format!("libzmq endpoint {raw:?} is not UTF-8")),
    }
}

fn socket(ctx: &zmq::Context, kind: zmq::SocketType, timeout_ms: i32) -> CellResult<zmq::Socket> {
    let s = ctx.socket(kind).map_err(zerr("socket"))?;
    s.set_sndhwm(0).map_err(zerr("sndhwm"))?;
    s.set_rcvhwm(0).map_err(zerr("rcvhwm"))?;
    s.set_linger(0).map_err(zerr("linger"))?;
    s.set_rcvtimeo(timeout_ms).map_err(zerr("rcvtimeo"))?;
    Ok(s)
}

fn now_cpu() -> CellResult<Duration> {
    own_cpu_time()
}

/// XPUB and K SUBs.
fn pubsub(ctx: &zmq::Context, cell: &Cell, timeout_ms: i32, dir: &Path) -> CellResult<Sample> {
    let tag = next_tag();
    let publisher = socket(ctx, zmq::XPUB, timeout_ms)?;
    publisher.set_xpub_verbose(true).map_err(zerr("xpub"))?;
    let endpoint = bind(&publisher, cell.transport, dir)?;
    std::thread::scope(|scope| {
        let (ready_tx, ready_rx) = mpsc::channel::<()>();
        let subs: Vec<_> = (0..cell.receivers)
            .map(|_| {
                let (endpoint, ready) = (endpoint.as_str(), ready_tx.clone());
                scope.spawn(move || subscriber(ctx, endpoint, cell.count, tag, timeout_ms, ready))
            })
            .collect();
        drop(ready_tx);
        let started = publish(&publisher, cell, tag, &ready_rx);
        let mut last = None;
        let mut failure = started.as_ref().err().cloned();
        for (i, s) in subs.into_iter().enumerate() {
            match s.join() {
                Ok(Ok((at, tally))) => {
                    last = last.max(Some(at));
                    if let Err(e) = tally.verdict(&format!("SUB {i}")) {
                        failure.get_or_insert(e);
                    }
                }
                Ok(Err(e)) => {
                    failure.get_or_insert(e);
                }
                Err(_) => {
                    failure.get_or_insert(format!("SUB {i} panicked"));
                }
            }
        }
        match (failure, started, last) {
            (None, Ok((start, cpu0)), Some(last)) => Ok(Sample {
                secs: (last - start).as_secs_f64(),
                cpu: now_cpu()?.saturating_sub(cpu0),
                server_cpu: None,
            }),
            (Some(e), _, _) => Err(e),
            _ => Err("libzmq pubsub: no subscriber".into()),
        }
    })
}

/// Wait for every subscription, start the clock, send N messages; (start, CPU then).
fn publish(
    publisher: &zmq::Socket,
    cell: &Cell,
    tag: u16,
    ready: &mpsc::Receiver<()>,
) -> CellResult<(Instant, Duration)> {
    for _ in 0..cell.receivers {
        ready
            .recv()
            .map_err(|_| "a SUB failed before subscribing".to_string())?;
        let sub = publisher
            .recv_bytes(0)
            .map_err(zerr("waiting for a subscription"))?;
        if sub.first() != Some(&1) {
            return Err(format!("XPUB got {sub:?}, not a subscription"));
        }
    }
    let cpu0 = now_cpu()?;
    let start = Instant::now();
    let mut buf = vec![0u8; cell.size];
    for seq in 0..cell.count {
        stamp(&mut buf, tag, seq);
        publisher.send(&buf[..], 0).map_err(zerr("send"))?;
    }
    Ok((start, cpu0))
}

/// A SUB: connect, subscribe to everything, say so, take N messages.
fn subscriber(
    ctx: &zmq::Context,
    endpoint: &str,
    n: u64,
    tag: u16,
    timeout_ms: i32,
    ready: mpsc::Sender<()>,
) -> CellResult<(Instant, Tally)> {
    let s = socket(ctx, zmq::SUB, timeout_ms)?;
    s.connect(endpoint).map_err(zerr("connect"))?;
    s.set_subscribe(b"").map_err(zerr("subscribe"))?;
    let _ = ready.send(());
    let mut tally = Tally::new(n, tag);
    let mut msg = zmq::Message::new();
    while !tally.complete() {
        s.recv(&mut msg, 0)
            .map_err(|e| format!("SUB after {} messages: {e}", tally.unique))?;
        tally.record(&msg);
    }
    Ok((Instant::now(), tally))
}

const SENDER_ID: &[u8] = b"sender";
const RECEIVER_ID: &[u8] = b"receiver";

/// Two ROUTERs, READY from the receiver, N messages to it.
fn router_router(
    ctx: &zmq::Context,
    cell: &Cell,
    timeout_ms: i32,
    dir: &Path,
) -> CellResult<Sample> {
    let tag = next_tag();
    let receiver = socket(ctx, zmq::ROUTER, timeout_ms)?;
    receiver
        .set_identity(RECEIVER_ID)
        .map_err(zerr("identity"))?;
    receiver
        .set_router_mandatory(true)
        .map_err(zerr("mandatory"))?;
    let endpoint = bind(&receiver, cell.transport, dir)?;
    let sender = socket(ctx, zmq::ROUTER, timeout_ms)?;
    sender.set_identity(SENDER_ID).map_err(zerr("identity"))?;
    sender
        .set_router_mandatory(true)
        .map_err(zerr("mandatory"))?;
    sender.connect(&endpoint).map_err(zerr("connect"))?;
    std::thread::scope(|scope| {
        // The sender's socket comes back from its thread and stays open until the receiver
        // has everything: closed earlier (linger 0), it would drop what it still queues.
        let sending = scope.spawn(move || {
            let r = send_routed(&sender, cell, tag);
            (Some(sender), r)
        });
        let received = receive_routed(&receiver, cell, tag, timeout_ms);
        let (_sender, sent) = sending
            .join()
            .unwrap_or_else(|_| (None, Err("the ROUTER sender panicked".into())));
        let (start, cpu0, last, tally) = received?;
        sent?;
        tally.verdict("ROUTER receiver")?;
        Ok(Sample {
            secs: (last - start).as_secs_f64(),
            cpu: now_cpu()?.saturating_sub(cpu0),
            server_cpu: None,
        })
    })
}

/// The receiver: READY (retried until the sender is connected), then N messages.
fn receive_routed(
    r: &zmq::Socket,
    cell: &Cell,
    tag: u16,
    timeout_ms: i32,
) -> CellResult<(Instant, Duration, Instant, Tally)> {
    let deadline = Instant::now() + Duration::from_millis(timeout_ms as u64);
    loop {
        match r
            .send(SENDER_ID, zmq::SNDMORE)
            .and_then(|()| r.send(&b"READY"[..], 0))
        {
            Ok(()) => break,
            Err(zmq::Error::EHOSTUNREACH) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => return Err(format!("libzmq READY: {e}")),
        }
    }
    let cpu0 = now_cpu()?;
    let start = Instant::now();
    let mut tally = Tally::new(cell.count, tag);
    let (mut id, mut msg) = (zmq::Message::new(), zmq::Message::new());
    while !tally.complete() {
        r.recv(&mut id, 0)
            .and_then(|()| r.recv(&mut msg, 0))
            .map_err(|e| format!("ROUTER receiver after {} messages: {e}", tally.unique))?;
        tally.record(&msg);
    }
    Ok((start, cpu0, Instant::now(), tally))
}

/// The sender: wait for READY, then N messages routed to the receiver.
fn send_routed(s: &zmq::Socket, cell: &Cell, tag: u16) -> CellResult<()> {
    let (mut id, mut ready) = (zmq::Message::new(), zmq::Message::new());
    s.recv(&mut id, 0)
        .and_then(|()| s.recv(&mut ready, 0))
        .map_err(zerr("waiting for READY"))?;
    if &ready[..] != b"READY" {
        return Err(format!("ROUTER sender got {:?}, not READY", &ready[..]));
    }
    let mut buf = vec![0u8; cell.size];
    for seq in 0..cell.count {
        stamp(&mut buf, tag, seq);
        s.send(RECEIVER_ID, zmq::SNDMORE)
            .and_then(|()| s.send(&buf[..], 0))
            .map_err(zerr("send"))?;
    }
    Ok(())
}
