//! Sorted set commands that change a sorted set (ZADD, ZINCRBY, ZREM, ZREMRANGEBY*, ZPOP*),
//! ZRANGESTORE, and the algebra of ZUNION, ZINTER and ZDIFF (sets count as sorted sets whose
//! every score is 1, as in Redis), with or without STORE. Reads of one sorted set (ZSCORE,
//! ZRANGE, ZRANK, ZSCAN, ...) see it through [`Keyspace::read_zset`].

use std::ops::Range;

use crate::clock::now_ms;
use crate::collection::{Collection, Set};
use crate::error::KvError;
use crate::feed::Op;
use crate::keyspace::{Find, Guard, Keyspace, Pending};
use crate::sets::SetOp;
use crate::zset::{index_ranks, LexBound, Popped, ScoreBound, ZSet};

/// ZADD's flags.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ZaddOptions {
    pub nx: bool,
    pub xx: bool,
    pub gt: bool,
    pub lt: bool,
    pub ch: bool,
    pub incr: bool,
}

/// ZADD's answer: how many members were added (or changed, with CH), or with INCR the new
/// score (`None` when NX / XX / GT / LT prevented the change).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ZaddReply {
    Count(usize),
    Score(Option<f64>),
}

/// Which members a range names: by rank (negative from the end), by score, or by member.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ZRangeSpec<'a> {
    Rank(i64, i64),
    Score(ScoreBound, ScoreBound),
    Lex(LexBound<'a>, LexBound<'a>),
}

impl ZRangeSpec<'_> {
    /// The ranks (lowest score first) of what ZRANGE returns for this range of `z`: `rev`
    /// walks from the highest score (a rank range then counts from the end, and the bounds
    /// are still min then max), `limit` is LIMIT's offset and count (a negative count: all).
    /// The caller walks the range backwards when `rev`.
    pub fn ranks(&self, z: &ZSet, rev: bool, limit: Option<(i64, i64)>) -> Range<usize> {
        let len = z.len();
        let all = match *self {
            ZRangeSpec::Rank(start, stop) => match index_ranks(len, start, stop) {
                Some(r) if rev => len - r.end..len - r.start,
                Some(r) => r,
                None => 0..0,
            },
            ZRangeSpec::Score(min, max) => z.score_ranks(min, max),
            ZRangeSpec::Lex(min, max) => z.lex_ranks(min, max),
        };
        let Some((offset, count)) = limit else {
            return all;
        };
        if offset < 0 {
            return 0..0;
        }
        let offset = usize::try_from(offset).unwrap_or(usize::MAX).min(all.len());
        let count = usize::try_from(count).unwrap_or(usize::MAX);
        let take = count.min(all.len() - offset);
        if rev {
            all.end - offset - take..all.end - offset
        } else {
            all.start + offset..all.start + offset + take
        }
    }

    /// The event of ZREMRANGEBY* for this kind of range.
    fn removal_op(&self) -> Op {
        match self {
            ZRangeSpec::Rank(..) => Op::Zrembyrank,
            ZRangeSpec::Score(..) => Op::Zrembyscore,
            ZRangeSpec::Lex(..) => Op::Zrembylex,
        }
    }
}

/// How ZUNION / ZINTER combine a member's weighted scores.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Aggregate {
    #[default]
    Sum,
    Min,
    Max,
}

impl Aggregate {
    fn apply(self, a: f64, b: f64) -> f64 {
        match self {
            // inf + -inf is NaN: Redis makes it 0.
            Aggregate::Sum => Some(a + b).filter(|s| !s.is_nan()).unwrap_or(0.0),
            Aggregate::Min => a.min(b),
            Aggregate::Max => a.max(b),
        }
    }
}

/// A weighted score (`inf * 0` is NaN: Redis makes it 0).
fn weighted(score: f64, weight: f64) -> f64 {
    Some(score * weight).filter(|s| !s.is_nan()).unwrap_or(0.0)
}

