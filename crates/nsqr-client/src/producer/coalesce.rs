//! Coalescing in process: consecutive `publish_async`s to one topic gather in a batch that
//! reaches the broker as one call (one topic lock, one wake-up of each channel's consumer)
//! instead of one call each, which is most of what a small publish costs in process.
//!
//! A batch goes to the broker when one of its publishes is awaited (or its future dropped),
//! when it holds [`MAX_BATCH`] messages or [`MAX_BATCH_BYTES`], before a publish to another
//! topic or of another kind, when the producer is dropped, and at the latest about
//! [`MAX_DELAY`] after it began (a flusher task, idle while nothing waits), so a publish whose
//! answer is never looked at still goes out. Batches go out in the order they were made, under
//! the producer's lock, so messages keep their order; every publish of a batch gets the
//! batch's result.
//!
//! A requester's requests lie back to back in its carver's buffers
//! (`patterns/request_buffers.rs`): those join into one run ([`Gathered::Run`]), which the
//! broker holds with one reference for the whole batch rather than one per message.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use tokio::sync::Notify;

use crate::error::Error;

/// Messages in a batch at most.
pub(crate) const MAX_BATCH: usize = 256;
/// Bytes of bodies in a batch at most: large bodies go out while still in the cache (a
/// longer batch of them would only make the consumer wait longer for the first).
pub(crate) const MAX_BATCH_BYTES: usize = 256 << 10;
/// How long a batch waits for more at most.
pub(crate) const MAX_DELAY: Duration = Duration::from_millis(1);

/// Publishes gathered for one topic, not yet handed to the broker.
pub(crate) struct Batch {
    pub(crate) topic: Arc<str>,
    pub(crate) bodies: Gathered,
    pub(crate) bytes: usize,
    pub(crate) outcome: Arc<Outcome>,
    pub(crate) started: Instant,
}

/// A batch's bodies: as they were given, or written back to back into one buffer (a
/// requester's carved requests, `patterns/request_buffers.rs`), which the broker then holds
/// with one reference for the whole batch instead of one per message.
pub(crate) enum Gathered {
    Bodies(Vec<Bytes>),
    Run {
        data: BytesMut,
        ranges: Vec<Range<usize>>,
        /// The carver buffer it lies in: a piece of another one is never joined to it.
        buffer: u64,
    },
}

impl Batch {
    fn new(topic: Arc<str>, bodies: Gathered) -> Batch {
        Batch {
            topic,
            bodies,
            bytes: 0,
            outcome: Arc::new(Outcome::default()),
            started: Instant::now(),
        }
    }

    /// A batch of bodies as given.
    pub(crate) fn of_bodies(topic: Arc<str>) -> Batch {
        Batch::new(topic, Gathered::Bodies(Vec::new()))
    }

    /// A batch of pieces of carver buffer `buffer`.
    pub(crate) fn of_run(topic: Arc<str>, buffer: u64) -> Batch {
        let bodies = Gathered::Run {
            data: BytesMut::new(),
            ranges: Vec::new(),
            buffer,
        };
        Batch::new(topic, bodies)
    }

    /// Whether `body` may join this batch.
    pub(crate) fn takes_body(&self, topic: &str) -> bool {
        &*self.topic == topic && matches!(self.bodies, Gathered::Bodies(_))
    }

    /// Whether `piece`, of carver buffer `of`, may join this batch: it must start where the
    /// run ends, in the same buffer.
    pub(crate) fn takes_piece(&self, topic: &str, piece: &BytesMut, of: u64) -> bool {
        match &self.bodies {
            Gathered::Run { data, buffer, .. } if &*self.topic == topic && *buffer == of => {
                data.is_empty() || data.as_ptr_range().end == piece.as_ptr()
            }
            _ => false,
        }
    }

    /// Add a body (the batch should take bodies: [`Batch::takes_body`]; a run it is added to
    /// becomes a list of bodies); true when the batch is full.
    pub(crate) fn push(&mut self, body: Bytes) -> bool {
        let len = body.len();
        if let Gathered::Run { data, ranges, .. } = &mut self.bodies {
            let data = std::mem::take(data).freeze();
            let listed = ranges.drain(..).map(|r| data.slice(r)).collect();
            self.bodies = Gathered::Bodies(listed);
        }
        if let Gathered::Bodies(v) = &mut self.bodies {
            v.push(body);
        }
        self.counted(len)
    }

