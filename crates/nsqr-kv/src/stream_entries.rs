//! A stream's entries: packed nodes (`stream_node.rs`) in a `BTreeMap` keyed by each node's
//! first id, as Redis keeps listpacks in a radix tree keyed by their master id. XADD appends to
//! the last node or starts one; XDEL flags an entry and drops a node left with none; trims take
//! whole nodes from the head, then (exact trims) flag entries in the first node left. Ranges
//! in either direction find their first node in the map and walk the nodes from there.
//!
//! An entry below the last one (only the log's replay and RESTORE add those) rebuilds the node
//! it falls in.

use std::collections::BTreeMap;

use crate::stream::{StreamId, Trim, TrimSpec};
use crate::stream_fields::Fields;
use crate::stream_node::Node;

/// The entries of a stream (see the module doc).
#[derive(Debug, Clone, Default)]
pub(crate) struct Entries {
    nodes: BTreeMap<StreamId, Node>,
    len: usize,
    bytes: usize,
}

impl PartialEq for Entries {
    fn eq(&self, o: &Entries) -> bool {
        self.len == o.len && self.iter().eq(o.iter())
    }
}

impl Eq for Entries {}

type Item<'a> = (StreamId, Fields<'a>);

impl Entries {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes the entries cost (estimated).
    pub fn cost(&self) -> usize {
        self.bytes
    }

    /// How many nodes hold the entries.
    pub fn nodes(&self) -> usize {
        self.nodes.len()
    }

    /// How many nodes Redis's radix tree would have for these nodes' keys (XINFO STREAM's
    /// `radix-tree-nodes`): the tree of their 16-byte big-endian ids as Redis builds it,
    /// with a chain of single children kept as one node.
    pub fn radix_tree_nodes(&self) -> usize {
        let keys: Vec<[u8; 16]> = self
            .nodes
            .keys()
            .map(|id| {
                let mut k = [0u8; 16];
                k[..8].copy_from_slice(&id.ms.to_be_bytes());
                k[8..].copy_from_slice(&id.seq.to_be_bytes());
                k
            })
            .collect();
        if keys.is_empty() {
            return 1;
        }
        radix_subtree(&keys, 0)
    }

