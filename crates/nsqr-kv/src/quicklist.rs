//! A list's value: a double-ended queue of packed nodes (`list_node.rs`), each one heap block
//! of up to 8 KB of elements, as Redis keeps a list as a quicklist of listpacks. A heap block
//! per element cost about 2.6 times Redis's memory per short element and a `malloc` per push
//! (docs/decisions/0024-keyspace-packed-lists.md).
//!
//! Pushes and pops at either end touch the end node only: constant time. A position is found
//! by walking the nodes' counts from the nearer end, then the node's elements; reads hand out
//! slices of the node's buffer. An edit in the middle rewrites one node, splits it past
//! 8 KB, and merges neighbours that fit in one node again after removals.

use std::collections::VecDeque;

use crate::collection::{Collection, KeyType, Typed};
use crate::entry::cost_of;
use crate::list_node::{split_first, split_last, Node, NODE_BYTES};

/// A node's slot in the deque.
const NODE_SLOT: usize = std::mem::size_of::<Node>();

/// A list of elements.
#[derive(Debug, Clone, Default)]
pub struct List {
    nodes: VecDeque<Node>,
    len: usize,
    bytes: usize,
}

impl PartialEq for List {
    fn eq(&self, other: &List) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl Eq for List {}

impl From<List> for Collection {
    fn from(l: List) -> Collection {
        Collection::List(l)
    }
}

impl Typed for List {
    const KIND: KeyType = KeyType::List;
    const WHOLE: bool = true;
    fn is_empty(&self) -> bool {
        self.len == 0
    }
    fn state(&self, _: &[u8]) -> Option<&[u8]> {
        None
    }
    fn of(c: &Collection) -> Option<&List> {
        match c {
            Collection::List(l) => Some(l),
            _ => None,
        }
    }
    fn of_mut(c: &mut Collection) -> Option<&mut List> {
        match c {
            Collection::List(l) => Some(l),
            _ => None,
        }
    }
}

fn node_cost(n: &Node) -> usize {
    NODE_SLOT + cost_of(n.capacity())
}

impl List {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes the list costs on the heap (its nodes' blocks and slots, estimated).
    pub fn cost(&self) -> usize {
        self.bytes
    }

    /// Runs `f` on node `i`, keeping the cost current.
    fn edit<R>(&mut self, i: usize, f: impl FnOnce(&mut Node) -> R) -> Option<R> {
        let node = self.nodes.get_mut(i)?;
        let before = node_cost(node);
        let r = f(node);
        self.bytes = self.bytes + node_cost(node) - before;
        Some(r)
    }

    fn add_node(&mut self, at: usize, node: Node) {
        self.bytes += node_cost(&node);
        self.nodes.insert(at, node);
    }

    fn drop_node(&mut self, at: usize) {
        if let Some(n) = self.nodes.remove(at) {
            self.bytes -= node_cost(&n);
        }
    }

    /// Adds an element at the head (`left`) or the tail.
    pub fn push(&mut self, e: &[u8], left: bool) {
        let end = if left { 0 } else { self.nodes.len() };
        let room = match (left, self.nodes.front(), self.nodes.back()) {
            (true, Some(n), _) | (false, _, Some(n)) => n.fits(e),
            _ => false,
        };
        if !room {
            self.add_node(end, Node::default());
        }
        let at = if left { 0 } else { self.nodes.len() - 1 };
        self.edit(at, |n| {
            if left {
                n.push_front(e)
            } else {
                n.push_back(e)
            }
        });
        self.len += 1;
    }

    /// Removes the element at the head (`left`) or the tail.
    pub fn pop(&mut self, left: bool) -> Option<Box<[u8]>> {
        let at = if left {
            0
        } else {
            self.nodes.len().checked_sub(1)?
        };
        let e = self
            .edit(at, |n| if left { n.pop_front() } else { n.pop_back() })
            .flatten()?;
        self.len -= 1;
        if self.nodes.get(at).is_some_and(|n| n.count() == 0) {
            self.drop_node(at);
        }
        Some(e)
    }

    /// The node holding position `i` (< len) and the position within it.
    fn locate(&self, i: usize) -> (usize, usize) {
        if i < self.len / 2 {
            let mut i = i;
            for (n, node) in self.nodes.iter().enumerate() {
                if i < node.count() {
                    return (n, i);
                }
                i -= node.count();
            }
        } else {
            let mut from_end = self.len - i;
            for (n, node) in self.nodes.iter().enumerate().rev() {
                if from_end <= node.count() {
                    return (n, node.count() - from_end);
                }
                from_end -= node.count();
            }
        }
        (self.nodes.len(), 0)
    }

    pub fn get(&self, i: usize) -> Option<&[u8]> {
        if i >= self.len {
            return None;
        }
        let (n, k) = self.locate(i);
        self.nodes.get(n)?.get(k)
    }

    /// Replaces the element at `i`; false if there is none.
    pub fn set(&mut self, i: usize, value: &[u8]) -> bool {
        if i >= self.len {
            return false;
        }
        let (n, k) = self.locate(i);
        self.edit(n, |node| node.replace(k, Some(value)));
        self.split_if_big(n);
        true
    }

    /// Inserts an element before position `i` (`i == len` appends).
    pub fn insert(&mut self, i: usize, value: &[u8]) {
        if i == 0 || i >= self.len {
            return self.push(value, i == 0);
        }
        let (n, k) = self.locate(i);
        self.edit(n, |node| node.insert(k, value));
        self.len += 1;
        self.split_if_big(n);
    }

    /// Splits node `n` in two if it grew past [`NODE_BYTES`] with more than one element.
    fn split_if_big(&mut self, n: usize) {
        let Some(half) = self
            .nodes
            .get(n)
            .filter(|node| node.used() > NODE_BYTES && node.count() > 1)
            .map(|node| node.count() / 2)
        else {
            return;
        };
        if let Some(rest) = self.edit(n, |node| node.split_off(half)) {
            self.add_node(n + 1, rest);
        }
    }

    /// Removes the element at `i`.
    pub fn remove(&mut self, i: usize) -> Option<Box<[u8]>> {
        if i >= self.len {
            return None;
        }
        let (n, k) = self.locate(i);
        let e = Box::from(self.nodes.get(n)?.get(k)?);
        self.edit(n, |node| node.replace(k, None));
        self.len -= 1;
        self.tidy(n.saturating_sub(1)..n + 1);
        Some(e)
    }

    /// LREM: removes up to `count` elements equal to `value` (from the head if `count` > 0,
    /// from the tail if < 0, all if 0); how many.
    pub fn remove_equal(&mut self, value: &[u8], count: i64) -> usize {
        let mut left = match count {
            0 => usize::MAX,
            c => usize::try_from(c.unsigned_abs()).unwrap_or(usize::MAX),
        };
        let from_back = count < 0;
        let order: Vec<usize> = if from_back {
            (0..self.nodes.len()).rev().collect()
        } else {
            (0..self.nodes.len()).collect()
        };
        let mut removed = 0;
        for n in order {
            if left == 0 {
                break;
            }
            let r = self
                .edit(n, |node| node.remove_equal(value, left, from_back))
                .unwrap_or(0);
            left -= r;
            removed += r;
        }
        self.len -= removed;
        if removed > 0 {
            self.tidy(0..self.nodes.len());
        }
        removed
    }

    /// Drops the empty nodes among `range` (node positions) and merges neighbours from there
    /// on that fit in one node.
    fn tidy(&mut self, range: std::ops::Range<usize>) {
        let mut n = range.start;
        let mut end = range.end.min(self.nodes.len());
        while n < end {
            if self.nodes.get(n).is_some_and(|node| node.count() == 0) {
                self.drop_node(n);
                end -= 1;
                continue;
            }
            let fits = match (self.nodes.get(n), self.nodes.get(n + 1)) {
                (Some(a), Some(b)) => b.count() == 0 || a.used() + b.used() <= NODE_BYTES,
                _ => false,
            };
            if fits {
                if let Some(next) = self.nodes.remove(n + 1) {
                    self.bytes -= node_cost(&next);
                    self.edit(n, |node| node.append(&next));
                    end = end.saturating_sub(1).max(n + 1);
                    continue;
                }
            }
            n += 1;
        }
    }

    /// Keeps only the elements in `range`.
    pub fn keep(&mut self, range: std::ops::Range<usize>) {
        let end = range.end.min(self.len);
        let start = range.start.min(end);
        self.drop_back(self.len - end);
        self.drop_front(start);
    }

    fn drop_front(&mut self, mut k: usize) {
        while k > 0 {
            let Some(first) = self.nodes.front().map(Node::count) else {
                return;
            };
            if first <= k {
                self.drop_node(0);
                k -= first;
                self.len -= first;
            } else {
                self.edit(0, |n| n.drop_front(k));
                self.len -= k;
                k = 0;
            }
        }
    }

    fn drop_back(&mut self, mut k: usize) {
        while k > 0 {
            let Some(last) = self.nodes.back().map(Node::count) else {
                return;
            };
            let at = self.nodes.len() - 1;
            if last <= k {
                self.drop_node(at);
                k -= last;
                self.len -= last;
            } else {
                self.edit(at, |n| n.drop_back(k));
                self.len -= k;
                k = 0;
            }
        }
    }

    pub fn iter(&self) -> Iter<'_> {
        self.iter_range(0..self.len)
    }