    /// Add a piece: joined to the run at no cost when the batch takes it
    /// ([`Batch::takes_piece`]), else copied onto the run's end, or listed in a batch of
    /// bodies; true when the batch is full.
    pub(crate) fn push_piece(&mut self, piece: BytesMut) -> bool {
        let len = piece.len();
        match &mut self.bodies {
            Gathered::Run { data, ranges, .. } => {
                let at = data.len();
                data.unsplit(piece);
                ranges.push(at..at + len);
            }
            Gathered::Bodies(v) => v.push(piece.freeze()),
        }
        self.counted(len)
    }

    /// Messages in the batch.
    pub(crate) fn len(&self) -> usize {
        match &self.bodies {
            Gathered::Bodies(v) => v.len(),
            Gathered::Run { ranges, .. } => ranges.len(),
        }
    }

    fn counted(&mut self, len: usize) -> bool {
        self.bytes += len;
        self.len() >= MAX_BATCH || self.bytes >= MAX_BATCH_BYTES
    }
}

/// The result every publish of one batch is answered with.
#[derive(Default)]
pub(crate) struct Outcome {
    result: OnceLock<Result<(), Error>>,
    done: Notify,
}

impl Outcome {
    /// The result, once known (a copy for each publish of the batch).
    pub(crate) fn get(&self) -> Option<Result<(), Error>> {
        self.result
            .get()
            .map(|r| r.as_ref().map(|_| ()).map_err(Error::duplicate))
    }

    pub(crate) fn is_known(&self) -> bool {
        self.result.get().is_some()
    }

    pub(crate) fn set(&self, r: Result<(), Error>) {
        let _ = self.result.set(r);
        self.done.notify_waiters();
    }

    /// Wait for the result (a batch that must reach the disk first).
    pub(crate) async fn wait(&self) -> Result<(), Error> {
        loop {
            let notified = self.done.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(r) = self.get() {
                return r;
            }
            notified.await;
        }
    }
}

/// What the flusher needs of the producer.
pub(crate) trait Flush: Send + Sync + 'static {
    /// When the pending batch began, if there is one.
    fn pending_since(&self) -> Option<Instant>;
    /// Hand the pending batch to the broker if it began at `started` or before.
    fn flush_older(&self, started: Instant);
}

/// Wakes the flusher when a batch begins and the flusher is idle.
#[derive(Default)]
pub(crate) struct Timer {
    idle: AtomicBool,
    wake: Notify,
    running: AtomicBool,
}

impl Timer {
    /// A batch began: make sure it is flushed within [`MAX_DELAY`].
    pub(crate) fn arm<F: Flush>(self: &Arc<Self>, rt: &tokio::runtime::Handle, owner: Weak<F>) {
        if !self.running.swap(true, Ordering::AcqRel) {
            rt.spawn(flusher(Arc::clone(self), owner));
        } else if self.idle.swap(false, Ordering::AcqRel) {
            self.wake.notify_one();
        }
    }
}

impl Timer {
    /// The producer is gone: let an idle flusher end.
    pub(crate) fn stop(&self) {
        self.wake.notify_one();
    }
}

