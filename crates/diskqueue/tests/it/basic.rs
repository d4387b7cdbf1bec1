//! The queue's everyday contract: FIFO round trip, peek, sizes, sync rules, metadata text,
//! close/reopen, empty, delete, `max_bytes`, batches, bad arguments.

use crate::common::*;
use diskqueue::{DiskQueue, DiskQueueError, DiskQueueOptions};

#[test]
fn round_trip_in_order() {
    let dir = TempDir::new("roundtrip");
    let mut q = open(dir.path(), "t", opts(1 << 20));
    let sent: Vec<Vec<u8>> = (0..100).map(|i| msg(i, (i % 37) as usize)).collect();
    for p in &sent {
        q.put(p).unwrap();
    }
    assert_eq!(q.depth(), 100);
    assert!(q.has_data());
    assert_eq!(drain(&mut q), sent);
    assert_eq!(q.depth(), 0);
    assert!(!q.has_data());
    assert_eq!(q.read_next().unwrap(), None);
    assert_eq!(q.counters(), Default::default());
    q.close().unwrap();
}

#[test]
fn peek_does_not_consume() {
    let dir = TempDir::new("peek");
    let mut q = open(dir.path(), "t", opts(1 << 20));
    assert_eq!(q.peek().unwrap(), None);
    q.put(&msg(1, 3)).unwrap();
    q.put(&msg(2, 3)).unwrap();
    assert_eq!(q.peek().unwrap(), Some(&msg(1, 3)[..]));
    assert_eq!(q.peek().unwrap(), Some(&msg(1, 3)[..]));
    assert_eq!(q.depth(), 2);
    assert_eq!(q.read_next().unwrap(), Some(msg(1, 3)));
    assert_eq!(q.depth(), 1);
    assert_eq!(q.peek().unwrap(), Some(&msg(2, 3)[..]));
    assert_eq!(q.read_next().unwrap(), Some(msg(2, 3)));
    assert_eq!(q.peek().unwrap(), None);
}

#[test]
fn metadata_text_is_nsqds_after_rolling() {
    // Four 40-byte records fill a 160-byte file; five 31-byte records then end file 1 at 155:
    // nsqd's observed `9\n0,0\n1,155\n`.
    let dir = TempDir::new("metatext");
    let mut q = open(dir.path(), "p1:c1", opts(160));
    for i in 0..9 {
        q.put(&msg(i, if i < 4 { 10 } else { 1 })).unwrap();
    }
    q.close().unwrap();
    assert_eq!(meta_text(dir.path(), "p1:c1"), "9\n0,0\n1,155\n");
    assert_eq!(
        files(dir.path()),
        [
            "p1:c1.diskqueue.000000.dat",
            "p1:c1.diskqueue.000001.dat",
            "p1:c1.diskqueue.meta.dat"
        ]
    );
    assert_eq!(file_size(&data_path(dir.path(), "p1:c1", 0)), 160);
    assert_eq!(file_size(&data_path(dir.path(), "p1:c1", 1)), 155);
}

#[test]
fn fresh_queue_writes_zero_metadata_on_close_and_no_data_file() {
    let dir = TempDir::new("fresh");
    let q = open(dir.path(), "p1", opts(1 << 20));
    assert_eq!(files(dir.path()), Vec::<String>::new());
    q.close().unwrap();
    assert_eq!(files(dir.path()), ["p1.diskqueue.meta.dat"]);
    assert_eq!(meta_text(dir.path(), "p1"), "0\n0,0\n0,0\n");
}

#[test]
fn reopen_after_close_resumes_exactly() {
    let dir = TempDir::new("reopen");
    let mut q = open(dir.path(), "t", opts(100));
    for i in 0..10 {
        q.put(&msg(i, 5)).unwrap();
    }
    for i in 0..3 {
        assert_eq!(q.read_next().unwrap(), Some(msg(i, 5)));
    }
    let (rpos, wpos) = (q.read_position(), q.write_position());
    q.close().unwrap();

    let mut q = open(dir.path(), "t", opts(100));
    assert_eq!(q.depth(), 7);
    assert_eq!((q.read_position(), q.write_position()), (rpos, wpos));
    assert_eq!(q.counters(), Default::default());
    q.put(&msg(10, 5)).unwrap();
    assert_eq!(
        drain(&mut q),
        (3..11).map(|i| msg(i, 5)).collect::<Vec<_>>()
    );
    q.close().unwrap();
}

