//! Key commands: DEL, UNLINK, EXISTS, EXPIRE / PEXPIRE / EXPIREAT / PEXPIREAT (NX / XX / GT /
//! LT), TTL, PTTL, EXPIRETIME, PEXPIRETIME, PERSIST, TYPE, SCAN (MATCH / COUNT / TYPE), KEYS,
//! RENAME, RENAMENX, COPY, RANDOMKEY, TOUCH.

use nsqr_kv::KeyType;
use nsqr_kv::{ExpireCondition, Ttl};
use resp_wire::{Args, Reply};

use super::args::{expire_deadline, is, Unit, NOT_INTEGER, SYNTAX};
use super::session::Ctx;

fn keys_of<'a>(a: &Args<'a>) -> Vec<&'a [u8]> {
    a.iter().skip(1).collect()
}

pub fn del(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let n = ctx.shared.ks.del(&keys_of(a), &mut ctx.s.pending);
    ctx.out.integer(n as i64);
}

pub fn exists(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    ctx.out.integer(ctx.shared.ks.exists(&keys_of(a)) as i64);
}

/// EXPIRE's options, read before its time as Redis reads them.
fn expire_condition(ctx: &mut Ctx<'_>, a: &Args<'_>) -> Option<ExpireCondition> {
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for opt in a.iter().skip(3) {
        if is(opt, "nx") {
            nx = true;
        } else if is(opt, "xx") {
            xx = true;
        } else if is(opt, "gt") {
            gt = true;
        } else if is(opt, "lt") {
            lt = true;
        } else {
            let o = String::from_utf8_lossy(opt).into_owned();
            ctx.out.error(&format!("ERR Unsupported option {o}"));
            return None;
        }
    }
    if nx && (xx || gt || lt) {
        ctx.out
            .error("ERR NX and XX, GT or LT options at the same time are not compatible");
        return None;
    }
    if gt && lt {
        ctx.out
            .error("ERR GT and LT options at the same time are not compatible");
        return None;
    }
    Some(ExpireCondition { nx, xx, gt, lt })
}

fn expire_generic(ctx: &mut Ctx<'_>, a: &Args<'_>, unit: Unit, absolute: bool, name: &str) {
    let Some(cond) = expire_condition(ctx, a) else {
        return;
    };
    let Some(at) = expire_deadline(ctx, a.get(2), unit, absolute, name) else {
        return;
    };
    let done = ctx.shared.ks.expire(a.get(1), at, cond, &mut ctx.s.pending);
    ctx.out.integer(i64::from(done));
}

pub fn expire(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    expire_generic(ctx, a, Unit::Seconds, false, "expire");
}

pub fn pexpire(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    expire_generic(ctx, a, Unit::Millis, false, "pexpire");
}

pub fn expireat(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    expire_generic(ctx, a, Unit::Seconds, true, "expireat");
}

pub fn pexpireat(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    expire_generic(ctx, a, Unit::Millis, true, "pexpireat");
}

/// Milliseconds rounded to seconds as Redis rounds TTL.
fn seconds(ms: u64) -> i64 {
    ((ms + 500) / 1000) as i64
}

pub fn ttl(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let v = match ctx.shared.ks.ttl(a.get(1)) {
        Ttl::Missing => -2,
        Ttl::Persistent => -1,
        Ttl::Remaining(ms) => seconds(ms),
    };
    ctx.out.integer(v);
}

pub fn pttl(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let v = match ctx.shared.ks.ttl(a.get(1)) {
        Ttl::Missing => -2,
        Ttl::Persistent => -1,
        Ttl::Remaining(ms) => ms as i64,
    };
    ctx.out.integer(v);
}

fn expire_time(ctx: &mut Ctx<'_>, a: &Args<'_>, ms: bool) {
    let v = match ctx.shared.ks.deadline(a.get(1)) {
        None => -2,
        Some(None) => -1,
        Some(Some(d)) if ms => d as i64,
        Some(Some(d)) => seconds(d),
    };
    ctx.out.integer(v);
}

pub fn expiretime(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    expire_time(ctx, a, false);
}

pub fn pexpiretime(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    expire_time(ctx, a, true);
}

