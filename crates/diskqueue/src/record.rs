//! The on-disk record, `[i32 big-endian length][payload]`, and the two ways of walking it: reading
//! one record for a consumer, and scanning a file's records without keeping them (recovery).
//! Both apply the same validity rule as nsqd's reader: a length outside `[min, max]`, or a record
//! running past the end of the data, means the rest of the file cannot be trusted.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;

use crate::options::{DiskQueueOptions, LENGTH_PREFIX_LEN};
use crate::write::Payload;

/// Appends one record (length prefix + payload) to `buf`.
pub(crate) fn encode_into(buf: &mut Vec<u8>, payload: &[u8]) {
    // Callers validated `payload.len() <= max_msg_size <= i32::MAX`.
    let len = payload.len() as u32;
    buf.extend_from_slice(&len.to_be_bytes());
    buf.extend_from_slice(payload);
}

/// Appends one record written by a [`Payload`] (length prefix + payload) to `buf`.
pub(crate) fn encode_payload<P: Payload + ?Sized>(buf: &mut Vec<u8>, payload: &P) {
    // Callers validated `payload_len() <= max_msg_size <= i32::MAX`.
    let len = payload.payload_len() as u32;
    buf.extend_from_slice(&len.to_be_bytes());
    let at = buf.len();
    payload.write_payload(buf);
    let written = buf.len() - at;
    if written != len as usize {
        // A wrong `payload_len` must not make the file unreadable: the prefix tells the truth.
        buf[at - 4..at].copy_from_slice(&(written as u32).to_be_bytes());
    }
}

/// Bytes a payload of `len` bytes takes on disk.
pub(crate) fn record_len(payload_len: usize) -> u64 {
    LENGTH_PREFIX_LEN + payload_len as u64
}

/// Why a record could not be read.
#[derive(Debug)]
pub(crate) enum ReadFailure {
    /// The bytes on disk are not a valid record: the file is corrupt or torn. Carries a
    /// human-readable reason for the log.
    Corrupt(String),
    /// The filesystem failed; the bytes may be fine (e.g. fd exhaustion, EIO). Retryable.
    Io(io::Error),
}

/// Reads the record at the reader's position. `available` is how many bytes of valid data
/// there are from that position on (up to the writer's position, or the end of a finished
/// file); a record claiming more is a torn or corrupt tail.
pub(crate) fn read_record<R: Read>(
    reader: &mut R,
    available: u64,
    opts: &DiskQueueOptions,
) -> Result<Vec<u8>, ReadFailure> {
    if available < LENGTH_PREFIX_LEN {
        return Err(too_short(available));
    }
    let mut prefix = [0u8; 4];
    read_exact(reader, &mut prefix)?;
    let len = check_len(prefix, available, opts)?;
    let mut payload = vec![0u8; len as usize];
    read_exact(reader, &mut payload)?;
    Ok(payload)
}

/// The rest of the valid data (`available` bytes) cannot even hold a length prefix.
pub(crate) fn too_short(available: u64) -> ReadFailure {
    ReadFailure::Corrupt(format!(
        "{available} trailing bytes, too short for a length prefix (torn write)"
    ))
}

/// nsqd's validity rule for the record whose length prefix is `prefix`, with `available` bytes
/// of valid data from the prefix on: its payload length, or why the file cannot be trusted.
pub(crate) fn check_len(
    prefix: [u8; 4],
    available: u64,
    opts: &DiskQueueOptions,
) -> Result<u64, ReadFailure> {
    let len = i32::from_be_bytes(prefix);
    let valid = u64::try_from(len).is_ok_and(|l| opts.valid_len(l));
    if !valid {
        return Err(ReadFailure::Corrupt(format!(
            "invalid message read size ({len})"
        )));
    }
    let len = u64::from(len.unsigned_abs());
    if LENGTH_PREFIX_LEN + len > available {
        return Err(ReadFailure::Corrupt(format!(
            "record of {len} bytes but only {} left (torn write)",
            available - LENGTH_PREFIX_LEN
        )));
    }
    Ok(len)
}

fn read_exact<R: Read>(reader: &mut R, buf: &mut [u8]) -> Result<(), ReadFailure> {
    reader.read_exact(buf).map_err(read_failure)
}

