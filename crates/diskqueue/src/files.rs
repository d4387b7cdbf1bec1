//! Where a queue lives on disk and the metadata file's text format, byte for byte as nsqd:
//! `<name>.diskqueue.<6-digit n>.dat` data files and `<name>.diskqueue.meta.dat` holding
//! `<depth>\n<readFileNum>,<readPos>\n<writeFileNum>,<writePos>\n`, replaced atomically through
//! `<meta>.<random>.tmp` + fsync + rename. Nothing here keeps state; the queue owns that.

use std::collections::hash_map::RandomState;
use std::fs::{self, File, OpenOptions};
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::error::{DiskQueueError, Result};

/// A place in the queue: a data file number and a byte offset inside it. Ordered file first,
/// so `read <= write` holds for every consistent state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Position {
    pub file: u64,
    pub pos: u64,
}

impl Position {
    pub(crate) fn new(file: u64, pos: u64) -> Self {
        Position { file, pos }
    }

    pub(crate) fn start_of(file: u64) -> Self {
        Position { file, pos: 0 }
    }
}

/// The three persisted numbers of a queue.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Metadata {
    pub depth: i64,
    pub read: Position,
    pub write: Position,
}

impl Metadata {
    /// nsqd's exact text (`fmt.Fprintf(f, "%d\n%d,%d\n%d,%d\n", ...)`).
    pub(crate) fn to_text(self) -> String {
        format!(
            "{}\n{},{}\n{},{}\n",
            self.depth, self.read.file, self.read.pos, self.write.file, self.write.pos
        )
    }

    /// Parses the metadata text. Tolerates surrounding blanks and a missing final newline (Go's
    /// `Fscanf` does too); rejects anything else, including negative file numbers or offsets,
    /// which no valid nsqd state can hold.
    pub(crate) fn parse(text: &str) -> Option<Metadata> {
        let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
        let depth = lines.next()?.parse::<i64>().ok()?;
        let read = parse_position(lines.next()?)?;
        let write = parse_position(lines.next()?)?;
        if lines.next().is_some() {
            return None;
        }
        Some(Metadata { depth, read, write })
    }
}

fn parse_position(line: &str) -> Option<Position> {
    let (file, pos) = line.split_once(',')?;
    Some(Position {
        file: parse_int64(file)?,
        pos: parse_int64(pos)?,
    })
}

/// A non-negative number that fits nsqd's int64 (Go's `Fscanf` refuses larger ones), so file
/// numbers and offsets leave room for the `+ 1`s of rolling and skipping.
fn parse_int64(text: &str) -> Option<u64> {
    text.trim()
        .parse::<u64>()
        .ok()
        .filter(|&n| n <= MAX_FILE_NUMBER)
}

/// The largest file number or offset a queue uses: nsqd's are int64.
pub(crate) const MAX_FILE_NUMBER: u64 = i64::MAX as u64;

/// Ranges of file numbers at most this long are probed file by file; longer ones (only a
/// damaged metadata file puts so many numbers between the reader and the writer) are answered
/// by listing the directory, so the cost is bounded by the files present.
const PROBE_MAX: u64 = 64;

/// File names of one queue inside its directory.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    dir: PathBuf,
    name: String,
}

