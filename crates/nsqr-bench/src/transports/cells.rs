//! The matrix's cells and what every cell checks: which pattern, transport, size and count,
//! the bodies' sequence stamps, and the tally that proves a receiver got exactly the N
//! messages sent (each once, none from another run). nsqr and libzmq cells share both, so the
//! two sides are measured on the same terms.

use std::time::Duration;

use clap::ValueEnum;
use serde::Serialize;

use crate::body::{decode, seq_word};

/// How the sender reaches the receiver(s).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    /// One publisher, one subscriber (libzmq: XPUB / SUB).
    Pubsub,
    /// Requests addressed to one receiver (nsqr: Requester / Responder; libzmq:
    /// ROUTER-ROUTER with fixed routing ids).
    Reqrep,
    /// One publisher, 2 / 4 / 8 subscribers, each getting every message.
    Fanout,
}

/// Where the messages travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// nsqr: through an nsqrd over 127.0.0.1; libzmq: tcp://127.0.0.1.
    Tcp,
    /// nsqr: through nsqrd's unix-socket listener; libzmq: ipc://.
    Unix,
    /// nsqr: the embedded broker (inproc://); libzmq: inproc://.
    Inproc,
}

impl Pattern {
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Pubsub => "pubsub",
            Pattern::Reqrep => "reqrep",
            Pattern::Fanout => "fanout",
        }
    }
}

impl Transport {
    pub fn name(self) -> &'static str {
        match self {
            Transport::Tcp => "tcp",
            Transport::Unix => "unix",
            Transport::Inproc => "inproc",
        }
    }
}

/// One cell: `count` messages of `size` bytes to `receivers` receivers.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Cell {
    pub pattern: Pattern,
    pub transport: Transport,
    pub size: usize,
    pub count: u64,
    /// 1, or the fan-out's subscribers.
    pub receivers: usize,
}

/// ServerLink's counts: 64 B x 100k, 1 KB x 50k, 8 KB x 10k, 64 KB x 1k.
pub fn default_count(size: usize) -> u64 {
    match size {
        0..=64 => 100_000,
        65..=1024 => 50_000,
        1025..=8192 => 10_000,
        _ => 1_000,
    }
}

/// What to run, from the flags: for each transport, each pattern's cells.
pub struct Plan<'a> {
    pub patterns: &'a [Pattern],
    pub transports: &'a [Transport],
    pub sizes: &'a [usize],
    /// One per size, or empty for [`default_count`].
    pub counts: &'a [u64],
    /// Divides every count (at least 1 message is left).
    pub scale: f64,
    pub fanout_receivers: &'a [usize],
    pub fanout_count: u64,
    pub fanout_size: usize,
}

impl Plan<'_> {
    /// The cells of one transport, in the order they run.
    pub fn cells(&self, transport: Transport) -> Vec<Cell> {
        let scaled = |n: u64| ((n as f64 * self.scale).round() as u64).max(1);
        let mut cells = Vec::new();
        for &pattern in self.patterns {
            if pattern == Pattern::Fanout {
                for &receivers in self.fanout_receivers {
                    cells.push(Cell {
                        pattern,
                        transport,
                        size: self.fanout_size,
                        count: scaled(self.fanout_count),
                        receivers,
                    });
                }
                continue;
            }
            for (i, &size) in self.sizes.iter().enumerate() {
                let n = self
                    .counts
                    .get(i)
                    .copied()
                    .unwrap_or_else(|| default_count(size));
                cells.push(Cell {
                    pattern,
                    transport,
                    size,
                    count: scaled(n),
                    receivers: 1,
                });
            }
        }
        cells
    }
}

/// Write message `seq`'s stamp (run tag and sequence number) at the front of `body`.
#[inline]
pub fn stamp(body: &mut [u8], tag: u16, seq: u64) {
    body[..8].copy_from_slice(&seq_word(tag, 0, seq).to_be_bytes());
}

