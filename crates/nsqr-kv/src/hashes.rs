//! Hash commands that change a hash: HSET (and HMSET), HSETNX, HDEL, HINCRBY, HINCRBYFLOAT.
//! Reads (HGET, HGETALL, HSCAN, ...) see the hash through [`Keyspace::read_hash`]; random
//! picks (HRANDFIELD) are [`Hash::random`].

use crate::collection::Hash;
use crate::error::KvError;
use crate::feed::Op;
use crate::keyspace::{Keyspace, Pending};
use crate::strings::{format_float, parse_float};

impl Keyspace {
    /// `f` sees the hash of `key`, or `None` if it does not exist; WRONGTYPE for another type.
    pub fn read_hash<R>(
        &self,
        key: &[u8],
        f: impl FnOnce(Option<&Hash>) -> R,
    ) -> Result<R, KvError> {
        self.read_typed(key, f)
    }

    /// HSET / HMSET: `pairs` is field, value, field, value...; how many fields are new.
    pub fn hset(
        &self,
        key: &[u8],
        pairs: &[&[u8]],
        pending: &mut Pending,
    ) -> Result<usize, KvError> {
        self.write_typed(key, pending, |h: &mut Hash, touched| {
            let mut new = 0;
            for p in pairs.chunks_exact(2) {
                new += usize::from(h.insert(p[0], p[1]));
                touched.add(p[0]);
            }
            Ok((new, Some(Op::Hset)))
        })
    }

    /// HSETNX: whether the field was set (it did not exist).
    pub fn hsetnx(
        &self,
        key: &[u8],
        field: &[u8],
        value: &[u8],
        pending: &mut Pending,
    ) -> Result<bool, KvError> {
        self.write_typed(key, pending, |h: &mut Hash, touched| {
            if h.get(field).is_some() {
                return Ok((false, None));
            }
            h.insert(field, value);
            touched.add(field);
            Ok((true, Some(Op::Hset)))
        })
    }

    /// HDEL: how many of `fields` were removed.
    pub fn hdel(
        &self,
        key: &[u8],
        fields: &[&[u8]],
        pending: &mut Pending,
    ) -> Result<usize, KvError> {
        self.write_typed(key, pending, |h: &mut Hash, touched| {
            let mut n = 0;
            for f in fields {
                if h.remove(f) {
                    n += 1;
                    touched.add(f);
                }
            }
            Ok((n, (n > 0).then_some(Op::Hdel)))
        })
    }

    /// HINCRBY: the field's new value.
    pub fn hincrby(
        &self,
        key: &[u8],
        field: &[u8],
        delta: i64,
        pending: &mut Pending,
    ) -> Result<i64, KvError> {
        self.write_typed(key, pending, |h: &mut Hash, touched| {
            let current = match h.get(field) {
                Some(v) => resp_wire::parse_i64(v).ok_or(KvError::HashNotInteger)?,
                None => 0,
            };
            let new = current.checked_add(delta).ok_or(KvError::Overflow)?;
            h.insert(field, itoa::Buffer::new().format(new).as_bytes());
            touched.add(field);
            Ok((new, Some(Op::Hincrby)))
        })
    }