/// A failed read: the file ending inside a record is damage, anything else an I/O error.
pub(crate) fn read_failure(e: io::Error) -> ReadFailure {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        ReadFailure::Corrupt("short read: file ends inside a record".to_string())
    } else {
        ReadFailure::Io(e)
    }
}

/// What a scan of a data file found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Scan {
    /// Valid records between the start offset and `valid_end`.
    pub records: u64,
    /// Offset just past the last valid record.
    pub valid_end: u64,
    /// Size of the file.
    pub file_len: u64,
}

impl Scan {
    /// Whether the file ends exactly after a valid record (no torn or corrupt tail).
    pub(crate) fn is_clean(&self) -> bool {
        self.valid_end == self.file_len
    }
}

/// Counts the valid records of a file from `start` on, stopping at the first invalid length or
/// at a record that runs past the end of the file. Payloads are skipped, not read.
pub(crate) fn scan_file(path: &Path, start: u64, opts: &DiskQueueOptions) -> io::Result<Scan> {
    let file = File::open(path)?;
    let file_len = file.metadata()?.len();
    let mut scan = Scan {
        records: 0,
        valid_end: start.min(file_len),
        file_len,
    };
    if start >= file_len {
        return Ok(scan);
    }
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    io::Seek::seek(&mut reader, io::SeekFrom::Start(start))?;
    loop {
        let pos = scan.valid_end;
        if file_len - pos < LENGTH_PREFIX_LEN {
            return Ok(scan);
        }
        let mut prefix = [0u8; 4];
        reader.read_exact(&mut prefix)?;
        let Ok(len) = u64::try_from(i32::from_be_bytes(prefix)) else {
            return Ok(scan);
        };
        if !opts.valid_len(len) || pos + LENGTH_PREFIX_LEN + len > file_len {
            return Ok(scan);
        }
        // `len <= i32::MAX`, so the cast is lossless.
        reader.seek_relative(len as i64)?;
        scan.records += 1;
        scan.valid_end = pos + LENGTH_PREFIX_LEN + len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> DiskQueueOptions {
        DiskQueueOptions {
            min_msg_size: 2,
            max_msg_size: 10,
            ..DiskQueueOptions::default()
        }
    }

    #[test]
    fn encode_then_read() {
        let mut buf = Vec::new();
        encode_into(&mut buf, b"hello");
        assert_eq!(buf, b"\0\0\0\x05hello");
        let mut r = &buf[..];
        let got = read_record(&mut r, buf.len() as u64, &opts()).unwrap();
        assert_eq!(got, b"hello");
    }

    #[test]
    fn invalid_lengths_are_corrupt() {
        for prefix in [[0u8, 0, 0, 1], [0, 0, 0, 11], [0xff, 0xff, 0xff, 0xff]] {
            let mut buf = prefix.to_vec();
            buf.extend_from_slice(&[0; 16]);
            let mut r = &buf[..];
            let err = read_record(&mut r, buf.len() as u64, &opts()).unwrap_err();
            assert!(matches!(err, ReadFailure::Corrupt(_)), "{prefix:?}");
        }
    }

    #[test]
    fn record_past_available_is_torn() {
        let mut buf = Vec::new();
        encode_into(&mut buf, b"hello");
        let mut r = &buf[..];
        let err = read_record(&mut r, 8, &opts()).unwrap_err();
        assert!(matches!(err, ReadFailure::Corrupt(m) if m.contains("torn")));
        let mut r = &buf[..];
        let err = read_record(&mut r, 3, &opts()).unwrap_err();
        assert!(matches!(err, ReadFailure::Corrupt(m) if m.contains("torn")));
    }

    #[test]
    fn short_file_is_corrupt() {
        let mut buf = Vec::new();
        encode_into(&mut buf, b"hello");
        buf.truncate(6);
        let mut r = &buf[..];
        // The caller believed more bytes were there than the file holds.
        let err = read_record(&mut r, 9, &opts()).unwrap_err();
        assert!(matches!(err, ReadFailure::Corrupt(m) if m.contains("short read")));
    }
}
