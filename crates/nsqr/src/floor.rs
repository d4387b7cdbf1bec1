//! `nsqr floor`: what publishing costs this machine before any broker work.
//!
//! A server that keeps its backlog in memory cannot spend less CPU per published message than
//! it takes to read the batch, keep its bytes and answer `OK`; on a virtual machine the fresh
//! memory alone can be half of that. This server does exactly that much: it speaks enough of
//! the TCP protocol for `nsqr bench pub` (the magic, then IDENTIFY, PUB, MPUB, DPUB and AUTH
//! answered `OK`, NOP ignored, CLS closed) and keeps every byte it reads until it exits, in
//! 1 MiB slabs faulted in with one call each, as nsqrd's publish slabs are. No message is
//! parsed, validated, given an id or queued. `nsqr bench compare --floor` measures it beside
//! nsqrd and the reference, so the report says how far from the machine's limit each server is.

use std::io;
use std::sync::{Arc, Mutex};

use clap::Args;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Slab size: as nsqrd's for a busy publisher.
const SLAB: usize = 1024 * 1024;
/// Below this much free space, the next read goes to a new slab.
const MIN_READ_SPACE: usize = 64 * 1024;
/// The largest body accepted (nsqd's default --max-body-size).
const MAX_BODY: usize = 5 * 1024 * 1024;

const OK: &[u8] = b"OK";
const FRAME_RESPONSE: u32 = 0;
const FRAME_ERROR: u32 = 1;

/// `nsqr floor` takes nsqd's listener flags so `compare` can start it as it starts a server;
/// everything but the TCP address is accepted and ignored.
#[derive(Debug, Clone, Args)]
pub struct FloorArgs {
    /// <addr>:<port> to listen on for TCP clients (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:4150")]
    pub tcp_address: String,
    /// Ignored (nsqd's flag, so compare can pass it).
    #[arg(long, hide = true)]
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

/// Everything the clients sent, kept until the process exits (a backlog nobody consumes).
#[derive(Debug, Default)]
pub struct Kept {
    slabs: Mutex<Vec<Vec<u8>>>,
}

impl Kept {
    /// Bytes held in slabs that are full (the slabs connections are reading into are not
    /// counted until they are replaced).
    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.slabs
            .lock()
            .map(|s| s.iter().map(Vec::len).sum())
            .unwrap_or(0)
    }

    fn keep(&self, slab: Vec<u8>) {
        if let Ok(mut s) = self.slabs.lock() {
            s.push(slab);
        }
    }
}

/// Bind, say where (as nsqd's "TCP: listening on" line, which `compare` waits for), serve.
pub async fn run(args: &FloorArgs) -> io::Result<()> {
    let listener = TcpListener::bind(&args.tcp_address).await?;
    eprintln!("[nsqr floor] TCP: listening on {}", listener.local_addr()?);
    serve(listener, Arc::new(Kept::default())).await
}

/// Accept connections until the listener fails.
pub async fn serve(listener: TcpListener, kept: Arc<Kept>) -> io::Result<()> {
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        let kept = Arc::clone(&kept);
        tokio::spawn(async move {
            let _ = connection(stream, &kept).await;
        });
    }
}

/// What the command at the front of the buffer needs.
#[derive(Debug, PartialEq)]
enum Step {
    /// Not all of it has arrived.
    Incomplete,
    /// It is `len` bytes long; answer OK (or not, for NOP).
    Done { len: usize, answer: bool },
    /// CLS: answer CLOSE_WAIT and close.
    Close,
    /// Anything this server does not take: an error and close.
    Refuse(String),
}

/// Look at the command at the front of `b`.
fn step(b: &[u8]) -> Step {
    let Some(nl) = b.iter().position(|&c| c == b'\n') else {
        return Step::Incomplete;
    };
    let line = &b[..nl];
    let name = line.split(|&c| c == b' ').next().unwrap_or_default();
    match name {
        b"NOP" => Step::Done {
            len: nl + 1,
            answer: false,
        },
        b"CLS" => Step::Close,
        b"IDENTIFY" | b"PUB" | b"MPUB" | b"DPUB" | b"AUTH" => {
            let head = nl + 5;
            match body_size(b).map(|len| len - head) {
                None => Step::Incomplete,
                Some(size) if size > MAX_BODY => {
                    Step::Refuse(format!("E_BAD_BODY body too big {size} > {MAX_BODY}"))
                }
                Some(size) if b.len() < head + size => Step::Incomplete,
                Some(size) => Step::Done {
                    len: head + size,
                    answer: true,
                },
            }
        }
        _ => Step::Refuse(format!(
            "E_INVALID nsqr floor only takes publishes, not {:?}",
            String::from_utf8_lossy(name)
        )),
    }
}

fn put_frame(out: &mut Vec<u8>, kind: u32, data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32 + 4).to_be_bytes());
    out.extend_from_slice(&kind.to_be_bytes());
    out.extend_from_slice(data);
}

/// A new slab holding `tail` (the start of a command that did not fit, `pending` bytes long
/// when known), faulted in.
fn new_slab(tail: &[u8], pending: usize) -> Vec<u8> {
    let mut slab = Vec::with_capacity(SLAB.max(pending + MIN_READ_SPACE));
    slab.extend_from_slice(tail);
    nsq_common::prefault::populate(slab.spare_capacity_mut());
    slab
}

