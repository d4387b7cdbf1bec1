//! Property test: random sequences of puts, batches, reads (one by one and in chunks), peeks, syncs, empties, clean
//! reopens and crash reopens behave like a `VecDeque`, with tiny files so rolling and file
//! deletion happen constantly. A crash may only redeliver records read since the last explicit
//! sync (at-least-once), never lose or reorder one.

use std::collections::VecDeque;

use crate::common::*;
use diskqueue::{DiskQueue, DiskQueueOptions};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Put(usize),
    PutBatch(Vec<usize>),
    Read,
    /// read_chunk(max records, max bytes)
    ReadChunk(usize, usize),
    Peek,
    Sync,
    Empty,
    Reopen,
    Crash,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0usize..60).prop_map(Op::Put),
        2 => prop::collection::vec(0usize..60, 0..6).prop_map(Op::PutBatch),
        8 => Just(Op::Read),
        4 => (0usize..8, 0usize..200).prop_map(|(n, b)| Op::ReadChunk(n, b)),
        2 => Just(Op::Peek),
        1 => Just(Op::Sync),
        1 => Just(Op::Empty),
        1 => Just(Op::Reopen),
        1 => Just(Op::Crash),
    ]
}

struct Model {
    unread: VecDeque<Vec<u8>>,
    /// Every record consumed, in order.
    history: Vec<Vec<u8>>,
    /// Reads since the last sync we know of (explicit sync, close, empty); a crash may redeliver
    /// at most these.
    reads_since_sync: usize,
}

/// 64 cases unless `PROPTEST_CASES` says otherwise (each case does real fsyncs).
fn config() -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = 64;
    }
    config
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn behaves_like_a_vecdeque(
        max_bytes_per_file in 40u64..300,
        sync_every in prop_oneof![Just(1u64), Just(3), Just(1_000_000)],
        ops in prop::collection::vec(op(), 1..120),
    ) {
        let dir = TempDir::new("model");
        let o = DiskQueueOptions { sync_every, ..opts(max_bytes_per_file) };
        let mut q = open(dir.path(), "t:c", o);
        let mut m = Model { unread: VecDeque::new(), history: Vec::new(), reads_since_sync: 0 };
        let mut next_id = 0u32;
        let mut new_payload = |body: usize| {
            next_id += 1;
            msg(next_id, body)
        };

        for op in ops {
            match op {
                Op::Put(body) => {
                    let p = new_payload(body);
                    q.put(&p).unwrap();
                    m.unread.push_back(p);
                }
                Op::PutBatch(bodies) => {
                    let ps: Vec<Vec<u8>> = bodies.into_iter().map(&mut new_payload).collect();
                    q.put_batch(&ps).unwrap();
                    m.unread.extend(ps);
                }
                Op::Read => {
                    let got = q.read_next().unwrap();
                    let want = m.unread.pop_front();
                    prop_assert_eq!(&got, &want);
                    if let Some(p) = got {
                        m.history.push(p);
                        m.reads_since_sync += 1;
                    }
                }
                Op::ReadChunk(max_records, max_bytes) => {
                    let got = q.read_chunk(max_records, max_bytes).unwrap();
                    let got: Vec<Vec<u8>> = got
                        .map(|c| c.payloads().map(<[u8]>::to_vec).collect())
                        .unwrap_or_default();
                    prop_assert!(got.len() <= max_records);
                    if max_records > 0 && !m.unread.is_empty() {
                        prop_assert!(!got.is_empty(), "a chunk holds at least one record");
                    }
                    let want: Vec<Vec<u8>> = m.unread.drain(..got.len()).collect();
                    prop_assert_eq!(&got, &want);
                    m.reads_since_sync += got.len();
                    m.history.extend(got);
                }
                Op::Peek => {
                    let got = q.peek().unwrap().map(<[u8]>::to_vec);
                    prop_assert_eq!(got.as_ref(), m.unread.front());
                }
                Op::Sync => {
                    q.sync().unwrap();
                    m.reads_since_sync = 0;
                }
                Op::Empty => {
                    q.empty().unwrap();
                    m.unread.clear();
                    m.reads_since_sync = 0;
                }
                Op::Reopen => {
                    q.close().unwrap();
                    q = open(dir.path(), "t:c", o);
                    m.reads_since_sync = 0;
                }
                Op::Crash => {
                    drop(q);
                    q = DiskQueue::open(dir.path(), "t:c", o).unwrap();
                    let redelivered = q.depth() - m.unread.len() as i64;
                    prop_assert!(
                        redelivered >= 0 && redelivered as usize <= m.reads_since_sync,
                        "depth {} unread {} reads since sync {}",
                        q.depth(), m.unread.len(), m.reads_since_sync
                    );
                    let from = m.history.len() - redelivered as usize;
                    for p in m.history[from..].iter().rev() {
                        m.unread.push_front(p.clone());
                    }
                    m.history.truncate(from);
                    m.reads_since_sync = 0;
                }
            }
            prop_assert_eq!(q.depth(), m.unread.len() as i64);
            prop_assert_eq!(q.has_data(), !m.unread.is_empty());
            let c = q.counters();
            prop_assert_eq!((c.corrupt_files, c.missing_files, c.depth_resets, c.sync_errors), (0, 0, 0, 0));
        }
        let rest = drain(&mut q);
        prop_assert_eq!(rest, Vec::from(m.unread));
        q.close().unwrap();
        // every data file but the write file has been deleted
        let data_files = files(dir.path()).into_iter().filter(|f| f.ends_with(".dat") && !f.contains("meta")).count();
        prop_assert!(data_files <= 1, "{:?}", files(dir.path()));
    }
}
