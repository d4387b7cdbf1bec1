//! The in-memory part of a [`SpillQueue`](crate::spill_queue::SpillQueue): a FIFO of runs of
//! publishes and single messages, stored in a [`BlockDeque`]. A publish enters as
//! one run (its [`Published`] and a cursor) rather than as one entry per message, so fan-out and
//! a publish cost per queue O(1) instead of O(messages), and a queued message costs no queue
//! memory beyond its share of the run. Messages come out one at a time, as [`Message`]s;
//! requeued and disk-read messages go in singly.

use std::ops::Range;

use crate::block_deque::BlockDeque;
use crate::message::{Message, Published};

#[derive(Debug)]
enum Entry {
    /// Messages `next..end` of a publish; `at` is where `next` is ([`Published::cursor`]).
    Run {
        p: Published,
        next: u32,
        end: u32,
        at: u32,
    },
    One(Message),
}

/// A stretch of the queue as it is stored: a run of a publish, or one message. For handing a
/// backlog on without taking its runs apart.
#[derive(Debug)]
pub enum Span {
    /// Messages `range` of the publish.
    Run(Published, Range<usize>),
    One(Message),
}

/// The in-memory message FIFO: see the module documentation.
#[derive(Debug, Default)]
pub struct RunQueue {
    entries: BlockDeque<Entry>,
    /// Messages, not entries.
    len: usize,
}

impl RunQueue {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Messages `range` of `p`, after everything queued.
    pub fn push_run(&mut self, p: &Published, range: Range<usize>) {
        let end = range.end.min(p.len());
        if range.start >= end {
            return;
        }
        // Publishes hold at most u32::MAX bytes, so fewer messages than that.
        let (Ok(next), Ok(end32)) = (u32::try_from(range.start), u32::try_from(end)) else {
            self.extend(p.messages(range.start, end));
            return;
        };
        self.entries.push_back(Entry::Run {
            p: p.clone(),
            next,
            end: end32,
            at: p.cursor(range.start),
        });
        self.len += end - range.start;
    }

    pub fn push_back(&mut self, m: Message) {
        self.entries.push_back(Entry::One(m));
        self.len += 1;
    }

    pub fn push_front(&mut self, m: Message) {
        self.entries.push_front(Entry::One(m));
        self.len += 1;
    }

    pub fn pop_front(&mut self) -> Option<Message> {
        loop {
            let (m, finished) = match self.entries.front_mut()? {
                Entry::One(_) => match self.entries.pop_front() {
                    Some(Entry::One(m)) => (Some(m), false),
                    _ => (None, false),
                },
                Entry::Run { p, next, end, at } => match p.message_at(*next as usize, *at) {
                    Some((m, after)) => {
                        *next += 1;
                        *at = after;
                        (Some(m), *next >= *end)
                    }
                    None => (None, true),
                },
            };
            if finished {
                self.entries.pop_front();
            }
            if let Some(m) = m {
                self.len -= 1;
                return Some(m);
            }
            // A run whose publish ended early (cannot happen: runs are clamped); go on.
        }
    }

    pub fn clear(&mut self) {
        self.entries.clear();
        self.len = 0;
    }

    /// Remove everything, in order, runs kept whole.
    pub fn drain_spans(&mut self) -> Vec<Span> {
        let spans = self
            .entries
            .drain()
            .map(|e| match e {
                Entry::Run { p, next, end, .. } => Span::Run(p, next as usize..end as usize),
                Entry::One(m) => Span::One(m),
            })
            .collect();
        self.clear();
        spans
    }

    /// Remove everything, in order.
    pub fn drain(&mut self) -> Vec<Message> {
        let mut out = Vec::with_capacity(self.len);
        while let Some(m) = self.pop_front() {
            out.push(m);
        }
        self.clear();
        out
    }
}

