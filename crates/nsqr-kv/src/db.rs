//! Redis's numbered databases (`SELECT`, `MOVE`, `SWAPDB`, ...), as one mechanical change: the
//! database travels inside the key. A key of database `n > 0` is stored under the internal
//! name `0xFF n key`; a key of database 0 is stored as it is, unless its first byte is that
//! marker (then as `0xFF 0x00 key`). So database 0 keeps today's bytes and speed, and every
//! command family, the log, snapshots, expiry, eviction, WATCH and blocked clients see
//! databases with no code of their own: the RESP server rewrites the key arguments of a
//! request (found by the command's key specs) before it runs. What shows keys or databases to
//! a client (KEYS, SCAN, RANDOMKEY, notifications, the change feed) reads them back through
//! [`split`].

use std::borrow::Cow;

/// The first byte of an internal name that carries a database.
pub const MARKER: u8 = 0xFF;

/// Redis's `databases` default.
pub const DEFAULT_DATABASES: usize = 16;

/// Whether `key` of database `db` is stored under another name.
#[inline]
pub fn is_renamed(db: u8, key: &[u8]) -> bool {
    db != 0 || key.first() == Some(&MARKER)
}

/// The internal name of `key` in database `db`.
#[inline]
pub fn internal(db: u8, key: &[u8]) -> Cow<'_, [u8]> {
    if !is_renamed(db, key) {
        return Cow::Borrowed(key);
    }
    let mut v = Vec::with_capacity(key.len() + 2);
    v.push(MARKER);
    v.push(db);
    v.extend_from_slice(key);
    Cow::Owned(v)
}

/// The database and the client's key of an internal name.
#[inline]
pub fn split(name: &[u8]) -> (u8, &[u8]) {
    match name {
        [MARKER, db, key @ ..] => (*db, key),
        _ => (0, name),
    }
}

/// The client's key of an internal name.
#[inline]
pub fn user_key(name: &[u8]) -> &[u8] {
    split(name).1
}

/// The internal name of the key named `name` once moved to database `db`.
pub fn moved(name: &[u8], db: u8) -> Vec<u8> {
    internal(db, user_key(name)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_db0_stays_as_is() {
        assert!(matches!(internal(0, b"k"), Cow::Borrowed(b"k")));
        for db in [0u8, 1, 15, 255] {
            for key in [&b"k"[..], b"", b"\xff", b"\xff\x01x", b"\x00"] {
                let name = internal(db, key);
                assert_eq!(split(&name), (db, key), "db {db} key {key:?}");
            }
        }
        assert_eq!(split(b"\xff"), (0, &b"\xff"[..]));
        assert_eq!(moved(&internal(3, b"a"), 0), b"a");
        assert_eq!(moved(b"a", 2), b"\xff\x02a");
    }
}
