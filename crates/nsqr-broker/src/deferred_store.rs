//! Deferred messages keep their delay across a restart: a small file beside each disk queue,
//! `<queue>.nsqr.deferred.dat`, maps message ids to the Unix time they become deliverable.
//!
//! At shutdown deferred messages are written into the queue's data files exactly as nsqd does
//! (so an nsqd taking over the directory still gets every message, delivered at once), and
//! their due times into this file. When nsqrd reads such a message back from the queue and
//! finds its id here, it defers it again until the recorded time. nsqd ignores the file.
//!
//! Format (text, one entry per line after a header):
//! `nsqr-deferred 1\n` then `<16 hex id> <due unix nanoseconds>\n` per message. Written
//! atomically (tmp file, fsync, rename, fsync of the directory); a missing file means no entries;
//! an unreadable line is logged and skipped (its message is then delivered without delay).

use std::io::Write;
use std::path::{Path, PathBuf};

use nsq_wire::MessageId;
use rustc_hash::FxHashMap;

const HEADER: &str = "nsqr-deferred 1";

pub(crate) fn path(dir: &Path, queue: &str) -> PathBuf {
    dir.join(format!("{queue}.nsqr.deferred.dat"))
}

/// Reads the entries (id -> due unix ns); empty when there is no file.
pub(crate) fn load(dir: &Path, queue: &str) -> FxHashMap<u64, i64> {
    let p = path(dir, queue);
    let mut out = FxHashMap::default();
    let text = match std::fs::read_to_string(&p) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return out,
        Err(e) => {
            tracing::error!(
                "DEFERRED({queue}): cannot read {} - {e}; deferred messages will be delivered without delay",
                p.display()
            );
            return out;
        }
    };
    let mut lines = text.lines();
    if lines.next() != Some(HEADER) {
        tracing::error!(
            "DEFERRED({queue}): {} has no '{HEADER}' header; ignored",
            p.display()
        );
        return out;
    }
    for line in lines.filter(|l| !l.is_empty()) {
        let parsed = line.split_once(' ').and_then(|(id, due)| {
            Some((
                MessageId::from_hex(id.as_bytes())?.0,
                due.parse::<i64>().ok()?,
            ))
        });
        match parsed {
            Some((id, due)) => {
                out.insert(id, due);
            }
            None => tracing::error!("DEFERRED({queue}): bad line {line:?} skipped"),
        }
    }
    out
}

/// Replaces the file with `entries` (or removes it when there are none).
pub(crate) fn save(
    dir: &Path,
    queue: &str,
    entries: impl IntoIterator<Item = (u64, i64)>,
) -> std::io::Result<()> {
    let p = path(dir, queue);
    let mut text = String::from(HEADER);
    text.push('\n');
    let mut n = 0usize;
    for (id, due) in entries {
        let hex = MessageId(id).to_hex();
        text.push_str(std::str::from_utf8(&hex).unwrap_or("0000000000000000"));
        text.push(' ');
        text.push_str(&due.to_string());
        text.push('\n');
        n += 1;
    }
    if n == 0 {
        return remove(dir, queue);
    }
    write_atomically(dir, &p, text.as_bytes())
}

/// Replace `file` (in `dir`) with `data`: a temporary file, fsync, rename, fsync of `dir`.
pub(crate) fn write_atomically(dir: &Path, file: &Path, data: &[u8]) -> std::io::Result<()> {
    let mut tmp = file.as_os_str().to_owned();
    tmp.push(format!(".{}.tmp", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(data)?;
        f.sync_all()?;
        std::fs::rename(&tmp, file)?;
        std::fs::File::open(dir)?.sync_all()
    };
    write().inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

pub(crate) fn remove(dir: &Path, queue: &str) -> std::io::Result<()> {
    match std::fs::remove_file(path(dir, queue)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_bad_lines() {
        let dir = std::env::temp_dir().join(format!("nsqr-deferred-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        assert!(load(&dir, "t:c").is_empty());
        save(&dir, "t:c", [(0xabc, 5), (7, -1)]).expect("save");
        let got = load(&dir, "t:c");
        assert_eq!(got.get(&0xabc), Some(&5));
        assert_eq!(got.get(&7), Some(&-1));
        let raw = std::fs::read_to_string(path(&dir, "t:c")).expect("read");
        assert!(
            raw.starts_with("nsqr-deferred 1\n0000000000000abc 5\n"),
            "{raw}"
        );
        std::fs::write(
            path(&dir, "t:c"),
            "nsqr-deferred 1\nzz 1\n0000000000000001 2\n",
        )
        .expect("write");
        assert_eq!(load(&dir, "t:c").len(), 1);
        save(&dir, "t:c", []).expect("save empty");
        assert!(!path(&dir, "t:c").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