impl Extend<Message> for RunQueue {
    fn extend<I: IntoIterator<Item = Message>>(&mut self, iter: I) {
        for m in iter {
            self.push_back(m);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use nsq_wire::{Bodies, MessageId};
    use proptest::prelude::*;

    /// Bodies `b<id>`: in MPUB layout (length prefixes) for odd first ids, with a range per
    /// message (as HTTP /mpub has) for even ones.
    fn publish(first_id: u64, n: usize) -> Published {
        let bodies: Vec<String> = (0..n)
            .map(|i| format!("b{}", first_id + i as u64))
            .collect();
        let bodies = if first_id % 2 == 1 {
            let mut wire = Vec::new();
            for b in &bodies {
                wire.extend_from_slice(&(b.len() as u32).to_be_bytes());
                wire.extend_from_slice(b.as_bytes());
            }
            Bodies::prefixed(Bytes::from(wire)).expect("well formed")
        } else {
            Bodies::concat(bodies.iter().map(String::as_bytes)).expect("small")
        };
        Published::new(&bodies, 0, MessageId(first_id))
    }

    fn single(id: u64) -> Message {
        Message::new(MessageId(id), 0, 1, Bytes::from(format!("b{id}"))).expect("small")
    }

    #[derive(Debug, Clone)]
    enum Op {
        Run(usize, usize, usize),
        PushBack,
        PushFront,
        Pop,
        Clear,
    }

    proptest! {
        /// Behaves like a VecDeque of messages, whatever mix of runs and singles goes in.
        #[test]
        fn matches_a_deque_of_messages(ops in proptest::collection::vec(prop_oneof![
            4 => (0usize..8, 0usize..10, 0usize..10).prop_map(|(n, a, b)| Op::Run(n, a, b)),
            2 => Just(Op::PushBack),
            1 => Just(Op::PushFront),
            6 => Just(Op::Pop),
            1 => Just(Op::Clear),
        ], 0..400), as_spans in proptest::bool::ANY) {
            let mut q = RunQueue::default();
            let mut model = std::collections::VecDeque::new();
            let mut next_id = 1000;
            for op in ops {
                match op {
                    Op::Run(n, a, b) => {
                        let p = publish(next_id, n);
                        let (a, b) = (a.min(b), a.max(b));
                        q.push_run(&p, a..b);
                        model.extend((a..b.min(n)).map(|i| {
                            let id = next_id + i as u64;
                            (id, format!("b{id}").into_bytes())
                        }));
                        next_id += n as u64 + 1;
                    }
                    Op::PushBack => {
                        next_id += 1;
                        q.push_back(single(next_id));
                        model.push_back((next_id, format!("b{next_id}").into_bytes()));
                    }
                    Op::PushFront => {
                        next_id += 1;
                        q.push_front(single(next_id));
                        model.push_front((next_id, format!("b{next_id}").into_bytes()));
                    }
                    Op::Pop => {
                        let got = q.pop_front().map(|m| (m.id.0, m.body().to_vec()));
                        prop_assert_eq!(got, model.pop_front());
                    }
                    Op::Clear => { q.clear(); model.clear(); }
                }
                prop_assert_eq!(q.len(), model.len());
            }
            let rest: Vec<Message> = if as_spans {
                // Handed on as a topic hands its backlog to a channel: runs stay runs.
                let mut other = RunQueue::default();
                for h in q.drain_spans() {
                    match h {
                        Span::Run(p, range) => other.push_run(&p, range),
                        Span::One(m) => other.push_back(m),
                    }
                }
                prop_assert_eq!(other.len(), model.len());
                other.drain()
            } else {
                q.drain()
            };
            let rest: Vec<(u64, Vec<u8>)> =
                rest.into_iter().map(|m| (m.id.0, m.body().to_vec())).collect();
            prop_assert_eq!(rest, model.into_iter().collect::<Vec<_>>());
            prop_assert!(q.is_empty());
        }
    }

    #[test]
    fn a_drained_run_stays_one_run() {
        let mut q = RunQueue::default();
        q.push_run(&publish(1, 200), 0..200);
        q.pop_front();
        q.push_back(single(500));
        let spans = q.drain_spans();
        assert!(q.is_empty());
        assert!(
            matches!(&spans[..], [Span::Run(p, r), Span::One(m)] if p.len() == 200 && *r == (1..200) && m.id.0 == 500)
        );
    }

    #[test]
    fn a_run_is_one_entry() {
        let mut q = RunQueue::default();
        q.push_run(&publish(1, 200), 0..200);
        assert_eq!((q.len(), q.entries.len()), (200, 1));
        assert_eq!(q.pop_front().map(|m| (m.id.0, m.attempts)), Some((1, 0)));
        assert_eq!((q.len(), q.entries.len()), (199, 1));
    }
}
