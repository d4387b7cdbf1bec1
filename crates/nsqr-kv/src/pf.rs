//! PFADD, PFCOUNT, PFMERGE and PFDEBUG: HyperLogLog commands on string values in Redis's HLL
//! format (`hll.rs`). An HLL is a string, so it expires, renames, dumps and replays like any
//! string; these commands only check that its bytes are an HLL (`WRONGTYPE Key is not a valid
//! HyperLogLog string value.` otherwise).
//!
//! As in Redis, PFCOUNT of one key stores the count it computed in the value's header: the
//! value changes (the log keeps it and WATCH sees it) but that is no event, so no notification
//! and no change-feed entry. PFMERGE merges the destination's own registers too, and always
//! announces `pfadd`.

use crate::clock::now_ms;
use crate::entry::Entry;
use crate::error::KvError;
use crate::feed::Op;
use crate::hll::{self, Corrupt};
use crate::keyspace::{Find, Guard, Keyspace, Pending};
use crate::record::Record;

impl From<Corrupt> for KvError {
    fn from(_: Corrupt) -> KvError {
        KvError::CorruptHll
    }
}

/// A PFDEBUG subcommand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PfDebug {
    /// Every register (the value turned dense).
    GetReg,
    /// A sparse value's opcodes.
    Decode,
    Encoding,
    /// Turns the value dense; whether it was sparse.
    ToDense,
}

/// PFDEBUG's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PfDebugReply {
    Registers(Vec<u8>),
    Decoded(String),
    Encoding(&'static str),
    Converted(bool),
    /// The key does not exist.
    NoKey,
    /// DECODE of a dense value.
    NotSparse,
}

/// The HLL bytes of an entry: WRONGTYPE for a collection, the HLL error for another string.
fn hll_of(e: &Entry) -> Result<&[u8], KvError> {
    let v = e.string().ok_or(KvError::WrongType)?;
    if hll::is_hll(v) {
        Ok(v)
    } else {
        Err(KvError::NotHll)
    }
}

impl Keyspace {
    /// PFADD: whether the key was created or a register changed.
    pub fn pfadd(
        &self,
        key: &[u8],
        elements: &[&[u8]],
        pending: &mut Pending,
    ) -> Result<bool, KvError> {
        let now = now_ms();
        let hash = self.hash(key);
        let mut g = self.lock(hash);
        let (mut value, deadline, clock) = match self.find(&mut g, hash, key, now, Find::Peek) {
            None => (hll::new_sparse(), None, None),
            Some(e) => (hll_of(e)?.to_vec(), e.deadline(), Some(e.clock())),
        };
        let mut updated = clock.is_none();
        for element in elements {
            updated |= hll::add(&mut value, element)?;
        }
        if updated {
            hll::invalidate(&mut value);
            self.rewrite_value(
                &mut g,
                hash,
                key,
                &value,
                deadline,
                clock,
                Op::Pfadd,
                now,
                pending,
            );
        }
        Ok(updated)
    }

    /// PFCOUNT: the cardinality of one HLL (refreshing its cached count), or of the union of
    /// several. Missing keys count as empty HLLs.
    pub fn pfcount(&self, keys: &[&[u8]], pending: &mut Pending) -> Result<u64, KvError> {
        match keys {
            [key] => self.pfcount_one(key, pending),
            _ => {
                let now = now_ms();
                let hashes: Vec<u64> = keys.iter().map(|k| self.hash(k)).collect();
                let mut guards = self.lock_many(&hashes);
                let mut max = Box::new([0; hll::REGISTERS]);
                self.merge_sources(&mut guards, keys, &hashes, now, &mut max)?;
                Ok(hll::count_registers(&max))
            }
        }
    }

    fn pfcount_one(&self, key: &[u8], pending: &mut Pending) -> Result<u64, KvError> {
        let now = now_ms();
        let hash = self.hash(key);
        let mut g = self.lock(hash);
        let Some(e) = self.find(&mut g, hash, key, now, Find::Read) else {
            return Ok(0);
        };
        let v = hll_of(e)?;
        if let Some(card) = hll::cached(v) {
            return Ok(card);
        }
        let card = hll::count(v)?;
        let mut value = v.to_vec();
        hll::set_cached(&mut value, card);
        let (deadline, clock) = (e.deadline(), e.clock());
        self.rewrite_quietly(&mut g, hash, key, &value, (deadline, clock), pending);
        Ok(card)
    }