#[test]
fn sizes_outside_bounds_are_refused_and_nothing_is_written() {
    let dir = TempDir::new("sizes");
    let mut q = open(dir.path(), "t", opts(1 << 20));
    let err = q.put(&[0u8; 25]).unwrap_err();
    assert!(matches!(
        err,
        DiskQueueError::InvalidMessageSize {
            size: 25,
            min: 26,
            max: 1050
        }
    ));
    assert!(matches!(
        q.put(&[0u8; 1051]),
        Err(DiskQueueError::InvalidMessageSize { size: 1051, .. })
    ));
    q.put(&[0u8; 26]).unwrap();
    q.put(&[0u8; 1050]).unwrap();
    assert!(q
        .put_batch(&[vec![0u8; 30], vec![0u8; 2000]])
        .is_err_and(|e| matches!(e, DiskQueueError::InvalidMessageSize { size: 2000, .. })));
    assert_eq!(q.depth(), 2);
    assert_eq!(q.write_position(), (0, 4 + 26 + 4 + 1050));
}

#[test]
fn sync_every_counts_reads_and_writes() {
    let dir = TempDir::new("synevery");
    let o = DiskQueueOptions {
        sync_every: 3,
        ..opts(1 << 20)
    };
    let mut q = open(dir.path(), "t", o);
    assert!(!q.needs_sync());
    q.put(&msg(0, 1)).unwrap();
    q.put(&msg(1, 1)).unwrap();
    assert!(q.needs_sync());
    assert!(!meta_path(dir.path(), "t").exists());
    assert_eq!(q.read_next().unwrap(), Some(msg(0, 1)));
    // third operation: synced
    assert!(!q.needs_sync());
    assert_eq!(meta_text(dir.path(), "t"), "1\n0,31\n0,62\n");
    // the owner's timer: nothing to do, then something
    q.sync_if_dirty().unwrap();
    q.put(&msg(2, 1)).unwrap();
    assert!(q.needs_sync());
    q.sync_if_dirty().unwrap();
    assert!(!q.needs_sync());
    assert_eq!(meta_text(dir.path(), "t"), "2\n0,31\n0,93\n");
}

#[test]
fn no_tmp_files_are_left_by_syncs() {
    let dir = TempDir::new("tmp");
    let mut q = open(dir.path(), "t", opts(64));
    for i in 0..20 {
        q.put(&msg(i, 1)).unwrap();
        q.sync().unwrap();
    }
    drain(&mut q);
    q.close().unwrap();
    assert!(files(dir.path()).iter().all(|f| !f.ends_with(".tmp")));
}

#[test]
fn empty_deletes_files_and_metadata_and_continues_with_next_file() {
    let dir = TempDir::new("empty");
    let mut q = open(dir.path(), "t", opts(62));
    for i in 0..5 {
        q.put(&msg(i, 1)).unwrap();
    }
    q.sync().unwrap();
    assert_eq!(q.read_next().unwrap(), Some(msg(0, 1)));
    assert_eq!(q.write_position(), (2, 31));
    q.empty().unwrap();
    assert_eq!(files(dir.path()), Vec::<String>::new());
    assert_eq!(q.depth(), 0);
    assert!(!q.has_data());
    assert_eq!(q.disk_bytes(), 0);
    assert_eq!(q.read_next().unwrap(), None);
    assert_eq!(q.write_position(), (3, 0));

    q.put(&msg(9, 1)).unwrap();
    assert_eq!(files(dir.path()), ["t.diskqueue.000003.dat"]);
    q.close().unwrap();
    assert_eq!(meta_text(dir.path(), "t"), "1\n3,0\n3,31\n");
    let mut q = open(dir.path(), "t", opts(62));
    assert_eq!(drain(&mut q), [msg(9, 1)]);
}

#[test]
fn delete_removes_everything_but_bad_files() {
    let dir = TempDir::new("delete");
    let mut q = open(dir.path(), "t", opts(62));
    for i in 0..5 {
        q.put(&msg(i, 1)).unwrap();
    }
    q.sync().unwrap();
    std::fs::write(dir.path().join("t.diskqueue.000000.dat.bad"), b"x").unwrap();
    q.delete().unwrap();
    assert_eq!(files(dir.path()), ["t.diskqueue.000000.dat.bad"]);
}

#[test]
fn queues_in_one_dir_are_independent() {
    let dir = TempDir::new("independent");
    let mut a = open(dir.path(), "t", opts(1 << 20));
    let mut b = open(dir.path(), "t:c", opts(1 << 20));
    a.put(&msg(1, 1)).unwrap();
    b.put(&msg(2, 1)).unwrap();
    b.put(&msg(3, 1)).unwrap();
    a.close().unwrap();
    b.delete().unwrap();
    let mut a = open(dir.path(), "t", opts(1 << 20));
    assert_eq!(drain(&mut a), [msg(1, 1)]);
}

