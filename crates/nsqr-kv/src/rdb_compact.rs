//! Redis's compact encodings, read (never written) so that `RESTORE`, and `MIGRATE` from a
//! redis-server into nsqrd, take the payloads Redis actually makes: Redis 7.0 dumps a small
//! hash or sorted set as a listpack, a list as a quicklist of listpacks, a set of integers as
//! an intset and a long compressible string with LZF (`lzf-rust` decodes it); Redis 6 and
//! older use ziplists where 7.0 uses listpacks. Each decoder turns its blob into the members'
//! text, as Redis's commands show them (an integer entry becomes its decimal text), and
//! answers `None` for anything malformed: a length that overruns the blob, an unknown
//! encoding, bytes after the end marker. Nothing is allocated beyond what the blob's own
//! bytes justify (an LZF string may expand at most as far as the format allows).

/// The most an LZF stream can expand: a 3-byte back reference copies at most 264 bytes.
const LZF_MAX_RATIO: usize = 88;
/// Redis's `proto-max-bulk-len`: no string restored here is longer.
const MAX_STRING: usize = 512 << 20;

/// An LZF-compressed RDB string (`0xc3`, compressed length, original length, the data) at the
/// start of `b` (after the `0xc3`), and the bytes it took.
pub(crate) fn lzf_string(b: &[u8]) -> Option<(Vec<u8>, usize)> {
    let (compressed, at) = crate::dump::decode_len(b)?;
    let (len, more) = crate::dump::decode_len(b.get(at..)?)?;
    let (compressed, len) = (
        usize::try_from(compressed).ok()?,
        usize::try_from(len).ok()?,
    );
    let start = at + more;
    let end = start.checked_add(compressed)?;
    let data = b.get(start..end)?;
    if len == 0 || len > MAX_STRING || len > compressed.saturating_mul(LZF_MAX_RATIO) {
        return None;
    }
    let v = lzf_rust::decompress_into_vec(data, len).ok()?;
    Some((v, end))
}

/// The entries of a listpack (Redis 7.0's small lists, hashes and sorted sets): its total
/// length (u32), its count (u16, or 65535 for "count them"), entries each followed by its
/// length written backwards, and `0xff`.
pub(crate) fn listpack(b: &[u8]) -> Option<Vec<Vec<u8>>> {
    entries(b, 6, |e| {
        let (value, size) = listpack_entry(e)?;
        Some((value, size + backlen_size(size)))
    })
}

/// The entries of a blob laid out as listpacks and ziplists are: its total length (u32) first,
/// its count (u16, or 65535 for "count them") just before the first entry at `first`, and
/// `0xff` after the last. `entry` reads one entry: its value and the bytes it took.
fn entries(
    b: &[u8],
    first: usize,
    entry: impl Fn(&[u8]) -> Option<(Vec<u8>, usize)>,
) -> Option<Vec<Vec<u8>>> {
    let total = u32::from_le_bytes(b.get(0..4)?.try_into().ok()?) as usize;
    if total != b.len() || b.last() != Some(&0xff) {
        return None;
    }
    let mut at = first;
    let mut out = Vec::new();
    while *b.get(at)? != 0xff {
        let (value, size) = entry(&b[at..])?;
        out.push(value);
        at += size;
    }
    let count = u16::from_le_bytes(b.get(first - 2..first)?.try_into().ok()?);
    (at + 1 == b.len() && (count == u16::MAX || usize::from(count) == out.len())).then_some(out)
}

/// An integer entry's value (its decimal text) and size.
fn int(n: i64, size: usize) -> Option<(Vec<u8>, usize)> {
    Some((n.to_string().into_bytes(), size))
}

/// A string entry's value, `len` bytes after a `header`, and its size.
fn string(b: &[u8], header: usize, len: usize) -> Option<(Vec<u8>, usize)> {
    let end = header.checked_add(len)?;
    Some((b.get(header..end)?.to_vec(), end))
}

