//! A connection's read buffer, which is also where what it publishes is stored.
//!
//! The kernel writes a publisher's bytes into this buffer, and PUB and MPUB bodies are then
//! split off it without a copy (their MPUB length prefixes included) and queued as they are:
//! a copy per message and an allocation per publish cost more server CPU than anything else
//! on the publish path except the kernel itself. Once a publish has been split off, the
//! buffer is shared with queued messages; when it runs out of room a new buffer (a "slab",
//! 1 MiB for a busy publisher, faulted in ahead of the reads) is allocated instead of
//! moving data, and each slab is freed with the last message that uses it
//! (docs/decisions/0001-publish-bodies-in-read-slabs.md). Two rules keep a few long-lived
//! messages from pinning a lot of memory:
//! - a slab takes the publishes of one topic only (the first one split off it) and the others
//!   are copied, since different topics drain at different rates;
//! - DPUB bodies are copied (`nsq_wire::Handover`), and a message requeued with a delay gets a
//!   copy of its body (the broker detaches it), since those wait up to an hour.
//!
//! A connection that never publishes (a consumer) keeps one buffer, reused from its front.

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use nsq_common::prefault::{populate, PAGE};
use nsq_wire::{Command, Handover};

/// Read buffer size of a connection that does not publish: several commands' worth, so moving
/// a partial command to the front (when free space runs low) happens rarely.
const READ_CHUNK: usize = 256 * 1024;
/// Slab size of a busy publishing connection: large enough that the unused tail of each
/// (where a command did not fit) is a small share. A publisher that filled its last buffer
/// in more than [`BUSY`] gets `READ_CHUNK`, so a slow one holds no more than a consumer.
const SLAB: usize = 1024 * 1024;
/// Below this much free space, make room before the next read.
const MIN_READ_SPACE: usize = 4 * 1024;
/// Buffer of a new connection: small until the client is busy, so idle connections are cheap.
pub const INITIAL_READ_BUFFER: usize = 16 * 1024;

/// A buffer that filled faster than this belongs to a busy publisher: its successor is a
/// [`SLAB`], faulted in ahead of the reads (see [`populate`]).
const BUSY: Duration = Duration::from_secs(1);
/// How far ahead of the reads a slab's pages are faulted in: as much as the last read brought,
/// within these bounds. The faulting is done after the replies are flushed, while the client
/// prepares its next batch; one batch's worth fits in that time, where a fixed larger step
/// made the client wait (docs/decisions/0001-publish-bodies-in-read-slabs.md). The bounds keep
/// each `madvise` worth its call and a step's stall small (p99 latency is a target).
const PREFAULT_MIN: usize = 16 * 1024;
const PREFAULT_MAX: usize = 256 * 1024;

/// What the connection knows about its read buffer.
#[derive(Debug)]
pub struct SlabTopic {
    /// The topic whose publishes the buffer holds (the first one split off it).
    topic: Option<Bytes>,
    allocated_at: Instant,
    /// For a slab: the address up to which its pages are faulted in.
    prefaulted_to: Option<usize>,
    /// Where the last read began (the end of the data then), and how much it brought.
    last_end: usize,
    last_read: usize,
}

impl Default for SlabTopic {
    fn default() -> Self {
        SlabTopic {
            topic: None,
            allocated_at: Instant::now(),
            prefaulted_to: None,
            last_end: 0,
            last_read: PREFAULT_MIN,
        }
    }
}

