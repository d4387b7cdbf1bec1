//! DUMP and RESTORE payloads in Redis's format, so a value dumped here restores into Redis
//! 7.0 and back: an RDB-encoded value, the RDB version as two bytes, then the CRC-64 (Redis's,
//! `crc` crate) of all that, little-endian. The RDB value is a type byte and the value: 0 for
//! a string (as an integer encoding when Redis would use one, else length-prefixed), 1 for a
//! list (its length, then each element as a string), 2 for a
//! set (its size, then each member as a string), 4 for a hash (its size, then each field and
//! value), 5 for a sorted set (its size, then each member as a string and its score as an 8-byte
//! little-endian double). Snapshots and the strict-mode log store collections in the same
//! encoding.
//!
//! Redis itself dumps small lists, hashes, sets and sorted sets in its compact encodings
//! (listpack, ziplist, intset, quicklist) and long compressible strings with LZF: RESTORE
//! reads those too (`rdb_compact.rs`), DUMP never writes them.

use crc::{Crc, CRC_64_REDIS};

use crate::clock::now_ms;
use crate::collection::{Collection, Hash, List, Set, Value};
use crate::entry::Entry;
use crate::feed::Op;
use crate::keyspace::{Emit, Find, Keyspace, Pending};

/// Redis 7.0's RDB version.
pub const RDB_VERSION: u16 = 10;
const RDB_TYPE_STRING: u8 = 0;
const RDB_TYPE_LIST: u8 = 1;
const RDB_TYPE_SET: u8 = 2;
const RDB_TYPE_HASH: u8 = 4;
/// A stream, in nsqr's own encoding (`stream_changes.rs`): a type byte Redis does not use.
const NSQR_TYPE_STREAM: u8 = 0xf5;
const RDB_TYPE_ZSET_2: u8 = 5;
/// Redis's older and compact encodings, which RESTORE reads (`rdb_compact.rs`).
const RDB_TYPE_ZSET: u8 = 3;
const RDB_TYPE_LIST_ZIPLIST: u8 = 10;
const RDB_TYPE_SET_INTSET: u8 = 11;
const RDB_TYPE_ZSET_ZIPLIST: u8 = 12;
const RDB_TYPE_HASH_ZIPLIST: u8 = 13;
const RDB_TYPE_LIST_QUICKLIST: u8 = 14;
const RDB_TYPE_HASH_LISTPACK: u8 = 16;
const RDB_TYPE_ZSET_LISTPACK: u8 = 17;
const RDB_TYPE_LIST_QUICKLIST_2: u8 = 18;
/// A quicklist 2 node holding one element as it is (else a listpack).
const QUICKLIST_NODE_PLAIN: u64 = 1;
const QUICKLIST_NODE_PACKED: u64 = 2;
const CRC64: Crc<u64> = Crc::<u64>::new(&CRC_64_REDIS);

/// Why a payload cannot be restored (the texts are Redis's).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DumpError {
    #[error("ERR DUMP payload version or checksum are wrong")]
    Checksum,
    #[error("ERR Bad data format")]
    BadData,
}

/// The DUMP payload of a string value.
pub fn dump_string(value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.len() + 16);
    out.push(RDB_TYPE_STRING);
    encode_string(value, &mut out);
    seal(out)
}

