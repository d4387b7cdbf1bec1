//! `nsqr-bench floor`: what publishing and consuming cost this machine before any broker work.
//!
//! A server that keeps its backlog in memory cannot spend less CPU per published message than
//! it takes to read the batch, keep its bytes and answer `OK`; on a virtual machine the fresh
//! memory alone can be half of that. Nor can it spend less per delivered message than it takes
//! to write the message, from that memory, in a frame and read the FIN that answers it. This
//! server does exactly that much, with enough of the TCP protocol for `nsqr-bench` and nsq's
//! bench_writer / bench_reader:
//!
//! - publishing (`publish`): the magic, then IDENTIFY, PUB, MPUB, DPUB and AUTH answered `OK`,
//!   NOP ignored, CLS closed. Commands are read into 1 MiB slabs faulted in with one call
//!   each, as nsqrd's publish slabs are, and each publish is kept as it was read (a shared
//!   slice of its slab) in its topic's queue (`topics`) until a subscriber takes it. No message
//!   is parsed, validated or given an id.
//! - consuming (`subscribe`): after `SUB`, messages are written from the front of the topic's
//!   queue as far as `RDY` allows, each as a prepared frame header followed by its body copied
//!   from where it was read, and each FIN read opens room for one more. FINs are counted, not
//!   matched; nothing is ever redelivered; every `SUB` to a topic shares one queue, whatever
//!   the channel.
//! - HTTP (`http`, with `--http-address`): every HTTP/1.1 request on a keep-alive connection
//!   answered `200 OK` as nsqd's `/pub` answers, with no parsing beyond where it ends: the
//!   floor of an HTTP publish (MinMQ's `wrk` load test against `/pub`).
//!
//! `nsqr-bench compare --floor` measures it beside nsqrd and the reference, so the report says
//! how far from the machine's limit each server is.

use std::io;
use std::sync::Arc;

use clap::Args;
use tokio::net::TcpListener;

mod http;
mod publish;
mod subscribe;
mod topics;

use topics::Topics;

/// The largest body accepted (nsqd's default --max-body-size).
const MAX_BODY: usize = 5 * 1024 * 1024;

const OK: &[u8] = b"OK";
const FRAME_RESPONSE: u32 = 0;
const FRAME_ERROR: u32 = 1;
const FRAME_MESSAGE: u32 = 2;

/// `nsqr-bench floor` takes nsqd's listener flags so `compare` can start it as it starts a server;
/// everything but the TCP address is accepted and ignored.
#[derive(Debug, Clone, Args)]
pub struct FloorArgs {
    /// <addr>:<port> to listen on for TCP clients (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:4150")]
    pub tcp_address: String,
    /// <addr>:<port> to answer HTTP requests on (every one `200 OK`, nothing else done);
    /// empty or absent: no HTTP listener.
    #[arg(long)]
    pub http_address: Option<String>,
    /// Ignored.
    #[arg(long, hide = true)]
    pub https_address: Option<String>,
    /// Ignored.
    #[arg(long, hide = true)]
    pub broadcast_address: Option<String>,
    /// Ignored.
    #[arg(long, hide = true)]
    pub data_path: Option<String>,
    /// Ignored.
    #[arg(long, hide = true)]
    pub mem_queue_size: Option<u64>,
}

/// The floor's state: what has been published and not yet handed out, per topic.
#[derive(Debug, Default)]
pub struct Floor {
    pub topics: Topics,
}

/// Bind, say where (as nsqd's "TCP: listening on" line, which `compare` waits for), serve.
pub async fn run(args: &FloorArgs) -> io::Result<()> {
    let listener = TcpListener::bind(&args.tcp_address).await?;
    eprintln!(
        "[nsqr-bench floor] TCP: listening on {}",
        listener.local_addr()?
    );
    if let Some(address) = args.http_address.as_deref().filter(|a| !a.is_empty()) {
        let http = TcpListener::bind(address).await?;
        eprintln!(
            "[nsqr-bench floor] HTTP: listening on {}",
            http.local_addr()?
        );
        tokio::spawn(http::serve(http));
    }
    serve(listener, Arc::new(Floor::default())).await
}

/// Accept connections until the listener fails.
pub async fn serve(listener: TcpListener, floor: Arc<Floor>) -> io::Result<()> {
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        let floor = Arc::clone(&floor);
        tokio::spawn(async move {
            let _ = publish::connection(stream, &floor).await;
        });
    }
}