    /// The elements at positions `range` (clamped to the list), either way. The back end is
    /// found only when first asked for.
    pub fn iter_range(&self, range: std::ops::Range<usize>) -> Iter<'_> {
        let end = range.end.min(self.len);
        let start = range.start.min(end);
        let front = if start < end {
            let (n, k) = self.locate(start);
            (n, self.nodes.get(n).map_or(&[][..], |node| node.from(k)))
        } else {
            (0, &[][..])
        };
        Iter {
            list: self,
            front,
            back: None,
            end,
            left: end - start,
        }
    }

    /// The node of the element before position `end` (0 < end ≤ len) and the bytes of that
    /// node up to the end of that element.
    fn back_cursor(&self, end: usize) -> (usize, &[u8]) {
        let (n, k) = self.locate(end - 1);
        (
            n,
            self.nodes.get(n).map_or(&[][..], |node| node.until(k + 1)),
        )
    }

    /// The positions `start..=stop` of a list of this length, negative ones counting from the
    /// end, clamped as LRANGE and LTRIM clamp them; `None` when the range is empty.
    pub fn range(&self, start: i64, stop: i64) -> Option<std::ops::Range<usize>> {
        let len = self.len as i64;
        let start = if start < 0 {
            (len + start).max(0)
        } else {
            start
        };
        let stop = if stop < 0 {
            len + stop
        } else {
            stop.min(len - 1)
        };
        (start <= stop && start < len).then(|| start as usize..stop as usize + 1)
    }