/// Appends the RDB version and the checksum to an encoded value.
pub(crate) fn seal(mut out: Vec<u8>) -> Vec<u8> {
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = CRC64.checksum(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Appends the RDB encoding (type byte and value) of an entry's value.
pub(crate) fn encode_value(e: &Entry, out: &mut Vec<u8>) {
    match (e.string(), e.collection()) {
        (Some(v), _) => {
            out.push(RDB_TYPE_STRING);
            encode_string(v, out);
        }
        (None, Some(Collection::List(l))) => {
            out.push(RDB_TYPE_LIST);
            encode_len(l.len() as u64, out);
            for e in l.iter() {
                encode_string(e, out);
            }
        }
        (None, Some(Collection::Hash(h))) => {
            out.push(RDB_TYPE_HASH);
            encode_len(h.len() as u64, out);
            for (f, v) in h.iter() {
                encode_string(f, out);
                encode_string(v, out);
            }
        }
        (None, Some(Collection::Set(s))) => {
            out.push(RDB_TYPE_SET);
            encode_len(s.len() as u64, out);
            for m in s.iter() {
                encode_string(m, out);
            }
        }
        (None, Some(Collection::Stream(s))) => {
            out.push(NSQR_TYPE_STREAM);
            s.encode_whole(out);
        }
        (None, Some(Collection::Zset(z))) => {
            out.push(RDB_TYPE_ZSET_2);
            encode_len(z.len() as u64, out);
            for (m, score) in z.iter() {
                encode_string(m, out);
                out.extend_from_slice(&score.to_le_bytes());
            }
        }
        (None, None) => {}
    }
}

/// The value of an RDB encoding made by [`encode_value`] (all of `b`). A collection with
/// no members, or a member twice, is bad data (Redis refuses both too).
pub(crate) fn decode_value(b: &[u8]) -> Result<Value, DumpError> {
    let (&kind, rest) = b.split_first().ok_or(DumpError::BadData)?;
    let mut r = Reader(rest);
    let value = match kind {
        RDB_TYPE_STRING => Value::String(r.string()?),
        RDB_TYPE_LIST => {
            let mut l = List::default();
            for _ in 0..r.count()? {
                l.push(&r.string()?, false);
            }
            Value::Collection(l.into())
        }
        RDB_TYPE_HASH => {
            let mut h = Hash::default();
            for _ in 0..r.count()? {
                let (f, v) = (r.string()?, r.string()?);
                if !h.insert(&f, &v) {
                    return Err(DumpError::BadData);
                }
            }
            Value::Collection(h.into())
        }
        RDB_TYPE_SET => {
            let mut s = Set::default();
            for _ in 0..r.count()? {
                if !s.insert(&r.string()?) {
                    return Err(DumpError::BadData);
                }
            }
            Value::Collection(s.into())
        }
        NSQR_TYPE_STREAM => {
            let s = crate::stream::Stream::decode_whole(rest).map_err(|_| DumpError::BadData)?;
            return Ok(Value::Collection(s.into()));
        }
        RDB_TYPE_ZSET_2 => {
            let mut z = crate::zset::ZSet::default();
            for _ in 0..r.count()? {
                let (m, score) = (r.string()?, r.score()?);
                if z.insert(&m, score).is_some() {
                    return Err(DumpError::BadData);
                }
            }
            Value::Collection(z.into())
        }
        RDB_TYPE_ZSET => {
            let mut z = crate::zset::ZSet::default();
            for _ in 0..r.count()? {
                let (m, score) = (r.string()?, r.text_score()?);
                if z.insert(&m, score).is_some() {
                    return Err(DumpError::BadData);
                }
            }
            Value::Collection(z.into())
        }
        RDB_TYPE_LIST_ZIPLIST | RDB_TYPE_LIST_QUICKLIST | RDB_TYPE_LIST_QUICKLIST_2 => {
            Value::Collection(r.compact_list(kind)?.into())
        }
        RDB_TYPE_SET_INTSET => {
            let members = crate::rdb_compact::intset(&r.string()?).ok_or(DumpError::BadData)?;
            let mut s = Set::default();
            for m in &members {
                s.insert(m);
            }
            non_empty(s.len())?;
            Value::Collection(s.into())
        }
        RDB_TYPE_HASH_ZIPLIST | RDB_TYPE_HASH_LISTPACK => {
            let mut h = Hash::default();
            for pair in r
                .compact_pairs(kind == RDB_TYPE_HASH_LISTPACK)?
                .chunks_exact(2)
            {
                if !h.insert(&pair[0], &pair[1]) {
                    return Err(DumpError::BadData);
                }
            }
            Value::Collection(h.into())
        }
        RDB_TYPE_ZSET_ZIPLIST | RDB_TYPE_ZSET_LISTPACK => {
            let mut z = crate::zset::ZSet::default();
            for pair in r
                .compact_pairs(kind == RDB_TYPE_ZSET_LISTPACK)?
                .chunks_exact(2)
            {
                let score = crate::double::parse_double(&pair[1])
                    .filter(|s| !s.is_nan())
                    .ok_or(DumpError::BadData)?;
                if z.insert(&pair[0], score).is_some() {
                    return Err(DumpError::BadData);
                }
            }
            Value::Collection(z.into())
        }
        _ => return Err(DumpError::BadData),
    };
    if !r.0.is_empty() {
        return Err(DumpError::BadData);
    }
    Ok(value)
}

/// A collection restored with no members is bad data (Redis refuses it too).
fn non_empty(n: usize) -> Result<(), DumpError> {
    if n == 0 {
        return Err(DumpError::BadData);
    }
    Ok(())
}

/// Reads an RDB value's parts from the front of a slice.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn string(&mut self) -> Result<Vec<u8>, DumpError> {
        let (v, used) = decode_string(self.0).ok_or(DumpError::BadData)?;
        self.0 = &self.0[used..];
        Ok(v)
    }

    /// A sorted set member's score: a little-endian double, never NaN.
    fn score(&mut self) -> Result<f64, DumpError> {
        let (b, rest) = self.0.split_first_chunk::<8>().ok_or(DumpError::BadData)?;
        self.0 = rest;
        Some(f64::from_le_bytes(*b))
            .filter(|s| !s.is_nan())
            .ok_or(DumpError::BadData)
    }

    /// A sorted set member's score as RDB_TYPE_ZSET writes it: a length byte and the text, or
    /// 253 / 254 / 255 for NaN (refused), +inf and -inf.
    fn text_score(&mut self) -> Result<f64, DumpError> {
        let (&len, rest) = self.0.split_first().ok_or(DumpError::BadData)?;
        self.0 = rest;
        match len {
            254 => return Ok(f64::INFINITY),
            255 => return Ok(f64::NEG_INFINITY),
            253 => return Err(DumpError::BadData),
            _ => {}
        }
        let (text, rest) = self
            .0
            .split_at_checked(usize::from(len))
            .ok_or(DumpError::BadData)?;
        self.0 = rest;
        crate::double::parse_double(text)
            .filter(|s| !s.is_nan())
            .ok_or(DumpError::BadData)
    }

    /// The members of a list in one of Redis's compact encodings: one ziplist, a quicklist of
    /// ziplists, or a quicklist 2 (each node a listpack or one plain element).
    fn compact_list(&mut self, kind: u8) -> Result<List, DumpError> {
        let bad = || DumpError::BadData;
        let nodes = if kind == RDB_TYPE_LIST_ZIPLIST {
            1
        } else {
            self.count()?
        };
        let mut l = List::default();
        for _ in 0..nodes {
            let container = match kind {
                RDB_TYPE_LIST_QUICKLIST_2 => {
                    let (c, used) = decode_len(self.0).ok_or_else(bad)?;
                    self.0 = &self.0[used..];
                    c
                }
                _ => 0,
            };
            let blob = self.string()?;
            let elements = match container {
                QUICKLIST_NODE_PLAIN => vec![blob],
                QUICKLIST_NODE_PACKED => crate::rdb_compact::listpack(&blob).ok_or_else(bad)?,
                0 => crate::rdb_compact::ziplist(&blob).ok_or_else(bad)?,
                _ => return Err(bad()),
            };
            non_empty(elements.len())?;
            for e in &elements {
                l.push(e, false);
            }
        }
        Ok(l)
    }

    /// The entries of a hash's or sorted set's listpack (or ziplist): field and value, member
    /// and score, alternating; at least one pair.
    fn compact_pairs(&mut self, listpack: bool) -> Result<Vec<Vec<u8>>, DumpError> {
        let blob = self.string()?;
        let entries = if listpack {
            crate::rdb_compact::listpack(&blob)
        } else {
            crate::rdb_compact::ziplist(&blob)
        }
        .ok_or(DumpError::BadData)?;
        non_empty(entries.len())?;
        if entries.len() % 2 != 0 {
            return Err(DumpError::BadData);
        }
        Ok(entries)
    }

    /// A collection's size: at least one, and no more than the bytes left (each member takes
    /// one at least), so a damaged size is refused before anything is allocated for it.
    fn count(&mut self) -> Result<u64, DumpError> {
        let (n, used) = decode_len(self.0).ok_or(DumpError::BadData)?;
        self.0 = &self.0[used..];
        if n == 0 || n > self.0.len() as u64 {
            return Err(DumpError::BadData);
        }
        Ok(n)
    }
}