impl Layout {
    pub(crate) fn new(dir: &Path, name: &str) -> Result<Self> {
        if name.is_empty() || name.contains(['/', '\0']) || name == "." || name == ".." {
            return Err(DiskQueueError::InvalidName(name.to_string()));
        }
        Ok(Layout {
            dir: dir.to_path_buf(),
            name: name.to_string(),
        })
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    pub(crate) fn data_file(&self, n: u64) -> PathBuf {
        self.dir
            .join(format!("{}.diskqueue.{:06}.dat", self.name, n))
    }

    pub(crate) fn bad_file(&self, n: u64) -> PathBuf {
        self.dir
            .join(format!("{}.diskqueue.{:06}.dat.bad", self.name, n))
    }

    pub(crate) fn meta_file(&self) -> PathBuf {
        self.dir.join(format!("{}.diskqueue.meta.dat", self.name))
    }

    /// Numbers of this queue's data files present in the directory, ascending. Only used on
    /// the rare rebuild path (metadata missing or unreadable), as it lists the whole directory.
    pub(crate) fn list_data_files(&self) -> Result<Vec<u64>> {
        let prefix = format!("{}.diskqueue.", self.name);
        let entries =
            fs::read_dir(&self.dir).map_err(|e| DiskQueueError::io("list", &self.dir, e))?;
        let mut found = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| DiskQueueError::io("list", &self.dir, e))?;
            let file_name = entry.file_name();
            let Some(file_name) = file_name.to_str() else {
                continue;
            };
            let Some(number) = file_name
                .strip_prefix(&prefix)
                .and_then(|rest| rest.strip_suffix(".dat"))
            else {
                continue;
            };
            // nsqd writes at least six digits; more appear past 999999.
            if number.len() >= 6 && number.bytes().all(|b| b.is_ascii_digit()) {
                if let Some(n) = number.parse::<u64>().ok().filter(|&n| n <= MAX_FILE_NUMBER) {
                    found.push(n);
                }
            }
        }
        found.sort_unstable();
        Ok(found)
    }

    /// Numbers of this queue's data files that exist in `range`, ascending. Probes a short
    /// range file by file and lists the directory for a long one (see `PROBE_MAX`).
    pub(crate) fn existing_data_files(&self, range: std::ops::Range<u64>) -> Result<Vec<u64>> {
        if range.end.saturating_sub(range.start) > PROBE_MAX {
            let mut files = self.list_data_files()?;
            files.retain(|n| range.contains(n));
            return Ok(files);
        }
        let mut found = Vec::new();
        for n in range {
            if file_len(&self.data_file(n))?.is_some() {
                found.push(n);
            }
        }
        Ok(found)
    }

    /// Reads the metadata file. `Ok(None)` when it does not exist; `Err(text)` when it exists but
    /// does not parse.
    pub(crate) fn read_metadata(&self) -> Result<Option<std::result::Result<Metadata, String>>> {
        let path = self.meta_file();
        match fs::read(&path) {
            Ok(bytes) => {
                let text = String::from_utf8_lossy(&bytes).into_owned();
                Ok(Some(Metadata::parse(&text).ok_or(text)))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(DiskQueueError::io("read metadata", path, e)),
        }
    }

    /// Replaces the metadata file atomically: write `<meta>.<random>.tmp`, fsync, rename.
    pub(crate) fn write_metadata(&self, meta: Metadata) -> Result<()> {
        let path = self.meta_file();
        let tmp = PathBuf::from(format!("{}.{}.tmp", path.display(), random_suffix()));
        let result = write_synced(&tmp, meta.to_text().as_bytes())
            .map_err(|e| DiskQueueError::io("write metadata", &tmp, e))
            .and_then(|()| {
                fs::rename(&tmp, &path).map_err(|e| DiskQueueError::io("rename metadata", &tmp, e))
            });
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result
    }
}

fn write_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = OpenOptions::new().write(true).create_new(true).open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// A random non-negative decimal number, like Go's `rand.Int()` in nsqd's tmp names.
fn random_suffix() -> u64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    hasher.finish() >> 1
}

/// Removes a file; a file that is already gone counts as removed.
pub(crate) fn remove_if_exists(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Size of a file, `None` when it does not exist.
pub(crate) fn file_len(path: &Path) -> Result<Option<u64>> {
    match fs::metadata(path) {
        Ok(m) => Ok(Some(m.len())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(DiskQueueError::io("stat", path, e)),
    }
}

/// Opens a data file for reading.
pub(crate) fn open_read(path: &Path) -> io::Result<File> {
    File::open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_text_is_nsqds() {
        let meta = Metadata {
            depth: 9,
            read: Position::new(0, 0),
            write: Position::new(1, 155),
        };
        assert_eq!(meta.to_text(), "9\n0,0\n1,155\n");
        assert_eq!(Metadata::parse("9\n0,0\n1,155\n"), Some(meta));
        assert_eq!(Metadata::parse("9\n0,0\n1,155"), Some(meta));
        assert_eq!(
            Metadata::parse("-3\n2,10\n4,0\n").map(|m| m.depth),
            Some(-3)
        );
    }

    #[test]
    fn metadata_garbage_is_rejected() {
        for text in [
            "",
            "9\n",
            "9\n0,0\n",
            "x\n0,0\n1,1\n",
            "9\n0;0\n1,1\n",
            "9\n-1,0\n1,1\n",
            "9\n0,0\n1,1\n5\n",
            // Beyond nsqd's int64.
            "9\n0,0\n9223372036854775808,0\n",
            "9\n0,18446744073709551615\n1,1\n",
        ] {
            assert_eq!(Metadata::parse(text), None, "{text:?}");
        }
    }

    #[test]
    fn file_names_are_nsqds() {
        let layout = Layout::new(Path::new("/d"), "t:c").unwrap();
        assert_eq!(
            layout.data_file(0),
            PathBuf::from("/d/t:c.diskqueue.000000.dat")
        );
        assert_eq!(
            layout.data_file(1234567),
            PathBuf::from("/d/t:c.diskqueue.1234567.dat")
        );
        assert_eq!(
            layout.meta_file(),
            PathBuf::from("/d/t:c.diskqueue.meta.dat")
        );
        assert!(Layout::new(Path::new("/d"), "a/b").is_err());
        assert!(Layout::new(Path::new("/d"), "").is_err());
    }
}
