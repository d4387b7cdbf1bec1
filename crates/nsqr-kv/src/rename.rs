//! RENAME, RENAMENX and COPY: a value (with its deadline) moved or copied to another key, both
//! shards locked together, so no client sees the key in both places or in neither.

use crate::clock::now_ms;
use crate::error::KvError;
use crate::feed::Op;
use crate::keyspace::{Emit, Keyspace, Pending};

impl Keyspace {
    /// RENAME (`replace`) or RENAMENX: whether the key moved. The destination's old value, if
    /// any, is dropped (RENAME) or keeps the source in place (RENAMENX: `Ok(false)`).
    pub fn rename(
        &self,
        from: &[u8],
        to: &[u8],
        replace: bool,
        pending: &mut Pending,
    ) -> Result<bool, KvError> {
        let now = now_ms();
        let (hf, ht) = (self.hash(from), self.hash(to));
        let mut guards = self.lock_many(&[hf, ht]);
        let g = self.guard_of(&mut guards, hf);
        let Some(src) = self.live(g, hf, from, now) else {
            return Err(KvError::NoSuchKey);
        };
        if from == to {
            return Ok(replace);
        }
        let (value, deadline, clock) = (src.value().to_vec(), src.deadline(), src.clock());
        let gt = self.guard_of(&mut guards, ht);
        let exists = self.live(gt, ht, to, now).is_some();
        if exists && !replace {
            return Ok(false);
        }
        let g = self.guard_of(&mut guards, hf);
        g.remove(hf, from);
        self.emit(Emit::new(Op::RenameFrom, from), now, pending);
        let gt = self.guard_of(&mut guards, ht);
        gt.store(ht, to, &value, deadline, clock, self.hasher());
        if let Some(d) = deadline {
            self.timer.schedule(d);
        }
        let emit = Emit {
            value: Some(&value),
            deadline,
            created: !exists,
            ..Emit::new(Op::RenameTo, to)
        };
        self.emit(emit, now, pending);
        Ok(true)
    }

    /// COPY: whether `from`'s value and deadline were copied to `to` (not when `from` is
    /// missing, nor when `to` exists and `replace` is not set). The caller refuses `from ==
    /// to`.
    pub fn copy(&self, from: &[u8], to: &[u8], replace: bool, pending: &mut Pending) -> bool {
        let now = now_ms();
        let (hf, ht) = (self.hash(from), self.hash(to));
        let mut guards = self.lock_many(&[hf, ht]);
        let g = self.guard_of(&mut guards, hf);
        let Some(src) = self.live(g, hf, from, now) else {
            return false;
        };
        let (value, deadline) = (src.value().to_vec(), src.deadline());
        let gt = self.guard_of(&mut guards, ht);
        let old_clock = self.live(gt, ht, to, now).map(|e| e.clock());
        if old_clock.is_some() && !replace {
            return false;
        }
        let clock = self.write_clock(old_clock, now);
        gt.store(ht, to, &value, deadline, clock, self.hasher());
        if let Some(d) = deadline {
            self.timer.schedule(d);
        }
        let emit = Emit {
            value: Some(&value),
            deadline,
            created: old_clock.is_none(),
            ..Emit::new(Op::CopyTo, to)
        };
        self.emit(emit, now, pending);
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
        ks.set(b"a", b"1", SetOptions::default(), None, &mut p);
        let at = ks.now_ms() + 100_000;
        ks.expire(b"a", at as i64, Default::default(), &mut p);
        assert_eq!(ks.rename(b"a", b"b", true, &mut p), Ok(true));
        assert!(!ks.contains(b"a"));
        ks.get(b"b", |v| assert_eq!(v, Some(&b"1"[..])));
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
        ks.set(b"c", b"2", SetOptions::default(), None, &mut p);
        assert_eq!(ks.rename(b"b", b"c", false, &mut p), Ok(false));
        ks.get(b"c", |v| assert_eq!(v, Some(&b"2"[..])));
        assert_eq!(ks.rename(b"b", b"c", true, &mut p), Ok(true));
        ks.get(b"c", |v| assert_eq!(v, Some(&b"1"[..])));
        assert_eq!(ks.dbsize(), 1);
    }

    #[test]
    fn copy_keeps_the_source_and_replaces_only_when_asked() {
        let (ks, feed) = with_feed(KvConfig::default());
        let mut p = Pending::default();
        assert!(!ks.copy(b"none", b"x", true, &mut p));
        ks.set(b"a", b"1", SetOptions::default(), None, &mut p);
        assert!(ks.copy(b"a", b"b", false, &mut p));
        ks.set(b"a", b"2", SetOptions::default(), None, &mut p);
        assert!(!ks.copy(b"a", b"b", false, &mut p));
        ks.get(b"b", |v| assert_eq!(v, Some(&b"1"[..])));
        assert!(ks.copy(b"a", b"b", true, &mut p));
        ks.get(b"b", |v| assert_eq!(v, Some(&b"2"[..])));
        ks.get(b"a", |v| assert_eq!(v, Some(&b"2"[..])));
        assert_eq!(
            ops(&feed),
            vec![("copy_to".to_string(), "b".to_string()); 2]
        );
    }
}