    pub fn iter(&self) -> impl Iterator<Item = Item<'_>> {
        self.nodes
            .iter()
            .flat_map(|(k, n)| n.live_entries(*k).map(|e| (e.id, e.fields)))
    }

    pub fn first(&self) -> Option<Item<'_>> {
        self.iter().next()
    }

    pub fn last(&self) -> Option<Item<'_>> {
        let (k, n) = self.nodes.last_key_value()?;
        n.live_entries(*k).last().map(|e| (e.id, e.fields))
    }

    /// The node `id` would be in: the last one starting at or below it.
    fn node_of(&self, id: StreamId) -> Option<(StreamId, &Node)> {
        self.nodes.range(..=id).next_back().map(|(k, n)| (*k, n))
    }

    pub fn get(&self, id: StreamId) -> Option<Fields<'_>> {
        let (k, n) = self.node_of(id)?;
        n.live_entries(k)
            .take_while(|e| e.id <= id)
            .find(|e| e.id == id)
            .map(|e| e.fields)
    }

    /// Entries with ids in `start..=end`, in order or (`rev`) in reverse.
    pub fn range(
        &self,
        start: StreamId,
        end: StreamId,
        rev: bool,
    ) -> Box<dyn Iterator<Item = Item<'_>> + '_> {
        if start > end {
            return Box::new(std::iter::empty());
        }
        let from = self.node_of(start).map_or(start, |(k, _)| k);
        let nodes = self.nodes.range(from..=end);
        if rev {
            let r = nodes.rev().flat_map(|(k, n)| n.live_rev(*k));
            Box::new(
                r.skip_while(move |e| e.id > end)
                    .take_while(move |e| e.id >= start)
                    .map(|e| (e.id, e.fields)),
            )
        } else {
            let r = nodes.flat_map(|(k, n)| n.live_entries(*k));
            Box::new(
                r.skip_while(move |e| e.id < start)
                    .take_while(move |e| e.id <= end)
                    .map(|e| (e.id, e.fields)),
            )
        }
    }

    /// Adds an entry, replacing one with the same id.
    pub fn insert(&mut self, id: StreamId, f: Fields<'_>) {
        if self
            .nodes
            .last_key_value()
            .is_some_and(|(_, n)| id <= n.last_id())
        {
            return self.rebuild_with(id, f);
        }
        if let Some(mut last) = self.nodes.last_entry() {
            let key = *last.key();
            let node = last.get_mut();
            let before = node.cost();
            let pushed = node.try_push(key, id, f);
            if !pushed {
                node.seal();
            }
            self.bytes = self.bytes - before + node.cost();
            if pushed {
                self.len += 1;
                return;
            }
        }
        self.add_node(id, Node::new(id, f));
    }

    fn add_node(&mut self, key: StreamId, node: Node) {
        self.bytes += node.cost();
        self.len += node.live();
        if let Some(old) = self.nodes.insert(key, node) {
            self.bytes -= old.cost();
            self.len -= old.live();
        }
    }

    fn remove_node(&mut self, key: StreamId) -> Option<Node> {
        let node = self.nodes.remove(&key)?;
        self.bytes -= node.cost();
        self.len -= node.live();
        Some(node)
    }

    /// Adds `id` below the last entry: the node it falls in is built again with it.
    fn rebuild_with(&mut self, id: StreamId, f: Fields<'_>) {
        let key = self
            .node_of(id)
            .or_else(|| self.nodes.first_key_value().map(|(k, n)| (*k, n)))
            .map(|(k, _)| k);
        let mut owned: Vec<(StreamId, Vec<Vec<u8>>)> = Vec::new();
        if let Some(node) = key.and_then(|k| Some((k, self.remove_node(k)?))) {
            owned = (node.1.live_entries(node.0))
                .filter(|e| e.id != id)
                .map(|e| (e.id, e.fields.iter().map(<[u8]>::to_vec).collect()))
                .collect();
        }
        let at = owned.partition_point(|(i, _)| *i < id);
        owned.insert(at, (id, f.iter().map(<[u8]>::to_vec).collect()));
        let mut building: Option<(StreamId, Node)> = None;
        for (id, items) in &owned {
            let items: Vec<&[u8]> = items.iter().map(Vec::as_slice).collect();
            let f = Fields::args(&items);
            if let Some((k, n)) = &mut building {
                if n.try_push(*k, *id, f) {
                    continue;
                }
            }
            if let Some((k, mut n)) = building.take() {
                n.seal();
                self.add_node(k, n);
            }
            building = Some((*id, Node::new(*id, f)));
        }
        if let Some((k, n)) = building {
            self.add_node(k, n);
        }
    }

    /// Removes an entry: whether it was there.
    pub fn remove(&mut self, id: StreamId) -> bool {
        let Some((key, _)) = self.node_of(id) else {
            return false;
        };
        let Some(node) = self.nodes.get_mut(&key) else {
            return false;
        };
        if !node.delete(key, id) {
            return false;
        }
        self.len -= 1;
        if node.live() == 0 {
            self.remove_node(key);
        }
        true
    }

    /// Trims from the head as `spec` says, calling `gone` with each id removed when given;
    /// how many entries went. Whole nodes go while they can (and, with a LIMIT, while the
    /// count stays within it); an approximate trim stops at the first node that cannot go,
    /// an exact one flags the entries of that node that must go.
    pub fn trim(&mut self, spec: TrimSpec, mut gone: Option<&mut dyn FnMut(StreamId)>) -> u64 {
        let mut removed = 0u64;
        while let Some((&key, node)) = self.nodes.first_key_value() {
            let (len, live) = (self.len as u64, node.live() as u64);
            let whole = match spec.strategy {
                Trim::MaxLen(max) if len <= max => break,
                Trim::MaxLen(max) => len - live >= max,
                Trim::MinId(min) => node.last_id() < min,
            };
            if whole && !(spec.limit > 0 && removed + live > spec.limit) {
                if let Some(gone) = gone.as_mut() {
                    node.live_entries(key).for_each(|e| gone(e.id));
                }
                self.remove_node(key);
                removed += live;
                continue;
            }
            if spec.approx || whole {
                break;
            }
            let Some(node) = self.nodes.get_mut(&key) else {
                break;
            };
            let mut left = len;
            let ids = node.delete_front(key, |id| {
                let more = match spec.strategy {
                    Trim::MaxLen(max) => left > max,
                    Trim::MinId(min) => id < min,
                };
                left -= u64::from(more);
                more
            });
            self.len -= ids.len();
            removed += ids.len() as u64;
            if node.live() == 0 {
                // Its last entry, at or above the MINID, was deleted before.
                self.remove_node(key);
            }
            if let Some(gone) = gone.as_mut() {
                for id in ids {
                    gone(id);
                }
            }
            break;
        }
        removed
    }
}

