//! The floor's publishing side: read every command into memory that is kept until the process
//! exits, answer `OK`, and note per PUB / MPUB / DPUB what a subscriber will be handed (see
//! `topics`). A `SUB` turns the connection over to `subscribe`.

use std::io;
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::topics::{Run, Topic};
use super::{put_frame, subscribe, Floor, FRAME_ERROR, FRAME_RESPONSE, MAX_BODY, OK};

/// Slab size: as nsqrd's for a busy publisher.
const SLAB: usize = 1024 * 1024;
/// Below this much free space, the next read goes to a new slab.
const MIN_READ_SPACE: usize = 64 * 1024;

/// What the command at the front of the buffer needs.
#[derive(Debug, PartialEq)]
enum Step {
    /// Not all of it has arrived.
    Incomplete,
    /// It is `len` bytes long; answer OK (or not, for NOP); a publish is noted for subscribers.
    Done {
        len: usize,
        answer: bool,
        publish: bool,
    },
    /// SUB (`len` bytes): answer OK and serve the connection as a subscriber.
    Subscribe { len: usize },
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
            publish: false,
        },
        b"CLS" => Step::Close,
        b"SUB" => Step::Subscribe { len: nl + 1 },
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
                    publish: matches!(name, b"PUB" | b"MPUB" | b"DPUB"),
                },
            }
        }
        _ => Step::Refuse(format!(
            "E_INVALID nsqr floor only takes publishes and SUB, not {:?}",
            String::from_utf8_lossy(name)
        )),
    }
}

/// The topic a command line names (its second word).
fn topic_of(cmd: &[u8]) -> &[u8] {
    let line = cmd.split(|&c| c == b'\n').next().unwrap_or_default();
    line.split(|&c| c == b' ').nth(1).unwrap_or_default()
}

/// What a whole PUB, DPUB or MPUB command hands out: MPUB's count and its first message's size
/// and header, or PUB's one body. A malformed MPUB notes nothing.
fn run_of(cmd: &[u8]) -> Option<Run> {
    let nl = cmd.iter().position(|&c| c == b'\n')?;
    let body = cmd.get(nl + 5..)?;
    if !cmd.starts_with(b"MPUB ") {
        return Some(Run::new(body, 1, body.len() as u32));
    }
    let word = |at: usize| -> Option<u32> {
        let w = body.get(at..at + 4)?;
        Some(u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
    };
    let (count, size) = (word(0)?, word(4)?);
    let first = body.get(8..8 + (size as usize).min(16))?;
    Some(Run::new(first, count, size))
}

/// Note a publish for the topic's subscribers; `last` keeps the connection's last topic so the
/// map is consulted only when the topic changes.
fn note(cmd: &[u8], floor: &Floor, last: &mut Option<(Vec<u8>, Arc<Topic>)>) {
    let Some(run) = run_of(cmd) else { return };
    let name = topic_of(cmd);
    let topic = match last {
        Some((n, t)) if n.as_slice() == name => t,
        _ => &last.insert((name.to_vec(), floor.topics.get(name))).1,
    };
    topic.push(run);
}

/// A new slab holding `tail` (the start of a command that did not fit, `pending` bytes long
/// when known), faulted in.
fn new_slab(tail: &[u8], pending: usize) -> Vec<u8> {
    let mut slab = Vec::with_capacity(SLAB.max(pending + MIN_READ_SPACE));
    slab.extend_from_slice(tail);
    nsq_common::prefault::populate(slab.spare_capacity_mut());
    slab
}

/// Serve one connection: publishes until it closes, or a SUB hands it to `subscribe`.
pub async fn connection(mut stream: TcpStream, floor: &Floor) -> io::Result<()> {
    let mut magic = [0u8; 4];
    stream.read_exact(&mut magic).await?;
    let mut out = Vec::new();
    if &magic != b"  V2" {
        put_frame(&mut out, FRAME_ERROR, b"E_BAD_PROTOCOL");
        return stream.write_all(&out).await;
    }
    let kept = &floor.kept;
    let mut last_topic = None;
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
                Step::Done {
                    len,
                    answer,
                    publish,
                } => {
                    if publish {
                        note(&slab[start..start + len], floor, &mut last_topic);
                    }
                    start += len;
                    if answer {
                        put_frame(&mut out, FRAME_RESPONSE, OK);
                    }
                }
                Step::Subscribe { len } => {
                    let topic = floor.topics.get(topic_of(&slab[start..start + len]));
                    put_frame(&mut out, FRAME_RESPONSE, OK);
                    stream.write_all(&out).await?;
                    let rest = slab[start + len..].to_vec();
                    slab.truncate(start + len);
                    kept.keep(slab);
                    return subscribe::serve(stream, rest, topic).await;
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
    use crate::body::{decode, MpubBatch};

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
                answer: true,
                publish: true
            }
        );
        assert_eq!(step(&p[..p.len() - 1]), Step::Incomplete);
        assert_eq!(step(&p[..7]), Step::Incomplete);
        assert_eq!(
            step(b"NOP\nPUB"),
            Step::Done {
                len: 4,
                answer: false,
                publish: false
            }
        );
        assert_eq!(step(b"CLS\n"), Step::Close);
        assert_eq!(step(b"SUB t c\nRDY"), Step::Subscribe { len: 8 });
        assert!(matches!(step(b"FIN 0\n"), Step::Refuse(e) if e.starts_with("E_INVALID")));
        let big = cmd("MPUB t", &[]);
        let mut big = big[..big.len() - 4].to_vec();
        big.extend_from_slice(&(MAX_BODY as u32 + 1).to_be_bytes());
        assert!(matches!(step(&big), Step::Refuse(e) if e.starts_with("E_BAD_BODY")));
        assert_eq!(body_size(&p[..11]), Some(p.len()));
    }

    #[test]
    fn notes_one_run_per_publish() {
        let mut b = MpubBatch::new("topic_a", 50, 10);
        let mpub = b.stamp(4, 3, 2, 1000, 77).to_vec();
        assert_eq!(topic_of(&mpub), b"topic_a");
        let r = run_of(&mpub).unwrap();
        assert_eq!((r.count, r.size), (4, 50));
        let h = decode(&r.header_at(3)).unwrap();
        assert_eq!((h.tag, h.publisher, h.seq, h.sent_ns), (3, 2, 1003, 77));
        let p = cmd("PUB t", b"0123456789abcdefXYZ");
        assert_eq!(topic_of(&p), b"t");
        let r = run_of(&p).unwrap();
        assert_eq!((r.count, r.size, &r.header), (1, 19, b"0123456789abcdef"));
        assert_eq!(run_of(&cmd("MPUB t", &[0, 0])), None);
        let floor = Floor::default();
        let mut last = None;
        note(&mpub, &floor, &mut last);
        note(&mpub, &floor, &mut last);
        note(&p, &floor, &mut last);
        let a = floor.topics.get(b"topic_a");
        assert_eq!(a.take(|_| 100).map(|r| r.count), Some(4));
        assert_eq!(a.take(|_| 100).map(|r| r.count), Some(4));
        assert_eq!(a.take(|_| 100), None);
        assert_eq!(
            floor.topics.get(b"t").take(|_| 100).map(|r| r.count),
            Some(1)
        );
    }
}