/// An input of ZUNION / ZINTER / ZDIFF: a sorted set, or a set whose scores are all 1.
#[derive(Clone, Copy)]
enum Input<'a> {
    Zset(&'a ZSet),
    Set(&'a Set),
}

impl Input<'_> {
    fn len(&self) -> usize {
        match self {
            Input::Zset(z) => z.len(),
            Input::Set(s) => s.len(),
        }
    }

    fn score(&self, m: &[u8]) -> Option<f64> {
        match self {
            Input::Zset(z) => z.score(m),
            Input::Set(s) => s.contains(m).then_some(1.0),
        }
    }

    fn each(&self, mut f: impl FnMut(&[u8], f64)) {
        match self {
            Input::Zset(z) => z.iter().for_each(|(m, s)| f(m, s)),
            Input::Set(s) => s.iter().for_each(|m| f(m, 1.0)),
        }
    }
}

/// `op` over `inputs` (`None`: a missing key, empty), each with its weight. `limit` stops
/// an intersection once it has that many members (ZINTERCARD; 0 for no limit).
fn combine(
    op: SetOp,
    inputs: &[Option<Input<'_>>],
    weights: &[f64],
    agg: Aggregate,
    limit: usize,
) -> ZSet {
    let mut out = ZSet::default();
    let weight = |i: usize| weights.get(i).copied().unwrap_or(1.0);
    match op {
        SetOp::Union => {
            for (i, input) in inputs.iter().enumerate() {
                let Some(input) = input else { continue };
                input.each(|m, s| {
                    let s = weighted(s, weight(i));
                    let s = out.score(m).map_or(s, |old| agg.apply(old, s));
                    out.insert(m, s);
                });
            }
        }
        SetOp::Inter => {
            let Some(all) = inputs.iter().copied().collect::<Option<Vec<Input<'_>>>>() else {
                return out;
            };
            let mut order: Vec<usize> = (0..all.len()).collect();
            order.sort_by_key(|&i| all[i].len());
            let Some((&first, rest)) = order.split_first() else {
                return out;
            };
            all[first].each(|m, s| {
                if limit > 0 && out.len() >= limit {
                    return;
                }
                let mut acc = weighted(s, weight(first));
                for &i in rest {
                    match all[i].score(m) {
                        Some(s) => acc = agg.apply(acc, weighted(s, weight(i))),
                        None => return,
                    }
                }
                out.insert(m, acc);
            });
        }
        SetOp::Diff => {
            let Some(Some(first)) = inputs.first() else {
                return out;
            };
            first.each(|m, s| {
                if !inputs[1..].iter().flatten().any(|z| z.score(m).is_some()) {
                    out.insert(m, s);
                }
            });
        }
    }
    out
}

impl Keyspace {
    /// `f` sees the sorted set of `key`, or `None` if it does not exist; WRONGTYPE for
    /// another type.
    pub fn read_zset<R>(
        &self,
        key: &[u8],
        f: impl FnOnce(Option<&ZSet>) -> R,
    ) -> Result<R, KvError> {
        self.read_typed(key, f)
    }

    /// ZADD of `(score, member)` pairs (scores never NaN; with INCR, one pair).
    pub fn zadd(
        &self,
        key: &[u8],
        items: &[(f64, &[u8])],
        o: ZaddOptions,
        pending: &mut Pending,
    ) -> Result<ZaddReply, KvError> {
        self.write_typed(key, pending, |z: &mut ZSet, touched| {
            let (mut added, mut changed, mut last) = (0, 0, None);
            for &(score, m) in items {
                let old = z.score(m);
                let new = match (old, o.incr) {
                    (Some(old), true) => old + score,
                    _ => score,
                };
                if new.is_nan() {
                    return Err(KvError::ScoreNan);
                }
                let skip = match old {
                    Some(old) => o.nx || (o.gt && new <= old) || (o.lt && new >= old),
                    None => o.xx,
                };
                if skip {
                    continue;
                }
                last = Some(new);
                if old.is_none() {
                    added += 1;
                } else if old != Some(new) {
                    changed += 1;
                } else {
                    continue;
                }
                z.insert(m, new);
                touched.add(m);
            }
            let op = if o.incr { Op::Zincr } else { Op::Zadd };
            let op = (added + changed > 0).then_some(op);
            let reply = match (o.incr, o.ch) {
                (true, _) => ZaddReply::Score(last),
                (false, true) => ZaddReply::Count(added + changed),
                (false, false) => ZaddReply::Count(added),
            };
            Ok((reply, op))
        })
    }

