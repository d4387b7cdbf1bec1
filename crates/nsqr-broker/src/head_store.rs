//! The head of an ordered channel across a graceful restart: `<queue>.nsqr.head.dat`.
//!
//! At shutdown a channel writes what it holds in memory (in flight, requeued, read ahead from
//! disk) to the end of its disk queue, as nsqd does, so an nsqd taking over the directory gets
//! every message. Those messages are the oldest the channel has, but at the end of the queue
//! they would come back after everything still unread on disk: out of order. So an ordered
//! channel also writes them here, in their order; the next start puts them at the head of the
//! queue and skips their copies when the reader meets them in the queue (by id, counted, since
//! several restarts may leave several copies). nsqd ignores the file (and delivers the copies,
//! at least once). The file is read and removed at start; the next shutdown writes it again.
//!
//! Format: `nsqr-head 1\n`, a u32 count of skip entries, each `[u64 id][u32 copies]`, then
//! records until the end, each `[u32 length][i64 due, Unix ns, 0: none][nsqd record payload]`
//! (the length counts the due time and the payload), all big-endian. A damaged file is logged
//! and ignored from the damage on: its messages are still in the queue, only their order is
//! lost.

use std::path::{Path, PathBuf};

use diskqueue::MESSAGE_HEADER_LEN;
use rustc_hash::FxHashMap;

use crate::message::Message;

const MAGIC: &[u8] = b"nsqr-head 1\n";

/// Copies of head messages still in the disk queue, by id: how many to skip.
pub(crate) type SkipMap = FxHashMap<u64, u32>;

/// What a head file holds.
#[derive(Debug, Default)]
pub(crate) struct Head {
    /// The head messages in order, with their due time if deferred.
    pub msgs: Vec<(Message, Option<i64>)>,
    pub skip: SkipMap,
}

pub(crate) fn path(dir: &Path, queue: &str) -> PathBuf {
    dir.join(format!("{queue}.nsqr.head.dat"))
}

/// Read and remove the head file (an empty head when there is none).
pub(crate) fn take(dir: &Path, queue: &str) -> Head {
    let p = path(dir, queue);
    let data = match std::fs::read(&p) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Head::default(),
        Err(e) => {
            tracing::error!(
                "HEAD({queue}): cannot read {} - {e}; the order of its first messages is lost",
                p.display()
            );
            return Head::default();
        }
    };
    let head = decode(&data, queue);
    if let Err(e) = remove(dir, queue) {
        tracing::error!("HEAD({queue}): cannot remove {} - {e}", p.display());
    }
    head
}

fn decode(data: &[u8], queue: &str) -> Head {
    let mut head = Head::default();
    let Some(mut rest) = data.strip_prefix(MAGIC) else {
        tracing::error!("HEAD({queue}): not a head file; ignored");
        return head;
    };
    let damaged = |what: &str| tracing::error!("HEAD({queue}): damaged ({what}); rest ignored");
    let Some(n) = take_u32(&mut rest) else {
        damaged("skip count");
        return head;
    };
    for _ in 0..n {
        match (take_u64(&mut rest), take_u32(&mut rest)) {
            (Some(id), Some(copies)) => {
                *head.skip.entry(id).or_default() += copies;
            }
            _ => {
                damaged("skip entry");
                return head;
            }
        }
    }
    while !rest.is_empty() {
        let Some(len) = take_u32(&mut rest).map(|l| l as usize) else {
            damaged("record length");
            return head;
        };
        let (Some(rec), Some(after)) = (rest.get(..len), rest.get(len..)) else {
            damaged("short record");
            return head;
        };
        rest = after;
        let mut r = rec;
        let due = take_u64(&mut r).map(|d| d as i64);
        match (due, crate::codec::decode_one(r)) {
            (Some(due), Some(m)) => head.msgs.push((m, (due != 0).then_some(due))),
            _ => {
                damaged("record");
                return head;
            }
        }
    }
    head
}

/// Write the head file (remove it when there is nothing to write).
pub(crate) fn save(
    dir: &Path,
    queue: &str,
    msgs: &[(Message, Option<i64>)],
    skip: &SkipMap,
) -> std::io::Result<()> {
    if msgs.is_empty() && skip.is_empty() {
        return remove(dir, queue);
    }
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&(skip.len() as u32).to_be_bytes());
    for (id, n) in skip {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&n.to_be_bytes());
    }
    for (m, due) in msgs {
        let len = 8 + MESSAGE_HEADER_LEN as usize + m.body().len();
        out.extend_from_slice(&u32::try_from(len).unwrap_or(u32::MAX).to_be_bytes());
        out.extend_from_slice(&due.unwrap_or(0).to_be_bytes());
        crate::codec::encode(m, &mut out);
    }
    crate::side_file::write_atomically(dir, &path(dir, queue), &out)
}

pub(crate) fn remove(dir: &Path, queue: &str) -> std::io::Result<()> {
    match std::fs::remove_file(path(dir, queue)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

fn take_u32(b: &mut &[u8]) -> Option<u32> {
    let (head, rest) = b.split_first_chunk::<4>()?;
    *b = rest;
    Some(u32::from_be_bytes(*head))
}

fn take_u64(b: &mut &[u8]) -> Option<u64> {
    let (head, rest) = b.split_first_chunk::<8>()?;
    *b = rest;
    Some(u64::from_be_bytes(*head))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use nsq_wire::MessageId;

    #[test]
    fn round_trip_then_gone_and_damage() {
        let dir = std::env::temp_dir().join(format!("nsqr-head-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        assert!(take(&dir, "t:c").msgs.is_empty());
        let m = |id: u64, body: &'static [u8]| {
            Message::new(MessageId(id), 10, 2, Bytes::from_static(body)).expect("small")
        };
        let msgs = vec![(m(1, b"one"), None), (m(2, b""), Some(99))];
        let mut skip = SkipMap::default();
        skip.insert(7, 2);
        save(&dir, "t:c", &msgs, &skip).expect("save");
        let head = take(&dir, "t:c");
        type Row = (u64, Vec<u8>, u16, i64, Option<i64>);
        let got: Vec<Row> = head
            .msgs
            .iter()
            .map(|(m, d)| (m.id.0, m.body().to_vec(), m.attempts, m.timestamp(), *d))
            .collect();
        assert_eq!(
            got,
            [
                (1, b"one".to_vec(), 2, 10, None),
                (2, vec![], 2, 10, Some(99))
            ]
        );
        assert_eq!(head.skip.get(&7), Some(&2));
        assert!(!path(&dir, "t:c").exists(), "taken once");
        // cut in the second record: the first survives
        save(&dir, "t:c", &msgs, &SkipMap::default()).expect("save");
        let raw = std::fs::read(path(&dir, "t:c")).expect("read");
        std::fs::write(path(&dir, "t:c"), &raw[..raw.len() - 3]).expect("cut");
        assert_eq!(take(&dir, "t:c").msgs.len(), 1);
        save(&dir, "t:c", &[], &SkipMap::default()).expect("nothing");
        assert!(!path(&dir, "t:c").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