    /// The position of index `i` (negative from the end), if it is in the list.
    pub fn position(&self, i: i64) -> Option<usize> {
        let len = self.len as i64;
        let i = if i < 0 { len.checked_add(i)? } else { i };
        (0..len).contains(&i).then_some(i as usize)
    }
}

/// A list's elements from either end, borrowed from its nodes.
pub struct Iter<'a> {
    list: &'a List,
    /// The front's node and the bytes of that node from the next element on.
    front: (usize, &'a [u8]),
    /// The back's node and the bytes of that node up to the end of the next element from the
    /// back (found on the first `next_back`).
    back: Option<(usize, &'a [u8])>,
    /// The position after the last element.
    end: usize,
    left: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.left == 0 {
            return None;
        }
        while self.front.1.is_empty() {
            self.front.0 += 1;
            self.front.1 = self.list.nodes.get(self.front.0)?.from(0);
        }
        let (e, rest) = split_first(self.front.1);
        self.front.1 = rest;
        self.left -= 1;
        Some(e)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        let list = self.list;
        let end = self.end;
        let back = self.back.get_or_insert_with(|| list.back_cursor(end));
        while back.1.is_empty() {
            back.0 = back.0.checked_sub(1)?;
            let node = list.nodes.get(back.0)?;
            back.1 = node.until(node.count());
        }
        let (e, rest) = split_last(back.1);
        back.1 = rest;
        self.left -= 1;
        Some(e)
    }
}

