//! nsqr's side of the matrix, on nsqr-client: the same code over `tcp://`, `unix://` and
//! `inproc://`, only the address and the `Config` change.
//!
//! - pubsub: a `Consumer` subscribes (its channel exists from then on: that is its
//!   readiness), the clock starts, a `Producer` publishes N stamped messages; the clock stops
//!   when the consumer has the last one.
//! - reqrep: a `Responder` serves the cell's topic; the `Requester` sends a HELLO request and
//!   the responder's READY reply is the handshake (the clock starts as the responder answers,
//!   as ServerLink's ROUTER receiver starts it after sending READY); then the requester sends
//!   N one-way requests addressed to that topic and the responder finishes each.
//! - fanout: K consumers, each on a channel of its own (each gets every message), all
//!   subscribed before the clock starts; it stops when the last one has its last message.
//!
//! The sender publishes MPUB batches (at most 256 messages and 1 MiB each, 8 in flight), the
//! idiomatic fast path of an NSQ producer, each batch's bodies slices of one pooled buffer
//! (`bodies.rs`: its budget holds a sender in process back once its receivers are 64 MiB
//! behind, as nothing else does there); a requester sends its requests the same way, laid
//! out in pooled buffers with room for their envelopes (`Requester::send_batch_one_way`).
//! Receivers take messages with `next_batch` (no copy, FINs settled together), the responder
//! with the request-reply pattern's own `Responder::next_batch` (each request's envelope
//! opened, its payload lent). Every receiver checks each sequence number off ([`Tally`]); a
//! cell passes only with exactly N.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use nsqr_client::patterns::{Requester, Responder};
use nsqr_client::{Config, Consumer, Producer, Publish, Reply};
use tokio::sync::oneshot;
use tokio::task::JoinSet;

use super::bodies::{BodyPool, Pooled};
use super::cells::{next_tag, Cell, Pattern, Sample, Tally};
use crate::procstat::{own_cpu_time, precise_cpu_time};

/// Messages per MPUB, and bytes at most.
const BATCH: usize = 256;
const BATCH_BYTES: usize = 1 << 20;
/// MPUBs (or batches of requests) in flight before the sender waits for the oldest answer.
const WINDOW_BATCHES: usize = 8;
/// Consumers' max-in-flight: nsqd's default --max-rdy-count.
const MAX_IN_FLIGHT: u32 = 2500;

/// Where nsqr's side connects, and whose CPU it counts.
#[derive(Clone)]
pub struct Endpoint {
    /// `tcp://127.0.0.1:port`, `unix:///path` or `inproc://`.
    pub addr: String,
    pub config: Config,
    /// nsqrd's pid (tcp and unix).
    pub server_pid: Option<u32>,
}

type CellResult<T> = std::result::Result<T, String>;

/// One repetition of `cell`, bounded by `timeout`. In process its topic is deleted afterwards:
/// messages a failed repetition left there would hold buffers of the senders' pool (and its
/// budget) for good.
pub async fn run(ep: &Endpoint, cell: &Cell, timeout: Duration) -> CellResult<Sample> {
    let topic = fresh_topic(cell.pattern.name());
    let work = async {
        match cell.pattern {
            Pattern::Pubsub | Pattern::Fanout => pubsub(ep, cell, &topic).await,
            Pattern::Reqrep => reqrep(ep, cell, &topic).await,
        }
    };
    let late = || {
        Err(format!(
            "nsqr {} {} {} B: not done within {timeout:?}",
            cell.pattern.name(),
            cell.transport.name(),
            cell.size
        ))
    };
    let began = Instant::now();
    let r = tokio::time::timeout(timeout, work)
        .await
        .unwrap_or_else(|_| late());
    if let Some(broker) = &ep.config.broker {
        let _ = broker.delete_topic(&topic);
    }
    // In process the sender may never wait (every publish answered at once), so the timeout
    // above only fires once it does: a repetition that finished late fails here.
    match r {
        Ok(_) if began.elapsed() > timeout => late(),
        r => r,
    }
}

