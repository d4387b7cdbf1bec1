//! RENAME, RENAMENX and COPY: a value (with its deadline) moved or copied to another key, both
//! shards locked together, so no client sees the key in both places or in neither.

use crate::clock::now_ms;
use crate::error::KvError;
use crate::feed::Op;
use crate::keyspace::{Emit, Find, Keyspace, Pending};

impl Keyspace {
    /// RENAME (`replace`) or RENAMENX: whether the key moved. The destination's old value, if
    /// any, is dropped (RENAME) or keeps the source in place (RENAMENX: `Ok(false)`). A
    /// collection moves without a copy.
    pub fn rename(
        &self,
        from: &[u8],
        to: &[u8],
        replace: bool,
        pending: &mut Pending,
    ) -> Result<bool, KvError> {
        self.rename_as(from, to, replace, (Op::RenameFrom, Op::RenameTo), pending)
    }

    /// RENAME announcing the source's and destination's changes as `ops` (MOVE's own).
    pub(crate) fn rename_as(
        &self,
        from: &[u8],
        to: &[u8],
        replace: bool,
        ops: (Op, Op),
        pending: &mut Pending,
    ) -> Result<bool, KvError> {
        let now = now_ms();
        let (hf, ht) = (self.hash(from), self.hash(to));
        let mut guards = self.lock_many(&[hf, ht]);
        let g = self.guard_of(&mut guards, hf);
        if self.find(g, hf, from, now, Find::Peek).is_none() {
            return Err(KvError::NoSuchKey);
        }
        if from == to {
            return Ok(replace);
        }
        let gt = self.guard_of(&mut guards, ht);
        let exists = self.find(gt, ht, to, now, Find::Peek).is_some();
        if exists && !replace {
            return Ok(false);
        }
        let g = self.guard_of(&mut guards, hf);
        let Some(src) = g.remove(hf, from) else {
            return Err(KvError::NoSuchKey);
        };
        self.emit(Emit::new(ops.0, from), now, pending);
        let moved = src.renamed(to);
        let deadline = moved.deadline();
        self.emit_whole(&moved, ops.1, !exists, now, pending);
        let gt = self.guard_of(&mut guards, ht);
        gt.put(ht, moved, self.hasher());
        if let Some(d) = deadline {
            self.timer.schedule(d);
        }
        Ok(true)
    }

    /// COPY: whether `from`'s value and deadline were copied to `to` (not when `from` is
    /// missing, nor when `to` exists and `replace` is not set). The caller refuses `from ==
    /// to`.
    pub fn copy(&self, from: &[u8], to: &[u8], replace: bool, pending: &mut Pending) -> bool {
        let now = now_ms();
        let (hf, ht) = (self.hash(from), self.hash(to));
        let mut guards = self.lock_many(&[hf, ht]);
        let gt = self.guard_of(&mut guards, ht);
        let old_clock = self.find(gt, ht, to, now, Find::Peek).map(|e| e.clock());
        let g = self.guard_of(&mut guards, hf);
        let Some(src) = self.find(g, hf, from, now, Find::Peek) else {
            return false;
        };
        if old_clock.is_some() && !replace {
            return false;
        }
        let copy = src.copied(to, self.write_clock(old_clock, now));
        let deadline = copy.deadline();
        self.emit_whole(&copy, Op::CopyTo, old_clock.is_none(), now, pending);
        let gt = self.guard_of(&mut guards, ht);
        gt.put(ht, copy, self.hasher());
        if let Some(d) = deadline {
            self.timer.schedule(d);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use crate::test_support::{with_feed, Collect};
    use crate::{KvConfig, KvError, Pending, SetOptions};

    fn ops(feed: &Collect) -> Vec<(String, String)> {
        feed.ops()
            .into_iter()
            .filter(|(op, _)| op != "set")
            .collect()
    }

    #[test]
    fn rename_moves_value_and_deadline_and_tells_the_feed() {
        let (ks, feed) = with_feed(KvConfig::default());
        let mut p = Pending::default();
        ks.set(b"a", b"1", SetOptions::default(), None, &mut p)
            .unwrap();
        let at = ks.now_ms() + 100_000;
        ks.expire(b"a", at as i64, Default::default(), &mut p);
        assert_eq!(ks.rename(b"a", b"b", true, &mut p), Ok(true));
        assert!(!ks.contains(b"a"));
        ks.get(b"b", |v| assert_eq!(v, Some(&b"1"[..]))).unwrap();
        assert_eq!(ks.deadline(b"b"), Some(Some(at)));
        assert_eq!(
            ops(&feed)[1..],
            [
                ("rename_from".to_string(), "a".to_string()),
                ("rename_to".to_string(), "b".to_string())
            ]
        );
        assert_eq!(ks.rename(b"a", b"c", true, &mut p), Err(KvError::NoSuchKey));
        assert_eq!(ks.rename(b"b", b"b", true, &mut p), Ok(true));
        assert_eq!(ks.rename(b"b", b"b", false, &mut p), Ok(false));
        ks.set(b"c", b"2", SetOptions::default(), None, &mut p)
            .unwrap();
        assert_eq!(ks.rename(b"b", b"c", false, &mut p), Ok(false));
        ks.get(b"c", |v| assert_eq!(v, Some(&b"2"[..]))).unwrap();
        assert_eq!(ks.rename(b"b", b"c", true, &mut p), Ok(true));
        ks.get(b"c", |v| assert_eq!(v, Some(&b"1"[..]))).unwrap();
        assert_eq!(ks.dbsize(), 1);
    }

    #[test]
    fn copy_keeps_the_source_and_replaces_only_when_asked() {
        let (ks, feed) = with_feed(KvConfig::default());
        let mut p = Pending::default();
        assert!(!ks.copy(b"none", b"x", true, &mut p));
        ks.set(b"a", b"1", SetOptions::default(), None, &mut p)
            .unwrap();
        assert!(ks.copy(b"a", b"b", false, &mut p));
        ks.set(b"a", b"2", SetOptions::default(), None, &mut p)
            .unwrap();
        assert!(!ks.copy(b"a", b"b", false, &mut p));
        ks.get(b"b", |v| assert_eq!(v, Some(&b"1"[..]))).unwrap();
        assert!(ks.copy(b"a", b"b", true, &mut p));
        ks.get(b"b", |v| assert_eq!(v, Some(&b"2"[..]))).unwrap();
        ks.get(b"a", |v| assert_eq!(v, Some(&b"2"[..]))).unwrap();
        assert_eq!(
            ops(&feed),
            vec![("copy_to".to_string(), "b".to_string()); 2]
        );
    }
}