impl ExactSizeIterator for Iter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::VecDeque as Model;

    #[test]
    fn ranges_and_costs() {
        let mut l = List::default();
        for e in [&b"a"[..], b"b", b"c", b"d"] {
            l.push(e, false);
        }
        l.push(b"z", true);
        assert_eq!(l.range(0, -1), Some(0..5));
        assert_eq!(l.range(-2, 100), Some(3..5));
        assert_eq!(l.range(3, 1), None);
        assert_eq!(l.range(10, 20), None);
        assert_eq!(l.range(i64::MIN, i64::MAX), Some(0..5));
        assert_eq!(
            (l.position(-1), l.position(5), l.position(i64::MIN)),
            (Some(4), None, None)
        );
        l.keep(1..3);
        assert_eq!(l.iter().collect::<Vec<_>>(), vec![&b"a"[..], b"b"]);
        assert!(l.set(0, b"longer"));
        l.insert(1, b"x");
        assert_eq!(l.remove(0).as_deref(), Some(&b"longer"[..]));
        while l.pop(true).is_some() {}
        assert_eq!((l.bytes, l.nodes.len()), (0, 0));
    }

    #[test]
    fn a_long_list_is_full_nodes() {
        let mut l = List::default();
        for i in 0..100_000u32 {
            l.push(format!("{i:016}").as_bytes(), i % 2 == 0);
        }
        // Two bytes beside each 16-byte element, nodes about full, on both sides.
        let per_element = l.cost() as f64 / l.len() as f64;
        assert!(per_element < 18.5, "{per_element}");
        assert_eq!(l.iter().rev().count(), 100_000);
        assert_eq!(l.get(50_000), Some(&b"0000000000000001"[..]));
        assert_eq!(l.iter_range(49_999..50_001).len(), 2);
        l.keep(10..90_000);
        assert_eq!(l.len(), 89_990);
    }

    #[derive(Debug, Clone)]
    enum Step {
        Push(Vec<u8>, bool),
        Pop(bool),
        Set(usize, Vec<u8>),
        Insert(usize, Vec<u8>),
        Remove(usize),
        RemoveEqual(Vec<u8>, i64),
        Keep(usize, usize),
    }

    fn element() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            8 => proptest::collection::vec(0u8..3, 0..3),
            2 => proptest::collection::vec(any::<u8>(), 100..300),
            1 => Just(vec![1u8; NODE_BYTES + 10]),
        ]
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            10 => (element(), any::<bool>()).prop_map(|(e, l)| Step::Push(e, l)),
            3 => any::<bool>().prop_map(Step::Pop),
            2 => (0usize..200, element()).prop_map(|(i, e)| Step::Set(i, e)),
            2 => (0usize..200, element()).prop_map(|(i, e)| Step::Insert(i, e)),
            2 => (0usize..200).prop_map(Step::Remove),
            1 => (element(), -3i64..3).prop_map(|(e, c)| Step::RemoveEqual(e, c)),
            1 => (0usize..200, 0usize..200).prop_map(|(a, b)| Step::Keep(a, b)),
        ]
    }

    fn apply(l: &mut List, m: &mut Model<Vec<u8>>, s: Step) {
        match s {
            Step::Push(e, left) => {
                l.push(&e, left);
                if left {
                    m.push_front(e)
                } else {
                    m.push_back(e)
                }
            }
            Step::Pop(left) => {
                let want = if left { m.pop_front() } else { m.pop_back() };
                assert_eq!(l.pop(left).map(Vec::from), want);
            }
            Step::Set(i, e) => {
                assert_eq!(l.set(i, &e), i < m.len());
                if let Some(x) = m.get_mut(i) {
                    *x = e;
                }
            }
            Step::Insert(i, e) => {
                let i = i.min(m.len());
                l.insert(i, &e);
                m.insert(i, e);
            }
            Step::Remove(i) => assert_eq!(l.remove(i).map(Vec::from), m.remove(i)),
            Step::RemoveEqual(e, count) => {
                let max = if count == 0 {
                    usize::MAX
                } else {
                    count.unsigned_abs() as usize
                };
                let mut hits: Vec<usize> = (0..m.len()).filter(|&i| m[i] == e).collect();
                if count < 0 {
                    hits.reverse();
                }
                hits.truncate(max);
                hits.sort_unstable();
                for &i in hits.iter().rev() {
                    m.remove(i);
                }
                assert_eq!(l.remove_equal(&e, count), hits.len());
            }
            Step::Keep(a, b) => {
                l.keep(a..b.max(a));
                let end = b.max(a).min(m.len());
                m.truncate(end);
                m.drain(..a.min(end));
            }
        }
    }

    fn check(l: &List, m: &Model<Vec<u8>>) {
        assert_eq!(l.len(), m.len());
        assert!(l.iter().eq(m.iter().map(Vec::as_slice)));
        assert!(l.iter().rev().eq(m.iter().rev().map(Vec::as_slice)));
        for (i, e) in m.iter().enumerate() {
            assert_eq!(l.get(i), Some(e.as_slice()));
        }
        let (a, b) = (m.len() / 3, m.len() * 2 / 3 + 1);
        // From both ends at once: the front's elements, then the back's reversed.
        let mut it = l.iter_range(a..b);
        let want: Vec<&[u8]> = m.iter().skip(a).take(b - a).map(Vec::as_slice).collect();
        let (mut front, mut back) = (Vec::new(), Vec::new());
        while let Some(e) = it.next() {
            front.push(e);
            back.extend(it.next_back());
        }
        front.extend(back.into_iter().rev());
        assert_eq!(front, want);
        let cost: usize = l.nodes.iter().map(node_cost).sum();
        assert_eq!(l.bytes, cost);
        assert!(l.nodes.iter().all(|n| n.count() > 0));
        assert_eq!(l.nodes.iter().map(Node::count).sum::<usize>(), l.len());
    }

    proptest! {
        #[test]
        fn behaves_as_a_deque(steps in proptest::collection::vec(step(), 0..300)) {
            let (mut l, mut m) = (List::default(), Model::new());
            for s in steps {
                apply(&mut l, &mut m, s);
                check(&l, &m);
            }
        }
    }
}
