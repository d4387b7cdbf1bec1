//! Deferred messages keep their delay across a restart: a small file beside each disk queue,
//! `<queue>.nsqr.deferred.dat`, maps message ids to the Unix time they become deliverable.
//!
//! At shutdown deferred messages are written into the queue's data files exactly as nsqd does
//! (so an nsqd taking over the directory still gets every message, delivered at once), and
//! their due times into this file. When nsqrd reads such a message back from the queue and
//! finds its id here, it defers it again until the recorded time. nsqd ignores the file.
//!
//! Format (a `side_file.rs` file): `nsqr-deferred 1\n` then `<16 hex id> <due unix
//! nanoseconds>\n` per message. An unreadable line is skipped (its message is then delivered
//! without delay).

use std::path::Path;

use nsq_wire::MessageId;
use rustc_hash::FxHashMap;

use crate::side_file::SideFile;

pub(crate) const FILE: SideFile = SideFile {
    header: "nsqr-deferred 1",
    suffix: "nsqr.deferred.dat",
    tag: "DEFERRED",
    loss: "deferred messages will be delivered without delay",
};

#[cfg(test)]
fn path(dir: &Path, queue: &str) -> std::path::PathBuf {
    FILE.path(dir, queue)
}

/// Reads the entries (id -> due unix ns); empty when there is no file.
pub(crate) fn load(dir: &Path, queue: &str) -> FxHashMap<u64, i64> {
    FILE.load(dir, queue, |line| {
        let (id, due) = line.split_once(' ')?;
        Some((
            MessageId::from_hex(id.as_bytes())?.0,
            due.parse::<i64>().ok()?,
        ))
    })
}

/// Replaces the file with `entries` (or removes it when there are none).
pub(crate) fn save(
    dir: &Path,
    queue: &str,
    entries: impl IntoIterator<Item = (u64, i64)>,
) -> std::io::Result<()> {
    FILE.save(dir, queue, entries, |id, due, text| {
        let hex = MessageId(id).to_hex();
        text.push_str(std::str::from_utf8(&hex).unwrap_or("0000000000000000"));
        text.push(' ');
        text.push_str(&due.to_string());
        Ok(())
    })
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
