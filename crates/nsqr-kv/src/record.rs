//! Records of the append-only log: every change as the state it leaves behind (a key's whole
//! value and deadline, a removal, a new deadline, a flush, the members a command touched in a
//! hash or a set), never as the command that made it.
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
//! | 6 | object | deadline u64 (0 = none), key length u32, key, the value's RDB encoding (`dump.rs`) |
//! | 7 | members | key length u32, key, kind (1 hash, 2 set, 3 sorted set), then per member: length u32, member, 0 (gone) or 1 (present), and for a present hash field its value's length u32 and value (for a sorted set member its score, 8 bytes: an f64 little-endian) |
//! | 8 | stream | key length u32, key, the changes one command made to the stream (`stream_changes.rs`) |
//! | 9 | functions | every function library after a change (`functions.rs`) |
//!
//! A members record holds the state of each member a command touched (HSET's fields with their
//! new values, HDEL's as gone, HINCRBY's result), so replaying it twice, or over a snapshot
//! that already holds a later state of the key, leaves what the later records make of it.
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
    /// A whole value that is not a string (its RDB encoding).
    Object {
        key: &'a [u8],
        value: &'a [u8],
        deadline: Option<u64>,
    },
    /// Members of a hash or set and their state after a change (see [`Members`]).
    Members {
        key: &'a [u8],
        kind: MemberKind,
        states: &'a [u8],
    },
    /// Changes to a stream, each a state (see `stream_changes.rs`).
    Stream {
        key: &'a [u8],
        changes: &'a [u8],
    },
    /// Every function library, encoded (`functions.rs`).
    Functions(&'a [u8]),
}

/// Which collection a members record changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberKind {
    Hash = 1,
    Set = 2,
    Zset = 3,
}

/// Builds the states of a members record.
#[derive(Debug, Default)]
pub struct Members(pub Vec<u8>);

impl Members {
    /// Appends one member's state: present (with its value, for a hash) or gone.
    pub fn push(&mut self, member: &[u8], state: Option<&[u8]>) {
        self.0
            .extend_from_slice(&(member.len() as u32).to_le_bytes());
        self.0.extend_from_slice(member);
        match state {
            None => self.0.push(0),
            Some(v) => {
                self.0.push(1);
                self.0.extend_from_slice(&(v.len() as u32).to_le_bytes());
                self.0.extend_from_slice(v);
            }
        }
    }
}

/// The member states of a members record, in order; `Err` (and the end) on a malformed one.
pub fn member_states(
    mut b: &[u8],
) -> impl Iterator<Item = Result<(&[u8], Option<&[u8]>), RecordError>> {
    std::iter::from_fn(move || {
        if b.is_empty() {
            return None;
        }
        let one = member_state(&mut b);
        if one.is_none() {
            b = &[];
        }
        Some(one.ok_or(RecordError::Malformed(0)))
    })
}

/// Takes one member state off the front of `b`.
fn member_state<'a>(b: &mut &'a [u8]) -> Option<(&'a [u8], Option<&'a [u8]>)> {
    fn take<'a>(b: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let (head, rest) = (b.get(..n)?, b.get(n..)?);
        *b = rest;
        Some(head)
    }
    fn bytes<'a>(b: &mut &'a [u8]) -> Option<&'a [u8]> {
        let n = u32::from_le_bytes(take(b, 4)?.try_into().ok()?) as usize;
        take(b, n)
    }
    let member = bytes(b)?;
    let value = match take(b, 1)?[0] {
        0 => None,
        _ => Some(bytes(b)?),
    };
    Some((member, value))
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
const OBJECT: u8 = 6;
const MEMBERS: u8 = 7;
const STREAM: u8 = 8;
const FUNCTIONS: u8 = 9;
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
            Record::Object {
                key,
                value,
                deadline,
            } => {
                out.push(OBJECT);
                out.extend_from_slice(&deadline.unwrap_or(0).to_le_bytes());
                out.extend_from_slice(&(key.len() as u32).to_le_bytes());
                out.extend_from_slice(key);
                out.extend_from_slice(value);
            }
            Record::Members { key, kind, states } => {
                out.push(MEMBERS);
                out.extend_from_slice(&(key.len() as u32).to_le_bytes());
                out.extend_from_slice(key);
                out.push(*kind as u8);
                out.extend_from_slice(states);
            }
            Record::Stream { key, changes } => {
                out.push(STREAM);
                out.extend_from_slice(&(key.len() as u32).to_le_bytes());
                out.extend_from_slice(key);
                out.extend_from_slice(changes);
            }
            Record::Functions(libraries) => {
                out.push(FUNCTIONS);
                out.extend_from_slice(libraries);
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

/// A key and what follows it, after a u32 length at `at`.
fn key_at(p: &[u8], at: usize) -> Option<(&[u8], &[u8])> {
    let klen = u32::from_le_bytes(p.get(at..at + 4)?.try_into().ok()?) as usize;
    let start = at + 4;
    let key = p.get(start..start.checked_add(klen)?)?;
    Some((key, &p[start + klen..]))
}

fn decode_payload(p: &[u8]) -> Option<Record<'_>> {
    match *p.first()? {
        PUT => {
            let (key, value) = key_at(p, 9)?;
            Some(Record::Put {
                key,
                value,
                deadline: deadline(u64_at(p, 1)?),
            })
        }
        OBJECT => {
            let (key, value) = key_at(p, 9)?;
            Some(Record::Object {
                key,
                value,
                deadline: deadline(u64_at(p, 1)?),
            })
        }
        MEMBERS => {
            let (key, rest) = key_at(p, 1)?;
            let (&kind, states) = rest.split_first()?;
            let kind = match kind {
                1 => MemberKind::Hash,
                2 => MemberKind::Set,
                3 => MemberKind::Zset,
                _ => return None,
            };
            Some(Record::Members { key, kind, states })
        }
        STREAM => {
            let (key, changes) = key_at(p, 1)?;
            Some(Record::Stream { key, changes })
        }
        DEL => Some(Record::Del { key: &p[1..] }),
        DEADLINE => Some(Record::Deadline {
            deadline: deadline(u64_at(p, 1)?),
            key: p.get(9..)?,
        }),
        FLUSH if p.len() == 1 => Some(Record::Flush),
        BATCH => Some(Record::Batch(&p[1..])),
        FUNCTIONS => Some(Record::Functions(&p[1..])),
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
            Record::Object {
                key: b"h",
                value: b"\x04\x01\x01f\x01v",
                deadline: Some(3),
            },
            Record::Members {
                key: b"s",
                kind: MemberKind::Set,
                states: b"",
            },
            Record::Stream {
                key: b"x",
                changes: b"\x02",
            },
            Record::Functions(b"\x01\x00\x00\x00"),
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

    #[test]
    fn member_states_round_trip_and_stop_at_damage() {
        let mut m = Members::default();
        m.push(b"f", Some(b"v"));
        m.push(b"gone", None);
        m.push(b"", Some(b""));
        let states: Vec<_> = member_states(&m.0).collect();
        assert_eq!(
            states,
            vec![
                Ok((&b"f"[..], Some(&b"v"[..]))),
                Ok((&b"gone"[..], None)),
                Ok((&b""[..], Some(&b""[..])))
            ]
        );
        let cut = &m.0[..m.0.len() - 1];
        assert_eq!(
            member_states(cut).last(),
            Some(Err(RecordError::Malformed(0)))
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
