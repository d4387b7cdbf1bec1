//! List commands that change a list: LPUSH / RPUSH (and their X forms), LPOP / RPOP (with a
//! count), LSET, LINSERT, LREM, LTRIM, LMOVE (and RPOPLPUSH), LMPOP. Reads (LLEN, LRANGE,
//! LINDEX, LPOS) see the list through [`Keyspace::read_list`].

use crate::clock::now_ms;
use crate::collection::List;
use crate::error::KvError;
use crate::feed::Op;
use crate::keyspace::{Find, Keyspace, Pending};
use crate::typed::typed;

/// What LMPOP popped: the key, and its elements.
pub type Popped = (Vec<u8>, Vec<Box<[u8]>>);

fn push_op(left: bool) -> Op {
    if left {
        Op::Lpush
    } else {
        Op::Rpush
    }
}

fn pop_op(left: bool) -> Op {
    if left {
        Op::Lpop
    } else {
        Op::Rpop
    }
}

impl Keyspace {
    /// `f` sees the list of `key`, or `None` if it does not exist; WRONGTYPE for another type.
    pub fn read_list<R>(
        &self,
        key: &[u8],
        f: impl FnOnce(Option<&List>) -> R,
    ) -> Result<R, KvError> {
        self.read_typed(key, f)
    }

    /// LPUSH (`left`) / RPUSH, or with `existing` LPUSHX / RPUSHX (nothing for a missing key):
    /// the list's length after.
    pub fn push(
        &self,
        key: &[u8],
        items: &[&[u8]],
        left: bool,
        existing: bool,
        pending: &mut Pending,
    ) -> Result<usize, KvError> {
        self.write_typed(key, pending, |l: &mut List, _| {
            if existing && l.is_empty() {
                return Ok((0, None));
            }
            for e in items {
                l.push(e, left);
            }
            Ok((l.len(), Some(push_op(left))))
        })
    }

    /// LPOP (`left`) / RPOP: up to `count` elements.
    pub fn pop(
        &self,
        key: &[u8],
        left: bool,
        count: usize,
        pending: &mut Pending,
    ) -> Result<Vec<Box<[u8]>>, KvError> {
        self.write_typed(key, pending, |l: &mut List, _| {
            let mut out = Vec::with_capacity(count.min(l.len()));
            while out.len() < count {
                match l.pop(left) {
                    Some(e) => out.push(e),
                    None => break,
                }
            }
            let op = (!out.is_empty()).then_some(pop_op(left));
            Ok((out, op))
        })
    }

    /// LSET: `ERR no such key` for a missing key, `ERR index out of range` past either end.
    pub fn lset(
        &self,
        key: &[u8],
        index: i64,
        value: &[u8],
        pending: &mut Pending,
    ) -> Result<(), KvError> {
        self.write_typed(key, pending, |l: &mut List, _| {
            if l.is_empty() {
                return Err(KvError::NoSuchKey);
            }
            let i = l.position(index).ok_or(KvError::IndexOutOfRange)?;
            l.set(i, value);
            Ok(((), Some(Op::Lset)))
        })
    }

    /// LINSERT: the length after, -1 if `pivot` is not in the list, 0 for a missing key.
    pub fn linsert(
        &self,
        key: &[u8],
        before: bool,
        pivot: &[u8],
        value: &[u8],
        pending: &mut Pending,
    ) -> Result<i64, KvError> {
        self.write_typed(key, pending, |l: &mut List, _| {
            if l.is_empty() {
                return Ok((0, None));
            }
            let Some(at) = l.iter().position(|e| e == pivot) else {
                return Ok((-1, None));
            };
            l.insert(if before { at } else { at + 1 }, value);
            Ok((l.len() as i64, Some(Op::Linsert)))
        })
    }

    /// LREM: removes up to `count` elements equal to `value` (from the head if `count` > 0,
    /// from the tail if < 0, all if 0); how many.
    pub fn lrem(
        &self,
        key: &[u8],
        count: i64,
        value: &[u8],
        pending: &mut Pending,
    ) -> Result<usize, KvError> {
        self.write_typed(key, pending, |l: &mut List, _| {
            let n = l.remove_equal(value, count);
            Ok((n, (n > 0).then_some(Op::Lrem)))
        })
    }