    /// PFMERGE: `dest` becomes the union of itself and `sources` (created if missing; dense
    /// if any input is).
    pub fn pfmerge(
        &self,
        dest: &[u8],
        sources: &[&[u8]],
        pending: &mut Pending,
    ) -> Result<(), KvError> {
        let now = now_ms();
        let mut keys = vec![dest];
        keys.extend_from_slice(sources);
        let hashes: Vec<u64> = keys.iter().map(|k| self.hash(k)).collect();
        let mut guards = self.lock_many(&hashes);
        let mut max = Box::new([0; hll::REGISTERS]);
        let dense = self.merge_sources(&mut guards, &keys, &hashes, now, &mut max)?;
        let g = self.guard_of(&mut guards, hashes[0]);
        let (mut value, deadline, clock) = match self.find(g, hashes[0], dest, now, Find::Peek) {
            None => (hll::new_sparse(), None, None),
            Some(e) => (hll_of(e)?.to_vec(), e.deadline(), Some(e.clock())),
        };
        if dense {
            hll::to_dense(&mut value)?;
        }
        hll::set_registers(&mut value, &max)?;
        hll::invalidate(&mut value);
        self.rewrite_value(
            g,
            hashes[0],
            dest,
            &value,
            deadline,
            clock,
            Op::Pfadd,
            now,
            pending,
        );
        Ok(())
    }