fn put_frame(out: &mut Vec<u8>, kind: u32, data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32 + 4).to_be_bytes());
    out.extend_from_slice(&kind.to_be_bytes());
    out.extend_from_slice(data);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    /// A command with a body, as a client writes it (the floor's own tests' input).
    pub(super) fn cmd(line: &str, body: &[u8]) -> Vec<u8> {
        let mut v = format!("{line}\n").into_bytes();
        v.extend_from_slice(&(body.len() as u32).to_be_bytes());
        v.extend_from_slice(body);
        v
    }

    /// Read frames until `n` have arrived; (type, data) each.
    async fn frames(s: &mut TcpStream, n: usize) -> Vec<(u32, Vec<u8>)> {
        let mut v = Vec::new();
        while v.len() < n {
            let mut head = [0u8; 8];
            tokio::time::timeout(Duration::from_secs(5), s.read_exact(&mut head))
                .await
                .unwrap()
                .unwrap();
            let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize - 4;
            let kind = u32::from_be_bytes([head[4], head[5], head[6], head[7]]);
            let mut data = vec![0u8; len];
            s.read_exact(&mut data).await.unwrap();
            v.push((kind, data));
        }
        v
    }

    #[tokio::test]
    async fn answers_publishes_and_keeps_every_message() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let floor = Arc::new(Floor::default());
        let server = tokio::spawn(serve(listener, Arc::clone(&floor)));
        let mut s = TcpStream::connect(addr).await.unwrap();
        let mut sent = b"  V2".to_vec();
        let mut wire = cmd("IDENTIFY", b"{}");
        // Two MPUBs larger than a slab between them, and one body larger than a slab, so
        // commands straddle slabs and one needs a slab of its own.
        let batch: Vec<u8> = std::iter::once(200u32.to_be_bytes().to_vec())
            .chain((0..200u32).map(|i| {
                let mut m = 200u32.to_be_bytes().to_vec();
                m.extend_from_slice(&[i as u8; 200]);
                m
            }))
            .flatten()
            .collect();
        for _ in 0..30 {
            wire.extend(cmd("MPUB t", &batch));
        }
        wire.extend_from_slice(b"NOP\n");
        wire.extend(cmd("PUB t", &vec![7u8; (1 << 20) + 10]));
        sent.extend_from_slice(&wire);
        // Sent in pieces that cut through commands.
        for piece in sent.chunks(7_777) {
            s.write_all(piece).await.unwrap();
        }
        let got = frames(&mut s, 32).await;
        assert!(
            got.iter().all(|(k, d)| *k == FRAME_RESPONSE && d == OK),
            "{got:?}"
        );
        s.write_all(b"FIN 0000000000000000\n").await.unwrap();
        let got = frames(&mut s, 1).await;
        assert_eq!(got[0].0, FRAME_ERROR);
        assert!(got[0].1.starts_with(b"E_INVALID"));
        let mut rest = Vec::new();
        let n = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut rest))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(n, 0, "closed after the error");
        // Every message is queued on its topic, bodies as sent (the error came after them).
        let t = floor.topics.get(b"t");
        assert_eq!(t.queued(), 30 * 200 + 1);
        let mut bodies = Vec::new();
        while let Some(r) = t.take(|_| 1000) {
            r.for_each_body(|b| bodies.push(b.to_vec()));
        }
        assert_eq!(bodies.len(), 30 * 200 + 1);
        for (i, b) in bodies[..6000].iter().enumerate() {
            assert_eq!(b, &vec![(i % 200) as u8; 200]);
        }
        assert_eq!(bodies[6000], vec![7u8; (1 << 20) + 10]);
        server.abort();
    }

    #[tokio::test]
    async fn refuses_another_protocol() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(serve(listener, Arc::new(Floor::default())));
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(b"  V1").await.unwrap();
        let got = frames(&mut s, 1).await;
        assert_eq!(got[0], (FRAME_ERROR, b"E_BAD_PROTOCOL".to_vec()));
        server.abort();
    }

    /// The bench's own publisher and consumer against the floor: everything published is
    /// handed out once, in frames the consumer's exact accounting accepts.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn hands_out_what_was_published() {
        use crate::cli::{Cli, Command};
        use crate::modes::{self, subscribe, Workload};
        use crate::publisher::Stop;
        use clap::Parser;
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let server = tokio::spawn(serve(listener, Arc::new(Floor::default())));
        let Command::Sub(args) = Cli::try_parse_from([
            "nsqr-bench",
            "sub",
            "--nsqd-tcp-address",
            &addr,
            "--pub-connections=3",
            "--sub-connections=2",
            "--rdy=300",
            "--size=64",
            "--batch-size=70",
        ])
        .unwrap()
        .command
        else {
            panic!("not sub")
        };
        let mut w = Workload::new(&addr, &args.publish, &args.consume, args.body.size);
        w.progress = false;
        let (p, published) = modes::publish_phase(&w, "t", 64, Stop::Count(10_001), "pub")
            .await
            .unwrap();
        assert_eq!(p.acked, 10_001);
        let s = subscribe::consume(&w, "t", &published).await.unwrap();
        assert_eq!(
            (
                s.received,
                s.unique,
                s.finned,
                s.lost,
                s.duplicates,
                s.foreign
            ),
            (10_001, 10_001, 10_001, 0, 0, 0)
        );
        server.abort();
    }
}
