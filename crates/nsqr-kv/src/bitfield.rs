//! BITFIELD: integers of 1 to 64 bits (unsigned up to 63) at any bit offset of a string, most
//! significant bit first, read, set and incremented with Redis's overflow rules (WRAP, SAT,
//! FAIL). The field arithmetic is pure; [`Keyspace::bitfield`] runs a command's operations on
//! one value under the key's lock, so they see each other's writes and nothing else.

use crate::error::KvError;
use crate::feed::Op;
use crate::keyspace::{Keyspace, Pending};

/// What an operation does when its result does not fit the field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Overflow {
    #[default]
    Wrap,
    Sat,
    /// Nothing written, a null answer.
    Fail,
}

/// What an operation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldOp {
    Get,
    /// Writes the value; answers the old one.
    Set(i64),
    /// Adds to the field; answers the new value.
    IncrBy(i64),
}

/// One operation of a BITFIELD command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    pub op: FieldOp,
    pub signed: bool,
    /// 1..=64 signed, 1..=63 unsigned (the caller checks).
    pub bits: u32,
    pub offset: u64,
    pub overflow: Overflow,
}

impl Field {
    /// The last bit the operation reaches.
    pub fn last_bit(&self) -> u64 {
        self.offset + u64::from(self.bits) - 1
    }
}

fn get_unsigned(v: &[u8], offset: u64, bits: u32) -> u64 {
    let mut value = 0u64;
    for i in 0..u64::from(bits) {
        let pos = offset + i;
        let byte = v.get((pos / 8) as usize).copied().unwrap_or(0);
        let bit = (byte >> (7 - pos % 8)) & 1;
        value = (value << 1) | u64::from(bit);
    }
    value
}

fn get_signed(v: &[u8], offset: u64, bits: u32) -> i64 {
    let value = get_unsigned(v, offset, bits);
    if bits < 64 && value & (1 << (bits - 1)) != 0 {
        (value | (u64::MAX << bits)) as i64
    } else {
        value as i64
    }
}

/// Writes the low `bits` bits of `value`; `v` is long enough.
fn set_unsigned(v: &mut [u8], offset: u64, bits: u32, value: u64) {
    for i in 0..u64::from(bits) {
        let bit = (value >> (u64::from(bits) - 1 - i)) & 1;
        let pos = offset + i;
        let byte = &mut v[(pos / 8) as usize];
        let mask = 0x80u8 >> (pos % 8);
        if bit == 1 {
            *byte |= mask;
        } else {
            *byte &= !mask;
        }
    }
}

/// Redis's `checkUnsignedBitfieldOverflow`: whether `value + incr` leaves the field, and the
/// value to write instead (WRAP, SAT).
fn unsigned_overflow(value: u64, incr: i64, bits: u32, how: Overflow) -> (bool, u64) {
    let max = (1u64 << bits) - 1;
    let max_incr = max.wrapping_sub(value) as i64;
    let min_incr = (value as i64).wrapping_neg();
    let wrapped = value.wrapping_add(incr as u64) & max;
    if value > max || (incr > 0 && incr > max_incr) {
        (true, if how == Overflow::Sat { max } else { wrapped })
    } else if incr < 0 && incr < min_incr {
        (true, if how == Overflow::Sat { 0 } else { wrapped })
    } else {
        (false, value.wrapping_add(incr as u64))
    }
}

/// Redis's `checkSignedBitfieldOverflow`.
fn signed_overflow(value: i64, incr: i64, bits: u32, how: Overflow) -> (bool, i64) {
    let max = if bits == 64 {
        i64::MAX
    } else {
        (1i64 << (bits - 1)) - 1
    };
    let min = -max - 1;
    let max_incr = (max as u64).wrapping_sub(value as u64) as i64;
    let min_incr = min.wrapping_sub(value);
    let wrap = || {
        let c = (value as u64).wrapping_add(incr as u64);
        if bits < 64 {
            let mask = u64::MAX << bits;
            if c & (1 << (bits - 1)) != 0 {
                (c | mask) as i64
            } else {
                (c & !mask) as i64
            }
        } else {
            c as i64
        }
    };
    let sixty_four = bits == 64;
    if value > max
        || (!sixty_four && incr > max_incr)
        || (value >= 0 && incr > 0 && incr > max_incr)
    {
        (true, if how == Overflow::Sat { max } else { wrap() })
    } else if value < min
        || (!sixty_four && incr < min_incr)
        || (value < 0 && incr < 0 && incr < min_incr)
    {
        (true, if how == Overflow::Sat { min } else { wrap() })
    } else {
        (false, value.wrapping_add(incr))
    }
}

/// Runs one operation on `v` (long enough for a write): its answer, `None` for a FAIL.
fn apply(v: &mut [u8], f: &Field) -> Option<i64> {
    let (incr, base_is_old) = match f.op {
        FieldOp::Get => {
            return Some(if f.signed {
                get_signed(v, f.offset, f.bits)
            } else {
                get_unsigned(v, f.offset, f.bits) as i64
            })
        }
        FieldOp::Set(n) => (n, false),
        FieldOp::IncrBy(n) => (n, true),
    };
    let (overflow, new, answer) = if f.signed {
        let old = get_signed(v, f.offset, f.bits);
        let (start, add) = if base_is_old { (old, incr) } else { (incr, 0) };
        let (overflow, new) = signed_overflow(start, add, f.bits, f.overflow);
        (overflow, new as u64, if base_is_old { new } else { old })
    } else {
        let old = get_unsigned(v, f.offset, f.bits);
        let (start, add) = if base_is_old {
            (old, incr)
        } else {
            (incr as u64, 0)
        };
        let (overflow, new) = unsigned_overflow(start, add, f.bits, f.overflow);
        (
            overflow,
            new,
            if base_is_old { new as i64 } else { old as i64 },
        )
    };
    if overflow && f.overflow == Overflow::Fail {
        return None;
    }
    set_unsigned(v, f.offset, f.bits, new);
    Some(answer)
}

