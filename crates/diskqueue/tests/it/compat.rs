//! Byte compatibility with nsqd's data directory, checked against code that does not share
//! anything with the crate: files written by hand in nsqd's documented format are read by
//! `DiskQueue`, and `DiskQueue`'s output is read by a minimal independent reader.

use std::fs;

use crate::common::*;

/// Lays out what nsqd would leave for a channel after 9 messages with rolling and 2 reads:
/// file 0 with 4 records (2 already read), file 1 with 5, metadata `7\n0,80\n1,155\n`.
fn write_nsqd_dir(dir: &std::path::Path, name: &str) -> Vec<Vec<u8>> {
    let payloads: Vec<Vec<u8>> = (0..9).map(|i| msg(i, if i < 4 { 10 } else { 1 })).collect();
    let file0: Vec<u8> = payloads[..4].iter().flat_map(|p| nsqd_record(p)).collect();
    let file1: Vec<u8> = payloads[4..].iter().flat_map(|p| nsqd_record(p)).collect();
    assert_eq!((file0.len(), file1.len()), (160, 155));
    fs::write(dir.join(format!("{name}.diskqueue.000000.dat")), file0).unwrap();
    fs::write(dir.join(format!("{name}.diskqueue.000001.dat")), file1).unwrap();
    fs::write(
        dir.join(format!("{name}.diskqueue.meta.dat")),
        "7\n0,80\n1,155\n",
    )
    .unwrap();
    payloads
}

#[test]
fn reads_a_hand_written_nsqd_directory() {
    let dir = TempDir::new("compat-read");
    let payloads = write_nsqd_dir(dir.path(), "p1:c1");
    let mut q = open(dir.path(), "p1:c1", opts(160));
    assert_eq!(q.depth(), 7);
    assert_eq!(q.read_position(), (0, 80));
    assert_eq!(q.write_position(), (1, 155));
    assert_eq!(q.disk_bytes(), 315);
    assert_eq!(drain(&mut q), payloads[2..]);
    assert_eq!(q.counters(), Default::default());
    // continues nsqd's file numbering and rolling
    q.put(&msg(9, 1)).unwrap();
    assert_eq!(q.write_position(), (2, 31));
    q.close().unwrap();
    assert_eq!(meta_text(dir.path(), "p1:c1"), "1\n1,155\n2,31\n");
    assert_eq!(
        files(dir.path()),
        [
            "p1:c1.diskqueue.000001.dat",
            "p1:c1.diskqueue.000002.dat",
            "p1:c1.diskqueue.meta.dat"
        ]
    );
}

#[test]
fn hand_written_metadata_variants_parse() {
    // Go's Fscanf accepts a missing final newline; so do we.
    let dir = TempDir::new("compat-meta");
    write_nsqd_dir(dir.path(), "t");
    fs::write(meta_path(dir.path(), "t"), "7\n0,80\n1,155").unwrap();
    let q = open(dir.path(), "t", opts(160));
    assert_eq!(q.depth(), 7);
    assert_eq!(q.counters().metadata_rebuilds, 0);
}

#[test]
fn independent_reader_reads_diskqueue_output() {
    let dir = TempDir::new("compat-write");
    let name = "orders:billing";
    let mut q = open(dir.path(), name, opts(300));
    let payloads: Vec<Vec<u8>> = (0..50).map(|i| msg(i, (i * 11 % 90) as usize)).collect();
    for p in &payloads[..20] {
        q.put(p).unwrap();
    }
    q.put_batch(&payloads[20..]).unwrap();
    for _ in 0..13 {
        q.read_next().unwrap();
    }
    q.close().unwrap();

    let (depth, records) = nsqd_read_all(dir.path(), name);
    assert_eq!(depth, 37);
    assert_eq!(records, payloads[13..]);
    // every file name is nsqd's
    for f in files(dir.path()) {
        let rest = f.strip_prefix("orders:billing.diskqueue.").unwrap();
        assert!(
            rest == "meta.dat"
                || (rest.len() == 10
                    && rest.ends_with(".dat")
                    && rest[..6].bytes().all(|b| b.is_ascii_digit())),
            "{f}"
        );
    }
}

#[test]
fn record_bytes_are_exactly_length_then_payload() {
    let dir = TempDir::new("compat-bytes");
    let mut q = open(dir.path(), "t", opts(1 << 20));
    let p = msg(7, 3);
    q.put(&p).unwrap();
    q.close().unwrap();
    let bytes = fs::read(data_path(dir.path(), "t", 0)).unwrap();
    assert_eq!(&bytes[..4], &[0, 0, 0, 29]);
    assert_eq!(&bytes[4..], &p[..]);
    assert_eq!(meta_text(dir.path(), "t"), "1\n0,0\n0,33\n");
}