/// One listpack entry's value and the size of its encoding and data.
fn listpack_entry(b: &[u8]) -> Option<(Vec<u8>, usize)> {
    let first = *b.first()?;
    match first {
        0x00..=0x7f => int(i64::from(first), 1),
        0x80..=0xbf => string(b, 1, usize::from(first & 0x3f)),
        0xc0..=0xdf => {
            let n = i64::from(first & 0x1f) << 8 | i64::from(*b.get(1)?);
            int(if n >= 1 << 12 { n - (1 << 13) } else { n }, 2)
        }
        0xe0..=0xef => string(
            b,
            2,
            usize::from(first & 0x0f) << 8 | usize::from(*b.get(1)?),
        ),
        0xf0 => string(
            b,
            5,
            u32::from_le_bytes(b.get(1..5)?.try_into().ok()?) as usize,
        ),
        0xf1 => int(
            i64::from(i16::from_le_bytes(b.get(1..3)?.try_into().ok()?)),
            3,
        ),
        0xf2 => int(le_signed(b.get(1..4)?), 4),
        0xf3 => int(
            i64::from(i32::from_le_bytes(b.get(1..5)?.try_into().ok()?)),
            5,
        ),
        0xf4 => int(i64::from_le_bytes(b.get(1..9)?.try_into().ok()?), 9),
        _ => None,
    }
}

/// How many bytes a listpack entry's backwards length takes (7 bits per byte).
fn backlen_size(size: usize) -> usize {
    match size {
        0..=127 => 1,
        128..=16_383 => 2,
        16_384..=2_097_151 => 3,
        2_097_152..=268_435_455 => 4,
        _ => 5,
    }
}

/// A little-endian two's-complement integer of 1 to 8 bytes.
fn le_signed(b: &[u8]) -> i64 {
    let mut n = [0u8; 8];
    n[..b.len()].copy_from_slice(b);
    let shift = 64 - 8 * b.len() as u32;
    (i64::from_le_bytes(n) << shift) >> shift
}

/// The entries of a ziplist (Redis 6 and older): total length (u32), offset of the tail (u32),
/// count (u16), entries each starting with the previous entry's length, and `0xff`.
pub(crate) fn ziplist(b: &[u8]) -> Option<Vec<Vec<u8>>> {
    entries(b, 10, |e| {
        let skip = if e[0] == 0xfe { 5 } else { 1 };
        let (value, size) = ziplist_entry(e.get(skip..)?)?;
        Some((value, skip + size))
    })
}

/// One ziplist entry (after its previous-length field): its value and size.
fn ziplist_entry(b: &[u8]) -> Option<(Vec<u8>, usize)> {
    let first = *b.first()?;
    match first {
        0x00..=0x3f => string(b, 1, usize::from(first)),
        0x40..=0x7f => string(
            b,
            2,
            usize::from(first & 0x3f) << 8 | usize::from(*b.get(1)?),
        ),
        0x80 => string(
            b,
            5,
            u32::from_be_bytes(b.get(1..5)?.try_into().ok()?) as usize,
        ),
        0xc0 => int(
            i64::from(i16::from_le_bytes(b.get(1..3)?.try_into().ok()?)),
            3,
        ),
        0xd0 => int(
            i64::from(i32::from_le_bytes(b.get(1..5)?.try_into().ok()?)),
            5,
        ),
        0xe0 => int(i64::from_le_bytes(b.get(1..9)?.try_into().ok()?), 9),
        0xf0 => int(le_signed(b.get(1..4)?), 4),
        0xfe => int(i64::from(i8::from_le_bytes([*b.get(1)?])), 2),
        0xf1..=0xfd => int(i64::from(first & 0x0f) - 1, 1),
        _ => None,
    }
}

