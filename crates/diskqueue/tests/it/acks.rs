//! Explicit-ack mode: read records stay in the persisted queue (metadata, files) until they are
//! acknowledged, so a crash redelivers everything handed out but not acknowledged; plus
//! `put_batch_read`, `rewind` and `flush_durable`.

use std::fs;

use crate::common::*;

fn explicit(dir: &std::path::Path, file_size: u64) -> diskqueue::DiskQueue {
    let mut q = open(dir, "t", opts(file_size));
    q.set_explicit_ack(true);
    q
}

#[test]
fn unacknowledged_reads_survive_a_crash() {
    let dir = TempDir::new("ack-crash");
    let mut q = explicit(dir.path(), 1 << 20);
    for i in 0..5 {
        q.put(&msg(i, 2)).unwrap();
    }
    for i in 0..3 {
        assert_eq!(q.read_next().unwrap(), Some(msg(i, 2)));
    }
    assert_eq!((q.depth(), q.unacked()), (2, 3));
    q.sync().unwrap();
    // The metadata still counts and points at the three unacknowledged records.
    assert_eq!(meta_text(dir.path(), "t"), "5\n0,0\n0,160\n");
    assert_eq!(q.ack(2), 2);
    q.sync().unwrap();
    assert_eq!(meta_text(dir.path(), "t"), "3\n0,64\n0,160\n");
    drop(q); // crash
    let mut q = open(dir.path(), "t", opts(1 << 20));
    assert_eq!(drain(&mut q), (2..5).map(|i| msg(i, 2)).collect::<Vec<_>>());
}

#[test]
fn files_are_kept_until_acknowledged() {
    let dir = TempDir::new("ack-files");
    let mut q = explicit(dir.path(), 64); // two records per file
    for i in 0..6 {
        q.put(&msg(i, 2)).unwrap();
    }
    assert_eq!(drain(&mut q).len(), 6);
    assert!(data_path(dir.path(), "t", 0).exists());
    assert!(data_path(dir.path(), "t", 1).exists());
    assert_eq!(q.ack(3), 3); // into file 1
    assert!(!data_path(dir.path(), "t", 0).exists());
    assert!(data_path(dir.path(), "t", 1).exists());
    q.ack_all_read();
    assert_eq!(q.unacked(), 0);
    assert!(!data_path(dir.path(), "t", 1).exists());
    q.close().unwrap();
    let (depth, left) = nsqd_read_all(dir.path(), "t");
    assert_eq!((depth, left.len()), (0, 0));
}

#[test]
fn put_batch_read_counts_records_as_read_but_keeps_them() {
    let dir = TempDir::new("ack-putread");
    let mut q = explicit(dir.path(), 100);
    let batch: Vec<Vec<u8>> = (0..5).map(|i| msg(i, 2)).collect();
    assert!(q.put_batch_read(&batch).unwrap());
    assert!(!q.has_data());
    assert_eq!((q.depth(), q.unacked()), (0, 5));
    q.sync().unwrap();
    // For nsqd (or a crash) they are all still queued.
    assert_eq!(nsqd_read_all(dir.path(), "t"), (5, batch.clone()));
    assert_eq!(q.ack(4), 4);
    q.close().unwrap();
    assert_eq!(nsqd_read_all(dir.path(), "t"), (1, vec![msg(4, 2)]));
    // With unread records ahead they are queued normally.
    let mut q = explicit(dir.path(), 100);
    assert!(!q.put_batch_read(&[msg(9, 2)]).unwrap());
    assert_eq!(drain(&mut q), [msg(4, 2), msg(9, 2)]);
}

#[test]
fn rewind_reads_the_unacknowledged_again() {
    let dir = TempDir::new("ack-rewind");
    let mut q = explicit(dir.path(), 64);
    for i in 0..4 {
        q.put(&msg(i, 2)).unwrap();
    }
    assert_eq!(q.read_next().unwrap(), Some(msg(0, 2)));
    q.ack(1);
    assert_eq!(drain(&mut q).len(), 3);
    q.rewind();
    assert_eq!((q.depth(), q.unacked()), (3, 0));
    assert_eq!(drain(&mut q), (1..4).map(|i| msg(i, 2)).collect::<Vec<_>>());
}

#[test]
fn corrupt_file_is_renamed_only_after_its_records_are_acknowledged() {
    let dir = TempDir::new("ack-bad");
    let mut q = open(dir.path(), "t", opts(1 << 20));
    for i in 0..4 {
        q.put(&msg(i, 2)).unwrap();
    }
    q.close().unwrap();
    let path = data_path(dir.path(), "t", 0);
    let mut bytes = fs::read(&path).unwrap();
    bytes[64..68].copy_from_slice(&0x7fff_ffffu32.to_be_bytes()); // record 2
    fs::write(&path, bytes).unwrap();

    let mut q = explicit(dir.path(), 1 << 20);
    assert_eq!(drain(&mut q), [msg(0, 2), msg(1, 2)]);
    assert_eq!(q.corrupt_files(), 1);
    // Records 0 and 1 are not acknowledged: the file must still be there for a restart.
    assert!(path.exists());
    q.ack(2);
    assert!(!path.exists());
    assert!(dir.path().join("t.diskqueue.000000.dat.bad").exists());
}

#[test]
fn flush_durable_after_a_roll() {
    let dir = TempDir::new("ack-durable");
    let mut q = explicit(dir.path(), 64);
    for i in 0..5 {
        q.put(&msg(i, 2)).unwrap();
        q.flush_durable().unwrap();
    }
    assert_eq!(q.write_position(), (2, 32));
    drop(q);
    let mut q = open(dir.path(), "t", opts(64));
    assert_eq!(drain(&mut q).len(), 5);
}

#[test]
fn turning_explicit_ack_off_acknowledges_everything_read() {
    let dir = TempDir::new("ack-off");
    let mut q = explicit(dir.path(), 1 << 20);
    for i in 0..3 {
        q.put(&msg(i, 2)).unwrap();
    }
    q.read_next().unwrap();
    q.set_explicit_ack(false);
    q.close().unwrap();
    assert_eq!(nsqd_read_all(dir.path(), "t").1.len(), 2);
}

#[test]
fn records_of_a_chunk_are_acknowledged_one_by_one() {
    let dir = TempDir::new("ack-chunk");
    let mut q = explicit(dir.path(), 1 << 20);
    for i in 0..5 {
        q.put(&msg(i, 2)).unwrap();
    }
    let chunk = q.read_chunk(4, 1 << 20).unwrap().unwrap();
    assert_eq!(chunk.len(), 4);
    assert_eq!((q.depth(), q.unacked()), (1, 4));
    assert_eq!(q.ack(3), 3);
    q.sync().unwrap();
    // 32 bytes per record: the metadata points just past the third
    assert_eq!(meta_text(dir.path(), "t"), "2\n0,96\n0,160\n");
    drop(q); // crash
    let mut q = open(dir.path(), "t", opts(1 << 20));
    assert_eq!(drain(&mut q), (3..5).map(|i| msg(i, 2)).collect::<Vec<_>>());
}