/// Flush batches older than [`MAX_DELAY`]; idle while there is none; ends with the producer.
async fn flusher<F: Flush>(timer: Arc<Timer>, owner: Weak<F>) {
    loop {
        let since = match owner.upgrade() {
            Some(o) => o.pending_since(),
            None => return,
        };
        match since {
            Some(at) => {
                tokio::time::sleep_until((at + MAX_DELAY).into()).await;
                match owner.upgrade() {
                    Some(o) => o.flush_older(at),
                    None => return,
                }
            }
            None => {
                let woken = timer.wake.notified();
                tokio::pin!(woken);
                woken.as_mut().enable();
                timer.idle.store(true, Ordering::Release);
                // A batch that began before `idle` was set did not wake us: look again.
                let began = owner.upgrade().map(|o| o.pending_since());
                match began {
                    None => return,
                    Some(Some(_)) => timer.idle.store(false, Ordering::Release),
                    Some(None) => woken.await,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pieces split off one buffer, as the carver hands them out.
    fn pieces(sizes: &[usize]) -> Vec<BytesMut> {
        let mut buf = BytesMut::with_capacity(sizes.iter().sum());
        sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                buf.resize(n, i as u8);
                buf.split()
            })
            .collect()
    }

    #[test]
    fn back_to_back_pieces_join_into_one_run() {
        let mut b = Batch::of_run("t".into(), 1);
        for p in pieces(&[3, 5, 2]) {
            assert!(b.takes_piece("t", &p, 1));
            assert!(!b.push_piece(p));
        }
        let Gathered::Run { data, ranges, .. } = &b.bodies else {
            panic!("a run of pieces became something else");
        };
        assert_eq!(ranges, &[0..3, 3..8, 8..10]);
        assert_eq!(&data[..], &[0, 0, 0, 1, 1, 1, 1, 1, 2, 2]);
        assert_eq!((b.len(), b.bytes), (3, 10));
    }

    #[test]
    fn a_piece_that_does_not_follow_the_run_starts_another_batch() {
        let mut b = Batch::of_run("t".into(), 1);
        let mut ps = pieces(&[4, 4, 4]).into_iter();
        let (first, second, third) = (ps.next(), ps.next(), ps.next());
        let (Some(first), Some(second), Some(third)) = (first, second, third) else {
            panic!("three pieces");
        };
        assert!(b.takes_piece("t", &first, 1));
        b.push_piece(first);
        // Not where the run ends (the second is missing), another buffer, another topic.
        assert!(!b.takes_piece("t", &third, 1));
        assert!(!b.takes_piece("t", &second, 2));
        assert!(!b.takes_piece("u", &second, 1));
        assert!(b.takes_piece("t", &second, 1));
        // A batch of bodies takes no pieces, and a run no bodies.
        assert!(!b.takes_body("t"));
        assert!(!Batch::of_bodies("t".into()).takes_piece("t", &third, 1));
    }

    #[test]
    fn a_body_or_piece_added_where_it_does_not_belong_is_kept_in_order() {
        let mut b = Batch::of_run("t".into(), 1);
        let mut ps = pieces(&[2, 3]).into_iter();
        b.push_piece(ps.next().unwrap_or_default());
        b.push(Bytes::from_static(b"body"));
        b.push_piece(ps.next().unwrap_or_default());
        let Gathered::Bodies(v) = &b.bodies else {
            panic!("a run with a body added stays a run");
        };
        let got: Vec<&[u8]> = v.iter().map(|b| &b[..]).collect();
        assert_eq!(got, [&[0u8, 0][..], b"body", &[1, 1, 1]]);
        // A piece that does not follow the run is copied onto its end.
        let mut r = Batch::of_run("t".into(), 1);
        let mut ps = pieces(&[2, 3]).into_iter();
        let (first, second) = (ps.next().unwrap_or_default(), ps.next().unwrap_or_default());
        r.push_piece(second);
        r.push_piece(first);
        let Gathered::Run { data, ranges, .. } = &r.bodies else {
            panic!("pieces make a run");
        };
        assert_eq!(&data[..], &[1, 1, 1, 0, 0]);
        assert_eq!(ranges, &[0..3, 3..5]);
        assert_eq!((r.len(), r.bytes), (2, 5));
    }

    #[test]
    fn a_run_is_full_at_the_batch_limits() {
        let mut b = Batch::of_run("t".into(), 1);
        let ps = pieces(&vec![1; MAX_BATCH]);
        let full: Vec<bool> = ps.into_iter().map(|p| b.push_piece(p)).collect();
        assert_eq!(full.iter().filter(|&&f| f).count(), 1);
        assert_eq!(full.last(), Some(&true));
        let mut big = Batch::of_run("t".into(), 1);
        let ps = pieces(&[MAX_BATCH_BYTES / 2, MAX_BATCH_BYTES / 2]);
        let full: Vec<bool> = ps.into_iter().map(|p| big.push_piece(p)).collect();
        assert_eq!(full, [false, true]);
    }
}