impl SlabTopic {
    /// How the parser should hand over the next publish.
    pub fn handover(&self) -> Handover<'_> {
        Handover::Split(self.topic.as_deref())
    }

    /// Note a parsed command: the first publish split off a buffer claims it for its topic.
    pub fn parsed(&mut self, cmd: &Command) {
        if self.topic.is_none() {
            if let Command::Pub { topic, .. } | Command::Mpub { topic, .. } = cmd {
                // A copy: the name must not keep the slab it was read into alive.
                self.topic = Some(Bytes::copy_from_slice(topic));
            }
        }
    }

    /// Before a read: make sure `buf` has room. A buffer that publishes were split off grows
    /// by a new slab; any new allocation is free to take publishes of any topic.
    pub fn make_room(&mut self, buf: &mut BytesMut) {
        let end = buf.as_ptr() as usize + buf.len();
        if self.last_end != 0 && end > self.last_end {
            self.last_read = end - self.last_end;
        }
        if buf.capacity() - buf.len() < MIN_READ_SPACE {
            // A busy publisher gets a slab; a slow one (or a consumer) a buffer no larger
            // than before, touched only as it fills.
            let busy = self.topic.is_some() && self.allocated_at.elapsed() < BUSY;
            let before = buf.as_ptr();
            if busy && !buf.try_reclaim(SLAB - MIN_READ_SPACE) {
                let mut slab = BytesMut::with_capacity(SLAB);
                slab.extend_from_slice(buf);
                *buf = slab;
            } else {
                buf.reserve(READ_CHUNK - MIN_READ_SPACE);
            }
            if buf.as_ptr() != before {
                *self = SlabTopic {
                    last_read: self.last_read,
                    ..SlabTopic::default()
                };
                if busy {
                    self.prefaulted_to = Some(0);
                }
            }
        }
        self.prefault(buf);
    }

    /// Keep a slab's pages faulted in as far ahead of the reads as the last read brought.
    fn prefault(&mut self, buf: &mut BytesMut) {
        let spare = buf.spare_capacity_mut();
        let start = spare.as_ptr() as usize;
        self.last_end = start;
        let Some(done) = self.prefaulted_to else {
            return;
        };
        let end = start + spare.len();
        let want = start + self.last_read.clamp(PREFAULT_MIN, PREFAULT_MAX);
        let to = want.next_multiple_of(PAGE).min(end);
        let from = done.max(start);
        if from >= to {
            return;
        }
        populate(&mut spare[from - start..to - start]);
        self.prefaulted_to = Some(to);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nsq_wire::{parse_with, ClientState, Limits};

    fn pub_cmd(topic: &str, body: &[u8]) -> Vec<u8> {
        let mut v = format!("PUB {topic}\n").into_bytes();
        v.extend_from_slice(&(body.len() as u32).to_be_bytes());
        v.extend_from_slice(body);
        v
    }

    /// Feed `input` through the buffer the way a connection does (each read fills at most the
    /// free space, up to `read` bytes); return the bodies parsed.
    fn run(input: &[u8], read: usize, slab: &mut SlabTopic, buf: &mut BytesMut) -> Vec<Bytes> {
        let mut out = Vec::new();
        let mut rest = input;
        while !rest.is_empty() {
            slab.make_room(buf);
            let n = rest.len().min(read).min(buf.capacity() - buf.len());
            buf.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
            while let Some(cmd) =
                parse_with(buf, &Limits::default(), ClientState::Init, slab.handover())
                    .expect("valid")
            {
                slab.parsed(&cmd);
                if let Command::Pub { body, .. } = cmd {
                    out.push(body);
                }
            }
        }
        out
    }

    #[test]
    fn publishes_fill_slabs_of_one_topic_without_copies() {
        let body = vec![7u8; 1000];
        let mut input = Vec::new();
        for i in 0..3000 {
            input.extend(pub_cmd(if i % 100 == 99 { "other" } else { "t" }, &body));
        }
        let (mut slab, mut buf) = (
            SlabTopic::default(),
            BytesMut::with_capacity(INITIAL_READ_BUFFER),
        );
        let bodies = run(&input, 64 * 1024, &mut slab, &mut buf);
        assert_eq!(bodies.len(), 3000);
        assert!(bodies.iter().all(|b| b[..] == body[..]));
        // Bodies that sit 1004 bytes apart (4-byte size + "PUB t\n" of the next) share a slab.
        let shared = bodies
            .windows(2)
            .filter(|w| w[1].as_ptr() as usize == w[0].as_ptr() as usize + 1000 + 10)
            .count();
        assert!(shared > 2800, "{shared} of 2999 back to back in a slab");
        // "other" publishes were copied: none of them lies right after a "t" body.
        for (i, w) in bodies.windows(2).enumerate() {
            if i % 100 == 98 {
                assert_ne!(w[1].as_ptr() as usize, w[0].as_ptr() as usize + 1014);
            }
        }
        assert!(
            buf.capacity() <= SLAB + INITIAL_READ_BUFFER,
            "grew by slabs, not doubling"
        );
    }

    #[test]
    fn a_busy_publisher_fills_slab_after_slab() {
        let input = pub_cmd("t", &[3u8; 1000]).repeat(5000);
        let (mut slab, mut buf) = (
            SlabTopic::default(),
            BytesMut::with_capacity(INITIAL_READ_BUFFER),
        );
        let kept = run(&input, 64 * 1024, &mut slab, &mut buf);
        assert_eq!(kept.len(), 5000);
        // Bodies in one buffer sit 1010 bytes apart; count the buffers they were split off.
        let buffers = 1 + kept
            .windows(2)
            .filter(|w| w[1].as_ptr() as usize != w[0].as_ptr() as usize + 1010)
            .count();
        assert!(
            buffers <= 8,
            "5 MB of publishes in {buffers} buffers, not 1 MiB slabs"
        );
    }

    #[test]
    fn a_busy_slab_is_faulted_in_as_far_ahead_as_the_last_read_brought() {
        let mut slab = SlabTopic {
            topic: Some(Bytes::from_static(b"t")),
            ..SlabTopic::default()
        };
        let mut buf = BytesMut::with_capacity(64 * 1024);
        slab.make_room(&mut buf);
        buf.extend_from_slice(&[0; 62 * 1024]);
        let held = buf.split().freeze();
        slab.make_room(&mut buf);
        assert_eq!(buf.capacity(), SLAB);
        let at = |buf: &BytesMut| buf.as_ptr() as usize + buf.len();
        let ahead = |slab: &SlabTopic, buf: &BytesMut| slab.prefaulted_to.map(|p| p - at(buf));
        // The read into the old buffer brought 62 KiB: the new slab is that far ahead.
        let first = ahead(&slab, &buf).unwrap_or(0);
        assert!((62 * 1024..63 * 1024 + PAGE).contains(&first), "{first}");
        // A 40 KB read (one MPUB of 200 x 200 B) is followed by 40 KB more.
        for _ in 0..3 {
            buf.extend_from_slice(&[1; 40_000]);
            slab.make_room(&mut buf);
            let a = ahead(&slab, &buf).unwrap_or(0);
            assert!((40_000..40_000 + PAGE).contains(&a), "{a} ahead");
        }
        // Without a read in between nothing more is faulted in.
        let before = slab.prefaulted_to;
        slab.make_room(&mut buf);
        assert_eq!(slab.prefaulted_to, before);
        // A huge read is followed by at most PREFAULT_MAX, and never past the slab.
        buf.extend_from_slice(&vec![1; 600_000]);
        slab.make_room(&mut buf);
        let a = ahead(&slab, &buf).unwrap_or(0);
        assert!(
            (PREFAULT_MAX..PREFAULT_MAX + PAGE).contains(&a),
            "{a} ahead"
        );
        buf.extend_from_slice(&vec![1; SLAB - buf.len() - 3 * MIN_READ_SPACE]);
        slab.make_room(&mut buf);
        assert_eq!(
            slab.prefaulted_to,
            Some(buf.as_ptr() as usize + buf.capacity()),
            "never past the slab"
        );
        assert_eq!(held.len(), 62 * 1024);
    }

    #[test]
    fn a_slow_publisher_grows_by_read_chunks_and_a_busy_one_by_slabs() {
        for slow in [true, false] {
            let mut slab = SlabTopic::default();
            let mut buf = BytesMut::with_capacity(INITIAL_READ_BUFFER);
            let input = pub_cmd("t", &[1u8; 1000]).repeat(16);
            let kept = run(&input, input.len(), &mut slab, &mut buf);
            assert!(slab.topic.is_some(), "claimed by t");
            if slow {
                slab.allocated_at = Instant::now() - 2 * BUSY;
            }
            buf.extend_from_slice(&vec![b' '; buf.capacity() - buf.len()]);
            slab.make_room(&mut buf);
            let want = if slow { READ_CHUNK } else { SLAB };
            assert!(buf.capacity() >= want - MIN_READ_SPACE && buf.capacity() < 2 * want);
            assert!(slab.topic.is_none(), "a new buffer takes any topic");
            assert_eq!(
                slab.prefaulted_to.is_some(),
                !slow,
                "only a busy one's slab is prefaulted"
            );
            drop(kept);
        }
    }

    #[test]
    fn a_consumer_buffer_is_reused_in_place() {
        let (mut slab, mut buf) = (
            SlabTopic::default(),
            BytesMut::with_capacity(INITIAL_READ_BUFFER),
        );
        let fin = b"NOP\n".repeat(100_000);
        run(&fin, 8192, &mut slab, &mut buf);
        assert!(buf.capacity() <= READ_CHUNK, "{}", buf.capacity());
        assert!(slab.topic.is_none());
    }
}
