//! Rolling across data files: the roll rule, deletion of finished files, the metadata at each
//! file change, and a reader following a writer through rolls.

use crate::common::*;

#[test]
fn rolls_and_deletes_files_once_read() {
    // 31-byte records, 124-byte files: 4 records per file.
    let dir = TempDir::new("roll");
    let mut q = open(dir.path(), "t", opts(124));
    for i in 0..10 {
        q.put(&msg(i, 1)).unwrap();
    }
    assert_eq!(q.write_position(), (2, 62));
    // rolls synced the metadata with the new file before it was written
    assert_eq!(meta_text(dir.path(), "t"), "8\n0,0\n2,0\n");
    assert_eq!(q.disk_bytes(), 124 + 124 + 62);

    for i in 0..3 {
        assert_eq!(q.read_next().unwrap(), Some(msg(i, 1)));
    }
    assert!(data_path(dir.path(), "t", 0).exists());
    // the fourth record finishes file 0: deleted, metadata synced
    assert_eq!(q.read_next().unwrap(), Some(msg(3, 1)));
    assert!(!data_path(dir.path(), "t", 0).exists());
    assert_eq!(q.read_position(), (1, 0));
    assert_eq!(meta_text(dir.path(), "t"), "6\n1,0\n2,62\n");
    assert_eq!(q.disk_bytes(), 124 + 62);

    assert_eq!(
        drain(&mut q),
        (4..10).map(|i| msg(i, 1)).collect::<Vec<_>>()
    );
    // the write file stays, the others are gone
    assert_eq!(
        files(dir.path()),
        ["t.diskqueue.000002.dat", "t.diskqueue.meta.dat"]
    );
    assert_eq!(q.read_position(), (2, 62));
    q.close().unwrap();
    assert_eq!(meta_text(dir.path(), "t"), "0\n2,62\n2,62\n");
}

#[test]
fn roll_happens_only_when_the_file_is_non_empty() {
    // A record larger than a whole file still goes, alone, into its own file.
    let dir = TempDir::new("bigrecord");
    let mut q = open(dir.path(), "t", opts(50));
    q.put(&msg(0, 100)).unwrap(); // 130 bytes
    assert_eq!(q.write_position(), (0, 130));
    q.put(&msg(1, 1)).unwrap();
    assert_eq!(q.write_position(), (1, 31));
    q.put(&msg(2, 1)).unwrap(); // 62 > 50
    assert_eq!(q.write_position(), (2, 31));
    assert_eq!(drain(&mut q), [msg(0, 100), msg(1, 1), msg(2, 1)]);
}

#[test]
fn exact_fit_does_not_roll() {
    let dir = TempDir::new("exactfit");
    let mut q = open(dir.path(), "t", opts(62));
    q.put(&msg(0, 1)).unwrap();
    q.put(&msg(1, 1)).unwrap();
    assert_eq!(q.write_position(), (0, 62));
    q.put(&msg(2, 1)).unwrap();
    assert_eq!(q.write_position(), (1, 31));
}

#[test]
fn reader_follows_writer_through_rolls() {
    let dir = TempDir::new("follow");
    let mut q = open(dir.path(), "t", opts(100));
    let mut expected = std::collections::VecDeque::new();
    let mut n = 0u32;
    for round in 0..200u32 {
        for _ in 0..(round % 4) {
            let p = msg(n, (n % 13) as usize);
            q.put(&p).unwrap();
            expected.push_back(p);
            n += 1;
        }
        for _ in 0..(round % 3) {
            assert_eq!(q.read_next().unwrap(), expected.pop_front());
        }
        assert_eq!(q.depth(), expected.len() as i64);
        assert_eq!(q.has_data(), !expected.is_empty());
    }
    assert_eq!(drain(&mut q), Vec::from(expected));
    // only the current write file remains
    let data_files: Vec<String> = files(dir.path())
        .into_iter()
        .filter(|f| f.ends_with(".dat") && !f.contains("meta"))
        .collect();
    assert_eq!(data_files.len(), 1, "{data_files:?}");
    assert_eq!(q.counters(), Default::default());
}

#[test]
fn peek_then_roll_then_read() {
    // A record peeked in the write file stays valid when the writer rolls away from it.
    let dir = TempDir::new("peekroll");
    let mut q = open(dir.path(), "t", opts(62));
    q.put(&msg(0, 1)).unwrap();
    q.put(&msg(1, 1)).unwrap();
    assert_eq!(q.peek().unwrap(), Some(&msg(0, 1)[..]));
    q.put(&msg(2, 1)).unwrap(); // rolls to file 1
    assert_eq!(q.read_next().unwrap(), Some(msg(0, 1)));
    assert_eq!(q.read_next().unwrap(), Some(msg(1, 1)));
    assert!(!data_path(dir.path(), "t", 0).exists());
    assert_eq!(q.read_next().unwrap(), Some(msg(2, 1)));
    assert_eq!(q.read_next().unwrap(), None);
}
