//! Helpers shared by the integration tests: self-cleaning temp dirs, nsqd-shaped payloads, and an
//! independent minimal reader/writer of nsqd's on-disk format (deliberately not using the
//! crate's code, so format bugs cannot cancel out).
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use diskqueue::{DiskQueue, DiskQueueOptions};

/// A fresh directory under `std::env::temp_dir()`, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("diskqueue-test-{tag}-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// An nsqd message payload: `[i64 ts][u16 attempts][16-byte hex id][body]`, body `body_len`
/// bytes derived from `i`.
pub fn msg(i: u32, body_len: usize) -> Vec<u8> {
    let mut p = Vec::with_capacity(26 + body_len);
    p.extend_from_slice(&(1_700_000_000_000_000_000i64 + i64::from(i)).to_be_bytes());
    p.extend_from_slice(&1u16.to_be_bytes());
    p.extend_from_slice(format!("{i:016x}").as_bytes());
    p.extend((0..body_len).map(|k| (i as usize + k) as u8));
    p
}

/// Options with a small file size so tests roll, and syncs only when asked.
pub fn opts(max_bytes_per_file: u64) -> DiskQueueOptions {
    DiskQueueOptions {
        max_bytes_per_file,
        min_msg_size: 26,
        max_msg_size: 26 + 1024,
        sync_every: 1_000_000,
        max_bytes: 0,
    }
}

pub fn open(dir: &Path, name: &str, o: DiskQueueOptions) -> DiskQueue {
    DiskQueue::open(dir, name, o).unwrap()
}

/// Names of the files in `dir`, sorted.
pub fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

pub fn data_path(dir: &Path, name: &str, n: u64) -> PathBuf {
    dir.join(format!("{name}.diskqueue.{n:06}.dat"))
}

pub fn meta_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.diskqueue.meta.dat"))
}

pub fn meta_text(dir: &Path, name: &str) -> String {
    fs::read_to_string(meta_path(dir, name)).unwrap()
}

pub fn file_size(path: &Path) -> u64 {
    fs::metadata(path).unwrap().len()
}

/// Reads every record until the queue reports nothing left.
pub fn drain(q: &mut DiskQueue) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while let Some(p) = q.read_next().unwrap() {
        out.push(p);
    }
    out
}

/// Independent encoder: one nsqd record.
pub fn nsqd_record(payload: &[u8]) -> Vec<u8> {
    let mut v = (payload.len() as i32).to_be_bytes().to_vec();
    v.extend_from_slice(payload);
    v
}

/// Independent reader: parses the metadata text and walks the data files from the read
/// position to the write position the way nsqd's reader does.
pub fn nsqd_read_all(dir: &Path, name: &str) -> (i64, Vec<Vec<u8>>) {
    let text = meta_text(dir, name);
    let lines: Vec<&str> = text.split('\n').collect();
    assert_eq!(lines.len(), 4, "metadata {text:?}");
    assert_eq!(lines[3], "", "metadata ends with a newline");
    let depth: i64 = lines[0].parse().unwrap();
    let pair = |l: &str| -> (u64, u64) {
        let (a, b) = l.split_once(',').unwrap();
        (a.parse().unwrap(), b.parse().unwrap())
    };
    let (read_file, read_pos) = pair(lines[1]);
    let (write_file, write_pos) = pair(lines[2]);
    let mut out = Vec::new();
    for n in read_file..=write_file {
        let bytes = fs::read(data_path(dir, name, n)).unwrap_or_default();
        let mut pos = if n == read_file { read_pos as usize } else { 0 };
        let end = if n == write_file {
            write_pos as usize
        } else {
            bytes.len()
        };
        while pos < end {
            let len = i32::from_be_bytes(bytes[pos..pos + 4].try_into().unwrap()) as usize;
            out.push(bytes[pos + 4..pos + 4 + len].to_vec());
            pos += 4 + len;
        }
        assert_eq!(pos, end, "file {n} ends on a record boundary");
    }
    (depth, out)
}
