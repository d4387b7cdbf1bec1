//! Set commands: SADD SREM SISMEMBER SMISMEMBER SMEMBERS SCARD SPOP SRANDMEMBER SMOVE SINTER
//! SUNION SDIFF (and their STORE forms) SINTERCARD SSCAN, with Redis 7.0's replies (RESP3 sets
//! where Redis answers with one) and error texts.

use nsqr_kv::{random_indices, Set, SetOp};
use resp_wire::{Args, Protocol, Reply};

use super::args::{checked, SYNTAX};
use super::hashes::random_count;
use super::keys::{member_scan_args, member_scan_options, member_scan_step};
use super::session::Ctx;

/// Runs `f` on the set of argument 1 (`None` if missing); WRONGTYPE is the reply otherwise.
fn read(ctx: &mut Ctx<'_>, a: &Args<'_>, f: impl FnOnce(&mut Reply, Option<&Set>)) {
    let out = &mut *ctx.out;
    let r = ctx.shared.ks.read_set(a.get(1), |s| f(out, s));
    checked(out, r);
}

/// A set reply: `~` in RESP3, an array in RESP2.
fn members<'m>(out: &mut Reply, n: usize, items: impl Iterator<Item = &'m [u8]>) {
    if out.protocol() == Protocol::Resp2 {
        out.array(n);
    } else {
        out.set(n);
    }
    for m in items {
        out.bulk(m);
    }
}

fn count_reply(ctx: &mut Ctx<'_>, r: Result<usize, nsqr_kv::KvError>) {
    if let Some(n) = checked(ctx.out, r) {
        ctx.out.integer(n as i64);
    }
}

pub fn sadd(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let m: Vec<&[u8]> = a.iter().skip(2).collect();
    let r = ctx.shared.ks.sadd(a.get(1), &m, &mut ctx.s.pending);
    count_reply(ctx, r);
}

pub fn srem(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let m: Vec<&[u8]> = a.iter().skip(2).collect();
    let r = ctx.shared.ks.srem(a.get(1), &m, &mut ctx.s.pending);
    count_reply(ctx, r);
}

pub fn sismember(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let m = a.get(2);
    read(ctx, a, |out, s| {
        out.integer(i64::from(s.is_some_and(|s| s.contains(m))))
    });
}

pub fn smismember(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    read(ctx, a, |out, s| {
        out.array(a.len() - 2);
        for m in a.iter().skip(2) {
            out.integer(i64::from(s.is_some_and(|s| s.contains(m))));
        }
    });
}

pub fn smembers(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    read(ctx, a, |out, s| {
        members(
            out,
            s.map_or(0, Set::len),
            s.into_iter().flat_map(Set::iter),
        )
    });
}

pub fn scard(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    read(ctx, a, |out, s| out.integer(s.map_or(0, Set::len) as i64));
}

/// SPOP key [count].
pub fn spop(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    if a.len() > 3 {
        return ctx.out.error(SYNTAX);
    }
    let count = if a.len() == 3 {
        match resp_wire::parse_i64(a.get(2)).and_then(|n| usize::try_from(n).ok()) {
            Some(n) => Some(n),
            None => return ctx.out.error("ERR value is out of range, must be positive"),
        }
    } else {
        None
    };
    let r = ctx
        .shared
        .ks
        .spop(a.get(1), count.unwrap_or(1), &mut ctx.s.pending);
    let Some(popped) = checked(ctx.out, r) else {
        return;
    };
    match count {
        None => match popped.first() {
            Some(m) => ctx.out.bulk(m),
            None => ctx.out.null(),
        },
        Some(_) => members(ctx.out, popped.len(), popped.iter().map(|m| &**m)),
    }
}

/// SRANDMEMBER key [count].
pub fn srandmember(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    if a.len() > 3 {
        return ctx.out.error(SYNTAX);
    }
    if a.len() == 2 {
        return read(ctx, a, |out, s| {
            let pick = s.and_then(|s| s.at(*random_indices(s.len(), 1).first()?));
            match pick {
                Some(m) => out.bulk(m),
                None => out.null(),
            }
        });
    }
    let Some(count) = random_count(ctx, a.get(2), false) else {
        return;
    };
    read(ctx, a, |out, s| {
        let picks = s.map_or_else(Vec::new, |s| random_indices(s.len(), count));
        out.array(picks.len());
        for m in picks.iter().filter_map(|&i| s.and_then(|s| s.at(i))) {
            out.bulk(m);
        }
    });
}

