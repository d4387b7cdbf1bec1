//! How stream commands reach their key: a read sees the stream (or nothing), a write runs on
//! it (or on an empty one, which becomes the key only if the command made it exist), then
//! the keyspace charges its new size, logs the changes the command journaled as one stream
//! record, and announces the command's events in Redis's order (the first one carries the
//! record). A change Redis announces nothing for (XACK, a delivery to a group) is only logged.
//! An XADD wakes the clients blocked on the key (XREAD / XREADGROUP with BLOCK).

use crate::clock::now_ms;
use crate::entry::Entry;
use crate::error::KvError;
use crate::feed::Op;
use crate::keyspace::{Emit, Find, Guard, Keyspace, Pending};
use crate::record::{Record, RecordError};
use crate::stream::Stream;
use crate::stream_changes::Change;
use crate::typed::typed_mut;

/// What a stream write did: its reply, and its events in order.
pub type StreamOutcome<R> = Result<(R, Vec<Op>), KvError>;

/// The errors of stream commands, as Redis 7.0 words them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StreamError {
    #[error("ERR Invalid stream ID specified as stream command argument")]
    InvalidId,
    #[error("ERR The ID specified in XADD is equal or smaller than the target stream top item")]
    IdTooSmall,
    #[error("ERR The ID specified in XADD must be greater than 0-0")]
    IdZero,
    #[error("ERR The stream has exhausted the last possible ID, unable to add more items")]
    Exhausted,
    #[error("NOGROUP No such key '{0}' or consumer group '{1}'")]
    NoGroup(String, String),
    #[error("NOGROUP No such key '{0}' or consumer group '{1}' in XREADGROUP with GROUP option")]
    NoGroupRead(String, String),
    #[error("NOGROUP No such consumer group '{1}' for key name '{0}'")]
    NoGroupNamed(String, String),
    #[error("BUSYGROUP Consumer Group name already exists")]
    BusyGroup,
    #[error("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.")]
    GroupNeedsKey,
    #[error("ERR The ID specified in XSETID is smaller than the target stream top item")]
    SetIdTooSmall,
    #[error("ERR The entries_added specified in XSETID is smaller than the target stream length")]
    AddedTooSmall,
    #[error("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id")]
    SetIdBelowDeleted,
    #[error("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.")]
    DollarInGroup,
    #[error("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.")]
    NewWithoutGroup,
}

impl StreamError {
    /// NOGROUP for `key` and `group` (names shown as text).
    pub fn no_group(key: &[u8], group: &[u8]) -> StreamError {
        StreamError::NoGroup(lossy(key), lossy(group))
    }

    pub fn no_group_read(key: &[u8], group: &[u8]) -> StreamError {
        StreamError::NoGroupRead(lossy(key), lossy(group))
    }

    pub fn no_group_named(key: &[u8], group: &[u8]) -> StreamError {
        StreamError::NoGroupNamed(lossy(key), lossy(group))
    }
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

impl Keyspace {
    /// `f` sees the stream of `key`, or `None` if it does not exist; WRONGTYPE for another
    /// type.
    pub fn read_stream<R>(
        &self,
        key: &[u8],
        f: impl FnOnce(Option<&Stream>) -> R,
    ) -> Result<R, KvError> {
        self.read_typed(key, f)
    }

    /// A write to the stream of `key` (see the module doc); `f` also gets the time (Unix ms).
    pub fn write_stream<R>(
        &self,
        key: &[u8],
        pending: &mut Pending,
        f: impl FnOnce(&mut Stream, u64) -> StreamOutcome<R>,
    ) -> Result<R, KvError> {
        let now = now_ms();
        let hash = self.hash(key);
        let mut g = self.lock(hash);
        let logging = self.log.is_some();
        let Some(e) = self.find(&mut g, hash, key, now, Find::Peek) else {
            let mut fresh = Stream {
                journal: logging.then(Vec::new),
                ..Stream::default()
            };
            let (r, ops) = f(&mut fresh, now)?;
            if !fresh.exists {
                return Ok(r);
            }
            let journal = fresh.journal.take();
            let clock = self.write_clock(None, now);
            g.insert(
                hash,
                Entry::typed(key, fresh.into(), None, clock),
                self.hasher(),
            );
            self.announce_stream(&mut g, hash, key, journal, &ops, true, now, pending);
            return Ok(r);
        };
        let before = e.cost();
        let s = typed_mut::<Stream>(e)?;
        s.journal = logging.then(Vec::new);
        let result = f(s, now);
        let journal = s.journal.take();
        let (r, ops) = result?;
        self.touch(e, now);
        let after = e.cost();
        g.recost(before, after);
        self.announce_stream(&mut g, hash, key, journal, &ops, false, now, pending);
        Ok(r)
    }

