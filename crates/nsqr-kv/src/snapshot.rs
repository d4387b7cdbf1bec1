//! Snapshots: the whole keyspace in one file, `kv.snapshot`, written at graceful shutdown (and
//! at each compaction of the strict-mode log), loaded at start. Deadlines are stored as the
//! absolute times they are, so a key with 10 s left at shutdown and a restart 4 s later has
//! 6 s left; a key whose deadline passed while the server was down is loaded and expired at
//! once, announcing `expired` as it would have.
//!
//! Layout (integers little-endian):
//!
//! ```text
//! "NSQRKVS1"  generation: u64           the first log generation NOT contained in the snapshot
//! per key:    tag: u8 deadline: u64 (0 = none) key length: u32 value length: u32 key value
//!             (tag 1: a string, the value as it is; tag 2: any other type, the value's RDB
//!             encoding, as DUMP writes it: see `dump.rs`)
//! libraries:  3u8 length: u32 every function library (`functions.rs`; only if there are any)
//! end:        0u8 key count: u64 crc32: u32   (crc32 of every byte before it)
//! ```
//!
//! The file is written beside its final name, fsynced and renamed over it, so a crash leaves
//! either the old snapshot or the new one.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"NSQRKVS1";
const KEY: u8 = 1;
const OBJECT: u8 = 2;
const FUNCTIONS: u8 = 3;
const END: u8 = 0;

/// One key's value as a snapshot holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored<'a> {
    String(&'a [u8]),
    /// The RDB encoding of a value of another type.
    Object(&'a [u8]),
    /// Not a key: every function library, encoded (`functions.rs`).
    Functions(&'a [u8]),
}

pub fn snapshot_path(dir: &Path) -> PathBuf {
    dir.join("kv.snapshot")
}

/// Why a snapshot could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a keyspace snapshot or is damaged: {what}")]
    Corrupt { path: PathBuf, what: String },
}

/// Writes a snapshot: `fill` is called with a sink taking (key, value, deadline).
pub struct SnapshotWriter {
    path: PathBuf,
    tmp: PathBuf,
    out: BufWriter<File>,
    crc: crc32fast::Hasher,
    count: u64,
}

impl SnapshotWriter {
    pub fn create(dir: &Path, generation: u64) -> Result<SnapshotWriter, SnapshotError> {
        let path = snapshot_path(dir);
        let tmp = dir.join("kv.snapshot.tmp");
        let io = |source| SnapshotError::Io {
            path: tmp.clone(),
            source,
        };
        let file = File::create(&tmp).map_err(io)?;
        let mut w = SnapshotWriter {
            path,
            tmp: tmp.clone(),
            out: BufWriter::with_capacity(1 << 20, file),
            crc: crc32fast::Hasher::new(),
            count: 0,
        };
        w.put(MAGIC)?;
        w.put(&generation.to_le_bytes())?;
        Ok(w)
    }

    fn put(&mut self, b: &[u8]) -> Result<(), SnapshotError> {
        self.crc.update(b);
        self.out.write_all(b).map_err(|source| SnapshotError::Io {
            path: self.tmp.clone(),
            source,
        })
    }

    pub fn key(
        &mut self,
        key: &[u8],
        value: Stored<'_>,
        deadline: Option<u64>,
    ) -> Result<(), SnapshotError> {
        let (tag, value) = match value {
            Stored::String(v) => (KEY, v),
            Stored::Object(v) => (OBJECT, v),
            Stored::Functions(v) => {
                self.put(&[FUNCTIONS])?;
                self.put(&(v.len() as u32).to_le_bytes())?;
                return self.put(v);
            }
        };
        self.put(&[tag])?;
        self.put(&deadline.unwrap_or(0).to_le_bytes())?;
        self.put(&(key.len() as u32).to_le_bytes())?;
        self.put(&(value.len() as u32).to_le_bytes())?;
        self.put(key)?;
        self.put(value)?;
        self.count += 1;
        Ok(())
    }

    /// Ends, fsyncs and renames the file into place; returns its size and key count.
    pub fn finish(mut self) -> Result<(u64, u64), SnapshotError> {
        self.put(&[END])?;
        let count = self.count;
        self.put(&count.to_le_bytes())?;
        let crc = self.crc.clone().finalize();
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| SnapshotError::Io { path, source }
        };
        self.out
            .write_all(&crc.to_le_bytes())
            .map_err(io(&self.tmp))?;
        let file = self.out.into_inner().map_err(|e| SnapshotError::Io {
            path: self.tmp.clone(),
            source: e.into_error(),
        })?;
        file.sync_all().map_err(io(&self.tmp))?;
        let size = file.metadata().map_err(io(&self.tmp))?.len();
        std::fs::rename(&self.tmp, &self.path).map_err(io(&self.path))?;
        if let Some(dir) = self.path.parent() {
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(io(dir))?;
        }
        Ok((size, count))
    }
}