pub fn smove(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let r = ctx
        .shared
        .ks
        .smove(a.get(1), a.get(2), a.get(3), &mut ctx.s.pending);
    if let Some(moved) = checked(ctx.out, r) {
        ctx.out.integer(i64::from(moved));
    }
}

fn combine(ctx: &mut Ctx<'_>, a: &Args<'_>, op: SetOp) {
    let keys: Vec<&[u8]> = a.iter().skip(1).collect();
    let out = &mut *ctx.out;
    let r = ctx
        .shared
        .ks
        .set_combine(op, &keys, |s| members(out, s.len(), s.iter()));
    checked(out, r);
}

fn combine_store(ctx: &mut Ctx<'_>, a: &Args<'_>, op: SetOp) {
    let keys: Vec<&[u8]> = a.iter().skip(2).collect();
    let r = ctx
        .shared
        .ks
        .set_combine_store(op, a.get(1), &keys, &mut ctx.s.pending);
    count_reply(ctx, r);
}

pub fn sinter(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    combine(ctx, a, SetOp::Inter);
}

pub fn sunion(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    combine(ctx, a, SetOp::Union);
}

pub fn sdiff(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    combine(ctx, a, SetOp::Diff);
}

pub fn sinterstore(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    combine_store(ctx, a, SetOp::Inter);
}

pub fn sunionstore(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    combine_store(ctx, a, SetOp::Union);
}

pub fn sdiffstore(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    combine_store(ctx, a, SetOp::Diff);
}

/// SINTERCARD numkeys key [key ...] [LIMIT limit].
/// SINTERCARD's and ZINTERCARD's `numkeys` keys (from argument 2) and their `LIMIT` (0: none),
/// or `None` once the error is answered.
pub(super) fn intercard_keys_and_limit<'a>(
    ctx: &mut Ctx<'_>,
    a: &Args<'a>,
    numkeys: usize,
) -> Option<(Vec<&'a [u8]>, usize)> {
    let mut limit = 0;
    let mut i = 2 + numkeys;
    while i < a.len() {
        if super::args::is(a.get(i), "limit") && i + 1 < a.len() {
            match resp_wire::parse_i64(a.get(i + 1)).and_then(|n| usize::try_from(n).ok()) {
                Some(n) => limit = n,
                None => {
                    ctx.out.error("ERR LIMIT can't be negative");
                    return None;
                }
            }
            i += 2;
        } else {
            ctx.out.error(SYNTAX);
            return None;
        }
    }
    Some((a.iter().skip(2).take(numkeys).collect(), limit))
}

pub fn sintercard(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let numkeys = resp_wire::parse_i64(a.get(1)).filter(|&n| n > 0);
    let Some(numkeys) = numkeys.and_then(|n| usize::try_from(n).ok()) else {
        return ctx.out.error("ERR numkeys should be greater than 0");
    };
    if numkeys > a.len() - 2 {
        return ctx
            .out
            .error("ERR Number of keys can't be greater than number of args");
    }
    let Some((keys, limit)) = intercard_keys_and_limit(ctx, a, numkeys) else {
        return;
    };
    let r = ctx.shared.ks.sintercard(&keys, limit);
    count_reply(ctx, r);
}

/// SSCAN key cursor [MATCH pattern] [COUNT count]. A set Redis keeps small (an intset) is
/// returned whole with cursor 0, as Redis does.
pub fn sscan(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let Some((cursor, o)) = member_scan_args(ctx, a) else {
        return;
    };
    read(ctx, a, |out, s| {
        let Some((s, o)) = member_scan_options(out, s, o) else {
            return;
        };
        let (range, next) = member_scan_step(s.len(), s.is_compact(), cursor, o.count);
        let found: Vec<&[u8]> = range
            .filter_map(|i| s.at(i))
            .filter(|m| o.pattern.is_none_or(|p| nsqr_kv::glob::matches(p, m)))
            .collect();
        out.array(2);
        out.bulk(next.to_string().as_bytes());
        out.array(found.len());
        for m in found {
            out.bulk(m);
        }
    });
}
