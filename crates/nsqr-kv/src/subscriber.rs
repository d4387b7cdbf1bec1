//! A subscribed client's outbox: where publishers leave messages for it. Publishing appends
//! to the outbox under a short lock and wakes the client's connection, which writes the bytes
//! when its socket takes them; a publisher never waits for a socket. A client that stops
//! reading is cut off once its outbox passes Redis's `client-output-buffer-limit pubsub`
//! (32 MiB at once, or 8 MiB for 60 s): the outbox is emptied and the connection told to
//! close, so one stalled subscriber costs bounded memory and no writer's time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use resp_wire::{Protocol, Reply};

/// Redis's `client-output-buffer-limit pubsub` setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputLimit {
    /// Cut off as soon as the outbox holds more than this (0 = no limit).
    pub hard: usize,
    /// Cut off when the outbox has held more than this for `soft_time` (0 = no limit).
    pub soft: usize,
    pub soft_time: Duration,
}

impl Default for OutputLimit {
    fn default() -> Self {
        OutputLimit {
            hard: 32 * 1024 * 1024,
            soft: 8 * 1024 * 1024,
            soft_time: Duration::from_secs(60),
        }
    }
}

#[derive(Debug)]
struct Outbox {
    reply: Reply,
    /// Since when the outbox has been above the soft limit.
    soft_since: Option<Instant>,
}

/// One client as the pub/sub hub sees it.
#[derive(Debug)]
pub struct Subscriber {
    id: u64,
    out: Mutex<Outbox>,
    limit: OutputLimit,
    killed: AtomicBool,
    wake: tokio::sync::Notify,
}

impl Subscriber {
    pub fn new(id: u64, proto: Protocol, limit: OutputLimit) -> Subscriber {
        Subscriber {
            id,
            out: Mutex::new(Outbox {
                reply: Reply::new(proto),
                soft_since: None,
            }),
            limit,
            killed: AtomicBool::new(false),
            wake: tokio::sync::Notify::new(),
        }
    }

    /// The client id (`CLIENT ID`).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The protocol messages are framed for.
    pub fn protocol(&self) -> Protocol {
        self.out.lock().reply.protocol()
    }

    /// After `HELLO`: later messages are framed for `proto`.
    pub fn set_protocol(&self, proto: Protocol) {
        self.out.lock().reply.set_protocol(proto);
    }

    /// Appends frames written by `f` (in the outbox's protocol) and wakes the connection; cuts
    /// the client off if the outbox passes its limit. Returns false if the client is cut off.
    pub fn write(&self, f: impl FnOnce(&mut Reply)) -> bool {
        if self.is_killed() {
            return false;
        }
        let mut out = self.out.lock();
        f(&mut out.reply);
        let len = out.reply.len();
        if self.over_limit(&mut out, len) {
            out.reply = Reply::new(out.reply.protocol());
            drop(out);
            self.killed.store(true, Ordering::Release);
            tracing::warn!(
                "KV: client {} closed for overcoming of output buffer limits ({len} bytes of pub/sub messages unread)",
                self.id
            );
        } else {
            drop(out);
        }
        self.wake.notify_one();
        !self.is_killed()
    }

    fn over_limit(&self, out: &mut Outbox, len: usize) -> bool {
        let l = self.limit;
        if l.hard > 0 && len > l.hard {
            return true;
        }
        if l.soft == 0 || len <= l.soft {
            out.soft_since = None;
            return false;
        }
        let since = *out.soft_since.get_or_insert_with(Instant::now);
        since.elapsed() >= l.soft_time
    }

    /// Moves everything queued into `into` (appended). Returns false if the client was cut off
    /// (its connection must close).
    pub fn take(&self, into: &mut Vec<u8>) -> bool {
        let mut out = self.out.lock();
        if into.is_empty() {
            std::mem::swap(into, out.reply.buf_mut());
        } else {
            into.extend_from_slice(out.reply.as_bytes());
            out.reply.clear();
        }
        out.soft_since = None;
        !self.is_killed()
    }

    /// Bytes queued and not yet taken.
    pub fn queued(&self) -> usize {
        self.out.lock().reply.len()
    }

    pub fn is_killed(&self) -> bool {
        self.killed.load(Ordering::Acquire)
    }

    /// Resolves when something was queued (or the client cut off) since the last call.
    pub async fn wait(&self) {
        self.wake.notified().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(hard: usize, soft: usize, soft_ms: u64) -> OutputLimit {
        OutputLimit {
            hard,
            soft,
            soft_time: Duration::from_millis(soft_ms),
        }
    }

    #[test]
    fn frames_follow_the_protocol() {
        let s = Subscriber::new(1, Protocol::Resp2, OutputLimit::default());
        s.write(|r| r.push(1));
        s.set_protocol(Protocol::Resp3);
        s.write(|r| r.push(1));
        let mut out = Vec::new();
        assert!(s.take(&mut out));
        assert_eq!(out, b"*1\r\n>1\r\n");
        assert_eq!(s.queued(), 0);
    }

    #[test]
    fn hard_limit_cuts_off_and_frees() {
        let s = Subscriber::new(1, Protocol::Resp2, limit(100, 0, 0));
        assert!(s.write(|r| r.bulk(&[0; 50])));
        assert!(!s.write(|r| r.bulk(&[0; 60])));
        assert!(s.is_killed());
        assert_eq!(s.queued(), 0);
        assert!(!s.write(|r| r.bulk(b"x")));
        assert!(!s.take(&mut Vec::new()));
    }

    #[test]
    fn soft_limit_needs_time() {
        let s = Subscriber::new(1, Protocol::Resp2, limit(0, 10, 30));
        assert!(s.write(|r| r.bulk(&[0; 20])));
        std::thread::sleep(Duration::from_millis(60));
        assert!(!s.write(|r| r.bulk(b"x")));
    }

    #[test]
    fn draining_resets_the_soft_clock() {
        let s = Subscriber::new(1, Protocol::Resp2, limit(0, 10, 30));
        assert!(s.write(|r| r.bulk(&[0; 20])));
        assert!(s.take(&mut Vec::new()));
        std::thread::sleep(Duration::from_millis(60));
        assert!(s.write(|r| r.bulk(&[0; 20])));
    }

    #[tokio::test]
    async fn write_wakes_the_waiter() {
        let s = std::sync::Arc::new(Subscriber::new(1, Protocol::Resp2, OutputLimit::default()));
        let s2 = s.clone();
        let t = tokio::spawn(async move { s2.wait().await });
        s.write(|r| r.ok());
        tokio::time::timeout(Duration::from_secs(10), t)
            .await
            .unwrap()
            .unwrap();
    }
}