    /// Raises `max` to the registers of each of `keys` (missing ones are skipped); whether
    /// one of them is dense.
    fn merge_sources(
        &self,
        guards: &mut [Guard<'_>],
        keys: &[&[u8]],
        hashes: &[u64],
        now: u64,
        max: &mut [u8; hll::REGISTERS],
    ) -> Result<bool, KvError> {
        let mut dense = false;
        for (key, &hash) in keys.iter().zip(hashes) {
            let g = self.guard_of(guards, hash);
            if let Some(e) = self.find(g, hash, key, now, Find::Read) {
                let v = hll_of(e)?;
                dense |= !hll::is_sparse(v);
                hll::merge_into(max, v)?;
            }
        }
        Ok(dense)
    }

    /// PFDEBUG: GETREG and TODENSE turn the value dense (a change without an event, as
    /// PFCOUNT's cache).
    pub fn pfdebug(
        &self,
        sub: PfDebug,
        key: &[u8],
        pending: &mut Pending,
    ) -> Result<PfDebugReply, KvError> {
        let now = now_ms();
        let hash = self.hash(key);
        let mut g = self.lock(hash);
        let Some(e) = self.find(&mut g, hash, key, now, Find::Peek) else {
            return Ok(PfDebugReply::NoKey);
        };
        let v = hll_of(e)?;
        let sparse = hll::is_sparse(v);
        let reply = match sub {
            PfDebug::Decode if sparse => return Ok(PfDebugReply::Decoded(hll::decode(v))),
            PfDebug::Decode => return Ok(PfDebugReply::NotSparse),
            PfDebug::Encoding => {
                let name = if sparse { "sparse" } else { "dense" };
                return Ok(PfDebugReply::Encoding(name));
            }
            PfDebug::ToDense => PfDebugReply::Converted(sparse),
            PfDebug::GetReg => PfDebugReply::Registers(Vec::new()),
        };
        let mut value = v.to_vec();
        let (deadline, clock) = (e.deadline(), e.clock());
        let registers = hll::registers(&mut value)?;
        if sparse {
            self.rewrite_quietly(&mut g, hash, key, &value, (deadline, clock), pending);
        }
        Ok(match reply {
            PfDebugReply::Registers(_) => PfDebugReply::Registers(registers),
            other => other,
        })
    }

    /// Stores a new form of the same HLL (a cached count, the dense encoding): logged and seen
    /// by WATCH, but no event; deadline and access clock unchanged.
    fn rewrite_quietly(
        &self,
        g: &mut Guard<'_>,
        hash: u64,
        key: &[u8],
        value: &[u8],
        (deadline, clock): (Option<u64>, u32),
        pending: &mut Pending,
    ) {
        g.store(hash, key, value, deadline, clock, self.hasher());
        let record = Record::Put {
            key,
            value,
            deadline,
        };
        self.record_quietly(&record, key, pending);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strings::SetOptions;
    use crate::test_support::mem;

    #[test]
    fn pfadd_creates_counts_and_reports_changes() {
        let ks = mem();
        let mut p = Pending::default();
        assert_eq!(ks.pfadd(b"h", &[], &mut p), Ok(true));
        assert_eq!(ks.pfadd(b"h", &[], &mut p), Ok(false));
        assert_eq!(ks.pfadd(b"h", &[b"a", b"b", b"c"], &mut p), Ok(true));
        assert_eq!(ks.pfadd(b"h", &[b"a"], &mut p), Ok(false));
        assert_eq!(ks.pfcount(&[b"h"], &mut p), Ok(3));
        // The count is cached in the value.
        ks.get(b"h", |v| assert_eq!(v.and_then(hll::cached), Some(3)))
            .unwrap();
        assert_eq!(ks.pfcount(&[b"missing"], &mut p), Ok(0));
    }

    #[test]
    fn union_and_merge() {
        let ks = mem();
        let mut p = Pending::default();
        let a: Vec<String> = (0..100).map(|i| format!("a{i}")).collect();
        let b: Vec<String> = (50..150).map(|i| format!("a{i}")).collect();
        let refs = |v: &[String]| v.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>();
        let (ra, rb) = (refs(&a), refs(&b));
        let sa: Vec<&[u8]> = ra.iter().map(Vec::as_slice).collect();
        let sb: Vec<&[u8]> = rb.iter().map(Vec::as_slice).collect();
        ks.pfadd(b"a", &sa, &mut p).unwrap();
        ks.pfadd(b"b", &sb, &mut p).unwrap();
        let union = ks.pfcount(&[b"a", b"b", b"none"], &mut p).unwrap();
        assert!((145..=155).contains(&union), "{union}");
        ks.pfmerge(b"m", &[b"a", b"b"], &mut p).unwrap();
        assert_eq!(ks.pfcount(&[b"m"], &mut p), Ok(union));
        // Merging into itself keeps its own registers.
        ks.pfmerge(b"m", &[], &mut p).unwrap();
        assert_eq!(ks.pfcount(&[b"m"], &mut p), Ok(union));
    }

    #[test]
    fn wrong_values_are_refused() {
        let ks = mem();
        let mut p = Pending::default();
        ks.set(b"s", b"not an hll", SetOptions::default(), None, &mut p)
            .unwrap();
        assert_eq!(ks.pfadd(b"s", &[b"x"], &mut p), Err(KvError::NotHll));
        assert_eq!(ks.pfcount(&[b"s"], &mut p), Err(KvError::NotHll));
        assert_eq!(ks.pfmerge(b"d", &[b"s"], &mut p), Err(KvError::NotHll));
        assert!(!ks.contains(b"d"));
        ks.sadd(b"set", &[b"m"], &mut p).unwrap();
        assert_eq!(ks.pfcount(&[b"set"], &mut p), Err(KvError::WrongType));
        let mut bad = hll::new_sparse();
        bad.push(0x00);
        hll::invalidate(&mut bad);
        ks.set(b"bad", &bad, SetOptions::default(), None, &mut p)
            .unwrap();
        assert_eq!(ks.pfcount(&[b"bad"], &mut p), Err(KvError::CorruptHll));
        assert_eq!(
            ks.pfcount(&[b"bad", b"x"], &mut p),
            Err(KvError::CorruptHll)
        );
    }

    #[test]
    fn pfdebug_reports_and_converts() {
        let ks = mem();
        let mut p = Pending::default();
        ks.pfadd(b"h", &[b"a"], &mut p).unwrap();
        assert_eq!(
            ks.pfdebug(PfDebug::Encoding, b"h", &mut p),
            Ok(PfDebugReply::Encoding("sparse"))
        );
        assert!(matches!(
            ks.pfdebug(PfDebug::Decode, b"h", &mut p),
            Ok(PfDebugReply::Decoded(d)) if d.contains("v:")
        ));
        assert_eq!(
            ks.pfdebug(PfDebug::ToDense, b"h", &mut p),
            Ok(PfDebugReply::Converted(true))
        );
        assert_eq!(
            ks.pfdebug(PfDebug::ToDense, b"h", &mut p),
            Ok(PfDebugReply::Converted(false))
        );
        assert_eq!(
            ks.pfdebug(PfDebug::Decode, b"h", &mut p),
            Ok(PfDebugReply::NotSparse)
        );
        let Ok(PfDebugReply::Registers(r)) = ks.pfdebug(PfDebug::GetReg, b"h", &mut p) else {
            panic!("no registers");
        };
        assert_eq!(r.iter().filter(|&&x| x != 0).count(), 1);
        assert_eq!(
            ks.pfdebug(PfDebug::GetReg, b"none", &mut p),
            Ok(PfDebugReply::NoKey)
        );
    }
}