    /// ZREM: how many members were removed.
    pub fn zrem(
        &self,
        key: &[u8],
        members: &[&[u8]],
        pending: &mut Pending,
    ) -> Result<usize, KvError> {
        self.write_typed(key, pending, |z: &mut ZSet, touched| {
            let mut n = 0;
            for m in members {
                if z.remove(m).is_some() {
                    n += 1;
                    touched.add(m);
                }
            }
            Ok((n, (n > 0).then_some(Op::Zrem)))
        })
    }

    /// ZREMRANGEBYRANK / ZREMRANGEBYSCORE / ZREMRANGEBYLEX: how many members were removed.
    pub fn zrem_range(
        &self,
        key: &[u8],
        spec: ZRangeSpec<'_>,
        pending: &mut Pending,
    ) -> Result<usize, KvError> {
        self.write_typed(key, pending, |z: &mut ZSet, touched| {
            let ranks = spec.ranks(z, false, None);
            let gone: Vec<Box<[u8]>> = z.by_rank(ranks).map(|(m, _)| m.into()).collect();
            for m in &gone {
                z.remove(m);
                touched.add(m);
            }
            let op = (!gone.is_empty()).then(|| spec.removal_op());
            Ok((gone.len(), op))
        })
    }

    /// ZPOPMIN / ZPOPMAX (`max`): up to `count` members, in the order popped.
    pub fn zpop(
        &self,
        key: &[u8],
        count: usize,
        max: bool,
        pending: &mut Pending,
    ) -> Result<Vec<Popped>, KvError> {
        self.write_typed(key, pending, |z: &mut ZSet, touched| {
            let mut out = Vec::with_capacity(count.min(z.len()));
            while out.len() < count {
                let Some((m, s)) = z.pop(max) else { break };
                touched.add(&m);
                out.push((m, s));
            }
            let op = if max { Op::Zpopmax } else { Op::Zpopmin };
            let op = (!out.is_empty()).then_some(op);
            Ok((out, op))
        })
    }

    /// ZUNION / ZINTER / ZDIFF: `f` sees the result. Every key must be a sorted set, a set
    /// or missing.
    pub fn zset_combine<R>(
        &self,
        op: SetOp,
        keys: &[&[u8]],
        weights: &[f64],
        agg: Aggregate,
        f: impl FnOnce(&ZSet) -> R,
    ) -> Result<R, KvError> {
        let hashes: Vec<u64> = keys.iter().map(|k| self.hash(k)).collect();
        let mut guards = self.lock_many(&hashes);
        self.check_inputs(&mut guards, keys, &hashes)?;
        let inputs = self.inputs_in(&guards, keys, &hashes);
        Ok(f(&combine(op, &inputs, weights, agg, 0)))
    }

    /// ZINTERCARD: the size of the intersection, counting up to `limit` (0: no limit).
    pub fn zintercard(&self, keys: &[&[u8]], limit: usize) -> Result<usize, KvError> {
        let hashes: Vec<u64> = keys.iter().map(|k| self.hash(k)).collect();
        let mut guards = self.lock_many(&hashes);
        self.check_inputs(&mut guards, keys, &hashes)?;
        let inputs = self.inputs_in(&guards, keys, &hashes);
        Ok(combine(SetOp::Inter, &inputs, &[], Aggregate::Sum, limit).len())
    }

    /// ZUNIONSTORE / ZINTERSTORE / ZDIFFSTORE: the result replaces `dest` (whatever it held,
    /// with no deadline); an empty result deletes it. Returns the result's size.
    pub fn zset_combine_store(
        &self,
        op: SetOp,
        dest: &[u8],
        keys: &[&[u8]],
        weights: &[f64],
        agg: Aggregate,
        pending: &mut Pending,
    ) -> Result<usize, KvError> {
        let now = now_ms();
        let (hashes, hd, mut guards) = self.lock_for_store(keys, dest);
        self.check_inputs(&mut guards, keys, &hashes)?;
        let inputs = self.inputs_in(&guards, keys, &hashes);
        let result = combine(op, &inputs, weights, agg, 0);
        let store_op = match op {
            SetOp::Union => Op::Zunionstore,
            SetOp::Inter => Op::Zinterstore,
            SetOp::Diff => Op::Zdiffstore,
        };
        Ok(self.store_zset(&mut guards, dest, hd, result, store_op, now, pending))
    }