pub fn persist(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let done = ctx.shared.ks.persist(a.get(1), &mut ctx.s.pending);
    ctx.out.integer(i64::from(done));
}

pub fn key_type(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let name = ctx
        .shared
        .ks
        .key_type(a.get(1))
        .map_or("none", KeyType::name);
    ctx.out.simple(name.as_bytes());
}

/// What a scan walks: the keys (SCAN, which takes TYPE) or a value's members (HSCAN, SSCAN).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanOf {
    Keys,
    Members,
}

/// SCAN's options.
pub struct ScanOptions<'a> {
    pub pattern: Option<&'a [u8]>,
    pub count: usize,
    /// TYPE: `Some(None)` for a type no key can have.
    of_type: Option<Option<KeyType>>,
}

/// HSCAN / SSCAN / ZSCAN's cursor (argument 2) and options (3 on), or `None` once a bad cursor
/// is answered. As in Redis, the options are judged only once the key is found to hold a
/// collection of the command's type: see `member_scan_options`.
pub fn member_scan_args<'a>(
    ctx: &mut Ctx<'_>,
    a: &Args<'a>,
) -> Option<(u64, Result<ScanOptions<'a>, &'static str>)> {
    let Some(cursor) = parse_cursor(a.get(2)) else {
        ctx.out.error("ERR invalid cursor");
        return None;
    };
    Some((cursor, parse_scan_options(a, 3, ScanOf::Members)))
}

/// The collection a member scan walks and its options, or `None` once answered: a missing key
/// answers an empty scan whatever the options are (as Redis), bad options their error.
pub fn member_scan_options<'v, 'a, T>(
    out: &mut Reply,
    value: Option<&'v T>,
    options: Result<ScanOptions<'a>, &'static str>,
) -> Option<(&'v T, ScanOptions<'a>)> {
    let Some(value) = value else {
        out.array(2);
        out.bulk(b"0");
        out.array(0);
        return None;
    };
    match options {
        Ok(o) => Some((value, o)),
        Err(e) => {
            out.error(e);
            None
        }
    }
}

/// The positions one step of a member scan visits, and the next cursor. A collection Redis
/// keeps small (`compact`: a listpack or an intset) is returned whole with cursor 0, as Redis
/// does.
pub fn member_scan_step(
    len: usize,
    compact: bool,
    cursor: u64,
    count: usize,
) -> (std::ops::Range<usize>, u64) {
    if compact {
        (0..len, 0)
    } else {
        nsqr_kv::scan_step(len, cursor, count)
    }
}

/// The options from argument `from` on, answering their error.
pub fn scan_options<'a>(
    ctx: &mut Ctx<'_>,
    a: &Args<'a>,
    from: usize,
    of: ScanOf,
) -> Option<ScanOptions<'a>> {
    parse_scan_options(a, from, of)
        .map_err(|e| ctx.out.error(e))
        .ok()
}

/// The options from argument `from` on, or the error to answer.
fn parse_scan_options<'a>(
    a: &Args<'a>,
    from: usize,
    of: ScanOf,
) -> Result<ScanOptions<'a>, &'static str> {
    let mut o = ScanOptions {
        pattern: None,
        count: 10,
        of_type: None,
    };
    let mut i = from;
    while i < a.len() {
        if i + 1 >= a.len() {
            return Err(SYNTAX);
        }
        let (opt, v) = (a.get(i), a.get(i + 1));
        if is(opt, "match") {
            o.pattern = Some(v).filter(|p| *p != b"*");
        } else if is(opt, "count") {
            let n = resp_wire::parse_i64(v).ok_or(NOT_INTEGER)?;
            if n < 1 {
                return Err(SYNTAX);
            }
            o.count = usize::try_from(n).unwrap_or(usize::MAX);
        } else if is(opt, "type") && of == ScanOf::Keys {
            o.of_type = Some(KeyType::from_name(v));
        } else {
            return Err(SYNTAX);
        }
        i += 2;
    }
    Ok(o)
}

