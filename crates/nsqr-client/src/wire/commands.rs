//! A consumer connection's outgoing commands (RDY, FIN, REQ, TOUCH, NOP, CLS): encoded
//! straight into a shared buffer by whichever task answers a message, and written by the
//! connection's writer in one go. Two buffers swap places, so neither side allocates once
//! they have grown to the traffic.

use bytes::BytesMut;
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
}

impl Commands {
    pub(crate) fn new() -> Commands {
        Commands {
            state: Mutex::new(State {
                buf: BytesMut::with_capacity(16 << 10),
                closed: false,
            }),
            wake: Notify::new(),
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
    fn take(&self, out: &mut BytesMut) -> Flow {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swaps_and_closes() {
        let c = Commands::new();
        let mut out = BytesMut::new();
        assert!(matches!(c.take(&mut out), Flow::Idle));
        assert!(c.push(|b| b.extend_from_slice(b"NOP\n")));
        assert!(c.push(|b| b.extend_from_slice(b"RDY 1\n")));
        assert!(matches!(c.take(&mut out), Flow::Write));
        assert_eq!(&out[..], b"NOP\nRDY 1\n");
        out.clear();
        c.close();
        assert!(!c.push(|b| b.extend_from_slice(b"NOP\n")));
        assert!(matches!(c.take(&mut out), Flow::Close));
    }
}