    /// ZRANGESTORE: the members ZRANGE would return replace `dest`. Returns their number.
    pub fn zrangestore(
        &self,
        dest: &[u8],
        src: &[u8],
        spec: ZRangeSpec<'_>,
        rev: bool,
        limit: Option<(i64, i64)>,
        pending: &mut Pending,
    ) -> Result<usize, KvError> {
        let now = now_ms();
        let (hs, hd) = (self.hash(src), self.hash(dest));
        let mut guards = self.lock_many(&[hs, hd]);
        let g = self.guard_of(&mut guards, hs);
        let mut result = ZSet::default();
        if let Some(e) = self.find(g, hs, src, now, Find::Read) {
            let z = crate::typed::typed::<ZSet>(e)?;
            for (m, s) in z.by_rank(spec.ranks(z, rev, limit)) {
                result.insert(m, s);
            }
        }
        let op = Op::Zrangestore;
        Ok(self.store_zset(&mut guards, dest, hd, result, op, now, pending))
    }

    /// A sorted set result replaces `dest` ([`Keyspace::store_result`]); its size.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn store_zset(
        &self,
        guards: &mut [Guard<'_>],
        dest: &[u8],
        hd: u64,
        result: ZSet,
        op: Op,
        now: u64,
        pending: &mut Pending,
    ) -> usize {
        let len = result.len();
        self.store_result(guards, dest, hd, (result, len), op, now, pending)
    }