/// A string as Redis writes it in an RDB: as an 8, 16 or 32-bit integer when it is the
/// canonical text of one (at most 11 bytes), else its length then its bytes.
pub(crate) fn encode_string(v: &[u8], out: &mut Vec<u8>) {
    if v.len() <= 11 {
        if let Some(n) =
            resp_wire::parse_i64(v).filter(|n| itoa::Buffer::new().format(*n).as_bytes() == v)
        {
            if let Ok(n) = i8::try_from(n) {
                out.push(0xc0);
                out.extend_from_slice(&n.to_le_bytes());
                return;
            }
            if let Ok(n) = i16::try_from(n) {
                out.push(0xc1);
                out.extend_from_slice(&n.to_le_bytes());
                return;
            }
            if let Ok(n) = i32::try_from(n) {
                out.push(0xc2);
                out.extend_from_slice(&n.to_le_bytes());
                return;
            }
        }
    }
    encode_len(v.len() as u64, out);
    out.extend_from_slice(v);
}

/// An RDB length: 6, 14, 32 or 64 bits.
fn encode_len(len: u64, out: &mut Vec<u8>) {
    if len < 1 << 6 {
        out.push(len as u8);
    } else if len < 1 << 14 {
        out.extend_from_slice(&[0x40 | (len >> 8) as u8, len as u8]);
    } else if len <= u64::from(u32::MAX) {
        out.push(0x80);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&len.to_be_bytes());
    }
}

