//! Small files written whole (the vote, the purge point, a snapshot): written beside their
//! place, fsynced, renamed over it and the directory fsynced, so a crash leaves the old file or
//! the new one, never a mix. Each carries a CRC-32 of its contents, checked when read.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::Path;

use crate::error::StoreError;

/// The error of an IO operation on `path`.
pub(crate) fn io_error(path: &Path, source: io::Error) -> StoreError {
    StoreError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Replaces `path` with `payload` (and its checksum), durably.
pub(crate) fn write_atomic(path: &Path, payload: &[u8]) -> Result<(), StoreError> {
    let tmp = path.with_extension("tmp");
    let write = || -> io::Result<()> {
        let mut file = File::create(&tmp)?;
        file.write_all(&crc32fast::hash(payload).to_le_bytes())?;
        file.write_all(payload)?;
        file.sync_all()?;
        fs::rename(&tmp, path)?;
        sync_dir(path)
    };
    write().map_err(|e| {
        // A file cut short by a full disk holds space the next try needs.
        let _ = fs::remove_file(&tmp);
        io_error(path, e)
    })
}

/// The payload of a file written by [`write_atomic`], or None if there is no such file.
pub(crate) fn read_checked(path: &Path) -> Result<Option<Vec<u8>>, StoreError> {
    let mut bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error(path, e)),
    };
    let corrupt = |reason: &str| StoreError::Corrupt {
        path: path.display().to_string(),
        offset: 0,
        reason: reason.to_owned(),
    };
    if bytes.len() < 4 {
        return Err(corrupt("shorter than its checksum"));
    }
    let stored = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    let payload = bytes.split_off(4);
    if crc32fast::hash(&payload) != stored {
        return Err(corrupt("checksum mismatch"));
    }
    Ok(Some(payload))
}

/// fsyncs the directory holding `path`, so a rename or a new file in it is durable.
pub(crate) fn sync_dir(path: &Path) -> io::Result<()> {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => File::open(dir)?.sync_all(),
        _ => Ok(()),
    }
}

/// Decodes a postcard payload read from `path`.
pub(crate) fn decode<T: serde::de::DeserializeOwned>(
    path: &Path,
    payload: &[u8],
) -> Result<T, StoreError> {
    postcard::from_bytes(payload).map_err(|e| StoreError::Corrupt {
        path: path.display().to_string(),
        offset: 0,
        reason: e.to_string(),
    })
}

/// Encodes a value with postcard, for a file at `path`.
pub(crate) fn encode<T: serde::Serialize>(path: &Path, value: &T) -> Result<Vec<u8>, StoreError> {
    postcard::to_stdvec(value).map_err(|e| StoreError::Encode {
        path: path.display().to_string(),
        reason: e.to_string(),
    })
}
