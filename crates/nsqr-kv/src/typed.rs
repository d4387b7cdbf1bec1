//! How the commands of hashes and sets reach their value: the steps every one of them shares,
//! so each command is only its own logic.
//!
//! - A read sees the key's collection, or nothing for a missing key; a key of another type is
//!   WRONGTYPE. It counts as an access (hit or miss, access clock, `keymiss`), as in Redis.
//! - A write runs on the key's collection, or on an empty one for a missing key; it says which
//!   members it touched and which event it caused, if any. Then, in this order: the memory
//!   accounting follows the collection's new size; a collection left empty deletes its key (as
//!   in Redis: the command's event, then `del`); a new non-empty one is inserted (`new`); the
//!   change is announced with a members record for the log (see `record.rs`), or for a list
//!   the whole value (list commands are not idempotent: replaying a push twice would add twice).

use crate::clock::now_ms;
use crate::collection::{Collection, KeyType, Typed};
use crate::dump::encode_value;
use crate::entry::Entry;
use crate::error::KvError;
use crate::feed::Op;
use crate::keyspace::{Emit, Find, Guard, Keyspace, Pending};
use crate::record::{MemberKind, Members, Record};

/// The members a write touched, kept only when a log will record them.
pub(crate) struct Touched {
    members: Option<Vec<Vec<u8>>>,
}

impl Touched {
    pub fn add(&mut self, member: &[u8]) {
        if let Some(m) = &mut self.members {
            m.push(member.to_vec());
        }
    }
}

/// What a write did: its event, or `None` if it changed nothing.
pub(crate) type Outcome<R> = Result<(R, Option<Op>), KvError>;

fn member_kind(kind: KeyType) -> MemberKind {
    match kind {
        KeyType::Hash => MemberKind::Hash,
        KeyType::Zset => MemberKind::Zset,
        _ => MemberKind::Set,
    }
}

/// The collection of type `T` in an entry; WRONGTYPE for another type.
pub(crate) fn typed_mut<T: Typed>(e: &mut Entry) -> Result<&mut T, KvError> {
    e.collection_mut()
        .and_then(T::of_mut)
        .ok_or(KvError::WrongType)
}

pub(crate) fn typed<T: Typed>(e: &Entry) -> Result<&T, KvError> {
    e.collection().and_then(T::of).ok_or(KvError::WrongType)
}

impl Keyspace {
    /// A read of `key` as a `T`: `f` sees its collection, or `None` if it does not exist.
    pub(crate) fn read_typed<T: Typed, R>(
        &self,
        key: &[u8],
        f: impl FnOnce(Option<&T>) -> R,
    ) -> Result<R, KvError> {
        let now = now_ms();
        let hash = self.hash(key);
        let mut g = self.lock(hash);
        match self.find(&mut g, hash, key, now, Find::Read) {
            None => Ok(f(None)),
            Some(e) => Ok(f(Some(typed::<T>(e)?))),
        }
    }

    /// A write to `key` as a `T` (an empty one if it does not exist); see the module's doc.
    pub(crate) fn write_typed<T: Typed, R>(
        &self,
        key: &[u8],
        pending: &mut Pending,
        f: impl FnOnce(&mut T, &mut Touched) -> Outcome<R>,
    ) -> Result<R, KvError> {
        let now = now_ms();
        let hash = self.hash(key);
        let mut g = self.lock(hash);
        self.write_typed_in(&mut g, hash, key, now, pending, f)
    }

    /// [`Keyspace::write_typed`] in a shard already locked (multi-key commands).
    pub(crate) fn write_typed_in<T: Typed, R>(
        &self,
        g: &mut Guard<'_>,
        hash: u64,
        key: &[u8],
        now: u64,
        pending: &mut Pending,
        f: impl FnOnce(&mut T, &mut Touched) -> Outcome<R>,
    ) -> Result<R, KvError> {
        let mut touched = Touched {
            members: self.log.is_some().then(Vec::new),
        };
        let Some(e) = self.find(g, hash, key, now, Find::Peek) else {
            let mut fresh = T::default();
            let (r, op) = f(&mut fresh, &mut touched)?;
            if let (Some(op), false) = (op, fresh.is_empty()) {
                let clock = self.write_clock(None, now);
                let entry = Entry::typed(key, fresh.into(), None, clock);
                self.announce::<T>(&entry, op, true, touched, now, pending);
                g.insert(hash, entry, self.hasher());
            }
            return Ok(r);
        };
        let before = e.cost();
        let value = typed_mut::<T>(e)?;
        let (r, op) = f(value, &mut touched)?;
        let emptied = value.is_empty();
        self.touch(e, now);
        let after = e.cost();
        if let Some(op) = op {
            self.announce::<T>(e, op, false, touched, now, pending);
        }
        g.recost(before, after);
        if op.is_some() && emptied && g.remove(hash, key).is_some() {
            self.emit(Emit::new(Op::Del, key), now, pending);
        }
        Ok(r)
    }

    /// Announces a write to `entry` (the key's entry after it, emptied or not): the members
    /// record (when there is a log), notifications, feed.
    fn announce<T: Typed>(
        &self,
        entry: &Entry,
        op: Op,
        created: bool,
        touched: Touched,
        now: u64,
        pending: &mut Pending,
    ) {
        let key = entry.key();
        if T::WHOLE {
            if entry.collection().is_some_and(|c| !c.is_empty()) {
                return self.emit_whole(entry, op, created, now, pending);
            }
            // Emptied: the key's removal follows; the log records it gone.
            let emit = Emit {
                record: Some(Record::Del { key }),
                ..Emit::new(op, key)
            };
            return self.emit(emit, now, pending);
        }
        let mut states = Members::default();
        let value = entry.collection().and_then(T::of);
        for m in touched.members.iter().flatten() {
            states.push(m, value.and_then(|v| v.state(m)));
        }
        let deadline = entry.deadline();
        let emit = Emit {
            record: Some(Record::Members {
                key,
                kind: member_kind(T::KIND),
                states: &states.0,
            }),
            deadline,
            created,
            ..Emit::new(op, key)
        };
        self.emit(emit, now, pending);
    }

