//! Bitmaps: strings read and written as bits, most significant bit of the first byte first, as
//! Redis's SETBIT, GETBIT, BITCOUNT, BITPOS and BITOP do. The counting and searching are pure
//! functions over a value; SETBIT and BITOP write through the keyspace (BITOP locks every
//! source and the destination together, so it reads and writes one state).

use crate::clock::now_ms;
use crate::error::KvError;
use crate::feed::Op;
use crate::keyspace::{Emit, Find, Keyspace, Pending};
use crate::strings::string_of;

/// BITOP's operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BitOp {
    And,
    Or,
    Xor,
    Not,
}

/// A BITCOUNT / BITPOS range: `start..=end` in bytes or in bits, negative from the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BitRange {
    pub start: i64,
    pub end: i64,
    pub bits: bool,
}

/// The range in bits, clamped as Redis clamps it; `None` when it is empty.
fn bit_span(len: usize, r: BitRange) -> Option<(u64, u64)> {
    let total = if r.bits { len as i64 * 8 } else { len as i64 };
    let clamp = |v: i64| if v < 0 { (total + v).max(0) } else { v };
    let (start, end) = (clamp(r.start), clamp(r.end).min(total - 1));
    if start > end {
        return None;
    }
    let (start, end) = (start as u64, end as u64);
    Some(if r.bits {
        (start, end)
    } else {
        (start * 8, end * 8 + 7)
    })
}

fn bit_at(v: &[u8], i: u64) -> bool {
    v[(i / 8) as usize] & (0x80 >> (i % 8)) != 0
}

/// BITCOUNT: set bits in `range` (the whole value if `None`).
pub fn bitcount(v: &[u8], range: Option<BitRange>) -> u64 {
    let r = range.unwrap_or(BitRange {
        start: 0,
        end: -1,
        bits: false,
    });
    if r.start < 0 && r.end < 0 && r.start > r.end {
        return 0;
    }
    let Some((from, to)) = bit_span(v.len(), r) else {
        return 0;
    };
    let (first, last) = ((from / 8) as usize, (to / 8) as usize);
    let whole: u64 = v[first..=last]
        .iter()
        .map(|b| u64::from(b.count_ones()))
        .sum();
    let head = (0..from % 8)
        .filter(|i| bit_at(v, (first as u64) * 8 + i))
        .count() as u64;
    let tail = (to % 8 + 1..8)
        .filter(|i| bit_at(v, (last as u64) * 8 + i))
        .count() as u64;
    whole - head - tail
}

/// BITPOS: the first bit equal to `bit` in the range, or -1. With no explicit end, a value
/// searched for a clear bit is taken as followed by zeros (the answer is then the bit past
/// its end), as in Redis. `v` is `None` for a missing key.
pub fn bitpos(
    v: Option<&[u8]>,
    bit: bool,
    start: Option<i64>,
    end: Option<i64>,
    bits: bool,
) -> i64 {
    let Some(v) = v else {
        return if bit { -1 } else { 0 };
    };
    let default_end = if bits {
        v.len() as i64 * 8 + 7
    } else {
        v.len() as i64 - 1
    };
    let r = BitRange {
        start: start.unwrap_or(0),
        end: end.unwrap_or(default_end),
        bits,
    };
    let Some((from, to)) = bit_span(v.len(), r) else {
        return -1;
    };
    match (from..=to).find(|&i| bit_at(v, i) == bit) {
        Some(i) => i as i64,
        None if bit || end.is_some() => -1,
        None => to as i64 + 1,
    }
}

/// BITOP's result over `sources` (a missing or shorter one counts as zero bytes).
pub fn bitop(op: BitOp, sources: &[Option<Vec<u8>>]) -> Vec<u8> {
    let len = sources
        .iter()
        .map(|s| s.as_ref().map_or(0, Vec::len))
        .max()
        .unwrap_or(0);
    let byte =
        |s: &Option<Vec<u8>>, i: usize| s.as_ref().and_then(|v| v.get(i)).copied().unwrap_or(0);
    (0..len)
        .map(|i| {
            let mut it = sources.iter().map(|s| byte(s, i));
            let first = it.next().unwrap_or(0);
            match op {
                BitOp::Not => !first,
                BitOp::And => it.fold(first, |a, b| a & b),
                BitOp::Or => it.fold(first, |a, b| a | b),
                BitOp::Xor => it.fold(first, |a, b| a ^ b),
            }
        })
        .collect()
}

impl Keyspace {
    /// GETBIT.
    pub fn getbit(&self, key: &[u8], offset: u64) -> Result<bool, KvError> {
        self.get(key, |v| {
            v.is_some_and(|v| (offset / 8) < v.len() as u64 && bit_at(v, offset))
        })
    }

    /// SETBIT: the bit's old value; the value grows with zero bytes as needed (the caller
    /// bounds `offset` by `proto-max-bulk-len`). The deadline is kept.
    pub fn setbit(
        &self,
        key: &[u8],
        offset: u64,
        bit: bool,
        pending: &mut Pending,
    ) -> Result<bool, KvError> {
        let byte = usize::try_from(offset / 8).map_err(|_| KvError::TooLarge)?;
        if byte as u64 >= self.max_bulk {
            return Err(KvError::TooLarge);
        }
        self.edit_value(key, Op::SetBit, pending, |value| {
            if value.len() <= byte {
                value.resize(byte + 1, 0);
            }
            let mask = 0x80 >> (offset % 8);
            let old = value[byte] & mask != 0;
            if bit {
                value[byte] |= mask;
            } else {
                value[byte] &= !mask;
            }
            Ok((old, true))
        })
    }