/// A SCAN cursor as Redis reads it (`strtoul`): an unsigned number, a sign allowed (`-1` is
/// the largest cursor).
pub fn parse_cursor(arg: &[u8]) -> Option<u64> {
    match arg.split_first() {
        Some((b'-', rest)) => resp_wire::parse_u64(rest).map(u64::wrapping_neg),
        Some((b'+', rest)) => resp_wire::parse_u64(rest),
        _ => resp_wire::parse_u64(arg),
    }
}

pub fn scan(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let Some(cursor) = parse_cursor(a.get(1)) else {
        return ctx.out.error("ERR invalid cursor");
    };
    let Some(o) = scan_options(ctx, a, 2, ScanOf::Keys) else {
        return;
    };
    let mut found = Vec::new();
    let of_type = o.of_type.flatten();
    let next = ctx
        .shared
        .ks
        .scan(ctx.s.db, cursor, o.count, o.pattern, of_type, &mut found);
    if o.of_type == Some(None) {
        found.clear();
    }
    ctx.out.array(2);
    ctx.out.bulk(next.to_string().as_bytes());
    ctx.out.array(found.len());
    for k in &found {
        ctx.out.bulk(k);
    }
}

pub fn keys(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    // As in Redis, KEYS walks the whole keyspace while its client waits.
    let found = ctx.shared.ks.keys(ctx.s.db, a.get(1));
    ctx.out.array(found.len());
    for k in &found {
        ctx.out.bulk(k);
    }
}

fn rename_generic(ctx: &mut Ctx<'_>, a: &Args<'_>, replace: bool) {
    match ctx
        .shared
        .ks
        .rename(a.get(1), a.get(2), replace, &mut ctx.s.pending)
    {
        Ok(_) if replace => ctx.out.ok(),
        Ok(moved) => ctx.out.integer(i64::from(moved)),
        Err(e) => ctx.out.error(&e.to_string()),
    }
}

pub fn rename(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    rename_generic(ctx, a, true);
}

pub fn renamenx(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    rename_generic(ctx, a, false);
}

/// COPY source destination [DB db] [REPLACE] (the keys arrive under their internal names,
/// in the client's database).
pub fn copy(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let mut replace = false;
    let mut to_db = None;
    let mut i = 3;
    while i < a.len() {
        if is(a.get(i), "replace") {
            replace = true;
        } else if is(a.get(i), "db") && i + 1 < a.len() {
            let Some(db) = super::databases::parse(ctx, a.get(i + 1)) else {
                return;
            };
            to_db = Some(db);
            i += 1;
        } else {
            return ctx.out.error(SYNTAX);
        }
        i += 1;
    }
    let dest = match to_db {
        Some(n) if n != ctx.s.db => {
            ctx.shared.ks.use_databases();
            std::borrow::Cow::Owned(nsqr_kv::db::moved(a.get(2), n))
        }
        _ => std::borrow::Cow::Borrowed(a.get(2)),
    };
    if a.get(1) == &*dest {
        return ctx
            .out
            .error("ERR source and destination objects are the same");
    }
    let copied = ctx
        .shared
        .ks
        .copy(a.get(1), &dest, replace, &mut ctx.s.pending);
    ctx.out.integer(i64::from(copied));
}

pub fn randomkey(ctx: &mut Ctx<'_>, _a: &Args<'_>) {
    match ctx.shared.ks.random_key(ctx.s.db) {
        Some(k) => ctx.out.bulk(&k),
        None => ctx.out.null(),
    }
}

pub fn touch(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    ctx.out
        .integer(ctx.shared.ks.touch_keys(&keys_of(a)) as i64);
}

#[cfg(test)]
mod tests {
    use super::parse_cursor;

    #[test]
    fn cursors_read_as_strtoul() {
        assert_eq!(parse_cursor(b"0"), Some(0));
        assert_eq!(parse_cursor(b"-1"), Some(u64::MAX));
        assert_eq!(parse_cursor(b"+7"), Some(7));
        assert_eq!(parse_cursor(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_cursor(b"18446744073709551616"), None);
        assert_eq!(parse_cursor(b"x"), None);
        assert_eq!(parse_cursor(b""), None);
        assert_eq!(parse_cursor(b"--1"), None);
    }
}
