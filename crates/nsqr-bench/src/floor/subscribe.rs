//! The floor's consuming side, after `SUB`: write messages as far as `RDY` allows and read the
//! FINs that open room for more, with no broker work between. Each message goes out as a
//! prepared frame header (only its size changes: the timestamp and id are constant, the
//! attempts 1) followed by its body, copied from the bytes its publish was read into
//! (`topics`), many frames per write. FINs (and REQs) are counted, not matched to ids; nothing
//! is redelivered, and messages taken for a connection that closes are gone.
//!
//! Reading and writing run side by side on the two halves of the socket, so the client's FINs
//! are read while frames are being written (a client waiting to write its FINs never stalls a
//! floor waiting to write frames).

use std::io;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::Notify;

use super::topics::{Run, Topic};
use super::{put_frame, FRAME_ERROR, FRAME_MESSAGE, FRAME_RESPONSE};

/// Bytes of frames per write, at most (at least one message).
const WRITE_BYTES: usize = 256 << 10;
/// Frame header: size, type, timestamp, attempts, id.
const FRAME_HEAD: usize = 4 + 4 + 8 + 2 + 16;
/// A command line longer than this is refused.
const MAX_LINE: usize = 1024;

/// Why the reading side stopped, for the writing side.
const RUNNING: u8 = 0;
const CLOSE: u8 = 1;
const REFUSED: u8 = 2;
const GONE: u8 = 3;

/// What the reading side tells the writing side.
#[derive(Debug, Default)]
struct Credit {
    rdy: AtomicU64,
    /// FINs and REQs read so far.
    finished: AtomicU64,
    stop: AtomicU8,
    refusal: Mutex<String>,
    changed: Notify,
}

impl Credit {
    fn stop(&self, why: u8) {
        self.stop.store(why, Relaxed);
        self.changed.notify_one();
    }
}

/// Serve a subscribed connection; `rest` is what was read after the SUB line.
pub async fn serve(stream: TcpStream, rest: Vec<u8>, topic: Arc<Topic>) -> io::Result<()> {
    let credit = Credit::default();
    let (rd, wr) = stream.into_split();
    let (r, w) = tokio::join!(
        read_commands(rd, rest, &credit),
        write_messages(wr, &topic, &credit)
    );
    r.and(w)
}

/// One consumer command's effect.
#[derive(Debug, PartialEq)]
enum Command {
    Finished,
    Rdy(u64),
    Ignored,
    Close,
    Refuse(String),
}

fn command(line: &[u8]) -> Command {
    if line.starts_with(b"FIN ") || line.starts_with(b"REQ ") {
        return Command::Finished;
    }
    if let Some(n) = line.strip_prefix(b"RDY ") {
        return match std::str::from_utf8(n).ok().and_then(|n| n.parse().ok()) {
            Some(n) => Command::Rdy(n),
            None => Command::Refuse("E_INVALID RDY count is not a number".into()),
        };
    }
    match line {
        b"NOP" => Command::Ignored,
        b"CLS" => Command::Close,
        l if l.starts_with(b"TOUCH ") => Command::Ignored,
        l => Command::Refuse(format!(
            "E_INVALID nsqr-bench floor takes FIN, REQ, TOUCH, RDY, NOP and CLS after SUB, not {:?}",
            String::from_utf8_lossy(l.split(|&c| c == b' ').next().unwrap_or_default())
        )),
    }
}

async fn read_commands(mut rd: OwnedReadHalf, mut buf: Vec<u8>, c: &Credit) -> io::Result<()> {
    buf.reserve(64 << 10);
    loop {
        let mut start = 0;
        let mut finished = 0;
        let mut rdy = None;
        while let Some(nl) = buf[start..].iter().position(|&b| b == b'\n') {
            let line = &buf[start..start + nl];
            start += nl + 1;
            match command(line) {
                Command::Finished => finished += 1,
                Command::Rdy(n) => rdy = Some(n),
                Command::Ignored => {}
                Command::Close => {
                    c.stop(CLOSE);
                    return Ok(());
                }
                Command::Refuse(e) => {
                    if let Ok(mut r) = c.refusal.lock() {
                        *r = e;
                    }
                    c.stop(REFUSED);
                    return Ok(());
                }
            }
        }
        buf.drain(..start);
        if finished > 0 || rdy.is_some() {
            c.finished.fetch_add(finished, Relaxed);
            if let Some(n) = rdy {
                c.rdy.store(n, Relaxed);
            }
            c.changed.notify_one();
        }
        if buf.len() > MAX_LINE {
            if let Ok(mut r) = c.refusal.lock() {
                *r = "E_INVALID command line too long".into();
            }
            c.stop(REFUSED);
            return Ok(());
        }
        if buf.capacity() - buf.len() < 4096 {
            buf.reserve(64 << 10);
        }
        match rd.read_buf(&mut buf).await {
            Ok(0) => {
                c.stop(GONE);
                return Ok(());
            }
            Ok(_) => {}
            Err(e) => {
                c.stop(GONE);
                return Err(e);
            }
        }
    }
}

