//! What databases add to the keyspace beyond naming keys (`db.rs`): a database's size and
//! statistics, FLUSHDB of one database, SWAPDB and MOVE.
//!
//! Until a database other than 0 is used, database 0 is the whole keyspace and DBSIZE,
//! FLUSHDB and INFO take today's paths; once one is (a flag set by the server and by loading
//! a keyspace that has such keys), they count or remove one database's keys by walking the
//! shards. SWAPDB renames every key of both databases with every shard locked, so no client
//! sees a half-swapped pair; it costs the number of keys in the two databases, not O(1) as in
//! Redis.

use std::sync::atomic::Ordering;

use crate::clock::now_ms;
use crate::db;
use crate::entry::Entry;
use crate::error::KvError;
use crate::feed::Op;
use crate::keyspace::{Emit, Keyspace, Pending};

/// One database's line of `INFO keyspace` (`avg_ttl` is not kept: it shows 0).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DbStats {
    pub db: u8,
    pub keys: u64,
    pub expires: u64,
}

impl Keyspace {
    /// Notes that a database other than 0 is in use (SELECT, MOVE, COPY DB, SWAPDB).
    pub fn use_databases(&self) {
        self.multi_db.store(true, Ordering::Relaxed);
    }

    fn databases_used(&self) -> bool {
        self.multi_db.load(Ordering::Relaxed)
    }

    /// After loading: whether any key lives outside database 0.
    pub(crate) fn note_loaded_databases(&self) {
        let found = (0..self.shard_count())
            .any(|i| self.lock_index(i).iter().any(|e| db::split(e.key()).0 != 0));
        if found {
            self.use_databases();
        }
    }

    /// DBSIZE of database `n`.
    pub fn keys_in(&self, n: u8) -> usize {
        if n == 0 && !self.databases_used() {
            return self.dbsize();
        }
        (0..self.shard_count())
            .map(|i| {
                let g = self.lock_index(i);
                g.iter().filter(|e| db::split(e.key()).0 == n).count()
            })
            .sum()
    }

    /// `INFO keyspace`: each database that has keys, in order.
    pub fn db_stats(&self) -> Vec<DbStats> {
        if !self.databases_used() {
            let s = self.stats();
            return (s.keys > 0)
                .then_some(DbStats {
                    db: 0,
                    keys: s.keys,
                    expires: s.volatile,
                })
                .into_iter()
                .collect();
        }
        let mut all: Vec<DbStats> = Vec::new();
        for i in 0..self.shard_count() {
            let g = self.lock_index(i);
            for e in g.iter() {
                let n = db::split(e.key()).0;
                let at = match all.binary_search_by_key(&n, |s| s.db) {
                    Ok(at) => at,
                    Err(at) => {
                        all.insert(
                            at,
                            DbStats {
                                db: n,
                                ..DbStats::default()
                            },
                        );
                        at
                    }
                };
                all[at].keys += 1;
                all[at].expires += u64::from(e.deadline().is_some());
            }
        }
        all
    }

    /// FLUSHDB of database `n`: how many keys were removed. The log gets one removal per key
    /// (in one record, so a crash keeps all or none), the feed one `flush` naming the
    /// database; no per-key events, as in Redis.
    pub fn flush_db(&self, n: u8, pending: &mut Pending) -> usize {
        if n == 0 && !self.databases_used() {
            return self.flush(pending);
        }
        let now = now_ms();
        let mut guards = self.lock_all();
        let batch = self.open_batch(pending);
        let mut removed = 0;
        for g in guards.iter_mut() {
            let names: Vec<Vec<u8>> = g
                .iter()
                .filter(|e| db::split(e.key()).0 == n)
                .map(|e| e.key().to_vec())
                .collect();
            for name in names {
                let hash = self.hash(&name);
                if g.remove(hash, &name).is_some() {
                    removed += 1;
                    self.log_only(&crate::record::Record::Del { key: &name }, pending);
                    self.watchers.touch(&name);
                }
            }
            g.shrink(self.hasher());
        }
        self.close_batch(batch, pending);
        let marker = [db::MARKER, n];
        let flush_key: &[u8] = if n == 0 { b"" } else { &marker };
        self.emit_unlogged(Emit::new(Op::Flush, flush_key), now, pending);
        drop(guards);
        removed
    }

