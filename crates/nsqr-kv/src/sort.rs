//! What SORT needs of the keyspace: the elements of the key it sorts, whatever the type that
//! holds them, and a list stored whole in place of a key (SORT ... STORE). The sorting itself
//! (BY / GET patterns, LIMIT, ALPHA) is the server's (`nsqrd`'s `resp/sort.rs`).

use crate::clock::now_ms;
use crate::collection::{Collection, List};
use crate::entry::Entry;
use crate::error::KvError;
use crate::feed::Op;
use crate::keyspace::{Emit, Find, Keyspace, Pending};

/// The elements of a key SORT can sort, in the key's own order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortSource {
    pub elements: Vec<Vec<u8>>,
    /// A set has no order of its own: SORT ... BY nosort still sorts it when it stores.
    pub unordered: bool,
}

impl Keyspace {
    /// The elements of `key` (a list, a set, or a sorted set in rank order), or `None` if it does not exist; WRONGTYPE
    /// for any other type.
    pub fn sort_source(&self, key: &[u8]) -> Result<Option<SortSource>, KvError> {
        let now = now_ms();
        let hash = self.hash(key);
        let mut g = self.lock(hash);
        let Some(e) = self.find(&mut g, hash, key, now, Find::Read) else {
            return Ok(None);
        };
        let (elements, unordered) = match e.collection() {
            Some(Collection::List(l)) => (l.iter().map(<[u8]>::to_vec).collect(), false),
            Some(Collection::Set(s)) => (s.iter().map(<[u8]>::to_vec).collect(), true),
            Some(Collection::Zset(z)) => (z.iter().map(|(m, _)| m.to_vec()).collect(), false),
            _ => return Err(KvError::WrongType),
        };
        Ok(Some(SortSource {
            elements,
            unordered,
        }))
    }

    /// Replaces `dest` (whatever it held, with no deadline) by a list of `items`; no items
    /// deletes it. Returns the list's length.
    pub fn store_list(&self, dest: &[u8], items: Vec<Vec<u8>>, pending: &mut Pending) -> usize {
        let now = now_ms();
        let hash = self.hash(dest);
        let mut g = self.lock(hash);
        let old_clock = self
            .find(&mut g, hash, dest, now, Find::Peek)
            .map(|e| e.clock());
        let n = items.len();
        if n == 0 {
            if old_clock.is_some() && g.remove(hash, dest).is_some() {
                self.emit(Emit::new(Op::Del, dest), now, pending);
            }
            return 0;
        }
        let mut list = List::default();
        for item in items {
            list.push(&item, false);
        }
        let entry = Entry::typed(dest, list.into(), None, self.write_clock(old_clock, now));
        self.emit_whole(&entry, Op::Sortstore, old_clock.is_none(), now, pending);
        g.put(hash, entry, self.hasher());
        n
    }
}

#[cfg(test)]
mod tests {
    use crate::test_support::{mem as open, with_feed};
    use crate::*;

    #[test]
    fn source_of_lists_and_sets_wrongtype_otherwise() {
        let ks = open();
        let mut p = Pending::default();
        ks.push(b"l", &[b"b", b"a"], false, false, &mut p).unwrap();
        ks.sadd(b"s", &[b"x"], &mut p).unwrap();
        let _ = ks.set(b"str", b"v", SetOptions::default(), None, &mut p);
        let l = ks.sort_source(b"l").unwrap().unwrap();
        assert_eq!(l.elements, vec![b"b".to_vec(), b"a".to_vec()]);
        assert!(!l.unordered);
        assert!(ks.sort_source(b"s").unwrap().unwrap().unordered);
        assert_eq!(ks.sort_source(b"none").unwrap(), None);
        assert!(matches!(ks.sort_source(b"str"), Err(KvError::WrongType)));
    }

    #[test]
    fn store_list_replaces_and_empty_deletes() {
        let ks = open();
        let mut p = Pending::default();
        let _ = ks.set(b"d", b"v", SetOptions::default(), None, &mut p);
        assert_eq!(
            ks.store_list(b"d", vec![b"1".to_vec(), b"2".to_vec()], &mut p),
            2
        );
        let got = ks.read_list(b"d", |l| l.map(|l| l.len())).unwrap();
        assert_eq!(got, Some(2));
        assert_eq!(ks.store_list(b"d", Vec::new(), &mut p), 0);
        assert_eq!(ks.sort_source(b"d").unwrap(), None);
    }

    #[test]
    fn store_list_feeds_sortstore_then_del() {
        let (ks, feed) = with_feed(KvConfig::default());
        let mut p = Pending::default();
        ks.store_list(b"d", vec![b"1".to_vec()], &mut p);
        ks.store_list(b"d", Vec::new(), &mut p);
        let ops = feed.ops();
        assert_eq!(ops.last().map(|o| o.0.as_str()), Some("del"));
        assert!(ops.iter().any(|o| o.0 == "sortstore" && o.1 == "d"));
    }
}
