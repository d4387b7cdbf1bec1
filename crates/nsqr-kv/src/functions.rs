//! Function libraries (Redis 7.0's `FUNCTION LOAD`): the code of each library by its name,
//! kept with the keyspace because Redis keeps them in its RDB. Snapshots hold them and the
//! strict-mode log records every change as the whole set (libraries are few and small, and a
//! whole state replays the same however often), so they survive a restart and a `kill -9`.
//!
//! The engine holds only the code. Compiling it, and what it registers, is the server's (its
//! Lua engine), which rebuilds what it derived whenever [`Keyspace::libraries_generation`]
//! moves.
//!
//! `FUNCTION DUMP` payloads are Redis's: per library the RDB opcode 245 and the code as an
//! RDB string, then the RDB version and the CRC-64, so a dump from here restores into Redis
//! 7.0. Redis compresses long code with LZF; those payloads restore here too (`decode_string`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::dump::{decode_string, encode_string, seal, unseal, DumpError};
use crate::keyspace::{Keyspace, Pending};
use crate::record::Record;

/// Every library's code, by library name.
pub type Libraries = BTreeMap<String, Arc<[u8]>>;

/// The RDB opcode of a function library (`RDB_OPCODE_FUNCTION2`).
const RDB_OPCODE_FUNCTION2: u8 = 245;

/// The libraries and the count of their changes.
#[derive(Debug, Default)]
pub(crate) struct FunctionStore {
    libraries: Mutex<Arc<Libraries>>,
    generation: AtomicU64,
}

impl FunctionStore {
    fn replace(&self, libraries: Libraries) {
        *self.libraries.lock() = Arc::new(libraries);
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// Replaces the libraries with those of a log record or snapshot.
    pub(crate) fn load_encoded(&self, b: &[u8]) -> Result<(), crate::record::RecordError> {
        let libs = decode(b).ok_or(crate::record::RecordError::Malformed(0))?;
        self.replace(libs);
        Ok(())
    }

    /// The libraries in the log's and snapshot's encoding; empty when there are none.
    pub(crate) fn encoded(&self) -> Vec<u8> {
        let libs = Arc::clone(&self.libraries.lock());
        if libs.is_empty() {
            return Vec::new();
        }
        encode(&libs)
    }
}

impl Keyspace {
    /// The libraries now loaded.
    pub fn libraries(&self) -> Arc<Libraries> {
        Arc::clone(&self.functions.libraries.lock())
    }

    /// Moves each time the libraries change.
    pub fn libraries_generation(&self) -> u64 {
        self.functions.generation.load(Ordering::Acquire)
    }

    /// Replaces every library (the caller runs alone: FUNCTION LOAD, DELETE, FLUSH, RESTORE).
    pub fn set_libraries(&self, libraries: Libraries, pending: &mut Pending) {
        let encoded = encode(&libraries);
        self.functions.replace(libraries);
        self.log_only(&Record::Functions(&encoded), pending);
    }
}

/// `[count u32][per library: name length u32, name, code length u32, code]`, little-endian.
fn encode(libs: &Libraries) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&(libs.len() as u32).to_le_bytes());
    for (name, code) in libs {
        for part in [name.as_bytes(), code] {
            out.extend_from_slice(&(part.len() as u32).to_le_bytes());
            out.extend_from_slice(part);
        }
    }
    out
}

fn decode(mut b: &[u8]) -> Option<Libraries> {
    fn take<'a>(b: &mut &'a [u8]) -> Option<&'a [u8]> {
        let n = u32::from_le_bytes(b.get(..4)?.try_into().ok()?) as usize;
        let part = b.get(4..4usize.checked_add(n)?)?;
        *b = &b[4 + n..];
        Some(part)
    }
    let count = u32::from_le_bytes(b.get(..4)?.try_into().ok()?);
    b = &b[4..];
    let mut libs = Libraries::new();
    for _ in 0..count {
        let name = String::from_utf8(take(&mut b)?.to_vec()).ok()?;
        let code: Arc<[u8]> = Arc::from(take(&mut b)?);
        libs.insert(name, code);
    }
    b.is_empty().then_some(libs)
}

/// `FUNCTION DUMP`'s payload of these libraries' code.
pub fn dump_libraries<'a>(codes: impl Iterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    for code in codes {
        out.push(RDB_OPCODE_FUNCTION2);
        encode_string(code, &mut out);
    }
    seal(out)
}

/// Why a `FUNCTION RESTORE` payload is refused (the texts are Redis's).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RestoreLibrariesError {
    #[error("{0}")]
    Payload(#[from] DumpError),
    #[error("ERR given type is not a function")]
    NotAFunction,
}

/// The libraries' code in a `FUNCTION DUMP` payload, in order.
pub fn restore_libraries(payload: &[u8]) -> Result<Vec<Vec<u8>>, RestoreLibrariesError> {
    let mut body = unseal(payload)?;
    let mut codes = Vec::new();
    while let Some((&opcode, rest)) = body.split_first() {
        if opcode != RDB_OPCODE_FUNCTION2 {
            return Err(RestoreLibrariesError::NotAFunction);
        }
        let (code, used) = decode_string(rest).ok_or(DumpError::BadData)?;
        codes.push(code);
        body = &rest[used..];
    }
    Ok(codes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn libs(pairs: &[(&str, &str)]) -> Libraries {
        pairs
            .iter()
            .map(|(n, c)| (n.to_string(), Arc::from(c.as_bytes())))
            .collect()
    }

    #[test]
    fn encoding_round_trips_and_refuses_damage() {
        let l = libs(&[("a", "#!lua name=a\ncode"), ("b", "")]);
        let e = encode(&l);
        assert_eq!(decode(&e), Some(l));
        assert_eq!(decode(&encode(&Libraries::new())), Some(Libraries::new()));
        for cut in 0..e.len() {
            assert_eq!(decode(&e[..cut]), None, "{cut}");
        }
        let mut longer = e.clone();
        longer.push(0);
        assert_eq!(decode(&longer), None);
    }

    #[test]
    fn dumps_are_redis_7_bytes() {
        // FUNCTION DUMP of redis-server 7.0.15 with no library loaded.
        assert_eq!(
            dump_libraries(std::iter::empty()),
            b"\n\x00]\x9b\\@\x0f\x7f\xa2\xda".to_vec()
        );
        let code = "#!lua name=x19\nredis.register_function('h2', function() return 1 end)";
        let payload = dump_libraries([code.as_bytes()].into_iter());
        assert_eq!(payload[0], 0xf5);
        assert_eq!(
            restore_libraries(&payload),
            Ok(vec![code.as_bytes().to_vec()])
        );
    }

    #[test]
    fn restore_refuses_what_is_not_a_library() {
        let mut p = dump_libraries([&b"code"[..]].into_iter());
        assert_eq!(
            restore_libraries(b"garbage"),
            Err(RestoreLibrariesError::Payload(DumpError::Checksum))
        );
        p[0] = 0;
        assert!(restore_libraries(&p).is_err());
        let string = crate::dump::dump_string(b"v");
        assert_eq!(
            restore_libraries(&string),
            Err(RestoreLibrariesError::NotAFunction)
        );
        let cut = seal(vec![RDB_OPCODE_FUNCTION2, 10, b'a']);
        assert_eq!(
            restore_libraries(&cut),
            Err(RestoreLibrariesError::Payload(DumpError::BadData))
        );
    }
}