/// The value of a DUMP payload.
pub fn restore_value(payload: &[u8]) -> Result<Value, DumpError> {
    decode_value(unseal(payload)?)
}

/// The body of a payload whose RDB version and checksum hold.
pub(crate) fn unseal(payload: &[u8]) -> Result<&[u8], DumpError> {
    let body_len = payload.len().checked_sub(10).ok_or(DumpError::Checksum)?;
    let (body, footer) = payload.split_at(body_len);
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    let mut crc = [0u8; 8];
    crc.copy_from_slice(&footer[2..]);
    if version > RDB_VERSION || CRC64.checksum(&payload[..body_len + 2]) != u64::from_le_bytes(crc)
    {
        return Err(DumpError::Checksum);
    }
    Ok(body)
}

/// An RDB length at the start of `b` and the bytes it took (`None` for an integer encoding).
pub(crate) fn decode_len(b: &[u8]) -> Option<(u64, usize)> {
    let first = *b.first()?;
    match first >> 6 {
        0 => Some((u64::from(first & 0x3f), 1)),
        1 => Some((u64::from(first & 0x3f) << 8 | u64::from(*b.get(1)?), 2)),
        2 if first == 0x80 => Some((
            u64::from(u32::from_be_bytes(b.get(1..5)?.try_into().ok()?)),
            5,
        )),
        2 if first == 0x81 => Some((u64::from_be_bytes(b.get(1..9)?.try_into().ok()?), 9)),
        _ => None,
    }
}

/// A string at the start of `b` and the bytes it took.
pub(crate) fn decode_string(b: &[u8]) -> Option<(Vec<u8>, usize)> {
    let first = *b.first()?;
    if first >> 6 != 3 {
        let (len, at) = decode_len(b)?;
        let end = at.checked_add(usize::try_from(len).ok()?)?;
        return Some((b.get(at..end)?.to_vec(), end));
    }
    let n: i64 = match first & 0x3f {
        0 => i64::from(i8::from_le_bytes([*b.get(1)?])),
        1 => i64::from(i16::from_le_bytes(b.get(1..3)?.try_into().ok()?)),
        2 => i64::from(i32::from_le_bytes(b.get(1..5)?.try_into().ok()?)),
        3 => {
            let (v, used) = crate::rdb_compact::lzf_string(b.get(1..)?)?;
            return Some((v, 1 + used));
        }
        _ => return None,
    };
    let used = 1 + (1usize << (first & 0x3f));
    Some((n.to_string().into_bytes(), used))
}

