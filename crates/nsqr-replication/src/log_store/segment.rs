//! The log's file format: segment files named by the index of their first entry
//! (`00000000000000000001.log`), each a run of records `[u32 length][u32 CRC-32][payload]`,
//! little-endian, the payload an entry encoded with postcard.
//!
//! Scanning stops at the first record that is short or fails its checksum: at the end of the
//! last segment that is a write cut by a crash (truncated, never acknowledged when fsync is
//! on); anywhere else it is corruption and the store refuses to open.

use std::path::Path;

/// Bytes before each record's payload.
pub(crate) const HEADER: usize = 8;

/// The file name of the segment whose first entry is `first`.
pub(crate) fn file_name(first: u64) -> String {
    format!("{first:020}.log")
}

/// The first index of a segment, from its file name.
pub(crate) fn first_index(path: &Path) -> Option<u64> {
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_suffix(".log")?;
    if stem.len() != 20 {
        return None;
    }
    stem.parse().ok()
}

/// Appends one record holding `payload` to `out`.
pub(crate) fn encode_record(out: &mut Vec<u8>, payload: &[u8]) {
    let len = u32::try_from(payload.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    out.extend_from_slice(payload);
}

/// The whole records of a segment.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Scan {
    /// Offset and length of each record's payload.
    pub records: Vec<(u64, u32)>,
    /// Bytes up to the end of the last whole record.
    pub valid_len: u64,
    /// Why scanning stopped before the end, if it did.
    pub stopped: Option<&'static str>,
}

/// Walks the records of a segment's bytes.
pub(crate) fn scan(bytes: &[u8]) -> Scan {
    let mut records = Vec::new();
    let mut at = 0usize;
    let stopped = loop {
        let rest = &bytes[at..];
        if rest.is_empty() {
            break None;
        }
        if rest.len() < HEADER {
            break Some("a record header cut short");
        }
        let len = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]);
        let crc = u32::from_le_bytes([rest[4], rest[5], rest[6], rest[7]]);
        let end = HEADER + len as usize;
        if rest.len() < end {
            break Some("a record cut short");
        }
        if crc32fast::hash(&rest[HEADER..end]) != crc {
            break Some("a record's checksum does not match");
        }
        records.push(((at + HEADER) as u64, len));
        at += end;
    };
    Scan {
        records,
        valid_len: at as u64,
        stopped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_a_torn_tail_stops_the_scan() {
        let mut bytes = Vec::new();
        encode_record(&mut bytes, b"one");
        encode_record(&mut bytes, b"second");
        let whole = bytes.len() as u64;
        let scanned = scan(&bytes);
        assert_eq!(scanned.records, vec![(8, 3), (19, 6)]);
        assert_eq!(scanned.valid_len, whole);
        assert_eq!(scanned.stopped, None);

        encode_record(&mut bytes, b"third");
        bytes.truncate(bytes.len() - 2);
        let torn = scan(&bytes);
        assert_eq!(torn.records.len(), 2);
        assert_eq!(torn.valid_len, whole);
        assert_eq!(torn.stopped, Some("a record cut short"));

        let mut flipped = bytes.clone();
        flipped[9] ^= 1;
        assert_eq!(scan(&flipped).records.len(), 0);
    }

    proptest::proptest! {
        /// Whatever the disk holds, a scan ends inside it, on whole records.
        #[test]
        fn scanning_any_bytes_stays_in_bounds(bytes in proptest::collection::vec(0u8.., 0..512)) {
            let scanned = scan(&bytes);
            proptest::prop_assert!(scanned.valid_len as usize <= bytes.len());
            for (offset, len) in scanned.records {
                proptest::prop_assert!(offset as usize + len as usize <= scanned.valid_len as usize);
            }
        }
    }

    #[test]
    fn names_round_trip() {
        let name = file_name(42);
        assert_eq!(first_index(Path::new(&name)), Some(42));
        assert_eq!(first_index(Path::new("42.log")), None);
        assert_eq!(first_index(Path::new("vote")), None);
    }
}
