//! A deque stored as a list of fixed-size blocks: what the in-memory queue (`run_queue.rs`)
//! keeps its entries in.
//!
//! `VecDeque` doubles its capacity as it grows (up to 2x the memory of what it holds) and never
//! gives it back when drained, so a backlog of millions of messages would pin its peak memory
//! forever. Blocks of `BLOCK` entries waste at most one block and are freed as they empty.

use std::collections::VecDeque;

const BLOCK: usize = 256;

/// A FIFO (with `push_front`) of `BLOCK`-entry blocks.
#[derive(Debug)]
pub struct BlockDeque<T> {
    blocks: VecDeque<VecDeque<T>>,
    len: usize,
}

impl<T> Default for BlockDeque<T> {
    fn default() -> Self {
        BlockDeque {
            blocks: VecDeque::new(),
            len: 0,
        }
    }
}

impl<T> BlockDeque<T> {
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn push_back(&mut self, v: T) {
        match self.blocks.back_mut() {
            Some(b) if b.len() < BLOCK => b.push_back(v),
            _ => {
                let mut b = VecDeque::with_capacity(BLOCK);
                b.push_back(v);
                self.blocks.push_back(b);
            }
        }
        self.len += 1;
    }

    pub fn push_front(&mut self, v: T) {
        match self.blocks.front_mut() {
            Some(b) if b.len() < BLOCK => b.push_front(v),
            _ => {
                let mut b = VecDeque::with_capacity(BLOCK);
                b.push_front(v);
                self.blocks.push_front(b);
            }
        }
        self.len += 1;
    }

    pub fn front_mut(&mut self) -> Option<&mut T> {
        self.blocks.front_mut()?.front_mut()
    }

    pub fn pop_front(&mut self) -> Option<T> {
        let b = self.blocks.front_mut()?;
        let v = b.pop_front();
        if b.is_empty() {
            self.blocks.pop_front();
            if self.blocks.is_empty() {
                self.blocks.shrink_to_fit();
            }
        }
        if v.is_some() {
            self.len -= 1;
        }
        v
    }

    pub fn clear(&mut self) {
        self.blocks = VecDeque::new();
        self.len = 0;
    }

    /// Remove everything, in order.
    pub fn drain(&mut self) -> impl Iterator<Item = T> {
        self.len = 0;
        std::mem::take(&mut self.blocks).into_iter().flatten()
    }
}

impl<T> Extend<T> for BlockDeque<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        for v in iter {
            self.push_back(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn blocks_are_freed_as_they_drain() {
        let mut q = BlockDeque::default();
        q.extend(0..10 * BLOCK);
        assert_eq!(q.blocks.len(), 10);
        for i in 0..5 * BLOCK {
            assert_eq!(q.pop_front(), Some(i));
        }
        assert_eq!(q.blocks.len(), 5);
        assert_eq!(q.drain().count(), 5 * BLOCK);
        assert!(q.is_empty());
        assert_eq!(q.pop_front(), None);
    }

    #[derive(Debug, Clone)]
    enum Op {
        PushBack(u32),
        PushFront(u32),
        Pop,
        Clear,
    }

    proptest! {
        /// Behaves exactly like a VecDeque.
        #[test]
        fn matches_vecdeque(ops in proptest::collection::vec(prop_oneof![
            8 => any::<u32>().prop_map(Op::PushBack),
            2 => any::<u32>().prop_map(Op::PushFront),
            6 => Just(Op::Pop),
            1 => Just(Op::Clear),
        ], 0..3000)) {
            let mut q = BlockDeque::default();
            let mut model = VecDeque::new();
            for op in ops {
                match op {
                    Op::PushBack(v) => { q.push_back(v); model.push_back(v); }
                    Op::PushFront(v) => { q.push_front(v); model.push_front(v); }
                    Op::Pop => prop_assert_eq!(q.pop_front(), model.pop_front()),
                    Op::Clear => { q.clear(); model.clear(); }
                }
                prop_assert_eq!(q.len(), model.len());
            }
            let rest: Vec<u32> = q.drain().collect();
            prop_assert_eq!(rest, model.into_iter().collect::<Vec<_>>());
        }
    }
}