impl Keyspace {
    /// BITFIELD / BITFIELD_RO: every operation's answer, in order. With a SET or INCRBY, the
    /// value first grows with zero bytes up to the farthest bit written (as in Redis, even
    /// when every write fails) and the key changes (`setbit`); with only GETs nothing is
    /// written and a missing key reads as zeros. The caller bounds the offsets by
    /// `proto-max-bulk-len`.
    pub fn bitfield(
        &self,
        key: &[u8],
        fields: &[Field],
        pending: &mut Pending,
    ) -> Result<Vec<Option<i64>>, KvError> {
        let last = fields
            .iter()
            .filter(|f| f.op != FieldOp::Get)
            .map(Field::last_bit)
            .max();
        let Some(last) = last else {
            return self.get(key, |v| {
                let v = v.unwrap_or_default();
                fields.iter().map(|f| Some(read_only(v, f))).collect()
            });
        };
        let bytes = usize::try_from(last / 8 + 1).map_err(|_| KvError::TooLarge)?;
        if bytes as u64 > self.max_bulk {
            return Err(KvError::TooLarge);
        }
        self.edit_value(key, Op::SetBit, pending, |value| {
            if value.len() < bytes {
                value.resize(bytes, 0);
            }
            Ok((fields.iter().map(|f| apply(value, f)).collect(), true))
        })
    }
}

fn read_only(v: &[u8], f: &Field) -> i64 {
    if f.signed {
        get_signed(v, f.offset, f.bits)
    } else {
        get_unsigned(v, f.offset, f.bits) as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::mem;

    fn field(op: FieldOp, ty: &str, offset: u64, overflow: Overflow) -> Field {
        Field {
            op,
            signed: ty.starts_with('i'),
            bits: ty[1..].parse().unwrap_or(8),
            offset,
            overflow,
        }
    }

    #[test]
    fn fields_read_and_write_msb_first() {
        let mut v = vec![0u8; 2];
        set_unsigned(&mut v, 4, 8, 0xab);
        assert_eq!(v, [0x0a, 0xb0]);
        assert_eq!(get_unsigned(&v, 4, 8), 0xab);
        assert_eq!(get_signed(&v, 4, 8), 0xab_u8 as i8 as i64);
        assert_eq!(get_unsigned(&v, 12, 64), 0);
        assert_eq!(get_signed(&[0xff; 8], 0, 64), -1);
    }

    #[test]
    fn overflow_rules_as_redis() {
        assert_eq!(unsigned_overflow(250, 10, 8, Overflow::Wrap), (true, 4));
        assert_eq!(unsigned_overflow(250, 10, 8, Overflow::Sat), (true, 255));
        assert_eq!(unsigned_overflow(5, -10, 8, Overflow::Sat), (true, 0));
        assert_eq!(unsigned_overflow(5, -10, 8, Overflow::Wrap), (true, 251));
        assert_eq!(unsigned_overflow(5, 10, 8, Overflow::Wrap), (false, 15));
        assert_eq!(signed_overflow(120, 10, 8, Overflow::Wrap), (true, -126));
        assert_eq!(signed_overflow(120, 10, 8, Overflow::Sat), (true, 127));
        assert_eq!(signed_overflow(-120, -10, 8, Overflow::Sat), (true, -128));
        assert_eq!(
            signed_overflow(i64::MAX, 1, 64, Overflow::Wrap),
            (true, i64::MIN)
        );
        assert_eq!(
            signed_overflow(i64::MAX, 1, 64, Overflow::Sat),
            (true, i64::MAX)
        );
        assert_eq!(
            signed_overflow(-1, i64::MIN, 64, Overflow::Sat),
            (true, i64::MIN)
        );
        assert_eq!(signed_overflow(3, -5, 4, Overflow::Wrap), (false, -2));
    }

    #[test]
    fn bitfield_grows_fails_and_reads_missing_as_zero() {
        let ks = mem();
        let mut p = Pending::default();
        let get = field(FieldOp::Get, "u8", 0, Overflow::Wrap);
        assert_eq!(ks.bitfield(b"k", &[get], &mut p), Ok(vec![Some(0)]));
        assert!(!ks.contains(b"k"));
        let set = field(FieldOp::Set(255), "u8", 8, Overflow::Wrap);
        let incr = field(FieldOp::IncrBy(1), "u8", 8, Overflow::Fail);
        assert_eq!(
            ks.bitfield(b"k", &[set, incr, get], &mut p),
            Ok(vec![Some(0), None, Some(0)])
        );
        ks.get(b"k", |v| assert_eq!(v, Some(&[0, 255][..])))
            .unwrap();
    }
}
