//! Parts of a string value: GETRANGE (and SUBSTR) reads bytes between two offsets, SETRANGE
//! overwrites bytes from an offset, padding with zero bytes, as Redis does. Offsets are
//! already checked by the caller; the result's size is bounded by `proto-max-bulk-len`.

use crate::error::KvError;
use crate::feed::Op;
use crate::keyspace::{Keyspace, Pending};

/// The bytes `start..=end` of a value of `len` bytes, negative offsets counting from the end,
/// as Redis's GETRANGE clamps them; `None` when the range is empty.
pub fn clamp_range(start: i64, end: i64, len: usize) -> Option<std::ops::Range<usize>> {
    let len = len as i64;
    if (start < 0 && end < 0 && start > end) || len == 0 {
        return None;
    }
    let start = if start < 0 { len + start } else { start }.max(0);
    let end = if end < 0 { len + end } else { end }.max(0).min(len - 1);
    (start <= end).then(|| start as usize..end as usize + 1)
}

impl Keyspace {
    /// GETRANGE: `f` sees the bytes of the range (empty for a missing key or range).
    pub fn getrange<R>(
        &self,
        key: &[u8],
        start: i64,
        end: i64,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<R, KvError> {
        self.get(key, |v| {
            let v = v.unwrap_or_default();
            f(clamp_range(start, end, v.len()).map_or(&[][..], |r| &v[r]))
        })
    }

    /// SETRANGE: writes `data` at `offset` (zero bytes fill any gap); the new length. Writing
    /// nothing changes nothing (and creates no key). The deadline is kept.
    pub fn setrange(
        &self,
        key: &[u8],
        offset: usize,
        data: &[u8],
        pending: &mut Pending,
    ) -> Result<usize, KvError> {
        let max = self.max_bulk;
        self.edit_value(key, Op::SetRange, pending, |value| {
            if data.is_empty() {
                return Ok((value.len(), false));
            }
            let end = offset.checked_add(data.len()).ok_or(KvError::TooLarge)?;
            if end as u64 > max {
                return Err(KvError::TooLarge);
            }
            if value.len() < end {
                value.resize(end, 0);
            }
            value[offset..end].copy_from_slice(data);
            Ok((value.len(), true))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::mem;

    #[test]
    fn ranges_clamp_as_redis() {
        let s = b"Hello World";
        let get = |a, b| clamp_range(a, b, s.len()).map(|r| &s[r]);
        assert_eq!(get(0, 4), Some(&b"Hello"[..]));
        assert_eq!(get(-5, -1), Some(&b"World"[..]));
        assert_eq!(get(0, 100), Some(&s[..]));
        assert_eq!(get(5, 2), None);
        assert_eq!(get(-1, -5), None);
        assert_eq!(get(-100, 0), Some(&b"H"[..]));
        assert_eq!(get(i64::MIN, i64::MAX), Some(&s[..]));
        assert_eq!(get(i64::MAX, i64::MAX), None);
        assert_eq!(clamp_range(0, -1, 0), None);
    }

    #[test]
    fn setrange_pads_keeps_the_deadline_and_bounds_the_size() {
        let ks = mem();
        let mut p = Pending::default();
        assert_eq!(ks.setrange(b"n", 3, b"x", &mut p), Ok(4));
        ks.get(b"n", |v| assert_eq!(v, Some(&b"\0\0\0x"[..])))
            .unwrap();
        assert_eq!(ks.setrange(b"n", 1, b"ab", &mut p), Ok(4));
        ks.get(b"n", |v| assert_eq!(v, Some(&b"\0abx"[..])))
            .unwrap();
        assert_eq!(ks.setrange(b"missing", 5, b"", &mut p), Ok(0));
        assert!(!ks.contains(b"missing"));
        let at = ks.now_ms() + 100_000;
        ks.expire(b"n", at as i64, Default::default(), &mut p);
        ks.setrange(b"n", 0, b"z", &mut p).unwrap();
        assert_eq!(ks.deadline(b"n"), Some(Some(at)));
        assert_eq!(
            ks.setrange(b"n", 512 << 20, b"x", &mut p),
            Err(KvError::TooLarge)
        );
        assert_eq!(
            ks.setrange(b"n", usize::MAX, b"x", &mut p),
            Err(KvError::TooLarge)
        );
        assert_eq!(ks.getrange(b"n", 1, 2, <[u8]>::to_vec), Ok(b"ab".to_vec()));
        assert_eq!(ks.getrange(b"none", 0, -1, <[u8]>::to_vec), Ok(Vec::new()));
    }
}