    /// HINCRBYFLOAT: the field's new value, written as INCRBYFLOAT writes one.
    pub fn hincrbyfloat(
        &self,
        key: &[u8],
        field: &[u8],
        delta: f64,
        pending: &mut Pending,
    ) -> Result<Vec<u8>, KvError> {
        self.write_typed(key, pending, |h: &mut Hash, touched| {
            let current = match h.get(field) {
                Some(v) => parse_float(v).ok_or(KvError::HashNotFloat)?,
                None => 0.0,
            };
            let new = current + delta;
            if !new.is_finite() {
                return Err(KvError::NotFinite);
            }
            let text = format_float(new).into_bytes();
            h.insert(field, &text);
            touched.add(field);
            Ok((text, Some(Op::Hincrbyfloat)))
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::test_support::{mem, with_feed};
    use crate::{KvConfig, KvError, Pending, SetOptions};

    fn fields(ks: &crate::Keyspace, key: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut v: Vec<_> = ks
            .read_hash(key, |h| {
                h.map(|h| h.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect())
                    .unwrap_or_default()
            })
            .unwrap();
        v.sort();
        v
    }

    #[test]
    fn set_get_delete_and_the_empty_hash_goes() {
        let ks = mem();
        let mut p = Pending::default();
        assert_eq!(
            ks.hset(b"h", &[b"a", b"1", b"b", b"2", b"a", b"3"], &mut p),
            Ok(2)
        );
        assert_eq!(
            fields(&ks, b"h"),
            vec![
                (b"a".to_vec(), b"3".to_vec()),
                (b"b".to_vec(), b"2".to_vec())
            ]
        );
        assert_eq!(ks.hsetnx(b"h", b"a", b"x", &mut p), Ok(false));
        assert_eq!(ks.hsetnx(b"h", b"c", b"x", &mut p), Ok(true));
        let used = ks.used_memory();
        assert_eq!(ks.hdel(b"h", &[b"a", b"zz"], &mut p), Ok(1));
        assert!(ks.used_memory() < used);
        assert_eq!(ks.hdel(b"h", &[b"b", b"c"], &mut p), Ok(2));
        assert!(!ks.contains(b"h"));
        assert_eq!(ks.hdel(b"none", &[b"a"], &mut p), Ok(0));
        assert!(!ks.contains(b"none"));
    }

    #[test]
    fn increments_and_their_errors() {
        let ks = mem();
        let mut p = Pending::default();
        assert_eq!(ks.hincrby(b"h", b"n", 5, &mut p), Ok(5));
        assert_eq!(ks.hincrby(b"h", b"n", -7, &mut p), Ok(-2));
        assert_eq!(
            ks.hincrby(b"h", b"n", i64::MIN, &mut p),
            Err(KvError::Overflow)
        );
        ks.hset(b"h", &[b"s", b"abc"], &mut p).unwrap();
        assert_eq!(
            ks.hincrby(b"h", b"s", 1, &mut p),
            Err(KvError::HashNotInteger)
        );
        assert_eq!(
            ks.hincrbyfloat(b"h", b"s", 1.0, &mut p),
            Err(KvError::HashNotFloat)
        );
        assert_eq!(
            ks.hincrbyfloat(b"h", b"f", 10.5, &mut p),
            Ok(b"10.5".to_vec())
        );
        assert_eq!(
            ks.hincrbyfloat(b"h", b"f", f64::INFINITY, &mut p),
            Err(KvError::NotFinite)
        );
    }

    #[test]
    fn wrong_types_both_ways() {
        let ks = mem();
        let mut p = Pending::default();
        ks.set(b"s", b"v", SetOptions::default(), None, &mut p)
            .unwrap();
        assert_eq!(
            ks.hset(b"s", &[b"a", b"1"], &mut p),
            Err(KvError::WrongType)
        );
        assert_eq!(ks.read_hash(b"s", |h| h.is_some()), Err(KvError::WrongType));
        ks.hset(b"h", &[b"a", b"1"], &mut p).unwrap();
        assert_eq!(ks.get(b"h", |_| ()), Err(KvError::WrongType));
        assert_eq!(ks.incr_by(b"h", 1, &mut p), Err(KvError::WrongType));
        assert_eq!(ks.append(b"h", b"x", &mut p), Err(KvError::WrongType));
        assert_eq!(ks.key_type(b"h"), Some(crate::KeyType::Hash));
        // SET replaces a hash, as in Redis.
        assert_eq!(
            ks.set(b"h", b"v", SetOptions::default(), None, &mut p),
            Ok(true)
        );
        assert_eq!(ks.key_type(b"h"), Some(crate::KeyType::String));
    }

    #[test]
    fn the_feed_names_each_command_and_the_last_delete() {
        let (ks, feed) = with_feed(KvConfig::default());
        let mut p = Pending::default();
        ks.hset(b"h", &[b"a", b"1"], &mut p).unwrap();
        ks.hincrby(b"h", b"n", 1, &mut p).unwrap();
        ks.hdel(b"h", &[b"a", b"n"], &mut p).unwrap();
        let ops: Vec<String> = feed.ops().into_iter().map(|(op, _)| op).collect();
        assert_eq!(ops, ["hset", "hincrby", "hdel", "del"]);
    }
}