async fn write_messages(mut wr: OwnedWriteHalf, topic: &Topic, c: &Credit) -> io::Result<()> {
    let mut frames = Frames::default();
    let mut sent = 0u64;
    loop {
        // Armed before the checks below, so a wake-up between them is not missed.
        let changed = c.changed.notified();
        let added = topic.added.notified();
        tokio::pin!(changed, added);
        added.as_mut().enable();
        match c.stop.load(Relaxed) {
            RUNNING => {}
            CLOSE => return answer(&mut wr, FRAME_RESPONSE, b"CLOSE_WAIT").await,
            REFUSED => {
                let e = c.refusal.lock().map(|r| r.clone()).unwrap_or_default();
                return answer(&mut wr, FRAME_ERROR, e.as_bytes()).await;
            }
            _ => return Ok(()),
        }
        let in_flight = sent.saturating_sub(c.finished.load(Relaxed));
        let room = c.rdy.load(Relaxed).saturating_sub(in_flight);
        if room == 0 {
            changed.await;
            continue;
        }
        let fits = |size: usize| (WRITE_BYTES / (FRAME_HEAD + size)) as u64;
        let Some(run) = topic.take(|size| room.min(fits(size)).min(u64::from(u32::MAX)) as u32)
        else {
            tokio::select! {
                _ = changed => {}
                _ = added => {}
            }
            continue;
        };
        let (n, bytes) = frames.fill(&run);
        wr.write_all(bytes).await?;
        sent += u64::from(n);
    }
}

async fn answer(wr: &mut OwnedWriteHalf, kind: u32, data: &[u8]) -> io::Result<()> {
    let mut out = Vec::new();
    put_frame(&mut out, kind, data);
    wr.write_all(&out).await
}

/// The frames of a run's messages, built in one buffer reused for every write.
#[derive(Debug)]
struct Frames {
    header: [u8; FRAME_HEAD],
    buf: Vec<u8>,
}

impl Default for Frames {
    fn default() -> Self {
        let mut header = [0u8; FRAME_HEAD];
        header[4..8].copy_from_slice(&FRAME_MESSAGE.to_be_bytes());
        // The timestamp (8..16) stays 0 and the id (18..34) is never looked at again.
        header[16..18].copy_from_slice(&1u16.to_be_bytes());
        header[18..].fill(b'0');
        Frames {
            header,
            buf: Vec::with_capacity(WRITE_BYTES + FRAME_HEAD),
        }
    }
}

impl Frames {
    /// A frame per message of `run`: how many, and the bytes.
    fn fill(&mut self, run: &Run) -> (u32, &[u8]) {
        self.buf.clear();
        let (buf, header) = (&mut self.buf, &self.header);
        let n = run.for_each_body(|body| {
            let at = buf.len();
            buf.extend_from_slice(header);
            buf[at..at + 4].copy_from_slice(&((FRAME_HEAD - 4 + body.len()) as u32).to_be_bytes());
            buf.extend_from_slice(body);
        });
        (n, &self.buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::decode;

    #[test]
    fn commands() {
        assert_eq!(command(b"FIN 0000000000000000"), Command::Finished);
        assert_eq!(command(b"REQ 0000000000000000 0"), Command::Finished);
        assert_eq!(command(b"RDY 2500"), Command::Rdy(2500));
        assert_eq!(command(b"NOP"), Command::Ignored);
        assert_eq!(command(b"TOUCH 0000000000000000"), Command::Ignored);
        assert_eq!(command(b"CLS"), Command::Close);
        assert!(matches!(command(b"RDY x"), Command::Refuse(_)));
        assert!(matches!(command(b"PUB t"), Command::Refuse(e) if e.contains("\"PUB\"")));
    }

    #[test]
    fn frames_are_message_frames_with_the_published_bodies() {
        let mut b = crate::body::MpubBatch::new("t", 20, 3);
        let cmd = bytes::Bytes::copy_from_slice(b.stamp(3, 9, 1, 40, 7));
        let run = Run::of_command(cmd).unwrap();
        let mut f = Frames::default();
        let (n, bytes) = f.fill(&run);
        assert_eq!(n, 3);
        assert_eq!(bytes.len(), 3 * (FRAME_HEAD + 20));
        let mut r = nsq_wire::FrameDecoder::default();
        r.feed(bytes);
        for seq in 40..43 {
            match r.next_frame().unwrap() {
                Some(nsq_wire::Frame::Message {
                    attempts, id, body, ..
                }) => {
                    assert_eq!(attempts, 1);
                    assert_eq!(&id, b"0000000000000000");
                    assert_eq!(body.len(), 20);
                    let h = decode(&body).unwrap();
                    assert_eq!((h.tag, h.publisher, h.seq, h.sent_ns), (9, 1, seq, 7));
                }
                other => panic!("{other:?}"),
            }
        }
    }
}