    /// BITOP: writes the result to `dest` (no deadline) and returns its length; an empty
    /// result deletes `dest`. WRONGTYPE if a source is not a string.
    pub fn bitop(
        &self,
        op: BitOp,
        dest: &[u8],
        keys: &[&[u8]],
        pending: &mut Pending,
    ) -> Result<usize, KvError> {
        let now = now_ms();
        let mut hashes: Vec<u64> = keys.iter().map(|k| self.hash(k)).collect();
        let hd = self.hash(dest);
        hashes.push(hd);
        let mut guards = self.lock_many(&hashes);
        let sources: Vec<Option<Vec<u8>>> = keys
            .iter()
            .zip(&hashes)
            .map(|(k, &h)| {
                let g = self.guard_of(&mut guards, h);
                let e = self.find(g, h, k, now, Find::Peek);
                Ok(string_of(e.as_deref())?.map(<[u8]>::to_vec))
            })
            .collect::<Result<_, KvError>>()?;
        let result = bitop(op, &sources);
        let g = self.guard_of(&mut guards, hd);
        let old_clock = self.find(g, hd, dest, now, Find::Peek).map(|e| e.clock());
        if result.is_empty() {
            if old_clock.is_some() && g.remove(hd, dest).is_some() {
                self.emit(Emit::new(Op::Del, dest), now, pending);
            }
            return Ok(0);
        }
        let clock = self.write_clock(old_clock, now);
        g.store(hd, dest, &result, None, clock, self.hasher());
        let emit = Emit {
            value: Some(&result),
            created: old_clock.is_none(),
            ..Emit::new(Op::Set, dest)
        };
        self.emit(emit, now, pending);
        Ok(result.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::mem;

    fn range(start: i64, end: i64, bits: bool) -> Option<BitRange> {
        Some(BitRange { start, end, bits })
    }

    #[test]
    fn bitcount_in_bytes_and_bits() {
        let v = b"foobar";
        assert_eq!(bitcount(v, None), 26);
        assert_eq!(bitcount(v, range(0, 0, false)), 4);
        assert_eq!(bitcount(v, range(1, 1, false)), 6);
        assert_eq!(bitcount(v, range(1, 1, true)), 1);
        assert_eq!(bitcount(v, range(5, 30, true)), 17);
        assert_eq!(bitcount(v, range(-1, -2, false)), 0);
        assert_eq!(bitcount(v, range(0, 100, false)), 26);
        assert_eq!(bitcount(b"", None), 0);
    }

    #[test]
    fn bitpos_as_redis() {
        let v = [0xff, 0xf0, 0x00];
        assert_eq!(bitpos(Some(&v), false, None, None, false), 12);
        assert_eq!(
            bitpos(Some(&[0x00, 0xff, 0xf0]), true, Some(0), None, false),
            8
        );
        assert_eq!(
            bitpos(Some(&[0x00, 0xff, 0xf0]), true, Some(2), None, false),
            16
        );
        assert_eq!(
            bitpos(Some(&[0x00, 0xff, 0xf0]), true, Some(2), Some(-1), true),
            8
        );
        assert_eq!(
            bitpos(Some(&[0x00, 0xff, 0xf0]), true, Some(2), Some(-1), false),
            16
        );
        assert_eq!(
            bitpos(Some(&[0x00, 0xff, 0xf0]), true, Some(7), Some(15), true),
            8
        );
        assert_eq!(
            bitpos(Some(&[0x00, 0x00, 0x00]), true, None, None, false),
            -1
        );
        assert_eq!(bitpos(Some(&[0xff, 0xff]), false, None, None, false), 16);
        assert_eq!(
            bitpos(Some(&[0xff, 0xff]), false, Some(0), Some(-1), false),
            -1
        );
        assert_eq!(bitpos(None, true, None, None, false), -1);
        assert_eq!(bitpos(None, false, None, None, false), 0);
        assert_eq!(bitpos(Some(b""), false, None, None, false), -1);
    }

    #[test]
    fn bitop_pads_with_zeros() {
        let a = Some(b"\xff\x0f".to_vec());
        let b = Some(b"\x0f".to_vec());
        assert_eq!(bitop(BitOp::And, &[a.clone(), b.clone()]), b"\x0f\x00");
        assert_eq!(bitop(BitOp::Or, &[a.clone(), b.clone(), None]), b"\xff\x0f");
        assert_eq!(bitop(BitOp::Xor, &[a.clone(), b]), b"\xf0\x0f");
        assert_eq!(bitop(BitOp::Not, &[a]), b"\x00\xf0");
        assert!(bitop(BitOp::Or, &[None, None]).is_empty());
    }

    #[test]
    fn setbit_grows_and_bitop_writes_or_deletes() {
        let ks = mem();
        let mut p = Pending::default();
        assert_eq!(ks.setbit(b"b", 7, true, &mut p), Ok(false));
        assert_eq!(ks.setbit(b"b", 7, true, &mut p), Ok(true));
        assert_eq!(ks.setbit(b"b", 20, true, &mut p), Ok(false));
        ks.get(b"b", |v| assert_eq!(v, Some(&[0x01, 0x00, 0x08][..])))
            .unwrap();
        assert_eq!(
            [7, 6, 1000].map(|o| ks.getbit(b"b", o)),
            [Ok(true), Ok(false), Ok(false)]
        );
        assert_eq!(
            ks.setbit(b"b", (512 * 8) << 20, true, &mut p),
            Err(KvError::TooLarge)
        );
        assert_eq!(ks.bitop(BitOp::Not, b"d", &[b"b"], &mut p), Ok(3));
        ks.get(b"d", |v| assert_eq!(v, Some(&[0xfe, 0xff, 0xf7][..])))
            .unwrap();
        assert_eq!(ks.bitop(BitOp::And, b"d", &[b"none"], &mut p), Ok(0));
        assert!(!ks.contains(b"d"));
    }
}
