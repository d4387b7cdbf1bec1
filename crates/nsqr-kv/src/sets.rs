//! Set commands that change a set (SADD, SREM, SPOP, SMOVE) and the set algebra of SINTER,
//! SUNION and SDIFF, with or without STORE. Reads of one set (SISMEMBER, SMEMBERS, SSCAN, ...)
//! see it through [`Keyspace::read_set`]; random picks are `random_indices`.

use crate::clock::now_ms;
use crate::collection::Set;
use crate::error::KvError;
use crate::feed::Op;
use crate::keyspace::{Find, Guard, Keyspace, Pending};
use crate::typed::typed;

/// SINTER, SUNION or SDIFF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOp {
    Inter,
    Union,
    Diff,
}

impl SetOp {
    fn store_op(self) -> Op {
        match self {
            SetOp::Inter => Op::Sinterstore,
            SetOp::Union => Op::Sunionstore,
            SetOp::Diff => Op::Sdiffstore,
        }
    }
}

/// `op` over `sets` (`None`: a missing key, an empty set). `limit` stops an intersection
/// once it has that many members (SINTERCARD; 0 for no limit).
fn combine(op: SetOp, sets: &[Option<&Set>], limit: usize) -> Set {
    let mut out = Set::default();
    match op {
        SetOp::Inter => {
            let Some(mut all) = sets.iter().copied().collect::<Option<Vec<&Set>>>() else {
                return out;
            };
            all.sort_by_key(|s| s.len());
            let Some((first, rest)) = all.split_first() else {
                return out;
            };
            for m in first.iter() {
                if rest.iter().all(|s| s.contains(m)) {
                    out.insert(m);
                    if out.len() == limit {
                        break;
                    }
                }
            }
        }
        SetOp::Union => {
            for m in sets.iter().flatten().flat_map(|s| s.iter()) {
                out.insert(m);
            }
        }
        SetOp::Diff => {
            let Some(Some(first)) = sets.first() else {
                return out;
            };
            for m in first.iter() {
                if !sets[1..].iter().flatten().any(|s| s.contains(m)) {
                    out.insert(m);
                }
            }
        }
    }
    out
}

impl Keyspace {
    /// `f` sees the set of `key`, or `None` if it does not exist; WRONGTYPE for another type.
    pub fn read_set<R>(&self, key: &[u8], f: impl FnOnce(Option<&Set>) -> R) -> Result<R, KvError> {
        self.read_typed(key, f)
    }

    /// SADD: how many members are new.
    pub fn sadd(
        &self,
        key: &[u8],
        members: &[&[u8]],
        pending: &mut Pending,
    ) -> Result<usize, KvError> {
        self.add_or_remove(key, members, true, pending)
    }

    /// SREM: how many members were removed.
    pub fn srem(
        &self,
        key: &[u8],
        members: &[&[u8]],
        pending: &mut Pending,
    ) -> Result<usize, KvError> {
        self.add_or_remove(key, members, false, pending)
    }

    fn add_or_remove(
        &self,
        key: &[u8],
        members: &[&[u8]],
        add: bool,
        pending: &mut Pending,
    ) -> Result<usize, KvError> {
        self.write_typed(key, pending, |s: &mut Set, touched| {
            let mut n = 0;
            for m in members {
                let changed = if add { s.insert(m) } else { s.remove(m) };
                if changed {
                    n += 1;
                    touched.add(m);
                }
            }
            let op = if add { Op::Sadd } else { Op::Srem };
            Ok((n, (n > 0).then_some(op)))
        })
    }

    /// SPOP: up to `count` members removed at random (every one if `count` is the size or
    /// more).
    pub fn spop(
        &self,
        key: &[u8],
        count: usize,
        pending: &mut Pending,
    ) -> Result<Vec<Box<[u8]>>, KvError> {
        self.write_typed(key, pending, |s: &mut Set, touched| {
            let mut out = Vec::with_capacity(count.min(s.len()));
            while out.len() < count && !s.is_empty() {
                let Some(m) = s.take(fastrand::usize(..s.len())) else {
                    break;
                };
                touched.add(&m);
                out.push(m);
            }
            let op = (!out.is_empty()).then_some(Op::Spop);
            Ok((out, op))
        })
    }