/// The nodes of the radix tree under a node at depth `depth` holding `keys` (sorted, every
/// one 16 bytes, sharing their first `depth` bytes): a leaf, or a chain of the bytes they all
/// share (one node) then a node branching on the next byte.
fn radix_subtree(keys: &[[u8; 16]], depth: usize) -> usize {
    let (Some(first), Some(last)) = (keys.first(), keys.last()) else {
        return 0;
    };
    let shared = (depth..16).take_while(|&i| first[i] == last[i]).count();
    let at = depth + shared;
    if at == 16 {
        return if depth == 16 { 1 } else { 2 };
    }
    let mut n = usize::from(shared > 0) + 1;
    let mut rest = keys;
    while let Some(k) = rest.first() {
        let group = rest.partition_point(|o| o[at] == k[at]);
        n += radix_subtree(&rest[..group], at + 1);
        rest = &rest[group..];
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream_node::{NODE_BYTES, NODE_ENTRIES};
    use proptest::prelude::*;

    type Model = BTreeMap<StreamId, Vec<Vec<u8>>>;

    fn items(f: Fields<'_>) -> Vec<Vec<u8>> {
        f.iter().map(<[u8]>::to_vec).collect()
    }

    fn check(e: &Entries, m: &Model) {
        let got: Vec<_> = e.iter().map(|(id, f)| (id, items(f))).collect();
        let want: Vec<_> = m.iter().map(|(id, f)| (*id, f.clone())).collect();
        assert_eq!(got, want);
        assert_eq!(e.len(), m.len());
        assert_eq!(e.first().map(|(id, _)| id), m.keys().next().copied());
        assert_eq!(e.last().map(|(id, _)| id), m.keys().next_back().copied());
        assert_eq!(e.bytes, e.nodes.values().map(Node::cost).sum::<usize>());
        assert!(e
            .nodes
            .iter()
            .all(|(k, n)| n.live() > 0 && n.entries(*k).count() <= NODE_ENTRIES));
    }

    fn approx_spec(max: u64) -> TrimSpec {
        TrimSpec {
            strategy: Trim::MaxLen(max),
            approx: true,
            limit: 0,
        }
    }

    #[test]
    fn trims_exactly_and_by_nodes() {
        let mut e = Entries::default();
        for ms in 1..=250 {
            e.insert(StreamId::new(ms, 0), Fields::args(&[b"f", b"v"]));
        }
        assert_eq!(e.nodes(), 3);
        assert_eq!(e.trim(approx_spec(200), None), 0);
        let mut ids = Vec::new();
        assert_eq!(e.trim(approx_spec(100), Some(&mut |id| ids.push(id))), 100);
        assert_eq!(ids.len(), 100);
        assert_eq!(e.first().map(|(id, _)| id), Some(StreamId::new(101, 0)));
        let minid = |ms, approx| TrimSpec {
            strategy: Trim::MinId(StreamId::new(ms, 0)),
            approx,
            limit: 0,
        };
        assert_eq!(e.trim(minid(240, true), None), 100);
        assert_eq!(e.trim(minid(240, false), None), 39);
        assert_eq!(e.first().map(|(id, _)| id), Some(StreamId::new(240, 0)));
        // A LIMIT below a node's count keeps the node.
        let limited = TrimSpec {
            limit: 5,
            ..approx_spec(0)
        };
        assert_eq!(e.trim(limited, None), 0);
        assert_eq!(e.trim(approx_spec(0), None), 11);
        assert_eq!((e.len(), e.nodes(), e.cost()), (0, 0, 0));
    }

    #[test]
    fn radix_tree_nodes_as_redis_counts_them() {
        let mut e = Entries::default();
        assert_eq!(e.radix_tree_nodes(), 1);
        let mut counts = Vec::new();
        for ms in 1..=250 {
            e.insert(StreamId::new(ms, 0), Fields::args(&[b"f", b"v"]));
            if ms % 100 == 1 {
                counts.push(e.radix_tree_nodes());
            }
        }
        // Redis 7.0's XINFO STREAM for keys 1-0; 1-0, 101-0; 1-0, 101-0, 201-0.
        assert_eq!(counts, [2, 6, 8]);
    }

    #[test]
    fn a_long_stream_is_full_nodes() {
        let mut e = Entries::default();
        let v = [b'v'; 16];
        for ms in 0..10_000 {
            e.insert(StreamId::new(ms, 0), Fields::args(&[b"f", &v]));
        }
        assert_eq!(e.nodes(), 10_000 / NODE_ENTRIES);
        assert!(e.cost() / e.len() < 24, "{}", e.cost() / e.len());
        let big = vec![b'b'; NODE_BYTES];
        e.insert(StreamId::new(20_000, 0), Fields::args(&[b"f", &big]));
        e.insert(StreamId::new(20_001, 0), Fields::args(&[b"f", &big]));
        assert_eq!(e.nodes(), 10_000 / NODE_ENTRIES + 2);
    }

    #[derive(Debug, Clone)]
    enum Step {
        /// Appends with an ms this far above the last id (0: the next seq).
        Add(u64, Vec<Vec<u8>>),
        /// Adds or replaces the entry at this place among the ids (as a replay may).
        Put(usize, Vec<Vec<u8>>),
        Del(usize),
        Trim(TrimSpec),
        Range(usize, usize, bool),
    }

    fn pairs() -> impl Strategy<Value = Vec<Vec<u8>>> {
        let item = prop_oneof![
            8 => proptest::collection::vec(b'a'..b'c', 0..3),
            1 => proptest::collection::vec(any::<u8>(), 100..1500),
        ];
        proptest::collection::vec((item.clone(), item), 0..3)
            .prop_map(|v| v.into_iter().flat_map(|(f, v)| [f, v]).collect())
    }

    fn step() -> impl Strategy<Value = Step> {
        let trim = (any::<bool>(), 0u64..300, any::<bool>(), 0u64..150).prop_map(
            |(maxlen, n, approx, limit)| TrimSpec {
                strategy: if maxlen {
                    Trim::MaxLen(n)
                } else {
                    Trim::MinId(StreamId::new(n * 3, 0))
                },
                approx,
                limit: if approx { limit } else { 0 },
            },
        );
        prop_oneof![
            30 => (prop_oneof![Just(0u64), 1u64..4], pairs()).prop_map(|(d, p)| Step::Add(d, p)),
            2 => (any::<usize>(), pairs()).prop_map(|(i, p)| Step::Put(i, p)),
            6 => any::<usize>().prop_map(Step::Del),
            2 => trim.prop_map(Step::Trim),
            3 => (any::<usize>(), any::<usize>(), any::<bool>()).prop_map(|(a, b, r)| Step::Range(a, b, r)),
        ]
    }

    /// The model's trim: Redis's rule on the nodes as they are.
    fn model_trim(e: &Entries, m: &mut Model, spec: TrimSpec) -> u64 {
        let nodes: Vec<(usize, StreamId)> =
            e.nodes.values().map(|n| (n.live(), n.last_id())).collect();
        let mut removed = 0;
        for (live, last) in nodes {
            let len = m.len() as u64;
            let whole = match spec.strategy {
                Trim::MaxLen(max) if len <= max => break,
                Trim::MaxLen(max) => len - live as u64 >= max,
                Trim::MinId(min) => last < min,
            };
            if whole && !(spec.limit > 0 && removed + live as u64 > spec.limit) {
                for _ in 0..live {
                    m.pop_first();
                }
                removed += live as u64;
                continue;
            }
            if spec.approx || whole {
                break;
            }
            while let Some((&id, _)) = m.first_key_value() {
                let more = match spec.strategy {
                    Trim::MaxLen(max) => m.len() as u64 > max,
                    Trim::MinId(min) => id < min,
                };
                if !more {
                    break;
                }
                m.pop_first();
                removed += 1;
            }
            break;
        }
        removed
    }

    fn apply(e: &mut Entries, m: &mut Model, last: &mut StreamId, s: Step) {
        let nth = |m: &Model, i: usize| m.keys().nth(i % m.len().max(1)).copied();
        match s {
            Step::Add(d, p) => {
                let id = if d == 0 {
                    StreamId::new(last.ms, last.seq + 1)
                } else {
                    StreamId::new(last.ms + d, 0)
                };
                *last = id;
                let refs: Vec<&[u8]> = p.iter().map(Vec::as_slice).collect();
                e.insert(id, Fields::args(&refs));
                m.insert(id, p);
            }
            Step::Put(i, p) => {
                let Some(id) = nth(m, i) else { return };
                let refs: Vec<&[u8]> = p.iter().map(Vec::as_slice).collect();
                e.insert(id, Fields::args(&refs));
                m.insert(id, p);
            }
            Step::Del(i) => {
                let id = nth(m, i).unwrap_or(StreamId::new(1, 1));
                assert_eq!(e.remove(id), m.remove(&id).is_some());
            }
            Step::Trim(spec) => {
                let mut model = m.clone();
                let want = model_trim(e, &mut model, spec);
                let mut ids = Vec::new();
                assert_eq!(e.trim(spec, Some(&mut |id| ids.push(id))), want);
                let gone: Vec<StreamId> = m
                    .keys()
                    .filter(|id| !model.contains_key(id))
                    .copied()
                    .collect();
                assert_eq!(ids, gone);
                *m = model;
            }
            Step::Range(a, b, rev) => {
                let (lo, hi) = (
                    nth(m, a).unwrap_or(StreamId::ZERO),
                    nth(m, b).unwrap_or(StreamId::MAX),
                );
                let got: Vec<_> = e
                    .range(lo, hi, rev)
                    .map(|(id, f)| (id, items(f)))
                    .take(7)
                    .collect();
                let mut want: Vec<_> = if lo <= hi {
                    m.range(lo..=hi).map(|(id, f)| (*id, f.clone())).collect()
                } else {
                    Vec::new()
                };
                if rev {
                    want.reverse();
                }
                want.truncate(7);
                assert_eq!(got, want);
                if let Some(id) = nth(m, a) {
                    assert_eq!(e.get(id).map(items), m.get(&id).cloned());
                }
            }
        }
    }

    proptest! {
        #[test]
        fn behaves_as_a_sorted_map(steps in proptest::collection::vec(step(), 0..400)) {
            let mut e = Entries::default();
            let mut m = Model::new();
            let mut last = StreamId::new(1, 0);
            for s in steps {
                apply(&mut e, &mut m, &mut last, s);
                check(&e, &m);
            }
        }
    }
}
