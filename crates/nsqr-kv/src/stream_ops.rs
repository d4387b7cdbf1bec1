//! The commands that change a stream's entries and counters: XADD, XDEL, XTRIM, XSETID, with
//! Redis 7.0's rules for new ids and its errors. Each runs inside
//! [`Keyspace::write_stream`](crate::Keyspace::write_stream) and returns its events.

use crate::feed::Op;
use crate::stream::{Fields, Stream, StreamId, TrimSpec};
use crate::streams::StreamError;

/// The id XADD was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddId {
    /// `*`: the time, or one past the last id.
    Auto,
    /// `ms-*`: the next sequence number for `ms`.
    AutoSeq(u64),
    Explicit(StreamId),
}

impl Stream {
    /// XADD's new id, or why there is none.
    fn next_id(&self, id: AddId, now: u64) -> Result<StreamId, StreamError> {
        let last = self.last_id;
        if last == StreamId::MAX {
            return Err(StreamError::Exhausted);
        }
        match id {
            AddId::Auto if now > last.ms => Ok(StreamId::new(now, 0)),
            AddId::Auto => last.next().ok_or(StreamError::Exhausted),
            AddId::AutoSeq(ms) if ms == last.ms && last.seq < u64::MAX => {
                Ok(StreamId::new(ms, last.seq + 1))
            }
            AddId::AutoSeq(ms) if ms > last.ms => Ok(StreamId::new(ms, 0)),
            AddId::Explicit(id) if id > last => Ok(id),
            _ => Err(StreamError::IdTooSmall),
        }
    }

    /// XADD: appends an entry (creating the stream), then trims; the new id and the events
    /// (`xadd`, then `xtrim` if the trim removed entries).
    pub fn add(
        &mut self,
        id: AddId,
        pairs: &[&[u8]],
        trim: Option<TrimSpec>,
        now: u64,
    ) -> Result<(StreamId, Vec<Op>), StreamError> {
        let id = self.next_id(id, now)?;
        self.materialize();
        self.append(id, Fields::args(pairs));
        let mut ops = vec![Op::Xadd];
        if trim.is_some_and(|t| self.trim(t) > 0) {
            ops.push(Op::Xtrim);
        }
        Ok((id, ops))
    }

    /// XTRIM: how many entries went, and `xtrim` if any did.
    pub fn trim_by(&mut self, spec: TrimSpec) -> (u64, Vec<Op>) {
        if !self.exists {
            return (0, Vec::new());
        }
        let n = self.trim(spec);
        (n, if n > 0 { vec![Op::Xtrim] } else { Vec::new() })
    }

    /// XDEL: how many of `ids` were entries, and `xdel` if any.
    pub fn delete_ids(&mut self, ids: &[StreamId]) -> (u64, Vec<Op>) {
        let n = ids.iter().filter(|&&id| self.delete(id)).count() as u64;
        (n, if n > 0 { vec![Op::Xdel] } else { Vec::new() })
    }

    /// XSETID: the last id, and optionally the entries added and the largest deleted id. The
    /// caller checked that `max_deleted` is not above `id`.
    pub fn set_id(
        &mut self,
        id: StreamId,
        added: Option<u64>,
        max_deleted: Option<StreamId>,
    ) -> Result<Vec<Op>, crate::KvError> {
        if !self.exists {
            return Err(crate::KvError::NoSuchKey);
        }
        if let Some((top, _)) = self.last() {
            if id < top {
                return Err(StreamError::SetIdTooSmall.into());
            }
            if added.is_some_and(|a| a < self.len() as u64) {
                return Err(StreamError::AddedTooSmall.into());
            }
        }
        let added = added.unwrap_or(self.entries_added);
        let deleted = max_deleted
            .filter(|d| *d != StreamId::ZERO)
            .unwrap_or(self.max_deleted);
        self.set_meta(id, deleted, added);
        // The counters change alone: journal them (the keyspace adds them to any change).
        self.note(crate::stream_changes::Change::Meta(id, deleted, added));
        Ok(vec![Op::Xsetid])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::Trim;

    #[test]
    fn new_ids_follow_redis() {
        let mut s = Stream::default();
        let add = |s: &mut Stream, id, now| s.add(id, &[b"f", b"v"], None, now).map(|r| r.0);
        assert_eq!(add(&mut s, AddId::AutoSeq(0), 5), Ok(StreamId::new(0, 1)));
        assert_eq!(add(&mut s, AddId::Auto, 5), Ok(StreamId::new(5, 0)));
        assert_eq!(add(&mut s, AddId::Auto, 3), Ok(StreamId::new(5, 1)));
        assert_eq!(add(&mut s, AddId::AutoSeq(5), 0), Ok(StreamId::new(5, 2)));
        assert_eq!(
            add(&mut s, AddId::AutoSeq(4), 0),
            Err(StreamError::IdTooSmall)
        );
        assert_eq!(
            add(&mut s, AddId::Explicit(StreamId::new(5, 2)), 0),
            Err(StreamError::IdTooSmall)
        );
        assert_eq!(
            add(&mut s, AddId::Explicit(StreamId::MAX), 0),
            Ok(StreamId::MAX)
        );
        assert_eq!(add(&mut s, AddId::Auto, 0), Err(StreamError::Exhausted));
        assert_eq!(s.len(), 5);
        let trim = TrimSpec {
            strategy: Trim::MaxLen(2),
            approx: false,
            limit: 0,
        };
        assert_eq!(s.trim_by(trim), (3, vec![Op::Xtrim]));
        assert_eq!(s.delete_ids(&[StreamId::MAX, StreamId::MAX]).0, 1);
        assert_eq!(
            s.set_id(StreamId::new(1, 0), None, None),
            Err(StreamError::SetIdTooSmall.into())
        );
        // Below the largest deleted id is fine once above the top entry (as 7.0).
        s.delete_ids(&[StreamId::new(5, 1), StreamId::new(5, 2)]);
        assert_eq!(
            s.set_id(StreamId::new(5, 1), None, None),
            Ok(vec![Op::Xsetid])
        );
        assert_eq!(s.set_id(StreamId::MAX, Some(9), None), Ok(vec![Op::Xsetid]));
        assert_eq!(s.entries_added(), 9);
    }
}