/// RESTORE's IDLETIME or FREQ: the access history the key starts with (each applies only
/// under a policy of its kind, LRU or LFU, as in Redis).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Access {
    #[default]
    Now,
    IdleSeconds(u64),
    Frequency(u8),
}

/// What RESTORE does with a key that exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restored {
    Written,
    /// The key exists and REPLACE was not given.
    Busy,
    /// The deadline had passed: nothing written (an existing key was removed, with REPLACE).
    Expired,
}

impl Keyspace {
    /// DUMP: the payload of `key`'s value, or `None` if it does not exist.
    pub fn dump(&self, key: &[u8]) -> Option<Vec<u8>> {
        let now = now_ms();
        let hash = self.hash(key);
        let mut g = self.lock(hash);
        let e = self.find(&mut g, hash, key, now, Find::Read)?;
        let mut out = Vec::new();
        encode_value(e, &mut out);
        Some(seal(out))
    }

    /// RESTORE of a value, with an absolute deadline or none.
    pub fn restore(
        &self,
        key: &[u8],
        value: Value,
        deadline: Option<u64>,
        replace: bool,
        access: Access,
        pending: &mut Pending,
    ) -> Restored {
        let now = now_ms();
        let hash = self.hash(key);
        let mut g = self.lock(hash);
        let old_clock = self
            .find(&mut g, hash, key, now, Find::Peek)
            .map(|e| e.clock());
        if old_clock.is_some() && !replace {
            return Restored::Busy;
        }
        if deadline.is_some_and(|d| d <= now) {
            if old_clock.is_some() && g.remove(hash, key).is_some() {
                self.emit(Emit::new(Op::Del, key), now, pending);
            }
            return Restored::Expired;
        }
        let lfu = self.settings.policy().is_lfu();
        let clock = match access {
            Access::IdleSeconds(s) if !lfu => {
                crate::clock::lru_clock(now.saturating_sub(s.saturating_mul(1000)))
            }
            Access::Frequency(f) if lfu => (crate::evict::lfu_new(now) & !0xff) | u32::from(f),
            _ => self.write_clock(None, now),
        };
        let entry = Entry::of(key, value, deadline, clock);
        self.emit_whole(&entry, Op::Restore, old_clock.is_none(), now, pending);
        g.put(hash, entry, self.hasher());
        if let Some(d) = deadline {
            self.timer.schedule(d);
        }
        Restored::Written
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_are_redis_7_bytes() {
        assert_eq!(dump_string(b"hello"), b"\x00\x05hello\n\x00cr\xdfve4 \n");
        assert_eq!(
            dump_string(b"12345"),
            b"\x00\xc190\n\x00\x9d\x94\xea'\x93\xfc\x08\xb9"
        );
    }

    #[test]
    fn round_trips_and_refusals() {
        for v in [
            &b""[..],
            b"0",
            b"-128",
            b"127",
            b"70000",
            b"-2147483648",
            b"2147483648",
            b"007",
            &[b'x'; 100],
            &[b'y'; 20_000],
        ] {
            assert_eq!(
                restore_value(&dump_string(v)),
                Ok(Value::String(v.to_vec())),
                "{v:?}"
            );
        }
        let mut bad = dump_string(b"hello");
        bad[2] ^= 1;
        assert_eq!(restore_value(&bad), Err(DumpError::Checksum));
        assert_eq!(restore_value(b"short"), Err(DumpError::Checksum));
        // Redis's LZF-compressed string.
        let lzf = b"\x00\xc3\t/\x01aa\xe0\"\x00\x01aa\n\x00&`\x80[\x8e:X=";
        assert_eq!(restore_value(lzf), Ok(Value::String(vec![b'a'; 47])));
        // A newer RDB version.
        let mut newer = b"\x00\x01a".to_vec();
        newer.extend_from_slice(&11u16.to_le_bytes());
        let crc = CRC64.checksum(&newer);
        newer.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(restore_value(&newer), Err(DumpError::Checksum));
    }

    /// A restored collection's members in order (a hash's fields and values, a sorted set's
    /// members and scores, alternating).
    fn members(v: Value) -> Vec<Vec<u8>> {
        match v {
            Value::String(s) => vec![s],
            Value::Collection(Collection::List(l)) => l.iter().map(|e| e.to_vec()).collect(),
            Value::Collection(Collection::Set(s)) => s.iter().map(|m| m.to_vec()).collect(),
            Value::Collection(Collection::Hash(h)) => h
                .iter()
                .flat_map(|(f, v)| [f.to_vec(), v.to_vec()])
                .collect(),
            Value::Collection(Collection::Zset(z)) => z
                .iter()
                .flat_map(|(m, s)| [m.to_vec(), s.to_string().into_bytes()])
                .collect(),
            Value::Collection(Collection::Stream(_)) => panic!("a stream"),
        }
    }

    fn texts(v: &[&str]) -> Vec<Vec<u8>> {
        v.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    /// Payloads made by redis-server 7.0.15's DUMP, in its compact encodings.
    #[test]
    fn restores_what_redis_7_dumps() {
        let cases: [(&[u8], Vec<Vec<u8>>); 6] = [
            // HSET h f1 v1 f2 2: a listpack.
            (
                b"\x10\x15\x15\x00\x00\x00\x04\x00\x82f1\x03\x82v1\x03\x82f2\x03\x02\x01\xff\n\x00\\^\xa8\x13\xfe\xec\x1f\xf5",
                texts(&["f1", "v1", "f2", "2"]),
            ),
            // ZADD z 1 a 2.5 b -3 c: a listpack, in score order.
            (
                b"\x11\x1a\x1a\x00\x00\x00\x06\x00\x81c\x02\xdf\xfd\x02\x81a\x02\x01\x01\x81b\x02\x832.5\x04\xff\n\x00\xa6\x8a\x1a\xb1\xa9\xf2\xdc\xc2",
                texts(&["c", "-3", "a", "1", "b", "2.5"]),
            ),
            // ZADD zb 1 one 2 two 3.5 three -inf low.
            (
                b"\x11,,\x00\x00\x00\x08\x00\x83low\x04\x84-inf\x05\x83one\x04\x01\x01\x83two\x04\x02\x01\x85three\x06\x833.5\x04\xff\n\x00ed\x18\xc4\r\x81\xb0\xc4",
                texts(&["low", "-inf", "one", "1", "two", "2", "three", "3.5"]),
            ),
            // SADD si 1 2 -3 100000: an intset.
            (
                b"\x0b\x18\x04\x00\x00\x00\x04\x00\x00\x00\xfd\xff\xff\xff\x01\x00\x00\x00\x02\x00\x00\x00\xa0\x86\x01\x00\n\x00\xe5oh\xd5\xee\x10\xfe\xb5",
                texts(&["-3", "1", "2", "100000"]),
            ),
            // RPUSH l a b 1 -5 300 70000 5000000000: a quicklist of one listpack.
            (
                b"\x12\x01\x02$$\x00\x00\x00\x07\x00\x81a\x02\x81b\x02\x01\x01\xdf\xfb\x02\xc1,\x02\xf2p\x11\x01\x04\xf4\x00\xf2\x05*\x01\x00\x00\x00\t\xff\n\x00a\x90\xc1\x8c\x80\x8a\xbdb",
                texts(&["a", "b", "1", "-5", "300", "70000", "5000000000"]),
            ),
            // SET lz to "abcabcabcabc" ten times: LZF.
            (
                b"\x00\xc3\x0b@x\x03abca\xe0i\x02\x01bc\n\x00\xc4\x94\xa1p*\xe2>\x06",
                vec![b"abcabcabcabc".repeat(10)],
            ),
        ];
        for (payload, want) in cases {
            let got = restore_value(payload).map(members);
            assert_eq!(got, Ok(want), "{payload:?}");
        }
        // With list-max-listpack-size 4: three listpack nodes, each compressed with LZF.
        let nodes = b"\x12\x03\x02\xc35@\xcf\x19\xcf\x00\x00\x00\x04\x00\xb0element-number-10-x\xe0\x14\x00\x001\xe0\x081\x001\xe0(1\x002\xe0(1\x003\xe0\x161\x011\xff\x02\xc35@\xcf\x19\xcf\x00\x00\x00\x04\x00\xb0element-number-14-x\xe0\x14\x00\x001\xe0\x081\x005\xe0(1\x006\xe0(1\x007\xe0\x161\x011\xff\x02\xc36@\xcf\x19\xcf\x00\x00\x00\x04\x00\xb0element-number-18-x\xe0\x14\x00\x001\xe0\x081\x009\xe0'1\x0120\xe0(1\x001\xe0\x161\x011\xff\n\x00z?\xc7\xaf(@W\x9c";
        let want: Vec<Vec<u8>> = (10..22)
            .map(|i| format!("element-number-{i}-{}", "x".repeat(30)).into_bytes())
            .collect();
        assert_eq!(restore_value(nodes).map(members), Ok(want));
    }

    /// Older and hand-made compact payloads: a ziplist hash (Redis 6), a string-scored sorted
    /// set, a plain quicklist node, and damaged ones.
    #[test]
    fn restores_older_encodings_and_refuses_damage() {
        let zl = |entries: &[&[u8]]| {
            let mut b = vec![0; 10];
            for e in entries {
                b.push(0); // the previous entry's length, not checked
                b.push(e.len() as u8);
                b.extend_from_slice(e);
            }
            b.push(0xff);
            let total = b.len() as u32;
            b[..4].copy_from_slice(&total.to_le_bytes());
            b[8..10].copy_from_slice(&(entries.len() as u16).to_le_bytes());
            b
        };
        let payload = |kind: u8, body: &[u8]| {
            let mut out = vec![kind];
            out.extend_from_slice(body);
            seal(out)
        };
        let blob = |b: Vec<u8>| {
            let mut out = Vec::new();
            encode_len(b.len() as u64, &mut out);
            out.extend_from_slice(&b);
            out
        };
        let hash = payload(RDB_TYPE_HASH_ZIPLIST, &blob(zl(&[b"f", b"v", b"g", b"w"])));
        assert_eq!(
            restore_value(&hash).map(members),
            Ok(texts(&["f", "v", "g", "w"]))
        );
        let odd = payload(RDB_TYPE_HASH_ZIPLIST, &blob(zl(&[b"f", b"v", b"g"])));
        assert_eq!(restore_value(&odd), Err(DumpError::BadData));
        let twice = payload(RDB_TYPE_HASH_ZIPLIST, &blob(zl(&[b"f", b"v", b"f", b"w"])));
        assert_eq!(restore_value(&twice), Err(DumpError::BadData));
        let empty = payload(RDB_TYPE_HASH_ZIPLIST, &blob(zl(&[])));
        assert_eq!(restore_value(&empty), Err(DumpError::BadData));
        let nan = payload(RDB_TYPE_ZSET_ZIPLIST, &blob(zl(&[b"m", b"nan"])));
        assert_eq!(restore_value(&nan), Err(DumpError::BadData));
        // RDB_TYPE_ZSET: scores as text, 254 for +inf; 253 (NaN) refused.
        let z = payload(RDB_TYPE_ZSET, b"\x02\x01a\x031.5\x01b\xfe");
        assert_eq!(
            restore_value(&z).map(members),
            Ok(texts(&["a", "1.5", "b", "inf"]))
        );
        let z_nan = payload(RDB_TYPE_ZSET, b"\x01\x01a\xfd");
        assert_eq!(restore_value(&z_nan), Err(DumpError::BadData));
        // A quicklist 2 with a plain node and an unknown container.
        let mut plain = vec![1, QUICKLIST_NODE_PLAIN as u8];
        plain.extend_from_slice(&blob(b"big element".to_vec()));
        assert_eq!(
            restore_value(&payload(RDB_TYPE_LIST_QUICKLIST_2, &plain)).map(members),
            Ok(texts(&["big element"]))
        );
        plain[1] = 3;
        let unknown = payload(RDB_TYPE_LIST_QUICKLIST_2, &plain);
        assert_eq!(restore_value(&unknown), Err(DumpError::BadData));
        // A quicklist of ziplists (Redis 3.2 to 6).
        let mut ql = vec![2];
        ql.extend_from_slice(&blob(zl(&[b"a", b"b"])));
        ql.extend_from_slice(&blob(zl(&[b"c"])));
        assert_eq!(
            restore_value(&payload(RDB_TYPE_LIST_QUICKLIST, &ql)).map(members),
            Ok(texts(&["a", "b", "c"]))
        );
        // Every cut of a valid compact payload is refused, never a panic.
        let hash_body = blob(zl(&[b"f", b"v"]));
        for n in 0..hash_body.len() {
            let cut = payload(RDB_TYPE_HASH_ZIPLIST, &hash_body[..n]);
            assert_eq!(restore_value(&cut), Err(DumpError::BadData), "cut at {n}");
        }
    }

    proptest::proptest! {
        /// Any bytes behind any type byte, Redis's compact encodings included, restore or are
        /// refused: never a panic, never more memory than the bytes justify.
        #[test]
        fn any_payload_restores_or_is_refused(
            kind in proptest::sample::select(vec![0u8, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 16, 17, 18]),
            body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256),
        ) {
            let mut out = vec![kind];
            out.extend_from_slice(&body);
            let _ = restore_value(&seal(out));
        }

        /// Redis-made compact payloads with one byte changed, resealed: the same.
        #[test]
        fn any_damaged_compact_payload_restores_or_is_refused(
            which in 0usize..3,
            at in 0usize..200,
            byte in proptest::prelude::any::<u8>(),
        ) {
            let payloads: [&[u8]; 3] = [
                b"\x11,,\x00\x00\x00\x08\x00\x83low\x04\x84-inf\x05\x83one\x04\x01\x01\x83two\x04\x02\x01\x85three\x06\x833.5\x04\xff\n\x00ed\x18\xc4\r\x81\xb0\xc4",
                b"\x0b\x18\x04\x00\x00\x00\x04\x00\x00\x00\xfd\xff\xff\xff\x01\x00\x00\x00\x02\x00\x00\x00\xa0\x86\x01\x00\n\x00\xe5oh\xd5\xee\x10\xfe\xb5",
                b"\x12\x03\x02\xc35@\xcf\x19\xcf\x00\x00\x00\x04\x00\xb0element-number-10-x\xe0\x14\x00\x001\xe0\x081\x001\xe0(1\x002\xe0(1\x003\xe0\x161\x011\xff\x02\xc35@\xcf\x19\xcf\x00\x00\x00\x04\x00\xb0element-number-14-x\xe0\x14\x00\x001\xe0\x081\x005\xe0(1\x006\xe0(1\x007\xe0\x161\x011\xff\x02\xc36@\xcf\x19\xcf\x00\x00\x00\x04\x00\xb0element-number-18-x\xe0\x14\x00\x001\xe0\x081\x009\xe0'1\x0120\xe0(1\x001\xe0\x161\x011\xff\n\x00z?\xc7\xaf(@W\x9c",
            ];
            let p = payloads[which];
            let mut body = p[..p.len() - 10].to_vec();
            let at = at % body.len();
            body[at] = byte;
            let _ = restore_value(&seal(body));
        }
    }

    #[test]
    fn restore_respects_busy_keys_and_past_deadlines() {
        let ks = crate::test_support::mem();
        let mut p = Pending::default();
        let now = Access::Now;
        let r = |key: &[u8], d, replace, a, p: &mut Pending| {
            ks.restore(key, Value::String(b"v".to_vec()), d, replace, a, p)
        };
        assert_eq!(r(b"k", None, false, now, &mut p), Restored::Written);
        assert_eq!(r(b"k", None, false, now, &mut p), Restored::Busy);
        assert_eq!(r(b"k", Some(1), true, now, &mut p), Restored::Expired);
        assert!(!ks.contains(b"k"));
        let at = ks.now_ms() + 100_000;
        let idle = Access::IdleSeconds(1000);
        assert_eq!(r(b"k", Some(at), true, idle, &mut p), Restored::Written);
        assert_eq!(ks.deadline(b"k"), Some(Some(at)));
        let info = ks.key_info(b"k").unwrap();
        assert!((999..=1010).contains(&info.idle_seconds), "{info:?}");
    }
}
