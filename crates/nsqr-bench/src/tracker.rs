//! Exact loss / duplicate accounting: one bit per (publisher, sequence number) received.

use crate::body::{self, MAX_PUBLISHERS};

#[derive(Debug, Clone, Default)]
pub struct Tracker {
    tag: u16,
    bits: Vec<Vec<u64>>,
    /// Messages seen once (first time).
    pub unique: u64,
    /// Messages seen again (on this tracker or, after merging, on another connection).
    pub duplicates: u64,
    /// Messages whose body is not from this run (another run's tag, or too short).
    pub foreign: u64,
}

impl Tracker {
    pub fn new(tag: u16) -> Self {
        Tracker {
            tag,
            bits: vec![Vec::new(); MAX_PUBLISHERS],
            ..Default::default()
        }
    }

    /// Record one received body; returns its send timestamp when it belongs to this run.
    #[inline]
    pub fn record(&mut self, msg_body: &[u8]) -> Option<u64> {
        let h = match body::decode(msg_body) {
            Some(h) if h.tag == self.tag => h,
            _ => {
                self.foreign += 1;
                return None;
            }
        };
        let words = &mut self.bits[h.publisher as usize];
        let (w, b) = ((h.seq / 64) as usize, h.seq % 64);
        if w >= words.len() {
            words.resize((w + 1).next_power_of_two().max(1024), 0);
        }
        if words[w] & (1 << b) != 0 {
            self.duplicates += 1;
        } else {
            words[w] |= 1 << b;
            self.unique += 1;
        }
        Some(h.sent_ns)
    }

    /// Fold another connection's tracker into this one; a message both saw is a duplicate.
    pub fn merge(&mut self, other: Tracker) {
        self.duplicates += other.duplicates;
        self.foreign += other.foreign;
        if self.bits.len() < other.bits.len() {
            self.bits.resize(other.bits.len(), Vec::new());
        }
        for (mine, theirs) in self.bits.iter_mut().zip(other.bits) {
            if mine.len() < theirs.len() {
                mine.resize(theirs.len(), 0);
            }
            for (m, t) in mine.iter_mut().zip(theirs) {
                let both = (*m & t).count_ones() as u64;
                self.duplicates += both;
                self.unique += (t.count_ones() as u64) - both;
                *m |= t;
            }
        }
    }

    /// Messages acknowledged by the server but never received: `acked[p]` is how many of
    /// publisher p's messages (sequence numbers 0..acked[p]) the server acknowledged.
    pub fn lost(&self, acked: &[u64]) -> u64 {
        let mut lost = 0;
        for (p, &n) in acked.iter().enumerate() {
            let words = self.bits.get(p).map(Vec::as_slice).unwrap_or(&[]);
            let full = (n / 64) as usize;
            let mut got: u64 = words.iter().take(full).map(|w| w.count_ones() as u64).sum();
            let rem = n % 64;
            if rem > 0 {
                if let Some(w) = words.get(full) {
                    got += (w & ((1u64 << rem) - 1)).count_ones() as u64;
                }
            }
            lost += n - got;
        }
        lost
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::MpubBatch;

    fn bodies(tag: u16, publisher: u8, first: u64, n: usize) -> Vec<Vec<u8>> {
        let mut b = MpubBatch::new("t", 16, n);
        let bytes = b.stamp(n, tag, publisher, first, 9).to_vec();
        (0..n)
            .map(|i| {
                let at = 15 + i * 20 + 4;
                bytes[at..at + 16].to_vec()
            })
            .collect()
    }

    #[test]
    fn counts_loss_dups_and_foreign() {
        let mut a = Tracker::new(1);
        let mut b = Tracker::new(1);
        for body in bodies(1, 0, 0, 100) {
            a.record(&body);
        }
        for body in bodies(1, 0, 95, 10) {
            b.record(&body);
        }
        b.record(&bodies(1, 0, 104, 1)[0]); // dup on b itself
        b.record(&bodies(2, 0, 0, 1)[0]); // another run
        b.record(b"short");
        a.merge(b);
        let mut all = Tracker::default();
        all.merge(a);
        let a = all;
        assert_eq!(a.unique, 105);
        assert_eq!(a.duplicates, 5 + 1);
        assert_eq!(a.foreign, 2);
        assert_eq!(a.lost(&[105]), 0);
        assert_eq!(a.lost(&[130, 3]), 25 + 3);
    }
}