#[test]
fn max_bytes_refuses_puts_beyond_the_limit() {
    let dir = TempDir::new("maxbytes");
    let o = DiskQueueOptions {
        max_bytes: 124,
        ..opts(62)
    };
    let mut q = open(dir.path(), "t", o);
    for i in 0..4 {
        q.put(&msg(i, 1)).unwrap();
    }
    assert_eq!(q.disk_bytes(), 124);
    let err = q.put(&msg(4, 1)).unwrap_err();
    assert!(matches!(
        err,
        DiskQueueError::Full {
            max_bytes: 124,
            current_bytes: 124,
            needed_bytes: 31
        }
    ));
    assert!(err.to_string().contains("full"));
    assert_eq!(q.depth(), 4);
    // reading does not free space until the file is deleted
    q.read_next().unwrap();
    assert!(q.put(&msg(4, 1)).is_err());
    q.read_next().unwrap();
    assert_eq!(q.disk_bytes(), 62);
    // a batch is all or nothing
    assert!(matches!(
        q.put_batch(&[msg(4, 1), msg(5, 1), msg(6, 1)]),
        Err(DiskQueueError::Full { .. })
    ));
    assert_eq!(q.depth(), 2);
    q.put_batch(&[msg(4, 1), msg(5, 1)]).unwrap();
    assert_eq!(drain(&mut q), (2..6).map(|i| msg(i, 1)).collect::<Vec<_>>());
}

#[test]
fn put_batch_rolls_like_single_puts() {
    let dir_a = TempDir::new("batch-a");
    let dir_b = TempDir::new("batch-b");
    let payloads: Vec<Vec<u8>> = (0..23).map(|i| msg(i, (i * 7 % 40) as usize)).collect();
    let mut a = open(dir_a.path(), "t", opts(200));
    let mut b = open(dir_b.path(), "t", opts(200));
    for p in &payloads {
        a.put(p).unwrap();
    }
    b.put_batch(&payloads[..5]).unwrap();
    b.put_batch(&payloads[5..]).unwrap();
    b.put_batch::<Vec<u8>>(&[]).unwrap();
    assert_eq!(a.write_position(), b.write_position());
    assert_eq!(a.depth(), b.depth());
    a.close().unwrap();
    b.close().unwrap();
    assert_eq!(files(dir_a.path()), files(dir_b.path()));
    for f in files(dir_a.path()) {
        assert_eq!(
            std::fs::read(dir_a.path().join(&f)).unwrap(),
            std::fs::read(dir_b.path().join(&f)).unwrap(),
            "{f}"
        );
    }
}

#[test]
fn bad_arguments_are_errors() {
    let dir = TempDir::new("badargs");
    assert!(matches!(
        DiskQueue::open(&dir.path().join("nope"), "t", opts(100)),
        Err(DiskQueueError::Io { .. })
    ));
    assert!(matches!(
        DiskQueue::open(dir.path(), "a/b", opts(100)),
        Err(DiskQueueError::InvalidName(_))
    ));
    let o = DiskQueueOptions {
        min_msg_size: 10,
        max_msg_size: 5,
        ..opts(100)
    };
    assert!(matches!(
        DiskQueue::open(dir.path(), "t", o),
        Err(DiskQueueError::InvalidOptions(_))
    ));
    assert!(matches!(
        DiskQueue::open(dir.path(), "t", opts(0)),
        Err(DiskQueueError::InvalidOptions(_))
    ));
}

/// An owner's message type written straight into the queue's buffer.
struct Parts<'a>(&'a [u8], &'a [u8]);

impl diskqueue::Payload for Parts<'_> {
    fn payload_len(&self) -> usize {
        self.0.len() + self.1.len()
    }
    fn write_payload(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.0);
        out.extend_from_slice(self.1);
    }
}

/// A payload whose length is wrong by one.
struct Lying(Vec<u8>);

impl diskqueue::Payload for Lying {
    fn payload_len(&self) -> usize {
        self.0.len() + 1
    }
    fn write_payload(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.0);
    }
}

#[test]
fn owner_payloads_are_encoded_in_place_and_a_wrong_length_cannot_corrupt_the_file() {
    let dir = TempDir::new("payload");
    let mut q = open(dir.path(), "t", opts(1 << 20));
    let (a, b) = (msg(1, 3), msg(2, 5));
    q.put_batch(&[Parts(&a[..20], &a[20..]), Parts(&b[..26], &b[26..])])
        .unwrap();
    q.put_batch(&[Lying(msg(3, 4)), Lying(msg(4, 4))]).unwrap();
    q.close().unwrap();
    let mut q = open(dir.path(), "t", opts(1 << 20));
    assert_eq!(drain(&mut q), [a, b, msg(3, 4), msg(4, 4)]);
    assert_eq!(q.corrupt_files(), 0);
    // nsqd reads the same records
    q.close().unwrap();
    let (_, left) = nsqd_read_all(dir.path(), "t");
    assert!(left.is_empty());
}