    /// LTRIM: keeps `start..=stop` (clamped as LRANGE clamps); an empty range deletes the key.
    pub fn ltrim(
        &self,
        key: &[u8],
        start: i64,
        stop: i64,
        pending: &mut Pending,
    ) -> Result<(), KvError> {
        self.write_typed(key, pending, |l: &mut List, _| {
            if l.is_empty() {
                return Ok(((), None));
            }
            match l.range(start, stop) {
                Some(r) => l.keep(r),
                None => l.keep(0..0),
            }
            Ok(((), Some(Op::Ltrim)))
        })
    }

    /// LMOVE (and RPOPLPUSH): moves the element at one end of `src` to one end of `dst`;
    /// `None` if `src` is missing. Both must be lists (or `dst` missing). Events as Redis
    /// sends them: the push on `dst`, then the pop on `src` (then `del` if it emptied).
    pub fn lmove(
        &self,
        src: &[u8],
        dst: &[u8],
        from_left: bool,
        to_left: bool,
        pending: &mut Pending,
    ) -> Result<Option<Box<[u8]>>, KvError> {
        let now = now_ms();
        let (hs, hd) = (self.hash(src), self.hash(dst));
        let mut guards = self.lock_many(&[hs, hd]);
        let g = self.guard_of(&mut guards, hs);
        let Some(e) = self.find(g, hs, src, now, Find::Peek) else {
            return Ok(None);
        };
        let list = typed::<List>(e)?;
        let end = if from_left {
            list.iter().next()
        } else {
            list.iter().next_back()
        };
        let Some(value) = end.map(Box::<[u8]>::from) else {
            return Ok(None);
        };
        let gd = self.guard_of(&mut guards, hd);
        if let Some(d) = self.find(gd, hd, dst, now, Find::Peek) {
            typed::<List>(d)?;
        }
        if src == dst {
            self.write_typed_in(gd, hd, dst, now, pending, |l: &mut List, _| {
                if let Some(e) = l.pop(from_left) {
                    l.push(&e, to_left);
                }
                Ok(((), Some(push_op(to_left))))
            })?;
            if let Some(entry) = gd.get(hd, dst) {
                self.emit_whole(entry, pop_op(from_left), false, now, pending);
            }
            return Ok(Some(value));
        }
        self.write_typed_in(gd, hd, dst, now, pending, |l: &mut List, _| {
            l.push(&value, to_left);
            Ok(((), Some(push_op(to_left))))
        })?;
        let g = self.guard_of(&mut guards, hs);
        self.write_typed_in(g, hs, src, now, pending, |l: &mut List, _| {
            l.pop(from_left);
            Ok(((), Some(pop_op(from_left))))
        })?;
        Ok(Some(value))
    }

