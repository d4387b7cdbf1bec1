//! The floor's consuming side, after `SUB`: write message frames as far as `RDY` allows and
//! read the FINs that open room for more, with no broker work between. The frames are stamped
//! into a prepared buffer (`Frames`): per message only the 16-byte header of its body changes
//! (the benchmark's sequence word and send time, from `topics`), as the benchmark's publisher
//! stamps its batches. FINs (and REQs) are counted, not matched to ids; nothing is redelivered,
//! and messages taken for a connection that closes are gone.
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
use crate::body::HEADER_LEN;

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
            "E_INVALID nsqr floor takes FIN, REQ, TOUCH, RDY, NOP and CLS after SUB, not {:?}",
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
        let fits = |size: u32| (WRITE_BYTES / (FRAME_HEAD + size as usize)) as u64;
        let Some(run) = topic.take(|size| room.min(fits(size)).min(u64::from(u32::MAX)) as u32)
        else {
            tokio::select! {
                _ = changed => {}
                _ = added => {}
            }
            continue;
        };
        wr.write_all(frames.stamp(&run)).await?;
        sent += u64::from(run.count);
    }
}

async fn answer(wr: &mut OwnedWriteHalf, kind: u32, data: &[u8]) -> io::Result<()> {
    let mut out = Vec::new();
    put_frame(&mut out, kind, data);
    wr.write_all(&out).await
}

/// Message frames for one body size, built once; stamping writes only each body's header.
#[derive(Debug, Default)]
struct Frames {
    buf: Vec<u8>,
    size: usize,
    capacity: usize,
}

impl Frames {
    /// The frames of `run`'s messages.
    fn stamp(&mut self, run: &Run) -> &[u8] {
        let (size, count) = (run.size as usize, run.count as usize);
        if size != self.size || count > self.capacity {
            self.prepare(size, count.max(self.capacity));
        }
        let frame = FRAME_HEAD + size;
        let n = size.min(HEADER_LEN);
        for i in 0..count {
            let at = i * frame + FRAME_HEAD;
            self.buf[at..at + n].copy_from_slice(&run.header_at(i as u32)[..n]);
        }
        &self.buf[..count * frame]
    }

    fn prepare(&mut self, size: usize, capacity: usize) {
        let mut one = Vec::with_capacity(FRAME_HEAD + size);
        one.extend_from_slice(&((FRAME_HEAD - 4 + size) as u32).to_be_bytes());
        one.extend_from_slice(&FRAME_MESSAGE.to_be_bytes());
        one.extend_from_slice(&0u64.to_be_bytes()); // timestamp
        one.extend_from_slice(&1u16.to_be_bytes()); // attempts
        one.extend_from_slice(&[b'0'; 16]); // id: never looked at again
        one.resize(FRAME_HEAD + size, b'x');
        self.buf = one.repeat(capacity);
        (self.size, self.capacity) = (size, capacity);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::{decode, seq_word};

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
    fn frames_are_message_frames_with_numbered_bodies() {
        let mut first = seq_word(9, 1, 40).to_be_bytes().to_vec();
        first.extend_from_slice(&7u64.to_be_bytes());
        let mut f = Frames::default();
        let run = Run::new(&first, 3, 20);
        let bytes = f.stamp(&run).to_vec();
        assert_eq!(bytes.len(), 3 * (FRAME_HEAD + 20));
        let mut r = crate::client::FrameReader::new();
        let mut src: &[u8] = &bytes;
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(r.fill(&mut src)).unwrap();
        for seq in 40..43 {
            match r.next_frame().unwrap() {
                Some(crate::client::Frame::Message(m)) => {
                    assert_eq!(m.attempts, 1);
                    assert_eq!(m.body.len(), 20);
                    let h = decode(m.body).unwrap();
                    assert_eq!((h.tag, h.publisher, h.seq, h.sent_ns), (9, 1, seq, 7));
                }
                other => panic!("{other:?}"),
            }
        }
        // A smaller body than the header, and a size change, rebuild the frames.
        assert_eq!(f.stamp(&Run::new(b"abc", 1, 3)).len(), FRAME_HEAD + 3);
    }
}
