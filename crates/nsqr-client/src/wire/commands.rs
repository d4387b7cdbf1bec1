//! A consumer connection's outgoing commands (RDY, FIN, REQ, TOUCH, NOP, CLS): encoded
//! straight into a shared buffer by whichever task answers a message, and written by the
//! connection's writer in one go. Two buffers swap places, so neither side allocates once
//! they have grown to the traffic.
//!
//! While the consumer works through the messages of one read it corks the queue: the writer
//! then waits (at most a millisecond) for the rest of that read's FINs and sends them in one
//! write, as a client answering in the reading task would, instead of a write (and a wakeup
//! of the server) per few messages.

use bytes::BytesMut;
use nsq_wire::spliced::Spliced;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use tokio::sync::Notify;

use super::{Flow, Outgoing};

struct State {
    buf: BytesMut,
    closed: bool,
}

/// Commands waiting for the writer.
pub(crate) struct Commands {
    state: Mutex<State>,
    wake: Notify,
    corked: AtomicBool,
    uncorked: Notify,
}

impl Commands {
    pub(crate) fn new() -> Commands {
        Commands {
            state: Mutex::new(State {
                buf: BytesMut::with_capacity(16 << 10),
                closed: false,
            }),
            wake: Notify::new(),
            corked: AtomicBool::new(false),
            uncorked: Notify::new(),
        }
    }

    /// More commands are coming soon: let the writer wait for them.
    pub(crate) fn cork(&self) {
        self.corked.store(true, Ordering::Release);
    }

    /// Write what is queued now.
    pub(crate) fn uncork(&self) {
        if self.corked.swap(false, Ordering::AcqRel) {
            self.uncorked.notify_one();
        }
    }

    /// Append a command with `encode`; false (and nothing appended) once closed.
    pub(crate) fn push(&self, encode: impl FnOnce(&mut BytesMut)) -> bool {
        let mut s = self.state.lock();
        if s.closed {
            return false;
        }
        let was_empty = s.buf.is_empty();
        encode(&mut s.buf);
        drop(s);
        if was_empty {
            self.wake.notify_one();
        }
        true
    }

    /// No more commands: the writer sends what is queued, then closes its direction.
    pub(crate) fn close(&self) {
        self.state.lock().closed = true;
        self.wake.notify_one();
    }
}

impl Outgoing for Commands {
    fn take(&self, out: &mut BytesMut, _: &mut Spliced) -> Flow {
        let mut s = self.state.lock();
        if !s.buf.is_empty() {
            std::mem::swap(&mut s.buf, out);
            Flow::Write
        } else if s.closed {
            Flow::Close
        } else {
            Flow::Idle
        }
    }

    fn wakeup(&self) -> &Notify {
        &self.wake
    }

    fn corked(&self) -> Option<&Notify> {
        self.corked
            .load(Ordering::Acquire)
            .then_some(&self.uncorked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swaps_and_closes() {
        let c = Commands::new();
        let mut out = BytesMut::new();
        assert!(matches!(
            c.take(&mut out, &mut Spliced::default()),
            Flow::Idle
        ));
        assert!(c.push(|b| b.extend_from_slice(b"NOP\n")));
        assert!(c.push(|b| b.extend_from_slice(b"RDY 1\n")));
        assert!(matches!(
            c.take(&mut out, &mut Spliced::default()),
            Flow::Write
        ));
        assert_eq!(&out[..], b"NOP\nRDY 1\n");
        out.clear();
        c.close();
        assert!(!c.push(|b| b.extend_from_slice(b"NOP\n")));
        assert!(matches!(
            c.take(&mut out, &mut Spliced::default()),
            Flow::Close
        ));
    }
}
