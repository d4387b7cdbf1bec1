//! Records of the append-only log: every change as the state it leaves behind (a key's whole
//! value and deadline, a removal, a new deadline, a flush), never as the command that made it.
//! Replaying a record twice, or over a snapshot that already has it, gives the same keyspace:
//! this is what lets a snapshot be taken while writes go on (see `persist.rs`).
//!
//! On disk: `[payload length: u32 LE][crc32 of payload: u32 LE][payload]`, the payload being
//! `[tag][fields]`:
//!
//! | tag | record | fields |
//! |---|---|---|
//! | 1 | put | deadline u64 (0 = none), key length u32, key, value |
//! | 2 | del | key |
//! | 3 | deadline | deadline u64 (0 = none), key |
//! | 4 | flush | — |
//! | 5 | batch | records, each framed as above |
//!
//! A batch holds a transaction's records under one checksum, so a crash that tears the log
//! keeps the whole transaction or none of it.

/// One change, as replayed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record<'a> {
    Put {
        key: &'a [u8],
        value: &'a [u8],
        deadline: Option<u64>,
    },
    Del {
        key: &'a [u8],
    },
    Deadline {
        key: &'a [u8],
        deadline: Option<u64>,
    },
    Flush,
    /// A transaction's records, framed (decode them with [`decode`]).
    Batch(&'a [u8]),
}

/// Why a log could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("record at offset {0} is cut short")]
    Torn(u64),
    #[error("record at offset {0} fails its checksum")]
    Checksum(u64),
    #[error("record at offset {0} is malformed")]
    Malformed(u64),
}

const PUT: u8 = 1;
const DEL: u8 = 2;
const DEADLINE: u8 = 3;
const FLUSH: u8 = 4;
const BATCH: u8 = 5;
const HEADER: usize = 8;

impl Record<'_> {
    /// Appends the record, framed, to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&[0; HEADER]);
        match self {
            Record::Put {
                key,
                value,
                deadline,
            } => {
                out.push(PUT);
                out.extend_from_slice(&deadline.unwrap_or(0).to_le_bytes());
                out.extend_from_slice(&(key.len() as u32).to_le_bytes());
                out.extend_from_slice(key);
                out.extend_from_slice(value);
            }
            Record::Del { key } => {
                out.push(DEL);
                out.extend_from_slice(key);
            }
            Record::Deadline { key, deadline } => {
                out.push(DEADLINE);
                out.extend_from_slice(&deadline.unwrap_or(0).to_le_bytes());
                out.extend_from_slice(key);
            }
            Record::Flush => out.push(FLUSH),
            Record::Batch(records) => {
                out.push(BATCH);
                out.extend_from_slice(records);
            }
        }
        let payload = &out[start + HEADER..];
        let len = (payload.len() as u32).to_le_bytes();
        let crc = crc32fast::hash(payload).to_le_bytes();
        out[start..start + 4].copy_from_slice(&len);
        out[start + 4..start + 8].copy_from_slice(&crc);
    }
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    let s = b.get(at..at + 8)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Some(u64::from_le_bytes(a))
}

fn deadline(d: u64) -> Option<u64> {
    (d != 0).then_some(d)
}

fn decode_payload(p: &[u8]) -> Option<Record<'_>> {
    match *p.first()? {
        PUT => {
            let d = u64_at(p, 1)?;
            let klen = u32::from_le_bytes(p.get(9..13)?.try_into().ok()?) as usize;
            let key = p.get(13..13usize.checked_add(klen)?)?;
            Some(Record::Put {
                key,
                value: &p[13 + klen..],
                deadline: deadline(d),
            })
        }
        DEL => Some(Record::Del { key: &p[1..] }),
        DEADLINE => Some(Record::Deadline {
            deadline: deadline(u64_at(p, 1)?),
            key: p.get(9..)?,
        }),
        FLUSH if p.len() == 1 => Some(Record::Flush),
        BATCH => Some(Record::Batch(&p[1..])),
        _ => None,
    }
}