/// Reads a snapshot, giving each key to `apply` (false: a value it cannot read); returns the
/// generation it records, or `None` if there is no snapshot.
pub fn load(
    dir: &Path,
    mut apply: impl FnMut(&[u8], Stored<'_>, Option<u64>) -> bool,
) -> Result<Option<u64>, SnapshotError> {
    let path = snapshot_path(dir);
    let file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(SnapshotError::Io { path, source }),
    };
    let mut r = Reader {
        inner: BufReader::with_capacity(1 << 20, file),
        crc: crc32fast::Hasher::new(),
        path: path.clone(),
    };
    if &r.bytes::<8>()? != MAGIC {
        return Err(r.corrupt("bad magic"));
    }
    let generation = u64::from_le_bytes(r.bytes::<8>()?);
    let (mut key, mut value) = (Vec::new(), Vec::new());
    let mut count = 0u64;
    loop {
        match r.bytes::<1>()?[0] {
            tag @ (KEY | OBJECT) => {
                let deadline = u64::from_le_bytes(r.bytes::<8>()?);
                let klen = u32::from_le_bytes(r.bytes::<4>()?) as usize;
                let vlen = u32::from_le_bytes(r.bytes::<4>()?) as usize;
                r.vec(&mut key, klen)?;
                r.vec(&mut value, vlen)?;
                let stored = if tag == KEY {
                    Stored::String(&value)
                } else {
                    Stored::Object(&value)
                };
                if !apply(&key, stored, (deadline != 0).then_some(deadline)) {
                    return Err(r.corrupt("bad value"));
                }
                count += 1;
            }
            FUNCTIONS => {
                let len = u32::from_le_bytes(r.bytes::<4>()?) as usize;
                r.vec(&mut value, len)?;
                if !apply(b"", Stored::Functions(&value), None) {
                    return Err(r.corrupt("bad function libraries"));
                }
            }
            END => break,
            _ => return Err(r.corrupt("bad record tag")),
        }
    }
    let stored_count = u64::from_le_bytes(r.bytes::<8>()?);
    let expected = r.crc.clone().finalize();
    let mut crc = [0u8; 4];
    r.inner
        .read_exact(&mut crc)
        .map_err(|_| r.corrupt("cut short"))?;
    if u32::from_le_bytes(crc) != expected || stored_count != count {
        return Err(r.corrupt("checksum mismatch"));
    }
    Ok(Some(generation))
}

struct Reader {
    inner: BufReader<File>,
    crc: crc32fast::Hasher,
    path: PathBuf,
}

impl Reader {
    fn corrupt(&self, what: &str) -> SnapshotError {
        SnapshotError::Corrupt {
            path: self.path.clone(),
            what: what.to_string(),
        }
    }

    fn bytes<const N: usize>(&mut self) -> Result<[u8; N], SnapshotError> {
        let mut b = [0u8; N];
        self.inner
            .read_exact(&mut b)
            .map_err(|_| self.corrupt("cut short"))?;
        self.crc.update(&b);
        Ok(b)
    }

    /// Reads `len` bytes into `v`, growing it only as data arrives (a damaged length cannot
    /// make it allocate gigabytes up front).
    fn vec(&mut self, v: &mut Vec<u8>, len: usize) -> Result<(), SnapshotError> {
        v.clear();
        let got = (&mut self.inner)
            .take(len as u64)
            .read_to_end(v)
            .map_err(|_| self.corrupt("cut short"))?;
        if got != len {
            return Err(self.corrupt("cut short"));
        }
        self.crc.update(v);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("nsqr-kv-snap-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    type Loaded = Vec<(Vec<u8>, Vec<u8>, Option<u64>)>;

    fn read(d: &Path) -> Result<Option<(u64, Loaded)>, SnapshotError> {
        let mut keys = Vec::new();
        let g = load(d, |k, v, dl| {
            let v = match v {
                Stored::String(v) => v.to_vec(),
                Stored::Object(v) => [b"object:", v].concat(),
                Stored::Functions(v) => [b"functions:", v].concat(),
            };
            keys.push((k.to_vec(), v, dl));
            true
        })?;
        Ok(g.map(|g| (g, keys)))
    }

    #[test]
    fn round_trip_and_missing() {
        let d = dir("rt");
        assert!(read(&d).unwrap().is_none());
        let mut w = SnapshotWriter::create(&d, 7).unwrap();
        w.key(b"a", Stored::String(b"1"), None).unwrap();
        w.key(b"", Stored::String(b"\0\xff"), Some(123)).unwrap();
        w.key(b"h", Stored::Object(b"\x04"), None).unwrap();
        let (_, n) = w.finish().unwrap();
        assert_eq!(n, 3);
        let (g, keys) = read(&d).unwrap().unwrap();
        assert_eq!(g, 7);
        assert_eq!(
            keys,
            vec![
                (b"a".to_vec(), b"1".to_vec(), None),
                (Vec::new(), b"\0\xff".to_vec(), Some(123)),
                (b"h".to_vec(), b"object:\x04".to_vec(), None)
            ]
        );
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn damage_is_detected() {
        let d = dir("damage");
        let mut w = SnapshotWriter::create(&d, 1).unwrap();
        w.key(b"key", Stored::String(b"value"), None).unwrap();
        w.finish().unwrap();
        let p = snapshot_path(&d);
        let good = std::fs::read(&p).unwrap();
        for (i, cut) in [(20usize, false), (good.len() - 1, false), (25, true)] {
            let mut bad = good.clone();
            if cut {
                bad[i] ^= 0x40;
            } else {
                bad.truncate(i);
            }
            std::fs::write(&p, &bad).unwrap();
            assert!(
                matches!(read(&d), Err(SnapshotError::Corrupt { .. })),
                "{i} {cut}"
            );
        }
        std::fs::remove_dir_all(d).unwrap();
    }
}
