//! Commands on values: GET, SET and its variants, GETDEL, GETEX, MGET, MSET, INCRBY, APPEND,
//! STRLEN. Each takes absolute deadlines (Unix ms) already checked by the caller; each reads
//! through [`Keyspace::live`], so a key past its deadline is never returned.
//!
//! Values are handed to the caller through a closure while the shard is locked, so a GET
//! copies the value once, straight into the client's reply.

use crate::clock::{lru_clock, now_ms};
use crate::entry::Entry;
use crate::error::KvError;
use crate::feed::Op;
use crate::keyspace::{Emit, Find, Guard, Keyspace, Pending};

/// SET's NX / XX.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Condition {
    #[default]
    Always,
    /// NX: only if the key does not exist.
    IfMissing,
    /// XX: only if the key exists.
    IfExists,
}

/// What a write does to the key's deadline.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Expiry {
    /// No deadline (a plain SET, or GETEX PERSIST).
    #[default]
    Clear,
    /// Keep the deadline the key has (KEEPTTL).
    Keep,
    /// This deadline (Unix ms; may already be past: the key then expires at once).
    At(u64),
}

/// Sees the value a key had before a write (SET ... GET).
pub type OldValue<'a> = &'a mut dyn FnMut(Option<&[u8]>);

/// SET's options.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SetOptions {
    pub condition: Condition,
    pub expiry: Expiry,
}

impl Keyspace {
    /// The clock a written entry starts with (LRU now, or the LFU counter carried on).
    pub(crate) fn write_clock(&self, old: Option<u32>, now: u64) -> u32 {
        if self.settings.policy().is_lfu() {
            crate::evict::lfu_touch(old.unwrap_or_else(|| crate::evict::lfu_new(now)), now)
        } else {
            lru_clock(now)
        }
    }

    /// Records an access to an entry (LRU clock or LFU counter).
    pub(crate) fn touch(&self, e: &mut Entry, now: u64) {
        let c = if self.settings.policy().is_lfu() {
            crate::evict::lfu_touch(e.clock(), now)
        } else {
            lru_clock(now)
        };
        e.set_clock(c);
    }

    /// GET: `f` sees the value, or `None`; WRONGTYPE if the key is not a string.
    pub fn get<R>(&self, key: &[u8], f: impl FnOnce(Option<&[u8]>) -> R) -> Result<R, KvError> {
        let now = now_ms();
        let hash = self.hash(key);
        let mut g = self.lock(hash);
        let e = self.find(&mut g, hash, key, now, Find::Read);
        Ok(f(string_of(e.as_deref())?))
    }

    /// SET and its variants. `old`, if given, sees the value before the command (SET ... GET:
    /// WRONGTYPE, and nothing written, if the key is not a string). Returns whether the value
    /// was written.
    pub fn set(
        &self,
        key: &[u8],
        value: &[u8],
        opts: SetOptions,
        old: Option<OldValue<'_>>,
        pending: &mut Pending,
    ) -> Result<bool, KvError> {
        let now = now_ms();
        let hash = self.hash(key);
        let mut g = self.lock(hash);
        let (exists, old_deadline, old_clock) = match self.find(&mut g, hash, key, now, Find::Peek)
        {
            Some(e) => {
                if let Some(f) = old {
                    f(Some(e.string().ok_or(KvError::WrongType)?));
                }
                (true, e.deadline(), Some(e.clock()))
            }
            None => {
                if let Some(f) = old {
                    f(None);
                }
                (false, None, None)
            }
        };
        match opts.condition {
            Condition::IfMissing if exists => return Ok(false),
            Condition::IfExists if !exists => return Ok(false),
            _ => {}
        }
        let deadline = match opts.expiry {
            Expiry::Clear => None,
            Expiry::Keep => old_deadline,
            Expiry::At(d) => Some(d),
        };
        self.write_value(&mut g, hash, key, value, deadline, old_clock, now);
        let emit = Emit {
            value: Some(value),
            deadline,
            created: !exists,
            expire_set: matches!(opts.expiry, Expiry::At(_)),
            ..Emit::new(Op::Set, key)
        };
        self.emit(emit, now, pending);
        Ok(true)
    }