    /// SWAPDB: every key of database `a` moves to `b` and back, with every shard locked.
    /// Each move is logged (one record for the whole swap) and announced as `move_from` /
    /// `move_to`, which also wakes clients blocked on a key that now has a list.
    pub fn swap_db(&self, a: u8, b: u8, pending: &mut Pending) {
        if a == b {
            return;
        }
        let now = now_ms();
        let mut guards = self.lock_all();
        let batch = self.open_batch(pending);
        let mut moved: Vec<Entry> = Vec::new();
        for g in guards.iter_mut() {
            let names: Vec<Vec<u8>> = g
                .iter()
                .filter(|e| !e.is_expired(now) && [a, b].contains(&db::split(e.key()).0))
                .map(|e| e.key().to_vec())
                .collect();
            for name in names {
                if let Some(e) = g.remove(self.hash(&name), &name) {
                    self.emit(Emit::new(Op::MoveFrom, &name), now, pending);
                    moved.push(e);
                }
            }
        }
        for e in moved {
            let to = if db::split(e.key()).0 == a { b } else { a };
            let name = db::moved(e.key(), to);
            let e = e.renamed(&name);
            let hash = self.hash(&name);
            self.emit_whole(&e, Op::MoveTo, true, now, pending);
            if let Some(d) = e.deadline() {
                self.timer.schedule(d);
            }
            guards[self.shard_index(hash)].put(hash, e, self.hasher());
        }
        self.close_batch(batch, pending);
    }

    /// MOVE: the key named `from` (internal name) to database `to`; whether it moved (not
    /// when it is missing or the destination exists).
    pub fn move_key(&self, from: &[u8], to: u8, pending: &mut Pending) -> bool {
        let dest = db::moved(from, to);
        match self.rename_as(from, &dest, false, (Op::MoveFrom, Op::MoveTo), pending) {
            Ok(moved) => moved,
            Err(KvError::NoSuchKey) | Err(_) => false,
        }
    }

    /// Starts one log record for several changes, unless a transaction already gathers
    /// them; what [`Keyspace::close_batch`] needs to end it.
    fn open_batch(&self, pending: &mut Pending) -> bool {
        if pending.in_batch() {
            return false;
        }
        self.begin_transaction(pending);
        true
    }

    fn close_batch(&self, opened: bool, pending: &mut Pending) {
        if opened {
            self.end_transaction(pending);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::db::internal;
    use crate::test_support::mem;
    use crate::{Pending, SetOptions};

    fn set(ks: &crate::Keyspace, db: u8, key: &[u8], v: &[u8]) {
        let name = internal(db, key);
        ks.set(
            &name,
            v,
            SetOptions::default(),
            None,
            &mut Pending::default(),
        )
        .unwrap();
    }

    #[test]
    fn databases_are_apart_and_swap_and_flush_one_at_a_time() {
        let ks = mem();
        set(&ks, 0, b"a", b"0");
        set(&ks, 1, b"a", b"1");
        set(&ks, 1, b"b", b"1");
        ks.use_databases();
        assert_eq!((ks.keys_in(0), ks.keys_in(1), ks.keys_in(2)), (1, 2, 0));
        let mut p = Pending::default();
        ks.swap_db(0, 1, &mut p);
        assert_eq!((ks.keys_in(0), ks.keys_in(1)), (2, 1));
        ks.get(b"a", |v| assert_eq!(v, Some(&b"1"[..]))).unwrap();
        ks.get(&internal(1, b"a"), |v| assert_eq!(v, Some(&b"0"[..])))
            .unwrap();
        let stats = ks.db_stats();
        assert_eq!(
            stats.iter().map(|s| (s.db, s.keys)).collect::<Vec<_>>(),
            [(0, 2), (1, 1)]
        );
        assert_eq!(ks.flush_db(0, &mut p), 2);
        assert_eq!((ks.keys_in(0), ks.keys_in(1)), (0, 1));
        assert!(ks.move_key(&internal(1, b"a"), 3, &mut p));
        assert!(!ks.move_key(&internal(1, b"a"), 3, &mut p));
        assert_eq!(ks.keys_in(3), 1);
        assert_eq!(ks.keys(3, b"*"), vec![b"a".to_vec()]);
        assert_eq!(ks.random_key(3), Some(b"a".to_vec()));
        assert_eq!(ks.random_key(0), None);
    }

    #[test]
    fn flushdb_of_one_database_gives_back_the_tables_room() {
        let ks = mem();
        ks.use_databases();
        set(&ks, 1, b"other", b"1");
        for i in 0..5000 {
            set(&ks, 0, format!("k{i}").as_bytes(), b"v");
        }
        assert_eq!(ks.flush_db(0, &mut Pending::default()), 5000);
        for k in [&b"a"[..], b"b", b"c"] {
            set(&ks, 0, k, b"v");
        }
        let mut out = Vec::new();
        assert_eq!(ks.scan(0, 0, 10, None, None, &mut out), 0);
        out.sort();
        assert_eq!(out, [b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
    }
}
