//! The files nsqrd keeps beside a disk queue for what nsqd's record format has no room for
//! (`deferred_store.rs`: due times, `attrs_store.rs`: message attributes): a header line that
//! names the format, then one entry per line keyed by message id. Both share the reading
//! (a missing file is empty, an unreadable or foreign one is logged and ignored, a bad line is
//! logged and skipped) and the atomic replacement here; each keeps only its line format.

use std::io::Write;
use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;

/// One kind of side file.
pub(crate) struct SideFile {
    /// The first line, format and version (`nsqr-deferred 1`).
    pub header: &'static str,
    /// The file name after `<queue>.` (`nsqr.deferred.dat`).
    pub suffix: &'static str,
    /// The log tag (`DEFERRED`).
    pub tag: &'static str,
    /// What an unreadable file costs, for the log line.
    pub loss: &'static str,
}

impl SideFile {
    pub(crate) fn path(&self, dir: &Path, queue: &str) -> PathBuf {
        dir.join(format!("{queue}.{}", self.suffix))
    }

    /// The entries `parse` reads from the lines (empty when there is no file).
    pub(crate) fn load<T>(
        &self,
        dir: &Path,
        queue: &str,
        parse: impl Fn(&str) -> Option<(u64, T)>,
    ) -> FxHashMap<u64, T> {
        let (tag, header) = (self.tag, self.header);
        let p = self.path(dir, queue);
        let mut out = FxHashMap::default();
        let text = match std::fs::read_to_string(&p) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return out,
            Err(e) => {
                tracing::error!(
                    "{tag}({queue}): cannot read {} - {e}; {}",
                    p.display(),
                    self.loss
                );
                return out;
            }
        };
        let mut lines = text.lines();
        if lines.next() != Some(header) {
            tracing::error!(
                "{tag}({queue}): {} has no '{header}' header; ignored",
                p.display()
            );
            return out;
        }
        for line in lines.filter(|l| !l.is_empty()) {
            match parse(line) {
                Some((id, v)) => {
                    out.insert(id, v);
                }
                None => tracing::error!("{tag}({queue}): bad line {line:?} skipped"),
            }
        }
        out
    }

    /// Replace the file with one line per entry, written by `line` (or remove it when there
    /// are none).
    pub(crate) fn save<T>(
        &self,
        dir: &Path,
        queue: &str,
        entries: impl IntoIterator<Item = (u64, T)>,
        line: impl Fn(u64, T, &mut String) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let mut text = String::from(self.header);
        text.push('\n');
        let mut n = 0usize;
        for (id, v) in entries {
            line(id, v, &mut text)?;
            text.push('\n');
            n += 1;
        }
        if n == 0 {
            return self.remove(dir, queue);
        }
        write_atomically(dir, &self.path(dir, queue), text.as_bytes())
    }

    pub(crate) fn remove(&self, dir: &Path, queue: &str) -> std::io::Result<()> {
        match std::fs::remove_file(self.path(dir, queue)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
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