    /// Announces that `entry` is the whole new value of its key (`op`: RENAME's destination,
    /// COPY, RESTORE, a STORE command): a string with its value, a collection with an object
    /// record for the log.
    pub(crate) fn emit_whole(
        &self,
        entry: &Entry,
        op: Op,
        created: bool,
        now: u64,
        pending: &mut Pending,
    ) {
        let mut body = Vec::new();
        let record = match entry.collection() {
            Some(_) if self.log.is_some() => {
                encode_value(entry, &mut body);
                Some(Record::Object {
                    key: entry.key(),
                    value: &body,
                    deadline: entry.deadline(),
                })
            }
            _ => None,
        };
        let emit = Emit {
            value: entry.string(),
            deadline: entry.deadline(),
            created,
            record,
            ..Emit::new(op, entry.key())
        };
        self.emit(emit, now, pending);
        if matches!(entry.kind(), KeyType::List | KeyType::Zset) {
            self.blockers.wake(entry.key());
        }
    }

    /// A STORE command's result replaces `dest` (in the locked shard `g`), whatever it held,
    /// with no deadline; `None` (an empty result) deletes it.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn store_whole(
        &self,
        g: &mut Guard<'_>,
        dest: &[u8],
        hd: u64,
        result: Option<Collection>,
        op: Op,
        now: u64,
        pending: &mut Pending,
    ) {
        let old_clock = self.find(g, hd, dest, now, Find::Peek).map(|e| e.clock());
        let Some(result) = result else {
            if old_clock.is_some() && g.remove(hd, dest).is_some() {
                self.emit(Emit::new(Op::Del, dest), now, pending);
            }
            return;
        };
        let entry = Entry::typed(dest, result, None, self.write_clock(old_clock, now));
        self.emit_whole(&entry, op, old_clock.is_none(), now, pending);
        g.put(hd, entry, self.hasher());
    }

    /// A STORE form's result of `len` members replaces `dest` (among the locked `guards`):
    /// [`Keyspace::store_whole`], an empty result deleting it. Returns `len`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn store_result(
        &self,
        guards: &mut [Guard<'_>],
        dest: &[u8],
        hd: u64,
        (result, len): (impl Into<Collection>, usize),
        op: Op,
        now: u64,
        pending: &mut Pending,
    ) -> usize {
        let g = self.guard_of(guards, hd);
        let result = (len > 0).then(|| result.into());
        self.store_whole(g, dest, hd, result, op, now, pending);
        len
    }

    /// Applies a members record (replay): each member's state set; a key of another type is
    /// replaced by an empty collection first, an emptied one is deleted.
    pub(crate) fn apply_members(
        &self,
        key: &[u8],
        kind: MemberKind,
        states: &[u8],
    ) -> Result<(), crate::record::RecordError> {
        let hash = self.hash(key);
        let mut g = self.lock(hash);
        let fits = |e: &Entry| e.collection().map(Collection::kind) == Some(kind_of(kind));
        if !g.get(hash, key).is_some_and(fits) {
            let empty: Collection = match kind {
                MemberKind::Hash => crate::collection::Hash::default().into(),
                MemberKind::Set => crate::collection::Set::default().into(),
                MemberKind::Zset => crate::zset::ZSet::default().into(),
            };
            let clock = self.write_clock(None, now_ms());
            g.put(hash, Entry::typed(key, empty, None, clock), self.hasher());
        }
        let Some(e) = g.get_mut(hash, key) else {
            return Ok(());
        };
        let before = e.cost();
        let mut empty = false;
        if let Some(c) = e.collection_mut() {
            for state in crate::record::member_states(states) {
                let (m, v) = state?;
                match (&mut *c, v) {
                    (Collection::Hash(h), Some(v)) => {
                        h.insert(m, v);
                    }
                    (Collection::Hash(h), None) => {
                        h.remove(m);
                    }
                    (Collection::Set(s), Some(_)) => {
                        s.insert(m);
                    }
                    (Collection::Set(s), None) => {
                        s.remove(m);
                    }
                    (Collection::Zset(z), Some(score)) => {
                        let score = <[u8; 8]>::try_from(score)
                            .ok()
                            .map(f64::from_le_bytes)
                            .filter(|s| !s.is_nan())
                            .ok_or(crate::record::RecordError::Malformed(0))?;
                        z.insert(m, score);
                    }
                    (Collection::Zset(z), None) => {
                        z.remove(m);
                    }
                    // Lists are logged whole (`Typed::WHOLE`) and streams by their own
                    // records: no members record names one.
                    (Collection::List(_) | Collection::Stream(_), _) => {}
                }
            }
            empty = c.is_empty();
        }
        let after = e.cost();
        g.recost(before, after);
        if empty {
            g.remove(hash, key);
        }
        Ok(())
    }
}

fn kind_of(kind: MemberKind) -> KeyType {
    match kind {
        MemberKind::Hash => KeyType::Hash,
        MemberKind::Set => KeyType::Set,
        MemberKind::Zset => KeyType::Zset,
    }
}