    /// SMOVE: whether `member` moved from `src` to `dst`. Both must be sets (or `dst`
    /// missing); a missing `src` moves nothing.
    pub fn smove(
        &self,
        src: &[u8],
        dst: &[u8],
        member: &[u8],
        pending: &mut Pending,
    ) -> Result<bool, KvError> {
        let now = now_ms();
        let (hs, hd) = (self.hash(src), self.hash(dst));
        let mut guards = self.lock_many(&[hs, hd]);
        let gd = self.guard_of(&mut guards, hd);
        let dst_ok = self
            .find(gd, hd, dst, now, Find::Peek)
            .is_none_or(|e| typed::<Set>(e).is_ok());
        let g = self.guard_of(&mut guards, hs);
        let Some(e) = self.find(g, hs, src, now, Find::Peek) else {
            return Ok(false);
        };
        let has = typed::<Set>(e)?.contains(member);
        if !dst_ok {
            return Err(KvError::WrongType);
        }
        if src == dst || !has {
            return Ok(has);
        }
        self.write_typed_in(g, hs, src, now, pending, |s: &mut Set, touched| {
            s.remove(member);
            touched.add(member);
            Ok(((), Some(Op::Srem)))
        })?;
        let gd = self.guard_of(&mut guards, hd);
        self.write_typed_in(gd, hd, dst, now, pending, |s: &mut Set, touched| {
            let new = s.insert(member);
            touched.add(member);
            Ok(((), new.then_some(Op::Sadd)))
        })?;
        Ok(true)
    }

    /// SINTER / SUNION / SDIFF: `f` sees the result. Every key must be a set or missing.
    pub fn set_combine<R>(
        &self,
        op: SetOp,
        keys: &[&[u8]],
        f: impl FnOnce(&Set) -> R,
    ) -> Result<R, KvError> {
        let hashes: Vec<u64> = keys.iter().map(|k| self.hash(k)).collect();
        let guards = self.lock_sets(keys, &hashes)?;
        let result = combine(op, &self.sets_in(&guards, keys, &hashes), 0);
        Ok(f(&result))
    }

    /// SINTERCARD: the size of the intersection, counting up to `limit` (0: no limit).
    pub fn sintercard(&self, keys: &[&[u8]], limit: usize) -> Result<usize, KvError> {
        let hashes: Vec<u64> = keys.iter().map(|k| self.hash(k)).collect();
        let guards = self.lock_sets(keys, &hashes)?;
        Ok(combine(SetOp::Inter, &self.sets_in(&guards, keys, &hashes), limit).len())
    }

    /// SINTERSTORE / SUNIONSTORE / SDIFFSTORE: the result replaces `dest` (whatever it held,
    /// with no deadline); an empty result deletes it. Returns the result's size.
    pub fn set_combine_store(
        &self,
        op: SetOp,
        dest: &[u8],
        keys: &[&[u8]],
        pending: &mut Pending,
    ) -> Result<usize, KvError> {
        let now = now_ms();
        let (hashes, hd, mut guards) = self.lock_for_store(keys, dest);
        self.check_sets(&mut guards, keys, &hashes)?;
        let result = combine(op, &self.sets_in(&guards, keys, &hashes), 0);
        let len = result.len();
        Ok(self.store_result(
            &mut guards,
            dest,
            hd,
            (result, len),
            op.store_op(),
            now,
            pending,
        ))
    }