    /// Checks that each of `keys` (in locked shards) is a sorted set, a set or missing (reads:
    /// hits and misses counted).
    fn check_inputs(
        &self,
        guards: &mut [Guard<'_>],
        keys: &[&[u8]],
        hashes: &[u64],
    ) -> Result<(), KvError> {
        self.check_each(guards, keys, hashes, |e| match e.collection() {
            Some(Collection::Zset(_) | Collection::Set(_)) => Ok(()),
            _ => Err(KvError::WrongType),
        })
    }

    /// The inputs of `keys` in locked shards (checked by [`Keyspace::check_inputs`]).
    fn inputs_in<'g>(
        &self,
        guards: &'g [Guard<'_>],
        keys: &[&[u8]],
        hashes: &[u64],
    ) -> Vec<Option<Input<'g>>> {
        keys.iter()
            .zip(hashes)
            .map(|(key, &h)| {
                let i = self.shard_index(h);
                let g = guards.iter().find(|g| g.index == i)?;
                match g.get(h, key)?.collection()? {
                    Collection::Zset(z) => Some(Input::Zset(z)),
                    Collection::Set(s) => Some(Input::Set(s)),
                    _ => None,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{mem, with_feed};
    use crate::{KvConfig, SetOptions};

    fn all(ks: &Keyspace, key: &[u8]) -> Vec<(String, f64)> {
        ks.read_zset(key, |z| {
            z.map(|z| {
                z.iter()
                    .map(|(m, s)| (String::from_utf8_lossy(m).into_owned(), s))
                    .collect()
            })
            .unwrap_or_default()
        })
        .unwrap()
    }

    fn pairs(items: &[(&str, f64)]) -> Vec<(String, f64)> {
        items.iter().map(|(m, s)| (m.to_string(), *s)).collect()
    }

    #[test]
    fn zadd_flags() {
        let ks = mem();
        let mut p = Pending::default();
        let o = ZaddOptions::default();
        let add = |items: &[(f64, &[u8])], o, p: &mut Pending| ks.zadd(b"z", items, o, p);
        assert_eq!(
            add(&[(1.0, b"a"), (2.0, b"b")], o, &mut p),
            Ok(ZaddReply::Count(2))
        );
        let ch = ZaddOptions { ch: true, ..o };
        assert_eq!(
            add(&[(5.0, b"a"), (2.0, b"b")], ch, &mut p),
            Ok(ZaddReply::Count(1))
        );
        let xx = ZaddOptions { xx: true, ..o };
        assert_eq!(add(&[(1.0, b"new")], xx, &mut p), Ok(ZaddReply::Count(0)));
        let gt = ZaddOptions {
            gt: true,
            ch: true,
            ..o
        };
        assert_eq!(
            add(&[(1.0, b"a"), (9.0, b"b")], gt, &mut p),
            Ok(ZaddReply::Count(1))
        );
        let incr = ZaddOptions { incr: true, ..o };
        assert_eq!(
            add(&[(1.5, b"a")], incr, &mut p),
            Ok(ZaddReply::Score(Some(6.5)))
        );
        let nx_incr = ZaddOptions { nx: true, ..incr };
        assert_eq!(
            add(&[(1.0, b"a")], nx_incr, &mut p),
            Ok(ZaddReply::Score(None))
        );
        add(&[(f64::INFINITY, b"i")], o, &mut p).unwrap();
        assert_eq!(
            add(&[(f64::NEG_INFINITY, b"i")], incr, &mut p),
            Err(KvError::ScoreNan)
        );
        assert_eq!(
            all(&ks, b"z"),
            pairs(&[("a", 6.5), ("b", 9.0), ("i", f64::INFINITY)])
        );
        // XX on a missing key creates nothing.
        assert_eq!(
            ks.zadd(b"none", &[(1.0, b"a")], xx, &mut p),
            Ok(ZaddReply::Count(0))
        );
        assert!(!ks.contains(b"none"));
    }

    #[test]
    fn removals_pops_and_the_empty_zset_goes() {
        let (ks, feed) = with_feed(KvConfig::default());
        let mut p = Pending::default();
        let items: Vec<(f64, Vec<u8>)> = (0..10).map(|i| (i as f64, vec![b'a' + i])).collect();
        let refs: Vec<(f64, &[u8])> = items.iter().map(|(s, m)| (*s, &m[..])).collect();
        ks.zadd(b"z", &refs, ZaddOptions::default(), &mut p)
            .unwrap();
        assert_eq!(ks.zrem(b"z", &[b"a", b"zz"], &mut p), Ok(1));
        assert_eq!(ks.zrem_range(b"z", ZRangeSpec::Rank(0, 1), &mut p), Ok(2));
        let min = ScoreBound {
            value: 5.0,
            exclusive: true,
        };
        let max = ScoreBound {
            value: 7.0,
            exclusive: false,
        };
        assert_eq!(
            ks.zrem_range(b"z", ZRangeSpec::Score(min, max), &mut p),
            Ok(2)
        );
        let popped = ks.zpop(b"z", 2, true, &mut p).unwrap();
        assert_eq!(
            popped,
            vec![(Box::from(&b"j"[..]), 9.0), (Box::from(&b"i"[..]), 8.0)]
        );
        assert_eq!(all(&ks, b"z"), pairs(&[("d", 3.0), ("e", 4.0), ("f", 5.0)]));
        assert_eq!(ks.zpop(b"z", 100, false, &mut p).map(|v| v.len()), Ok(3));
        assert!(!ks.contains(b"z"));
        let ops: Vec<String> = feed.ops().into_iter().map(|(op, _)| op).collect();
        assert_eq!(
            ops,
            [
                "zadd",
                "zrem",
                "zrembyrank",
                "zrembyscore",
                "zpopmax",
                "zpopmin",
                "del"
            ]
        );
    }

    #[test]
    fn range_specs_with_rev_and_limit() {
        let mut z = ZSet::default();
        for (i, m) in ["a", "b", "c", "d", "e"].iter().enumerate() {
            z.insert(m.as_bytes(), i as f64);
        }
        let rank = ZRangeSpec::Rank(0, 1);
        assert_eq!(rank.ranks(&z, false, None), 0..2);
        assert_eq!(rank.ranks(&z, true, None), 3..5);
        let b = |value| ScoreBound {
            value,
            exclusive: false,
        };
        let score = ZRangeSpec::Score(b(1.0), b(4.0));
        assert_eq!(score.ranks(&z, false, Some((1, 2))), 2..4);
        assert_eq!(score.ranks(&z, true, Some((1, 2))), 2..4);
        assert_eq!(score.ranks(&z, true, Some((0, 1))), 4..5);
        assert_eq!(score.ranks(&z, false, Some((1, -1))), 2..5);
        assert_eq!(score.ranks(&z, false, Some((-1, 2))), 0..0);
        assert_eq!(score.ranks(&z, false, Some((100, 2))), 5..5);
    }

    #[test]
    fn dump_round_trips_and_refuses_bad_scores() {
        let ks = mem();
        let mut p = Pending::default();
        let items: [(f64, &[u8]); 3] = [(0.5, b"a"), (f64::INFINITY, b"b"), (-3.0, b"12")];
        ks.zadd(b"z", &items, ZaddOptions::default(), &mut p)
            .unwrap();
        let payload = ks.dump(b"z").unwrap();
        let restored = crate::dump::restore_value(&payload).unwrap();
        let want = ks.read_zset(b"z", |z| z.cloned()).unwrap().unwrap();
        assert_eq!(restored, crate::Value::Collection(Collection::from(want)));
        let mut nan = vec![5, 1, 1, b'a'];
        nan.extend_from_slice(&f64::NAN.to_le_bytes());
        assert!(crate::dump::decode_value(&nan).is_err());
        // A member twice, a score cut short.
        let mut twice = vec![5, 2, 1, b'a'];
        twice.extend_from_slice(&1f64.to_le_bytes());
        twice.extend_from_slice(&[1, b'a']);
        twice.extend_from_slice(&2f64.to_le_bytes());
        assert!(crate::dump::decode_value(&twice).is_err());
        assert!(crate::dump::decode_value(&[5, 1, 1, b'a', 0, 0]).is_err());
    }

    #[test]
    fn algebra_over_zsets_and_sets() {
        let ks = mem();
        let mut p = Pending::default();
        let o = ZaddOptions::default();
        ks.zadd(b"a", &[(1.0, b"x"), (2.0, b"y")], o, &mut p)
            .unwrap();
        ks.zadd(b"b", &[(10.0, b"y"), (20.0, b"z")], o, &mut p)
            .unwrap();
        ks.sadd(b"s", &[b"y", b"w"], &mut p).unwrap();
        let get = |op, keys: &[&[u8]], w: &[f64], agg| {
            ks.zset_combine(op, keys, w, agg, |z| {
                z.iter()
                    .map(|(m, s)| (String::from_utf8_lossy(m).into_owned(), s))
                    .collect::<Vec<_>>()
            })
            .unwrap()
        };
        let sum = Aggregate::Sum;
        assert_eq!(
            get(SetOp::Union, &[b"a", b"b"], &[], sum),
            pairs(&[("x", 1.0), ("y", 12.0), ("z", 20.0)])
        );
        assert_eq!(
            get(
                SetOp::Inter,
                &[b"a", b"b", b"s"],
                &[2.0, 1.0, 3.0],
                Aggregate::Max
            ),
            pairs(&[("y", 10.0)])
        );
        assert_eq!(
            get(SetOp::Diff, &[b"a", b"s"], &[], sum),
            pairs(&[("x", 1.0)])
        );
        assert_eq!(get(SetOp::Inter, &[b"a", b"none"], &[], sum), pairs(&[]));
        assert_eq!(ks.zintercard(&[b"a", b"b"], 0), Ok(1));
        assert_eq!(
            ks.zset_combine_store(SetOp::Union, b"d", &[b"a", b"s"], &[], sum, &mut p),
            Ok(3)
        );
        assert_eq!(all(&ks, b"d"), pairs(&[("w", 1.0), ("x", 1.0), ("y", 3.0)]));
        let spec = ZRangeSpec::Rank(0, 0);
        assert_eq!(ks.zrangestore(b"d", b"b", spec, true, None, &mut p), Ok(1));
        assert_eq!(all(&ks, b"d"), pairs(&[("z", 20.0)]));
        assert_eq!(
            ks.zrangestore(b"d", b"none", spec, false, None, &mut p),
            Ok(0)
        );
        assert!(!ks.contains(b"d"));
        ks.set(b"str", b"v", SetOptions::default(), None, &mut p)
            .unwrap();
        assert_eq!(
            ks.zset_combine(SetOp::Union, &[b"a", b"str"], &[], sum, |_| ()),
            Err(KvError::WrongType)
        );
        // inf * 0 and inf + -inf are 0, as in Redis.
        ks.zadd(b"inf", &[(f64::INFINITY, b"x")], o, &mut p)
            .unwrap();
        ks.zadd(b"ninf", &[(f64::NEG_INFINITY, b"x")], o, &mut p)
            .unwrap();
        assert_eq!(
            get(SetOp::Union, &[b"inf"], &[0.0], sum),
            pairs(&[("x", 0.0)])
        );
        assert_eq!(
            get(SetOp::Union, &[b"inf", b"ninf"], &[], sum),
            pairs(&[("x", 0.0)])
        );
    }
}
