//! A stream's changes as bytes: what a stream log record holds (one command's changes), and
//! also a whole stream (DUMP, snapshots and object records: the changes that build it from
//! nothing). Each change is a state, so applying one twice leaves what applying it once does.
//!
//! Each change is a tag byte then its fields; ids are two u64 LE, names and blobs a u32 LE
//! length then the bytes:
//!
//! | tag | change | fields |
//! |---|---|---|
//! | 1 | entry present | id, fields and values (`[u32 LE length][bytes]` each, in a blob) |
//! | 2 | entry gone | id |
//! | 3 | counters | last id, max deleted id, entries added u64 |
//! | 4 | group | name, last id, entries read i64 |
//! | 5 | group gone | name |
//! | 6 | pending entry | group, id, consumer, delivered u64, count u64 |
//! | 7 | pending entry gone | group, id |
//! | 8 | consumer | group, name, seen u64 |
//! | 9 | consumer gone | group, name |

use crate::stream::{Fields, Stream, StreamId};

/// One change to a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change<'a> {
    Entry(StreamId, Fields<'a>),
    EntryGone(StreamId),
    Meta(StreamId, StreamId, u64),
    Group(&'a [u8], StreamId, i64),
    GroupGone(&'a [u8]),
    Nack(&'a [u8], StreamId, &'a [u8], u64, u64),
    NackGone(&'a [u8], StreamId),
    Consumer(&'a [u8], &'a [u8], u64),
    ConsumerGone(&'a [u8], &'a [u8]),
}

/// Changes that do not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("malformed stream changes")]
pub struct Malformed;

fn id(out: &mut Vec<u8>, id: StreamId) {
    out.extend_from_slice(&id.ms.to_le_bytes());
    out.extend_from_slice(&id.seq.to_le_bytes());
}

fn blob(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

impl Change<'_> {
    pub fn encode(&self, out: &mut Vec<u8>) {
        match *self {
            Change::Entry(i, f) => {
                out.push(1);
                id(out, i);
                out.extend_from_slice(&(f.packed_len() as u32).to_le_bytes());
                f.pack_into(out);
            }
            Change::EntryGone(i) => {
                out.push(2);
                id(out, i);
            }
            Change::Meta(last, deleted, added) => {
                out.push(3);
                id(out, last);
                id(out, deleted);
                out.extend_from_slice(&added.to_le_bytes());
            }
            Change::Group(name, last, read) => {
                out.push(4);
                blob(out, name);
                id(out, last);
                out.extend_from_slice(&read.to_le_bytes());
            }
            Change::GroupGone(name) => {
                out.push(5);
                blob(out, name);
            }
            Change::Nack(group, i, consumer, delivered, count) => {
                out.push(6);
                blob(out, group);
                id(out, i);
                blob(out, consumer);
                out.extend_from_slice(&delivered.to_le_bytes());
                out.extend_from_slice(&count.to_le_bytes());
            }
            Change::NackGone(group, i) => {
                out.push(7);
                blob(out, group);
                id(out, i);
            }
            Change::Consumer(group, name, seen) => {
                out.push(8);
                blob(out, group);
                blob(out, name);
                out.extend_from_slice(&seen.to_le_bytes());
            }
            Change::ConsumerGone(group, name) => {
                out.push(9);
                blob(out, group);
                blob(out, name);
            }
        }
    }
}

/// Reads changes' fields from the front of a slice.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Malformed> {
        let b = self.0.get(..n).ok_or(Malformed)?;
        self.0 = &self.0[n..];
        Ok(b)
    }

    fn u64(&mut self) -> Result<u64, Malformed> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes(b.try_into().map_err(|_| Malformed)?))
    }

    fn id(&mut self) -> Result<StreamId, Malformed> {
        Ok(StreamId::new(self.u64()?, self.u64()?))
    }

    fn blob(&mut self) -> Result<&'a [u8], Malformed> {
        let len = self.take(4)?;
        let len = u32::from_le_bytes(len.try_into().map_err(|_| Malformed)?) as usize;
        self.take(len)
    }

    fn change(&mut self) -> Result<Change<'a>, Malformed> {
        let tag = self.take(1)?[0];
        Ok(match tag {
            1 => Change::Entry(self.id()?, Fields::packed(self.blob()?).ok_or(Malformed)?),
            2 => Change::EntryGone(self.id()?),
            3 => Change::Meta(self.id()?, self.id()?, self.u64()?),
            4 => Change::Group(self.blob()?, self.id()?, self.u64()? as i64),
            5 => Change::GroupGone(self.blob()?),
            6 => Change::Nack(
                self.blob()?,
                self.id()?,
                self.blob()?,
                self.u64()?,
                self.u64()?,
            ),
            7 => Change::NackGone(self.blob()?, self.id()?),
            8 => Change::Consumer(self.blob()?, self.blob()?, self.u64()?),
            9 => Change::ConsumerGone(self.blob()?, self.blob()?),
            _ => return Err(Malformed),
        })
    }
}