/// A run tag that differs between repetitions, so a late message of one is never counted in
/// the next.
pub fn next_tag() -> u16 {
    use std::sync::atomic::{AtomicU16, Ordering};
    static TAG: AtomicU16 = AtomicU16::new(0);
    let base = (std::process::id() as u16).wrapping_mul(7919);
    base.wrapping_add(TAG.fetch_add(1, Ordering::Relaxed))
}

/// What one receiver got: each sequence number checked off once.
#[derive(Debug, Clone)]
pub struct Tally {
    n: u64,
    tag: u16,
    seen: Vec<u64>,
    pub unique: u64,
    pub duplicates: u64,
    /// Bodies from another run, too short to carry a stamp, or numbered past N.
    pub foreign: u64,
}

impl Tally {
    pub fn new(n: u64, tag: u16) -> Tally {
        Tally {
            n,
            tag,
            seen: vec![0; n.div_ceil(64) as usize],
            unique: 0,
            duplicates: 0,
            foreign: 0,
        }
    }

    /// Check one body off; true once all N have arrived.
    #[inline]
    pub fn record(&mut self, body: &[u8]) -> bool {
        match decode(body) {
            Some(h) if h.tag == self.tag && h.seq < self.n => {
                let (w, bit) = ((h.seq / 64) as usize, 1u64 << (h.seq % 64));
                if self.seen[w] & bit == 0 {
                    self.seen[w] |= bit;
                    self.unique += 1;
                } else {
                    self.duplicates += 1;
                }
            }
            _ => self.foreign += 1,
        }
        self.complete()
    }

    pub fn complete(&self) -> bool {
        self.unique == self.n
    }

    /// Ok when exactly N distinct messages and nothing else arrived.
    pub fn verdict(&self, who: &str) -> Result<(), String> {
        if self.unique == self.n && self.duplicates == 0 && self.foreign == 0 {
            return Ok(());
        }
        Err(format!(
            "{who} received {} of {} messages ({} missing, {} duplicates, {} foreign)",
            self.unique,
            self.n,
            self.n - self.unique,
            self.duplicates,
            self.foreign
        ))
    }
}

/// One timed repetition of a cell on one side.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// From the receivers' readiness to the last message at the last receiver.
    pub secs: f64,
    /// This process's CPU time over the repetition (sender, receivers, embedded broker).
    pub cpu: Duration,
    /// nsqrd's CPU time over the repetition (tcp and unix).
    pub server_cpu: Option<Duration>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tally_counts_exactly() {
        let mut t = Tally::new(130, 7);
        let mut b = [0u8; 16];
        for seq in 0..130 {
            stamp(&mut b, 7, seq);
            let done = t.record(&b);
            assert_eq!(done, seq == 129);
        }
        assert!(t.verdict("x").is_ok());
        stamp(&mut b, 7, 5);
        t.record(&b);
        stamp(&mut b, 8, 5);
        t.record(&b);
        t.record(b"short");
        let e = t.verdict("sub").unwrap_err();
        assert!(e.contains("1 duplicates, 2 foreign"), "{e}");
        let t = Tally::new(10, 1);
        assert!(t.verdict("sub").unwrap_err().contains("0 of 10"));
    }

    #[test]
    fn plan_follows_the_flags() {
        let plan = Plan {
            patterns: &[Pattern::Pubsub, Pattern::Fanout],
            transports: &[Transport::Inproc],
            sizes: &[64, 65536],
            counts: &[],
            scale: 0.5,
            fanout_receivers: &[2, 4],
            fanout_count: 10_000,
            fanout_size: 64,
        };
        let cells = plan.cells(Transport::Inproc);
        let got: Vec<(Pattern, usize, u64, usize)> = cells
            .iter()
            .map(|c| (c.pattern, c.size, c.count, c.receivers))
            .collect();
        assert_eq!(
            got,
            vec![
                (Pattern::Pubsub, 64, 50_000, 1),
                (Pattern::Pubsub, 65536, 500, 1),
                (Pattern::Fanout, 64, 5_000, 2),
                (Pattern::Fanout, 64, 5_000, 4),
            ]
        );
    }
}
