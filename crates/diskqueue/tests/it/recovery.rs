//! Startup recovery and damage handling: crashes (a dropped queue is a crashed process: written
//! data is in the files, the metadata is whatever the last sync wrote), lost tails, torn
//! records, corrupt lengths, missing files and broken metadata.

use std::fs::{self, OpenOptions};
use std::io::Write;

use crate::common::*;

fn append(path: &std::path::Path, bytes: &[u8]) {
    let mut f = OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(bytes).unwrap();
}

#[test]
fn crash_after_unsynced_writes_keeps_them() {
    let dir = TempDir::new("crash-writes");
    let mut q = open(dir.path(), "t", opts(1 << 20));
    for i in 0..5 {
        q.put(&msg(i, 2)).unwrap();
    }
    q.sync().unwrap();
    for i in 5..8 {
        q.put(&msg(i, 2)).unwrap();
    }
    drop(q); // crash: metadata says 5 records
    assert_eq!(meta_text(dir.path(), "t"), "5\n0,0\n0,160\n");

    let mut q = open(dir.path(), "t", opts(1 << 20));
    assert_eq!(q.depth(), 8);
    assert_eq!(q.counters().recovered_records, 3);
    // the file ended on a record boundary: writing continues in it
    assert_eq!(q.write_position(), (0, 256));
    // and the repaired state was persisted at once
    assert_eq!(meta_text(dir.path(), "t"), "8\n0,0\n0,256\n");
    q.put(&msg(8, 2)).unwrap();
    assert_eq!(drain(&mut q), (0..9).map(|i| msg(i, 2)).collect::<Vec<_>>());
    assert_eq!(q.corrupt_files(), 0);
}

#[test]
fn crash_after_unsynced_reads_redelivers_them() {
    let dir = TempDir::new("crash-reads");
    let mut q = open(dir.path(), "t", opts(1 << 20));
    for i in 0..5 {
        q.put(&msg(i, 2)).unwrap();
    }
    q.sync().unwrap();
    q.read_next().unwrap();
    q.read_next().unwrap();
    drop(q);
    let mut q = open(dir.path(), "t", opts(1 << 20));
    assert_eq!(q.depth(), 5);
    assert_eq!(drain(&mut q), (0..5).map(|i| msg(i, 2)).collect::<Vec<_>>());
}

#[test]
fn power_loss_of_unsynced_tail_loses_no_synced_record() {
    // Synced: 4 records. Then 3 more, of which the page cache only got 1.5 to disk.
    let dir = TempDir::new("powerloss");
    let mut q = open(dir.path(), "t", opts(1 << 20));
    for i in 0..4 {
        q.put(&msg(i, 2)).unwrap();
    }
    q.sync().unwrap();
    for i in 4..7 {
        q.put(&msg(i, 2)).unwrap();
    }
    drop(q);
    let path = data_path(dir.path(), "t", 0);
    let f = OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(4 * 32 + 32 + 10).unwrap();
    drop(f);

    let mut q = open(dir.path(), "t", opts(1 << 20));
    assert_eq!(q.depth(), 5, "4 synced + 1 intact unsynced");
    // torn tail: cut off after the last whole record, writing continues there
    assert_eq!(q.write_position(), (0, 5 * 32));
    assert_eq!(q.counters().torn_tails_truncated, 1);
    assert_eq!(fs::metadata(&path).unwrap().len(), 5 * 32);
    q.put(&msg(100, 2)).unwrap();
    let mut expected: Vec<Vec<u8>> = (0..5).map(|i| msg(i, 2)).collect();
    expected.push(msg(100, 2));
    assert_eq!(drain(&mut q), expected);
    // a torn tail is not corruption: nothing was lost that had been made durable
    assert_eq!(q.corrupt_files(), 0);
    assert!(!dir.path().join("t.diskqueue.000000.dat.bad").exists());
    assert_eq!(q.depth(), 0);
}