/// The members of an intset (a set of integers): the width of each (u32: 2, 4 or 8 bytes), the
/// count (u32), then the integers, little-endian and ascending.
pub(crate) fn intset(b: &[u8]) -> Option<Vec<Vec<u8>>> {
    let width = u32::from_le_bytes(b.get(0..4)?.try_into().ok()?) as usize;
    let count = u32::from_le_bytes(b.get(4..8)?.try_into().ok()?) as usize;
    if !matches!(width, 2 | 4 | 8) || b.len() != 8 + width.checked_mul(count)? {
        return None;
    }
    let members: Vec<i64> = b[8..].chunks_exact(width).map(le_signed).collect();
    members
        .windows(2)
        .all(|w| w[0] < w[1])
        .then(|| members.iter().map(|n| n.to_string().into_bytes()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listpack_entries_of_every_encoding() {
        // From redis-server 7.0.15: `RPUSH l a b 1 -5 300 70000 5000000000`'s node.
        let lp = b"$\x00\x00\x00\x07\x00\x81a\x02\x81b\x02\x01\x01\xdf\xfb\x02\xc1,\x02\xf2p\x11\x01\x04\xf4\x00\xf2\x05*\x01\x00\x00\x00\t\xff";
        let got = listpack(lp).expect("a listpack");
        let want: Vec<&[u8]> = vec![b"a", b"b", b"1", b"-5", b"300", b"70000", b"5000000000"];
        assert_eq!(got, want);
        // Cut anywhere, or with a wrong count, it is refused.
        for n in 0..lp.len() {
            assert_eq!(listpack(&lp[..n]), None, "cut at {n}");
        }
        let mut wrong = lp.to_vec();
        wrong[4] = 6;
        assert_eq!(listpack(&wrong), None);
    }

    #[test]
    fn long_listpack_strings_and_backlens() {
        let mut lp = vec![0; 6];
        let long = vec![b'x'; 200];
        lp.extend_from_slice(&[0xe0, 200]);
        lp.extend_from_slice(&long);
        lp.extend_from_slice(&[0x01, 0xca]); // 202 bytes, written backwards in two bytes
        lp.push(0xff);
        let total = lp.len() as u32;
        lp[..4].copy_from_slice(&total.to_le_bytes());
        lp[4..6].copy_from_slice(&1u16.to_le_bytes());
        assert_eq!(listpack(&lp), Some(vec![long]));
    }

    #[test]
    fn ziplist_entries() {
        // A ziplist of "ab", 7 (immediate), -2 (int8), 1000 (int16), 100000 (int24).
        let mut zl = vec![0; 10];
        let entries: [&[u8]; 5] = [
            &[0x00, 0x02, b'a', b'b'],
            &[0x04, 0xf8],
            &[0x02, 0xfe, 0xfe],
            &[0x03, 0xc0, 0xe8, 0x03],
            &[0x04, 0xf0, 0xa0, 0x86, 0x01],
        ];
        for e in entries {
            zl.extend_from_slice(e);
        }
        zl.push(0xff);
        let total = zl.len() as u32;
        zl[..4].copy_from_slice(&total.to_le_bytes());
        zl[8..10].copy_from_slice(&5u16.to_le_bytes());
        let want: Vec<&[u8]> = vec![b"ab", b"7", b"-2", b"1000", b"100000"];
        assert_eq!(ziplist(&zl).expect("a ziplist"), want);
        assert_eq!(ziplist(&zl[..zl.len() - 1]), None);
    }

    #[test]
    fn intsets_must_be_sorted_and_whole() {
        // From redis-server 7.0.15: `SADD si 1 2 -3 100000`.
        let is = b"\x04\x00\x00\x00\x04\x00\x00\x00\xfd\xff\xff\xff\x01\x00\x00\x00\x02\x00\x00\x00\xa0\x86\x01\x00";
        let want: Vec<&[u8]> = vec![b"-3", b"1", b"2", b"100000"];
        assert_eq!(intset(is).expect("an intset"), want);
        assert_eq!(intset(&is[..is.len() - 1]), None);
        let mut unsorted = is.to_vec();
        unsorted.swap(8, 12);
        assert_eq!(intset(&unsorted), None);
    }

    #[test]
    fn lzf_strings_are_bounded() {
        // From redis-server 7.0.15: `SET lz` of "abcabcabcabc" ten times, after the 0xc3.
        let lz = b"\x0b@x\x03abca\xe0i\x02\x01bc";
        let (v, used) = lzf_string(lz).expect("an LZF string");
        assert_eq!(v, b"abcabcabcabc".repeat(10));
        assert_eq!(used, lz.len());
        // An original length the data cannot reach is refused before anything is allocated.
        assert_eq!(
            lzf_string(b"\x0b\x80\x40\x00\x00\x00\x03abca\xe0i\x02\x01bc"),
            None
        );
        assert_eq!(lzf_string(&lz[..lz.len() - 1]), None);
    }
}