/// A topic name no other repetition uses.
fn fresh_topic(kind: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "transports_{kind}_{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// CPU of this process and of the server, now.
struct Clocks {
    cpu: Duration,
    server: Option<Duration>,
}

fn clocks(ep: &Endpoint) -> CellResult<Clocks> {
    let cpu = own_cpu_time()?;
    let server = match ep.server_pid {
        Some(pid) => Some(precise_cpu_time(pid)?),
        None => None,
    };
    Ok(Clocks { cpu, server })
}

fn sample(ep: &Endpoint, before: &Clocks, secs: f64) -> CellResult<Sample> {
    let after = clocks(ep)?;
    Ok(Sample {
        secs,
        cpu: after.cpu.saturating_sub(before.cpu),
        server_cpu: match (after.server, before.server) {
            (Some(a), Some(b)) => Some(a.saturating_sub(b)),
            _ => None,
        },
    })
}

async fn subscribe(ep: &Endpoint, topic: &str, channel: &str) -> CellResult<Consumer> {
    let mut cfg = ep.config.clone();
    cfg.max_in_flight = MAX_IN_FLIGHT;
    let mut c = Consumer::new(topic, channel, cfg).map_err(|e| e.to_string())?;
    c.connect(&ep.addr)
        .await
        .map_err(|e| format!("subscribe {topic}/{channel} at {}: {e}", ep.addr))?;
    Ok(c)
}

/// pubsub (one receiver) and fanout (several): every channel gets every message.
async fn pubsub(ep: &Endpoint, cell: &Cell, topic: &str) -> CellResult<Sample> {
    let tag = next_tag();
    let mut consumers = Vec::with_capacity(cell.receivers);
    for i in 0..cell.receivers {
        consumers.push(subscribe(ep, topic, &format!("s{i}")).await?);
    }
    let producer = Producer::connect(&ep.addr, ep.config.clone())
        .await
        .map_err(|e| format!("connect a producer to {}: {e}", ep.addr))?;
    let before = clocks(ep)?;
    let start = Instant::now();
    // A JoinSet: receivers still waiting when a repetition times out are aborted with it.
    let mut receivers = JoinSet::new();
    for c in consumers {
        receivers.spawn(receive(c, cell.count, tag));
    }
    let sent = publish_all(&producer, topic, cell, tag).await;
    let mut last = start;
    let mut failure = sent.err();
    while let Some(r) = receivers.join_next().await {
        match r {
            Ok((at, tally)) => {
                last = last.max(at);
                if let Err(e) = tally.verdict("a subscriber") {
                    failure.get_or_insert(e);
                }
            }
            Err(e) => {
                failure.get_or_insert(format!("a subscriber: {e}"));
            }
        }
    }
    let s = sample(ep, &before, (last - start).as_secs_f64())?;
    producer.stop().await;
    failure.map_or(Ok(s), Err)
}

/// Take messages until all N arrived; the time of the last one and the tally.
async fn receive(mut c: Consumer, n: u64, tag: u16) -> (Instant, Tally) {
    let mut tally = Tally::new(n, tag);
    while !tally.complete() {
        let got = c
            .next_batch(|m| {
                tally.record(m.body());
                Reply::Finish
            })
            .await;
        if got.is_none() {
            break;
        }
    }
    // The clock is read once, at the end, as libzmq's receivers do.
    let last = Instant::now();
    c.stop().await;
    (last, tally)
}

/// N stamped messages in MPUB batches, a window of them in flight.
async fn publish_all(p: &Producer, topic: &str, cell: &Cell, tag: u16) -> CellResult<()> {
    send_in_batches(cell, 0, tag, "MPUB", |buf, ranges| {
        p.multi_publish_slices_async(topic, Bytes::from_owner(buf), ranges)
    })
    .await
}

/// The cell's N bodies in batches of at most [`BATCH`] (and [`BATCH_BYTES`], counting `head`
/// bytes of room in front of each body), each laid out in a buffer of the pool's (waiting
/// for one when the pool's budget is lent out) and sent by `send`, [`WINDOW_BATCHES`] of them
/// in flight; a failed one ends it, its error named by `what`.
async fn send_in_batches(
    cell: &Cell,
    head: usize,
    tag: u16,
    what: &str,
    mut send: impl FnMut(Pooled, Vec<Range<usize>>) -> Publish,
) -> CellResult<()> {
    let pool = BodyPool::shared();
    let per_batch = BATCH.min((BATCH_BYTES / (cell.size + head).max(1)).max(1));
    let mut window: VecDeque<Publish> = VecDeque::with_capacity(WINDOW_BATCHES);
    let mut seq = 0u64;
    while seq < cell.count {
        let k = (cell.count - seq).min(per_batch as u64) as usize;
        if window.len() == WINDOW_BATCHES {
            if let Some(oldest) = window.pop_front() {
                oldest.await.map_err(|e| format!("{what}: {e}"))?;
            }
        }
        let (buf, ranges) = pool.laid_out(cell.size, head, tag, seq, k).await;
        window.push_back(send(buf, ranges));
        seq += k as u64;
    }
    for w in window {
        w.await.map_err(|e| format!("{what}: {e}"))?;
    }
    Ok(())
}

/// Request-reply: HELLO / READY, then N one-way requests to the responder's topic.
async fn reqrep(ep: &Endpoint, cell: &Cell, topic: &str) -> CellResult<Sample> {
    let tag = next_tag();
    let mut cfg = ep.config.clone();
    cfg.max_in_flight = MAX_IN_FLIGHT;
    let responder = Responder::connect(&ep.addr, topic, "servers", cfg)
        .await
        .map_err(|e| format!("responder at {}: {e}", ep.addr))?;
    let requester = Requester::connect(&ep.addr, ep.config.clone())
        .await
        .map_err(|e| format!("requester at {}: {e}", ep.addr))?;
    let before = clocks(ep)?;
    let (started_tx, started_rx) = oneshot::channel();
    let mut receiving = JoinSet::new();
    receiving.spawn(serve(responder, cell.count, tag, started_tx));
    let sent = request_all(&requester, topic, cell, tag).await;
    let served = receiving
        .join_next()
        .await
        .ok_or("the responder's task is gone")?
        .map_err(|e| format!("responder: {e}"))?;
    let start = started_rx
        .await
        .map_err(|_| "the responder never answered HELLO".to_string())?;
    let (last, tally) = served?;
    let s = sample(ep, &before, (last - start).as_secs_f64())?;
    requester.close().await;
    sent?;
    tally.verdict("responder")?;
    Ok(s)
}

/// The receiver: answer HELLO with READY (the clock starts), then take N requests.
async fn serve(
    mut r: Responder,
    n: u64,
    tag: u16,
    started: oneshot::Sender<Instant>,
) -> CellResult<(Instant, Tally)> {
    let hello = r.next().await.ok_or("responder stopped before HELLO")?;
    let start = Instant::now();
    hello
        .reply(b"READY")
        .await
        .map_err(|e| format!("READY: {e}"))?;
    let _ = started.send(start);
    let mut tally = Tally::new(n, tag);
    while !tally.complete() {
        let got = r
            .next_batch(|req| {
                tally.record(req.payload());
                Reply::Finish
            })
            .await;
        if got.is_none() {
            break;
        }
    }
    // The clock is read once, at the end, as libzmq's receiver does.
    let last = Instant::now();
    r.close().await;
    Ok((last, tally))
}

/// The sender: HELLO and wait for READY, then N stamped one-way requests, laid out in
/// pooled buffers with room for their envelopes, as many per call as a publisher's MPUB
/// (`send_batch_one_way`: nothing of a payload is copied), a window of calls in flight.
async fn request_all(req: &Requester, topic: &str, cell: &Cell, tag: u16) -> CellResult<()> {
    let hello = req.send_with(topic, 5, |b| b.copy_from_slice(b"HELLO"));
    let ready = hello
        .wait(Duration::from_secs(30))
        .await
        .map_err(|e| format!("HELLO: {e}"))?;
    if &ready[..] != b"READY" {
        return Err(format!("HELLO answered with {ready:?}"));
    }
    send_in_batches(cell, req.header_len(), tag, "requests", |buf, ranges| {
        req.send_batch_one_way(topic, buf, ranges)
    })
    .await
}