    /// Locks the shards of `keys` and checks that each is a set or missing (reads: hits and
    /// misses counted).
    fn lock_sets(&self, keys: &[&[u8]], hashes: &[u64]) -> Result<Vec<Guard<'_>>, KvError> {
        let mut guards = self.lock_many(hashes);
        self.check_sets(&mut guards, keys, hashes)?;
        Ok(guards)
    }

    fn check_sets(
        &self,
        guards: &mut [Guard<'_>],
        keys: &[&[u8]],
        hashes: &[u64],
    ) -> Result<(), KvError> {
        self.check_each(guards, keys, hashes, |e| typed::<Set>(e).map(|_| ()))
    }

    /// The sets of `keys` in locked shards (checked by [`Keyspace::check_sets`]).
    fn sets_in<'g>(
        &self,
        guards: &'g [Guard<'_>],
        keys: &[&[u8]],
        hashes: &[u64],
    ) -> Vec<Option<&'g Set>> {
        keys.iter()
            .zip(hashes)
            .map(|(key, &h)| {
                let i = self.shard_index(h);
                let g = guards.iter().find(|g| g.index == i)?;
                g.get(h, key).and_then(|e| typed::<Set>(e).ok())
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{mem, with_feed};
    use crate::{KvConfig, SetOptions};

    fn members(ks: &Keyspace, key: &[u8]) -> Vec<Vec<u8>> {
        let mut v: Vec<Vec<u8>> = ks
            .read_set(key, |s| {
                s.map(|s| s.iter().map(<[u8]>::to_vec).collect())
                    .unwrap_or_default()
            })
            .unwrap();
        v.sort();
        v
    }

    fn v(items: &[&str]) -> Vec<Vec<u8>> {
        items.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    #[test]
    fn add_remove_pop_and_the_empty_set_goes() {
        let ks = mem();
        let mut p = Pending::default();
        assert_eq!(ks.sadd(b"s", &[b"a", b"b", b"a"], &mut p), Ok(2));
        assert_eq!(ks.srem(b"s", &[b"a", b"z"], &mut p), Ok(1));
        assert_eq!(members(&ks, b"s"), v(&["b"]));
        assert_eq!(ks.spop(b"s", 5, &mut p).map(|m| m.len()), Ok(1));
        assert!(!ks.contains(b"s"));
        assert_eq!(ks.spop(b"s", 1, &mut p), Ok(Vec::new()));
    }

    #[test]
    fn algebra_and_store() {
        let ks = mem();
        let mut p = Pending::default();
        ks.sadd(b"a", &[b"1", b"2", b"3"], &mut p).unwrap();
        ks.sadd(b"b", &[b"2", b"3", b"4"], &mut p).unwrap();
        let get = |op, keys: &[&[u8]]| {
            let mut r: Vec<Vec<u8>> = ks
                .set_combine(op, keys, |s| s.iter().map(<[u8]>::to_vec).collect())
                .unwrap();
            r.sort();
            r
        };
        assert_eq!(get(SetOp::Inter, &[b"a", b"b"]), v(&["2", "3"]));
        assert_eq!(get(SetOp::Union, &[b"a", b"b"]), v(&["1", "2", "3", "4"]));
        assert_eq!(get(SetOp::Diff, &[b"a", b"b"]), v(&["1"]));
        assert_eq!(get(SetOp::Inter, &[b"a", b"none"]), v(&[]));
        assert_eq!(ks.sintercard(&[b"a", b"b"], 1), Ok(1));
        assert_eq!(
            ks.set_combine_store(SetOp::Union, b"d", &[b"a", b"b"], &mut p),
            Ok(4)
        );
        assert_eq!(members(&ks, b"d").len(), 4);
        assert_eq!(
            ks.set_combine_store(SetOp::Inter, b"d", &[b"a", b"none"], &mut p),
            Ok(0)
        );
        assert!(!ks.contains(b"d"));
        ks.set(b"str", b"x", SetOptions::default(), None, &mut p)
            .unwrap();
        assert_eq!(
            ks.set_combine(SetOp::Union, &[b"a", b"str"], |_| ()),
            Err(KvError::WrongType)
        );
        // Many keys over several shards, the destination's among them or not.
        for i in 0..20u8 {
            ks.sadd(&[b'k', i], &[b"x", &[i]], &mut p).unwrap();
        }
        let keys: Vec<Vec<u8>> = (0..20u8).map(|i| vec![b'k', i]).collect();
        let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        assert_eq!(
            ks.set_combine_store(SetOp::Inter, b"far", &refs, &mut p),
            Ok(1)
        );
        assert_eq!(
            ks.set_combine_store(SetOp::Union, &[b'k', 3], &refs, &mut p),
            Ok(21)
        );
    }

    #[test]
    fn smove_between_sets() {
        let (ks, feed) = with_feed(KvConfig::default());
        let mut p = Pending::default();
        ks.sadd(b"a", &[b"m"], &mut p).unwrap();
        assert_eq!(ks.smove(b"a", b"b", b"zz", &mut p), Ok(false));
        assert_eq!(ks.smove(b"a", b"b", b"m", &mut p), Ok(true));
        assert!(!ks.contains(b"a"));
        assert_eq!(members(&ks, b"b"), v(&["m"]));
        assert_eq!(ks.smove(b"none", b"b", b"m", &mut p), Ok(false));
        ks.set(b"str", b"x", SetOptions::default(), None, &mut p)
            .unwrap();
        assert_eq!(
            ks.smove(b"b", b"str", b"m", &mut p),
            Err(KvError::WrongType)
        );
        assert_eq!(
            ks.smove(b"str", b"b", b"m", &mut p),
            Err(KvError::WrongType)
        );
        let ops: Vec<String> = feed.ops().into_iter().map(|(op, _)| op).collect();
        assert_eq!(ops, ["sadd", "srem", "del", "sadd", "set"]);
    }
}