    /// LMPOP: pops up to `count` elements from the first of `keys` that is a non-empty list;
    /// that key and its elements, or `None`. Every key must be a list or missing, checked in
    /// order up to the one popped from.
    pub fn lmpop(
        &self,
        keys: &[&[u8]],
        left: bool,
        count: usize,
        pending: &mut Pending,
    ) -> Result<Option<Popped>, KvError> {
        let now = now_ms();
        let hashes: Vec<u64> = keys.iter().map(|k| self.hash(k)).collect();
        let mut guards = self.lock_many(&hashes);
        for (key, &h) in keys.iter().zip(&hashes) {
            let g = self.guard_of(&mut guards, h);
            let Some(e) = self.find(g, h, key, now, Find::Peek) else {
                continue;
            };
            typed::<List>(e)?;
            let popped = self.write_typed_in(g, h, key, now, pending, |l: &mut List, _| {
                let mut out = Vec::new();
                while out.len() < count {
                    match l.pop(left) {
                        Some(e) => out.push(e),
                        None => break,
                    }
                }
                Ok((out, Some(pop_op(left))))
            })?;
            return Ok(Some((key.to_vec(), popped)));
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{mem, with_feed};
    use crate::{KvConfig, SetOptions};

    fn items(ks: &Keyspace, key: &[u8]) -> Vec<Vec<u8>> {
        ks.read_list(key, |l| {
            l.map(|l| l.iter().map(<[u8]>::to_vec).collect())
                .unwrap_or_default()
        })
        .unwrap()
    }

    fn v(items: &[&str]) -> Vec<Vec<u8>> {
        items.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    #[test]
    fn push_pop_and_the_empty_list_goes() {
        let ks = mem();
        let mut p = Pending::default();
        assert_eq!(ks.push(b"l", &[b"a", b"b"], true, false, &mut p), Ok(2));
        assert_eq!(ks.push(b"l", &[b"c"], false, false, &mut p), Ok(3));
        assert_eq!(items(&ks, b"l"), v(&["b", "a", "c"]));
        assert_eq!(ks.push(b"none", &[b"x"], true, true, &mut p), Ok(0));
        assert!(!ks.contains(b"none"));
        let popped = ks.pop(b"l", false, 2, &mut p).unwrap();
        assert_eq!(popped, vec![b"c"[..].into(), b"a"[..].into()]);
        assert_eq!(ks.pop(b"l", true, 5, &mut p).unwrap().len(), 1);
        assert!(!ks.contains(b"l"));
    }

    #[test]
    fn edits() {
        let ks = mem();
        let mut p = Pending::default();
        ks.push(b"l", &[b"a", b"b", b"a", b"c", b"a"], false, false, &mut p)
            .unwrap();
        assert_eq!(ks.lset(b"l", -1, b"z", &mut p), Ok(()));
        assert_eq!(
            ks.lset(b"l", 9, b"z", &mut p),
            Err(KvError::IndexOutOfRange)
        );
        assert_eq!(ks.lset(b"none", 0, b"z", &mut p), Err(KvError::NoSuchKey));
        assert_eq!(ks.linsert(b"l", true, b"b", b"x", &mut p), Ok(6));
        assert_eq!(ks.linsert(b"l", false, b"nope", b"x", &mut p), Ok(-1));
        assert_eq!(items(&ks, b"l"), v(&["a", "x", "b", "a", "c", "z"]));
        assert_eq!(ks.lrem(b"l", -1, b"a", &mut p), Ok(1));
        assert_eq!(items(&ks, b"l"), v(&["a", "x", "b", "c", "z"]));
        assert_eq!(ks.ltrim(b"l", 1, -2, &mut p), Ok(()));
        assert_eq!(items(&ks, b"l"), v(&["x", "b", "c"]));
        assert_eq!(ks.ltrim(b"l", 5, 10, &mut p), Ok(()));
        assert!(!ks.contains(b"l"));
    }

    #[test]
    fn moves_and_multi_pops() {
        let (ks, feed) = with_feed(KvConfig::default());
        let mut p = Pending::default();
        ks.push(b"a", &[b"1", b"2"], false, false, &mut p).unwrap();
        assert_eq!(
            ks.lmove(b"a", b"b", true, false, &mut p),
            Ok(Some(b"1"[..].into()))
        );
        assert_eq!(
            ks.lmove(b"a", b"a", true, false, &mut p),
            Ok(Some(b"2"[..].into()))
        );
        assert_eq!(
            ks.lmove(b"a", b"b", false, true, &mut p),
            Ok(Some(b"2"[..].into()))
        );
        assert_eq!(items(&ks, b"b"), v(&["2", "1"]));
        assert!(!ks.contains(b"a"));
        assert_eq!(ks.lmove(b"none", b"b", true, true, &mut p), Ok(None));
        ks.set(b"s", b"x", SetOptions::default(), None, &mut p)
            .unwrap();
        assert_eq!(
            ks.lmove(b"b", b"s", true, true, &mut p),
            Err(KvError::WrongType)
        );
        assert_eq!(
            ks.lmpop(&[b"none", b"b"], true, 5, &mut p),
            Ok(Some((
                b"b".to_vec(),
                vec![b"2"[..].into(), b"1"[..].into()]
            )))
        );
        assert_eq!(ks.lmpop(&[b"none"], true, 5, &mut p), Ok(None));
        assert_eq!(ks.lmpop(&[b"s"], true, 5, &mut p), Err(KvError::WrongType));
        let ops: Vec<String> = feed.ops().into_iter().map(|(op, _)| op).collect();
        assert_eq!(
            ops,
            [
                "rpush", "rpush", "lpop", "rpush", "lpop", "lpush", "rpop", "del", "set", "lpop",
                "del"
            ]
        );
    }
}