    /// Stores a value in a locked shard and wakes the expiry timer for its deadline.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn write_value(
        &self,
        g: &mut Guard<'_>,
        hash: u64,
        key: &[u8],
        value: &[u8],
        deadline: Option<u64>,
        old_clock: Option<u32>,
        now: u64,
    ) {
        let clock = self.write_clock(old_clock, now);
        g.store(hash, key, value, deadline, clock, self.hasher());
        if let Some(d) = deadline {
            self.timer.schedule(d);
        }
    }

    /// The end of every read-modify-write of a string (INCRBY, INCRBYFLOAT, PFADD, ...):
    /// stores `value` keeping `deadline` (`old_clock` is the key's before, `None` if it is new)
    /// and announces `op` with the new value.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn rewrite_value(
        &self,
        g: &mut Guard<'_>,
        hash: u64,
        key: &[u8],
        value: &[u8],
        deadline: Option<u64>,
        old_clock: Option<u32>,
        op: Op,
        now: u64,
        pending: &mut Pending,
    ) {
        self.write_value(g, hash, key, value, deadline, old_clock, now);
        let emit = Emit {
            value: Some(value),
            deadline,
            created: old_clock.is_none(),
            ..Emit::new(op, key)
        };
        self.emit(emit, now, pending);
    }

    /// GETDEL: `f` sees the value; the key is removed.
    pub fn getdel<R>(
        &self,
        key: &[u8],
        pending: &mut Pending,
        f: impl FnOnce(Option<&[u8]>) -> R,
    ) -> Result<R, KvError> {
        let now = now_ms();
        let hash = self.hash(key);
        let mut g = self.lock(hash);
        match self.find(&mut g, hash, key, now, Find::Read) {
            None => return Ok(f(None)),
            Some(e) => string_of(Some(e))?,
        };
        let Some(e) = g.remove(hash, key) else {
            return Ok(f(None));
        };
        let r = f(e.string());
        self.emit(Emit::new(Op::Del, key), now, pending);
        Ok(r)
    }

    /// GETEX: `f` sees the value; then `change` (if any) is applied to the deadline:
    /// `Clear` is PERSIST, `At` a new deadline (a past one deletes the key, as in Redis).
    pub fn getex<R>(
        &self,
        key: &[u8],
        change: Option<Expiry>,
        pending: &mut Pending,
        f: impl FnOnce(Option<&[u8]>) -> R,
    ) -> Result<R, KvError> {
        let now = now_ms();
        let hash = self.hash(key);
        let mut g = self.lock(hash);
        let Some(e) = self.find(&mut g, hash, key, now, Find::Read) else {
            return Ok(f(None));
        };
        let had_deadline = e.deadline().is_some();
        let r = f(Some(e.string().ok_or(KvError::WrongType)?));
        match change {
            None | Some(Expiry::Keep) => {}
            Some(Expiry::Clear) => {
                if had_deadline {
                    g.set_deadline(hash, key, None);
                    self.emit(Emit::new(Op::Persist, key), now, pending);
                }
            }
            Some(Expiry::At(d)) if d <= now => {
                g.remove(hash, key);
                self.emit(Emit::new(Op::Del, key), now, pending);
            }
            Some(Expiry::At(d)) => self.set_expiry(&mut g, hash, key, d, now, pending),
        }
        Ok(r)
    }

    /// MGET: `f` sees each key's value in order (`None` for a key that is not a string, as in
    /// Redis). Atomic: every shard involved is locked.
    pub fn mget(&self, keys: &[&[u8]], mut f: impl FnMut(Option<&[u8]>)) {
        let now = now_ms();
        let hashes: Vec<u64> = keys.iter().map(|k| self.hash(k)).collect();
        let mut guards = self.lock_many(&hashes);
        for (key, &hash) in keys.iter().zip(&hashes) {
            let g = self.guard_of(&mut guards, hash);
            f(self
                .find(g, hash, key, now, Find::Read)
                .and_then(|e| e.string()));
        }
    }

    /// As MGET, but a key of another type is WRONGTYPE (LCS): `f` sees each key's value in
    /// order, read together.
    pub fn mget_typed(&self, keys: &[&[u8]], mut f: impl FnMut(Result<Option<&[u8]>, KvError>)) {
        let now = now_ms();
        let hashes: Vec<u64> = keys.iter().map(|k| self.hash(k)).collect();
        let mut guards = self.lock_many(&hashes);
        for (key, &hash) in keys.iter().zip(&hashes) {
            let g = self.guard_of(&mut guards, hash);
            f(string_of(
                self.find(g, hash, key, now, Find::Read).as_deref(),
            ));
        }
    }

    pub(crate) fn guard_of<'a, 'g>(
        &self,
        guards: &'a mut [Guard<'g>],
        hash: u64,
    ) -> &'a mut Guard<'g> {
        let i = self.shard_index(hash);
        let at = guards.iter().position(|g| g.index == i).unwrap_or_default();
        &mut guards[at]
    }

    /// The shards of a STORE form locked, its inputs' and its destination's: the inputs'
    /// hashes, the destination's, and the guards.
    pub(crate) fn lock_for_store(
        &self,
        keys: &[&[u8]],
        dest: &[u8],
    ) -> (Vec<u64>, u64, Vec<Guard<'_>>) {
        let hashes: Vec<u64> = keys.iter().map(|k| self.hash(k)).collect();
        let hd = self.hash(dest);
        let mut all = hashes.clone();
        all.push(hd);
        let guards = self.lock_many(&all);
        (hashes, hd, guards)
    }

    /// Runs `check` on each of `keys` that exists in the locked shards, as a read (hits and
    /// misses counted): how multi-key commands check their inputs' types before working.
    pub(crate) fn check_each(
        &self,
        guards: &mut [Guard<'_>],
        keys: &[&[u8]],
        hashes: &[u64],
        check: impl Fn(&Entry) -> Result<(), KvError>,
    ) -> Result<(), KvError> {
        let now = now_ms();
        for (key, &h) in keys.iter().zip(hashes) {
            let g = self.guard_of(guards, h);
            if let Some(e) = self.find(g, h, key, now, Find::Read) {
                check(e)?;
            }
        }
        Ok(())
    }

    /// MSET: every pair written, deadlines cleared. Atomic, as MGET.
    pub fn mset(&self, pairs: &[(&[u8], &[u8])], pending: &mut Pending) {
        let now = now_ms();
        let hashes: Vec<u64> = pairs.iter().map(|(k, _)| self.hash(k)).collect();
        let mut guards = self.lock_many(&hashes);
        for (&(key, value), &hash) in pairs.iter().zip(&hashes) {
            let g = self.guard_of(&mut guards, hash);
            let (exists, old_clock) = match self.find(g, hash, key, now, Find::Peek) {
                Some(e) => (true, Some(e.clock())),
                None => (false, None),
            };
            self.write_value(g, hash, key, value, None, old_clock, now);
            let emit = Emit {
                value: Some(value),
                created: !exists,
                ..Emit::new(Op::Set, key)
            };
            self.emit(emit, now, pending);
        }
    }

    /// INCRBY (and INCR, DECR, DECRBY): the new value. The deadline is kept.
    pub fn incr_by(&self, key: &[u8], delta: i64, pending: &mut Pending) -> Result<i64, KvError> {
        let now = now_ms();
        let hash = self.hash(key);
        let mut g = self.lock(hash);
        let (current, deadline, clock) = match self.find(&mut g, hash, key, now, Find::Peek) {
            Some(e) => (
                resp_wire::parse_i64(e.string().ok_or(KvError::WrongType)?)
                    .ok_or(KvError::NotInteger)?,
                e.deadline(),
                Some(e.clock()),
            ),
            None => (0, None, None),
        };
        let new = current.checked_add(delta).ok_or(KvError::Overflow)?;
        let mut text = itoa::Buffer::new();
        let text = text.format(new).as_bytes();
        self.rewrite_value(
            &mut g,
            hash,
            key,
            text,
            deadline,
            clock,
            Op::Incrby,
            now,
            pending,
        );
        Ok(new)
    }

    /// INCRBYFLOAT: the new value's text. Computed in 64-bit floating point and written in
    /// the shortest form that reads back the same (no exponent); the deadline is kept.
    pub fn incr_by_float(
        &self,
        key: &[u8],
        delta: f64,
        pending: &mut Pending,
    ) -> Result<Vec<u8>, KvError> {
        let now = now_ms();
        let hash = self.hash(key);
        let mut g = self.lock(hash);
        let (current, deadline, clock) = match self.find(&mut g, hash, key, now, Find::Peek) {
            Some(e) => (
                parse_float(e.string().ok_or(KvError::WrongType)?).ok_or(KvError::NotFloat)?,
                e.deadline(),
                Some(e.clock()),
            ),
            None => (0.0, None, None),
        };
        let new = current + delta;
        if !new.is_finite() {
            return Err(KvError::NotFinite);
        }
        let text = format_float(new).into_bytes();
        self.rewrite_value(
            &mut g,
            hash,
            key,
            &text,
            deadline,
            clock,
            Op::IncrbyFloat,
            now,
            pending,
        );
        Ok(text)
    }

    /// MSETNX: every pair written (deadlines cleared) if no key exists, else none; whether
    /// they were. Atomic, as MSET.
    pub fn msetnx(&self, pairs: &[(&[u8], &[u8])], pending: &mut Pending) -> bool {
        let now = now_ms();
        let hashes: Vec<u64> = pairs.iter().map(|(k, _)| self.hash(k)).collect();
        let mut guards = self.lock_many(&hashes);
        for (&(key, _), &hash) in pairs.iter().zip(&hashes) {
            let g = self.guard_of(&mut guards, hash);
            if self.find(g, hash, key, now, Find::Peek).is_some() {
                return false;
            }
        }
        for (&(key, value), &hash) in pairs.iter().zip(&hashes) {
            let g = self.guard_of(&mut guards, hash);
            let created = g.get(hash, key).is_none();
            self.write_value(g, hash, key, value, None, None, now);
            let emit = Emit {
                value: Some(value),
                created,
                ..Emit::new(Op::Set, key)
            };
            self.emit(emit, now, pending);
        }
        true
    }

    /// APPEND: the new length. The deadline is kept; a missing key is created.
    pub fn append(&self, key: &[u8], data: &[u8], pending: &mut Pending) -> Result<usize, KvError> {
        let now = now_ms();
        let hash = self.hash(key);
        let mut g = self.lock(hash);
        let (new, created) = match self.find(&mut g, hash, key, now, Find::Peek) {
            Some(e) => {
                let old = e.string().ok_or(KvError::WrongType)?;
                if (old.len() + data.len()) as u64 > self.max_bulk {
                    return Err(KvError::TooLarge);
                }
                let clock = self.write_clock(Some(e.clock()), now);
                (
                    Entry::from_parts(key, &[old, data], e.deadline(), clock),
                    false,
                )
            }
            None => (
                Entry::new(key, data, None, self.write_clock(None, now)),
                true,
            ),
        };
        let (len, deadline) = (new.string().map_or(0, <[u8]>::len), new.deadline());
        if created {
            g.insert(hash, new, self.hasher());
        } else {
            g.replace(hash, key, new);
        }
        let value = g.get(hash, key).and_then(Entry::string).map(<[u8]>::to_vec);
        let emit = Emit {
            value: value.as_deref(),
            deadline,
            created,
            ..Emit::new(Op::Append, key)
        };
        self.emit(emit, now, pending);
        Ok(len)
    }

    /// Rewrites the value of `key` (empty if the key does not exist) with `edit`, keeping its
    /// deadline, and announces `op` (SETRANGE, SETBIT). `edit` returns the command's answer and
    /// whether it changed anything; on an error, or no change, nothing is written.
    pub(crate) fn edit_value<R>(
        &self,
        key: &[u8],
        op: Op,
        pending: &mut Pending,
        edit: impl FnOnce(&mut Vec<u8>) -> Result<(R, bool), KvError>,
    ) -> Result<R, KvError> {
        let now = now_ms();
        let hash = self.hash(key);
        let mut g = self.lock(hash);
        let current = self.find(&mut g, hash, key, now, Find::Peek);
        let (deadline, old_clock) = match &current {
            Some(e) => (e.deadline(), Some(e.clock())),
            None => (None, None),
        };
        let mut value = string_of(current.as_deref())?
            .map(<[u8]>::to_vec)
            .unwrap_or_default();
        let (answer, changed) = edit(&mut value)?;
        if !changed {
            return Ok(answer);
        }
        let entry = Entry::new(key, &value, deadline, self.write_clock(old_clock, now));
        if old_clock.is_none() {
            g.insert(hash, entry, self.hasher());
        } else {
            g.replace(hash, key, entry);
        }
        let emit = Emit {
            value: Some(&value),
            deadline,
            created: old_clock.is_none(),
            ..Emit::new(op, key)
        };
        self.emit(emit, now, pending);
        Ok(answer)
    }

    /// STRLEN: 0 for a missing key.
    pub fn strlen(&self, key: &[u8]) -> Result<usize, KvError> {
        self.get(key, |v| v.map_or(0, <[u8]>::len))
    }
}

/// The string value of a key that may be missing; WRONGTYPE for another type.
pub(crate) fn string_of(e: Option<&Entry>) -> Result<Option<&[u8]>, KvError> {
    match e {
        None => Ok(None),
        Some(e) => e.string().map(Some).ok_or(KvError::WrongType),
    }
}

/// A float as INCRBYFLOAT reads one: decimal or exponent notation, `inf` allowed, no spaces,
/// no NaN.
pub fn parse_float(s: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(s).ok()?;
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_whitespace()) {
        return None;
    }
    s.parse::<f64>().ok().filter(|v| !v.is_nan())
}

/// A finite float as INCRBYFLOAT writes it: the shortest decimal that reads back the same,
/// never in exponent notation, no trailing `.0`.
pub fn format_float(v: f64) -> String {
    let mut s = format!("{v}");
    if s == "-0" {
        s = "0".into();
    }
    s
}

#[cfg(test)]
#[path = "strings_tests.rs"]
mod tests;