#[test]
fn torn_tail_after_clean_metadata_is_detected() {
    // Half a record after the synced end (e.g. a write cut by the crash).
    let dir = TempDir::new("torn");
    let mut q = open(dir.path(), "t", opts(1 << 20));
    for i in 0..3 {
        q.put(&msg(i, 2)).unwrap();
    }
    q.close().unwrap();
    let torn = nsqd_record(&msg(3, 2));
    append(&data_path(dir.path(), "t", 0), &torn[..torn.len() / 2]);

    let mut q = open(dir.path(), "t", opts(1 << 20));
    assert_eq!(q.depth(), 3);
    assert_eq!(q.counters().recovered_records, 0);
    assert_eq!(q.counters().torn_tails_truncated, 1);
    assert_eq!(q.write_position(), (0, 96));
    q.put(&msg(4, 2)).unwrap();
    assert_eq!(
        drain(&mut q),
        [0, 1, 2, 4].iter().map(|&i| msg(i, 2)).collect::<Vec<_>>()
    );
    assert_eq!(q.corrupt_files(), 0);
}

#[test]
fn torn_tail_of_an_adopted_file_is_truncated() {
    // The metadata still names file 0; file 1 (after a roll) ends in half a record.
    let dir = TempDir::new("torn-orphan");
    let mut q = open(dir.path(), "t", opts(64));
    q.put(&msg(0, 2)).unwrap();
    q.put(&msg(1, 2)).unwrap();
    q.sync().unwrap();
    drop(q);
    let rec = nsqd_record(&msg(2, 2));
    fs::write(data_path(dir.path(), "t", 1), &rec[..10]).unwrap();
    let mut q = open(dir.path(), "t", opts(64));
    assert_eq!(q.counters().torn_tails_truncated, 1);
    assert_eq!(q.write_position(), (1, 0));
    assert_eq!(drain(&mut q), [msg(0, 2), msg(1, 2)]);
    assert_eq!(q.corrupt_files(), 0);
}

