//! The floor's publishing side: read commands into 1 MiB slabs faulted in ahead, answer `OK`,
//! and keep each PUB / MPUB / DPUB as it was read (a shared slice of the slab) in its topic's
//! queue until a subscriber takes it (see `topics`). A `SUB` turns the connection over to
//! `subscribe`.

use std::io;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
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
            "E_INVALID nsqr-bench floor only takes publishes and SUB, not {:?}",
            String::from_utf8_lossy(name)
        )),
    }
}

/// The topic a command line names (its second word).
fn topic_of(cmd: &[u8]) -> &[u8] {
    let line = cmd.split(|&c| c == b'\n').next().unwrap_or_default();
    line.split(|&c| c == b' ').nth(1).unwrap_or_default()
}

/// Queue a publish for the topic's subscribers; `last` keeps the connection's last topic so
/// the map is consulted only when the topic changes. A command without messages is dropped.
fn keep(cmd: Bytes, floor: &Floor, last: &mut Option<(Vec<u8>, Arc<Topic>)>) {
    let name = topic_of(&cmd);
    let topic = match last {
        Some((n, t)) if n.as_slice() == name => Arc::clone(t),
        _ => Arc::clone(&last.insert((name.to_vec(), floor.topics.get(name))).1),
    };
    if let Some(run) = Run::of_command(cmd) {
        topic.push(run);
    }
}

/// A new slab holding `tail` (the start of a command that did not fit, `pending` bytes long
/// when known), faulted in.
fn new_slab(tail: &[u8], pending: usize) -> BytesMut {
    let mut slab = BytesMut::with_capacity(SLAB.max(pending + MIN_READ_SPACE));
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
    let mut last_topic = None;
    // Complete commands are split off the front as they are answered, so the slab holds at
    // most the start of one command; `pending` is its whole length once its size has arrived
    // (a body larger than the free space moves to a slab it fits in).
    let mut slab = new_slab(&[], 0);
    let mut pending = 0;
    loop {
        if slab.capacity() - slab.len() < MIN_READ_SPACE || slab.capacity() < pending {
            slab = new_slab(&slab, pending);
        }
        if stream.read_buf(&mut slab).await? == 0 {
            return Ok(());
        }
        loop {
            match step(&slab) {
                Step::Incomplete => {
                    pending = body_size(&slab).unwrap_or(0);
                    break;
                }
                Step::Done {
                    len,
                    answer,
                    publish,
                } => {
                    let cmd = slab.split_to(len).freeze();
                    if publish {
                        keep(cmd, floor, &mut last_topic);
                    }
                    if answer {
                        put_frame(&mut out, FRAME_RESPONSE, OK);
                    }
                }
                Step::Subscribe { len } => {
                    let topic = floor.topics.get(topic_of(&slab.split_to(len)));
                    put_frame(&mut out, FRAME_RESPONSE, OK);
                    stream.write_all(&out).await?;
                    return subscribe::serve(stream, slab.to_vec(), topic).await;
                }
                Step::Close => {
                    put_frame(&mut out, FRAME_RESPONSE, b"CLOSE_WAIT");
                    return stream.write_all(&out).await;
                }
                Step::Refuse(e) => {
                    put_frame(&mut out, FRAME_ERROR, e.as_bytes());
                    return stream.write_all(&out).await;
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
    use crate::floor::tests::cmd;

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
    fn keeps_each_publish_in_its_topic() {
        let mut b = MpubBatch::new("topic_a", 50, 10);
        let mpub = Bytes::copy_from_slice(b.stamp(4, 3, 2, 1000, 77));
        assert_eq!(topic_of(&mpub), b"topic_a");
        let p = Bytes::from(cmd("PUB t", b"0123456789abcdefXYZ"));
        assert_eq!(topic_of(&p), b"t");
        let floor = Floor::default();
        let mut last = None;
        keep(mpub.clone(), &floor, &mut last);
        keep(mpub, &floor, &mut last);
        keep(p, &floor, &mut last);
        keep(Bytes::from(cmd("MPUB t", &[0, 0, 0, 0])), &floor, &mut last);
        let a = floor.topics.get(b"topic_a");
        let first = a.take(|_| 100).unwrap();
        let mut seqs = Vec::new();
        first.for_each_body(|body| seqs.push(decode(body).unwrap().seq));
        assert_eq!(seqs, [1000, 1001, 1002, 1003]);
        assert_eq!(a.take(|_| 100).map(|r| r.count), Some(4));
        assert_eq!(a.take(|_| 100), None);
        let t = floor.topics.get(b"t");
        assert_eq!(t.take(|_| 100).map(|r| r.count), Some(1));
        assert_eq!(
            t.take(|_| 100),
            None,
            "an MPUB of 0 messages queues nothing"
        );
    }
}