impl Stream {
    /// Applies encoded changes in order (replay, RESTORE).
    pub(crate) fn apply_changes(&mut self, b: &[u8]) -> Result<(), Malformed> {
        let mut r = Reader(b);
        while !r.0.is_empty() {
            match r.change()? {
                Change::Entry(i, f) => self.put_entry(i, f),
                Change::EntryGone(i) => {
                    self.remove_entry(i);
                }
                Change::Meta(last, deleted, added) => self.set_meta(last, deleted, added),
                Change::Group(name, last, read) => self.put_group(name, last, read),
                Change::GroupGone(name) => {
                    self.remove_group(name);
                }
                Change::Nack(g, i, c, delivered, count) => self.put_nack(g, i, c, delivered, count),
                Change::NackGone(g, i) => {
                    self.remove_nack(g, i);
                }
                Change::Consumer(g, name, seen) => {
                    self.put_consumer(g, name, seen);
                }
                Change::ConsumerGone(g, name) => {
                    self.remove_consumer(g, name);
                }
            }
        }
        self.exists = true;
        Ok(())
    }

    /// The changes that build this stream from nothing.
    pub(crate) fn encode_whole(&self, out: &mut Vec<u8>) {
        Change::Meta(self.last_id, self.max_deleted, self.entries_added).encode(out);
        for (i, f) in self.entries.iter() {
            Change::Entry(i, f).encode(out);
        }
        for (name, g) in &self.groups {
            Change::Group(name, g.last_id, g.entries_read).encode(out);
            for (c, consumer) in &g.consumers {
                Change::Consumer(name, c, consumer.seen).encode(out);
            }
            for (i, n) in &g.pel {
                Change::Nack(name, *i, &n.consumer, n.delivered, n.count).encode(out);
            }
        }
    }

    /// A stream from [`Stream::encode_whole`]'s bytes.
    pub(crate) fn decode_whole(b: &[u8]) -> Result<Stream, Malformed> {
        let mut s = Stream::default();
        s.apply_changes(b)?;
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_stream_round_trips_and_changes_replay_twice() {
        let mut s = Stream {
            journal: Some(Vec::new()),
            ..Stream::default()
        };
        s.materialize();
        s.append(StreamId::new(1, 0), Fields::args(&[b"f", b"v"]));
        s.append(StreamId::new(2, 0), Fields::args(&[b"g", b"w"]));
        s.delete(StreamId::new(1, 0));
        s.put_group(b"grp", StreamId::new(2, 0), 2);
        s.put_consumer(b"grp", b"alice", 7);
        s.put_nack(b"grp", StreamId::new(2, 0), b"alice", 7, 1);
        s.put_nack(b"grp", StreamId::new(2, 0), b"bob", 9, 2);
        let mut whole = Vec::new();
        s.encode_whole(&mut whole);
        let copy = Stream::decode_whole(&whole).unwrap();
        assert_eq!(copy, s);
        // The copy has no deleted entry to keep.
        assert!(copy.cost() < s.cost(), "{} {}", copy.cost(), s.cost());
        // The journal, replayed twice, gives the same stream (counters are the caller's).
        let journal = s.journal.take().unwrap();
        let mut replayed = Stream::default();
        replayed.apply_changes(&journal).unwrap();
        replayed.apply_changes(&journal).unwrap();
        replayed.set_meta(s.last_id, s.max_deleted, s.entries_added);
        assert_eq!(replayed, s);
        let g = replayed.group(b"grp").unwrap();
        assert!(g.consumer(b"alice").unwrap().pending().is_empty());
        assert_eq!(g.consumer(b"bob").unwrap().pending().len(), 1);
        assert_eq!(
            Stream::decode_whole(&whole[..whole.len() - 1]),
            Err(Malformed)
        );
        assert_eq!(Stream::decode_whole(&[42]), Err(Malformed));
    }

    #[test]
    fn damaged_bytes_never_panic() {
        let mut s = Stream::default();
        s.materialize();
        for ms in 1..=20 {
            s.append(StreamId::new(ms, 0), Fields::args(&[b"field", b"value"]));
        }
        s.put_group(b"g", StreamId::new(5, 0), 5);
        s.put_nack(b"g", StreamId::new(3, 0), b"c", 1, 1);
        let mut whole = Vec::new();
        s.encode_whole(&mut whole);
        let mut rng = fastrand::Rng::with_seed(7);
        for _ in 0..20_000 {
            let mut b = whole.clone();
            for _ in 0..rng.usize(1..4) {
                let i = rng.usize(..b.len());
                b[i] = rng.u8(..);
            }
            b.truncate(rng.usize(..=b.len()));
            if let Ok(d) = Stream::decode_whole(&b) {
                // Whatever decoded is a stream the commands can work on.
                let _ = (d.lag(d.group(b"g").unwrap_or(&Default::default())), d.len());
                let _ = d.estimate_read(StreamId::new(4, 0));
            }
        }
    }
}