/// Queue `t` with `n` one-byte messages, four records (31 bytes each) per file, closed; record 2
/// of file 0 then gets an impossible length. Returns file 0's path.
fn write_with_bad_third_length(dir: &std::path::Path, n: u32) -> std::path::PathBuf {
    let mut q = open(dir, "t", opts(124));
    for i in 0..n {
        q.put(&msg(i, 1)).unwrap();
    }
    q.close().unwrap();
    let path = data_path(dir, "t", 0);
    let mut bytes = fs::read(&path).unwrap();
    bytes[62..66].copy_from_slice(&0x7fff_ffffu32.to_be_bytes());
    fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn corrupt_length_in_the_middle_moves_file_to_bad_and_continues() {
    let dir = TempDir::new("corrupt");
    let path = write_with_bad_third_length(dir.path(), 12);

    let mut q = open(dir.path(), "t", opts(124));
    let got = drain(&mut q);
    let expected: Vec<Vec<u8>> = [0, 1, 4, 5, 6, 7, 8, 9, 10, 11]
        .iter()
        .map(|&i| msg(i, 1))
        .collect();
    assert_eq!(got, expected);
    assert_eq!(q.corrupt_files(), 1);
    let c = q.last_corruption().unwrap().clone();
    assert_eq!(c.offset, 62);
    assert_eq!(c.file, path);
    assert!(c.reason.contains("invalid message read size (2147483647)"));
    assert!(dir.path().join("t.diskqueue.000000.dat.bad").exists());
    // the two lost records made the depth 2 too high: reset at the tail, counted
    assert_eq!(q.depth(), 0);
    assert_eq!(q.counters().depth_resets, 1);
    q.close().unwrap();
    assert_eq!(meta_text(dir.path(), "t"), "0\n2,124\n2,124\n");
}

#[test]
fn corrupt_write_file_moves_the_writer_on() {
    let dir = TempDir::new("corrupt-write");
    let mut q = open(dir.path(), "t", opts(1 << 20));
    for i in 0..3 {
        q.put(&msg(i, 1)).unwrap();
    }
    q.sync().unwrap();
    let path = data_path(dir.path(), "t", 0);
    let mut bytes = fs::read(&path).unwrap();
    bytes[31..35].copy_from_slice(&3u32.to_be_bytes()); // below min size
    fs::write(&path, bytes).unwrap();

    assert_eq!(q.read_next().unwrap(), Some(msg(0, 1)));
    assert_eq!(q.read_next().unwrap(), None);
    assert_eq!(q.corrupt_files(), 1);
    assert_eq!(q.write_position(), (1, 0));
    assert_eq!(q.read_position(), (1, 0));
    q.put(&msg(3, 1)).unwrap();
    assert_eq!(drain(&mut q), [msg(3, 1)]);
}

#[test]
fn write_file_shorter_than_metadata_moves_the_writer_on() {
    let dir = TempDir::new("short");
    let mut q = open(dir.path(), "t", opts(1 << 20));
    for i in 0..4 {
        q.put(&msg(i, 1)).unwrap();
    }
    q.close().unwrap();
    let f = OpenOptions::new()
        .write(true)
        .open(data_path(dir.path(), "t", 0))
        .unwrap();
    f.set_len(62).unwrap();
    drop(f);

    let mut q = open(dir.path(), "t", opts(1 << 20));
    assert_eq!(q.write_position(), (1, 0));
    q.put(&msg(9, 1)).unwrap();
    // the two surviving records are delivered; the file ends cleanly, so no .bad
    assert_eq!(drain(&mut q), [msg(0, 1), msg(1, 1), msg(9, 1)]);
    assert_eq!(q.counters().depth_resets, 1);
}

#[test]
fn missing_read_file_is_skipped_and_counted() {
    let dir = TempDir::new("missing");
    let mut q = open(dir.path(), "t", opts(62));
    for i in 0..6 {
        q.put(&msg(i, 1)).unwrap();
    }
    q.close().unwrap();
    fs::remove_file(data_path(dir.path(), "t", 1)).unwrap();
    let mut q = open(dir.path(), "t", opts(62));
    assert_eq!(drain(&mut q), [msg(0, 1), msg(1, 1), msg(4, 1), msg(5, 1)]);
    assert_eq!(q.counters().missing_files, 1);
    assert_eq!(q.corrupt_files(), 0);
}

/// Found by the `diskqueue_records` fuzz target: metadata putting billions of file numbers
/// between the reader and the writer made `open` stat every one of them (and the reader would
/// then have skipped them one sync at a time). Only the files present are visited now.
#[test]
fn metadata_with_a_writer_billions_of_files_ahead_opens_and_drains() {
    let dir = TempDir::new("far-writer");
    let mut q = open(dir.path(), "t", opts(1 << 20));
    for i in 0..3 {
        q.put(&msg(i, 1)).unwrap();
    }
    q.close().unwrap();
    let far = 77_777_770_080u64;
    fs::write(meta_path(dir.path(), "t"), format!("3\n0,0\n{far},0\n")).unwrap();
    // A file in the gap is still read, after file 0 and before the writer.
    let mut q = open(dir.path(), "t", opts(1 << 20));
    assert_eq!(q.write_position(), (far, 0));
    assert_eq!(drain(&mut q), [msg(0, 1), msg(1, 1), msg(2, 1)]);
    assert_eq!(q.read_position(), (far, 0));
    assert_eq!(q.counters().missing_files, far - 1);
    q.put(&msg(9, 1)).unwrap();
    assert_eq!(drain(&mut q), [msg(9, 1)]);
    q.close().unwrap();
    assert_eq!(
        files(dir.path()),
        [
            format!("t.diskqueue.{far:06}.dat"),
            "t.diskqueue.meta.dat".to_string()
        ]
    );
}

#[test]
fn a_gap_of_missing_files_is_skipped_to_the_next_file_present() {
    let dir = TempDir::new("gap");
    let mut q = open(dir.path(), "t", opts(62));
    for i in 0..6 {
        q.put(&msg(i, 1)).unwrap();
    }
    q.close().unwrap();
    // Files 0, 1, 2 hold two records each; move file 2 far ahead, with the writer after it.
    let far = 1_000_000u64;
    fs::rename(
        data_path(dir.path(), "t", 2),
        data_path(dir.path(), "t", far),
    )
    .unwrap();
    fs::write(
        meta_path(dir.path(), "t"),
        format!("6\n0,0\n{},0\n", far + 1),
    )
    .unwrap();
    let mut q = open(dir.path(), "t", opts(62));
    assert_eq!(drain(&mut q), (0..6).map(|i| msg(i, 1)).collect::<Vec<_>>());
    assert_eq!(q.counters().missing_files, far - 2);
}

#[test]
fn transient_read_error_does_not_condemn_the_file() {
    // A directory where the data file should be: open works, read fails with EISDIR, an I/O
    // error that says nothing about the data. nsqd would rename the file .bad; we report it.
    let dir = TempDir::new("transient");
    let mut q = open(dir.path(), "t", opts(62));
    for i in 0..4 {
        q.put(&msg(i, 1)).unwrap();
    }
    q.close().unwrap();
    let path = data_path(dir.path(), "t", 0);
    let saved = fs::read(&path).unwrap();
    fs::remove_file(&path).unwrap();
    fs::create_dir(&path).unwrap();

    let mut q = open(dir.path(), "t", opts(62));
    assert!(matches!(
        q.read_next(),
        Err(diskqueue::DiskQueueError::Io { .. })
    ));
    assert_eq!(q.read_position(), (0, 0));
    assert_eq!(q.corrupt_files(), 0);
    fs::remove_dir(&path).unwrap();
    fs::write(&path, saved).unwrap();
    assert_eq!(drain(&mut q), (0..4).map(|i| msg(i, 1)).collect::<Vec<_>>());
}

#[test]
fn missing_metadata_with_data_files_is_rebuilt() {
    // Crash before the first sync: data files but no metadata (nsqd would restart at 0,0 and
    // overwrite file 0).
    let dir = TempDir::new("nometa");
    let mut q = open(dir.path(), "t", opts(62));
    for i in 0..5 {
        q.put(&msg(i, 1)).unwrap();
    }
    drop(q);
    fs::remove_file(meta_path(dir.path(), "t")).unwrap(); // written by the rolls
    let mut q = open(dir.path(), "t", opts(62));
    assert_eq!(q.depth(), 5);
    assert_eq!(q.counters().metadata_rebuilds, 1);
    assert_eq!(meta_text(dir.path(), "t"), "5\n0,0\n2,31\n");
    assert_eq!(drain(&mut q), (0..5).map(|i| msg(i, 1)).collect::<Vec<_>>());
}

#[test]
fn crash_after_empty_keeps_new_writes() {
    let dir = TempDir::new("emptycrash");
    let mut q = open(dir.path(), "t", opts(1 << 20));
    q.put(&msg(0, 1)).unwrap();
    q.sync().unwrap();
    q.empty().unwrap();
    q.put(&msg(1, 1)).unwrap();
    q.put(&msg(2, 1)).unwrap();
    drop(q);
    assert_eq!(files(dir.path()), ["t.diskqueue.000001.dat"]);
    let mut q = open(dir.path(), "t", opts(1 << 20));
    assert_eq!(q.read_position(), (1, 0));
    assert_eq!(drain(&mut q), [msg(1, 1), msg(2, 1)]);
}

#[test]
fn unreadable_metadata_is_saved_and_rebuilt() {
    let dir = TempDir::new("badmeta");
    let mut q = open(dir.path(), "t", opts(1 << 20));
    for i in 0..3 {
        q.put(&msg(i, 1)).unwrap();
    }
    q.close().unwrap();
    fs::write(meta_path(dir.path(), "t"), "garbage\n").unwrap();
    let mut q = open(dir.path(), "t", opts(1 << 20));
    assert_eq!(
        fs::read_to_string(dir.path().join("t.diskqueue.meta.dat.bad")).unwrap(),
        "garbage\n"
    );
    assert_eq!(q.counters().metadata_rebuilds, 1);
    assert_eq!(drain(&mut q), (0..3).map(|i| msg(i, 1)).collect::<Vec<_>>());
}

#[test]
fn files_past_the_write_file_are_adopted() {
    // Metadata older than a roll (its write failed): file 1 exists but the metadata says 0.
    let dir = TempDir::new("orphan");
    let mut q = open(dir.path(), "t", opts(1 << 20));
    q.put(&msg(0, 1)).unwrap();
    q.close().unwrap();
    let mut extra = nsqd_record(&msg(1, 1));
    extra.extend(nsqd_record(&msg(2, 1)));
    fs::write(data_path(dir.path(), "t", 1), extra).unwrap();

    let mut q = open(dir.path(), "t", opts(1 << 20));
    assert_eq!(q.depth(), 3);
    assert_eq!(q.write_position(), (1, 62));
    q.put(&msg(3, 1)).unwrap();
    assert_eq!(drain(&mut q), (0..4).map(|i| msg(i, 1)).collect::<Vec<_>>());
}

#[test]
fn finished_file_left_by_a_crash_is_removed() {
    let dir = TempDir::new("leftover");
    let mut q = open(dir.path(), "t", opts(62));
    for i in 0..4 {
        q.put(&msg(i, 1)).unwrap();
    }
    q.close().unwrap();
    let saved = fs::read(data_path(dir.path(), "t", 0)).unwrap();
    let mut q = open(dir.path(), "t", opts(62));
    q.read_next().unwrap();
    q.read_next().unwrap();
    q.close().unwrap();
    // as if the crash came between the metadata sync and the removal
    fs::write(data_path(dir.path(), "t", 0), saved).unwrap();
    let mut q = open(dir.path(), "t", opts(62));
    assert!(!data_path(dir.path(), "t", 0).exists());
    assert_eq!(drain(&mut q), [msg(2, 1), msg(3, 1)]);
}

#[test]
fn stale_depth_is_reset_when_nothing_is_left() {
    let dir = TempDir::new("depthreset");
    fs::write(meta_path(dir.path(), "t"), "7\n3,0\n3,0\n").unwrap();
    let q = open(dir.path(), "t", opts(62));
    assert_eq!(q.depth(), 0);
    assert_eq!(q.counters().depth_resets, 1);
    assert_eq!(q.write_position(), (3, 0));
    assert_eq!(meta_text(dir.path(), "t"), "0\n3,0\n3,0\n");
}

#[test]
fn chunked_reads_stop_before_a_corrupt_length_then_quarantine_like_single_reads() {
    let dir = TempDir::new("corrupt-chunk");
    let path = write_with_bad_third_length(dir.path(), 6);

    let mut q = open(dir.path(), "t", opts(124));
    let first = q.read_chunk(100, 1 << 20).unwrap().unwrap();
    assert_eq!(
        first.payloads().map(<[u8]>::to_vec).collect::<Vec<_>>(),
        [msg(0, 1), msg(1, 1)]
    );
    assert_eq!((q.read_position(), q.corrupt_files()), ((0, 62), 0));
    // the next chunk meets the bad length first: the file is quarantined, reading goes on
    let next = q.read_chunk(100, 1 << 20).unwrap().unwrap();
    assert_eq!(
        next.payloads().map(<[u8]>::to_vec).collect::<Vec<_>>(),
        [msg(4, 1), msg(5, 1)]
    );
    assert_eq!(q.corrupt_files(), 1);
    let c = q.last_corruption().unwrap();
    assert_eq!((c.file.as_path(), c.offset), (path.as_path(), 62));
    assert!(dir.path().join("t.diskqueue.000000.dat.bad").exists());
    assert_eq!(q.read_chunk(100, 1 << 20).unwrap(), None);
}

#[test]
fn a_chunk_holds_one_record_larger_than_its_byte_budget_and_stops_at_the_write_position() {
    let dir = TempDir::new("chunk-sizes");
    let mut q = open(dir.path(), "t", opts(1 << 20));
    q.put(&msg(0, 500)).unwrap();
    q.put(&msg(1, 3)).unwrap();
    q.put(&msg(2, 3)).unwrap();
    let big = q.read_chunk(10, 16).unwrap().unwrap();
    assert_eq!(
        big.payloads().map(<[u8]>::to_vec).collect::<Vec<_>>(),
        [msg(0, 500)]
    );
    assert_eq!(big.data().len(), 4 + msg(0, 500).len());
    let rest = q.read_chunk(10, 1 << 20).unwrap().unwrap();
    assert_eq!(rest.len(), 2);
    assert_eq!(q.read_chunk(10, 1 << 20).unwrap(), None);
    q.put(&msg(3, 3)).unwrap();
    let more = q.read_chunk(10, 1 << 20).unwrap().unwrap();
    assert_eq!(
        more.payloads().map(<[u8]>::to_vec).collect::<Vec<_>>(),
        [msg(3, 3)]
    );
    assert_eq!(q.depth(), 0);
}