/// The record at the start of `buf` and its framed length; `Ok(None)` at the end of `buf`.
/// `offset` is where `buf` starts in the file (for error messages).
pub fn decode(buf: &[u8], offset: u64) -> Result<Option<(Record<'_>, usize)>, RecordError> {
    if buf.is_empty() {
        return Ok(None);
    }
    if buf.len() < HEADER {
        return Err(RecordError::Torn(offset));
    }
    let len = u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
    let crc = u32::from_le_bytes([buf[4], buf[5], buf[6], buf[7]]);
    let Some(payload) = buf.get(HEADER..HEADER + len) else {
        return Err(RecordError::Torn(offset));
    };
    if crc32fast::hash(payload) != crc {
        return Err(RecordError::Checksum(offset));
    }
    let record = decode_payload(payload).ok_or(RecordError::Malformed(offset))?;
    Ok(Some((record, HEADER + len)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn all(buf: &[u8]) -> Vec<Record<'_>> {
        let mut at = 0;
        let mut out = Vec::new();
        while let Some((r, n)) = decode(&buf[at..], at as u64).unwrap() {
            out.push(r);
            at += n;
        }
        out
    }

    #[test]
    fn every_kind_round_trips() {
        let records = [
            Record::Put {
                key: b"k",
                value: b"v",
                deadline: Some(5),
            },
            Record::Put {
                key: b"",
                value: b"",
                deadline: None,
            },
            Record::Del { key: b"k" },
            Record::Deadline {
                key: b"k",
                deadline: None,
            },
            Record::Deadline {
                key: b"k",
                deadline: Some(9),
            },
            Record::Flush,
        ];
        let mut buf = Vec::new();
        records.iter().for_each(|r| r.encode(&mut buf));
        assert_eq!(all(&buf), records);
        let mut outer = Vec::new();
        Record::Batch(&buf).encode(&mut outer);
        let Some((Record::Batch(inner), n)) = decode(&outer, 0).unwrap() else {
            panic!("not a batch");
        };
        assert_eq!((all(inner), n), (records.to_vec(), outer.len()));
    }

    #[test]
    fn a_torn_batch_is_torn_whole() {
        let mut inner = Vec::new();
        Record::Del { key: b"a" }.encode(&mut inner);
        Record::Del { key: b"b" }.encode(&mut inner);
        let mut buf = Vec::new();
        Record::Batch(&inner).encode(&mut buf);
        for cut in 1..buf.len() {
            assert_eq!(
                decode(&buf[..cut], 0),
                Err(RecordError::Torn(0)),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn torn_and_corrupt_tails_are_told_apart() {
        let mut buf = Vec::new();
        Record::Del { key: b"abc" }.encode(&mut buf);
        let whole = buf.len();
        Record::Del { key: b"def" }.encode(&mut buf);
        assert_eq!(
            decode(&buf[whole..buf.len() - 1], whole as u64),
            Err(RecordError::Torn(whole as u64))
        );
        let last = buf.len() - 1;
        buf[last] ^= 1;
        assert_eq!(
            decode(&buf[whole..], whole as u64),
            Err(RecordError::Checksum(whole as u64))
        );
    }

    proptest! {
        #[test]
        fn puts_round_trip(key in proptest::collection::vec(any::<u8>(), 0..50),
                           value in proptest::collection::vec(any::<u8>(), 0..50),
                           d in proptest::option::of(1u64..)) {
            let r = Record::Put { key: &key, value: &value, deadline: d };
            let mut buf = Vec::new();
            r.encode(&mut buf);
            prop_assert_eq!(decode(&buf, 0).unwrap(), Some((r, buf.len())));
        }

        #[test]
        fn garbage_never_panics(data in proptest::collection::vec(any::<u8>(), 0..100)) {
            let _ = decode(&data, 0);
        }
    }
}