async fn connection(mut stream: TcpStream, kept: &Kept) -> io::Result<()> {
    let mut magic = [0u8; 4];
    stream.read_exact(&mut magic).await?;
    let mut out = Vec::new();
    if &magic != b"  V2" {
        put_frame(&mut out, FRAME_ERROR, b"E_BAD_PROTOCOL");
        return stream.write_all(&out).await;
    }
    let mut slab = new_slab(&[], 0);
    // Where the first command not yet answered starts in `slab`, and its whole length once its
    // size has arrived (a body larger than the free space moves to a slab it fits in).
    let (mut start, mut pending) = (0, 0);
    loop {
        if slab.capacity() - slab.len() < MIN_READ_SPACE || slab.capacity() < start + pending {
            let next = new_slab(&slab[start..], pending);
            slab.truncate(start);
            kept.keep(std::mem::replace(&mut slab, next));
            start = 0;
        }
        if stream.read_buf(&mut slab).await? == 0 {
            kept.keep(slab);
            return Ok(());
        }
        loop {
            match step(&slab[start..]) {
                Step::Incomplete => {
                    pending = body_size(&slab[start..]).unwrap_or(0);
                    break;
                }
                Step::Done { len, answer } => {
                    start += len;
                    if answer {
                        put_frame(&mut out, FRAME_RESPONSE, OK);
                    }
                }
                Step::Close => {
                    put_frame(&mut out, FRAME_RESPONSE, b"CLOSE_WAIT");
                    stream.write_all(&out).await?;
                    kept.keep(slab);
                    return Ok(());
                }
                Step::Refuse(e) => {
                    put_frame(&mut out, FRAME_ERROR, e.as_bytes());
                    stream.write_all(&out).await?;
                    kept.keep(slab);
                    return Ok(());
                }
            }
        }
        if !out.is_empty() {
            stream.write_all(&out).await?;
            out.clear();
        }
    }
}

/// The whole length of a command with a body whose size has arrived, if that is what `b` starts
/// with.
fn body_size(b: &[u8]) -> Option<usize> {
    let nl = b.iter().position(|&c| c == b'\n')?;
    let s = b.get(nl + 1..nl + 5)?;
    Some(nl + 5 + u32::from_be_bytes([s[0], s[1], s[2], s[3]]) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn cmd(line: &str, body: &[u8]) -> Vec<u8> {
        let mut v = format!("{line}\n").into_bytes();
        v.extend_from_slice(&(body.len() as u32).to_be_bytes());
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn steps_over_commands() {
        let p = cmd("PUB t", b"hello");
        assert_eq!(
            step(&p),
            Step::Done {
                len: p.len(),
                answer: true
            }
        );
        assert_eq!(step(&p[..p.len() - 1]), Step::Incomplete);
        assert_eq!(step(&p[..7]), Step::Incomplete);
        assert_eq!(
            step(b"NOP\nPUB"),
            Step::Done {
                len: 4,
                answer: false
            }
        );
        assert_eq!(step(b"CLS\n"), Step::Close);
        assert!(matches!(step(b"SUB t c\n"), Step::Refuse(e) if e.starts_with("E_INVALID")));
        let big = cmd("MPUB t", &[]);
        let mut big = big[..big.len() - 4].to_vec();
        big.extend_from_slice(&(MAX_BODY as u32 + 1).to_be_bytes());
        assert!(matches!(step(&big), Step::Refuse(e) if e.starts_with("E_BAD_BODY")));
        assert_eq!(body_size(&p[..11]), Some(p.len()));
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
    async fn answers_publishes_and_keeps_every_byte() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let kept = Arc::new(Kept::default());
        let server = tokio::spawn(serve(listener, Arc::clone(&kept)));
        let mut s = TcpStream::connect(addr).await.unwrap();
        let mut sent = b"  V2".to_vec();
        let mut wire = cmd("IDENTIFY", b"{}");
        // Two MPUBs larger than a slab between them, and one body larger than a slab, so
        // commands straddle slabs and one needs a slab of its own.
        let batch: Vec<u8> = (0..200u32)
            .flat_map(|i| {
                let mut m = 200u32.to_be_bytes().to_vec();
                m.extend_from_slice(&[i as u8; 200]);
                m
            })
            .collect();
        for _ in 0..30 {
            wire.extend(cmd("MPUB t", &batch));
        }
        wire.extend_from_slice(b"NOP\n");
        wire.extend(cmd("PUB t", &vec![7u8; SLAB + 10]));
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
        // Everything after the magic is kept, the refused command included.
        let want = wire.len() + "FIN 0000000000000000\n".len();
        for _ in 0..100 {
            if kept.bytes() == want {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(kept.bytes(), want);
        server.abort();
    }

    #[tokio::test]
    async fn refuses_another_protocol() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(serve(listener, Arc::new(Kept::default())));
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(b"  V1").await.unwrap();
        let got = frames(&mut s, 1).await;
        assert_eq!(got[0], (FRAME_ERROR, b"E_BAD_PROTOCOL".to_vec()));
        server.abort();
    }
}