    /// Logs a write's journal and announces its events.
    #[allow(clippy::too_many_arguments)]
    fn announce_stream(
        &self,
        g: &mut Guard<'_>,
        hash: u64,
        key: &[u8],
        journal: Option<Vec<u8>>,
        ops: &[Op],
        created: bool,
        now: u64,
        pending: &mut Pending,
    ) {
        let entry = g.get(hash, key);
        let deadline = entry.and_then(Entry::deadline);
        let stream = entry
            .and_then(Entry::collection)
            .and_then(crate::collection::Typed::of);
        let mut changes = journal.filter(|j| !j.is_empty());
        if let (Some(c), Some(s)) = (&mut changes, stream) {
            let s: &Stream = s;
            Change::Meta(s.last_id, s.max_deleted, s.entries_added).encode(c);
        }
        let record = changes
            .as_deref()
            .map(|changes| Record::Stream { key, changes });
        if ops.is_empty() {
            if let Some(r) = &record {
                self.log_only(r, pending);
            }
            return;
        }
        for (i, &op) in ops.iter().enumerate() {
            let emit = Emit {
                record: if i == 0 { record.clone() } else { None },
                deadline,
                created: created && i == 0,
                ..Emit::new(op, key)
            };
            self.emit(emit, now, pending);
        }
        if ops
            .iter()
            .any(|op| matches!(op, Op::Xadd | Op::XgroupDestroy))
        {
            self.blockers.wake(key);
        }
    }

    /// Applies a stream record (replay): a key of another type is replaced by an empty stream
    /// first.
    pub(crate) fn apply_stream(&self, key: &[u8], changes: &[u8]) -> Result<(), RecordError> {
        let hash = self.hash(key);
        let mut g = self.lock(hash);
        let fits = |e: &Entry| e.kind() == crate::collection::KeyType::Stream;
        if !g.get(hash, key).is_some_and(fits) {
            let clock = self.write_clock(None, now_ms());
            let fresh = Entry::typed(key, Stream::default().into(), None, clock);
            g.put(hash, fresh, self.hasher());
        }
        let Some(e) = g.get_mut(hash, key) else {
            return Ok(());
        };
        let before = e.cost();
        if let Ok(s) = typed_mut::<Stream>(e) {
            s.apply_changes(changes)
                .map_err(|_| RecordError::Malformed(0))?;
        }
        let after = e.cost();
        g.recost(before, after);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::{Trim, TrimSpec};
    use crate::stream_ops::AddId;
    use crate::test_support::{mem, with_feed};
    use crate::{KvConfig, SetOptions, StreamId};

    fn add(
        ks: &Keyspace,
        key: &[u8],
        ms: u64,
        trim: Option<TrimSpec>,
    ) -> Result<StreamId, KvError> {
        let id = AddId::Explicit(StreamId::new(ms, 0));
        ks.write_stream(key, &mut Pending::default(), |s, now| {
            Ok(s.add(id, &[b"f", b"v"], trim, now)?)
        })
    }

    #[test]
    fn writes_announce_their_events_and_create_only_what_exists() {
        let (ks, feed) = with_feed(KvConfig::default());
        let mut p = Pending::default();
        let trim = TrimSpec {
            strategy: Trim::MaxLen(1),
            approx: false,
            limit: 0,
        };
        add(&ks, b"s", 1, None).unwrap();
        add(&ks, b"s", 2, Some(trim)).unwrap();
        // A command that leaves a missing stream missing creates nothing.
        let r = ks.write_stream(b"none", &mut p, |s, _| Ok((s.trim_by(trim).0, Vec::new())));
        assert_eq!(r, Ok(0));
        assert!(!ks.contains(b"none"));
        ks.write_stream(b"s", &mut p, |s, _| {
            Ok(((), s.create_group(b"g", None, -1)?))
        })
        .unwrap();
        let ops: Vec<(String, String)> = feed.ops();
        let names: Vec<&str> = ops.iter().map(|(op, _)| op.as_str()).collect();
        assert_eq!(names, ["xadd", "xadd", "xtrim", "xgroup-create"]);
        assert_eq!(ks.key_type(b"s"), Some(crate::KeyType::Stream));
        ks.set(b"str", b"x", SetOptions::default(), None, &mut p)
            .unwrap();
        assert_eq!(add(&ks, b"str", 1, None), Err(KvError::WrongType));
        assert_eq!(ks.read_stream(b"s", |s| s.map(Stream::len)), Ok(Some(1)));
    }

    #[test]
    fn an_emptied_stream_stays_and_counts_its_memory() {
        let ks = mem();
        let before = ks.used_memory();
        for ms in 1..=100 {
            add(&ks, b"s", ms, None).unwrap();
        }
        let full = ks.used_memory();
        // At least the flags, two deltas, and the value with its length, per entry.
        assert!(full > before + 100 * 5, "{before} -> {full}");
        let ids: Vec<StreamId> = (1..=100).map(|ms| StreamId::new(ms, 0)).collect();
        let r = ks.write_stream(b"s", &mut Pending::default(), |s, _| Ok(s.delete_ids(&ids)));
        assert_eq!(r, Ok(100));
        assert!(ks.contains(b"s"));
        assert!(ks.used_memory() < full);
    }
}
