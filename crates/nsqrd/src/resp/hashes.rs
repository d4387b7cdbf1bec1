//! Hash commands: HSET HSETNX HMSET HGET HMGET HDEL HEXISTS HLEN HSTRLEN HKEYS HVALS HGETALL
//! HINCRBY HINCRBYFLOAT HRANDFIELD HSCAN, with Redis 7.0's replies (RESP3 maps where Redis
//! answers with one) and error texts.

use nsqr_kv::{random_indices, Hash};
use resp_wire::{Args, Protocol, Reply};

use super::args::{self, checked, is, SYNTAX};
use super::keys::{member_scan_args, member_scan_options, member_scan_step};
use super::session::Ctx;
use super::table::wrong_arity;

/// The most members a negative HRANDFIELD / SRANDMEMBER count may ask for: each is a reply
/// element built in memory.
pub const MAX_RANDOM: u64 = 1 << 24;

fn value_or_null(out: &mut Reply, v: Option<&[u8]>) {
    match v {
        Some(v) => out.bulk(v),
        None => out.null(),
    }
}

/// Runs `f` on the hash of argument 1 (`None` if missing); WRONGTYPE is the reply otherwise.
fn read(ctx: &mut Ctx<'_>, a: &Args<'_>, f: impl FnOnce(&mut Reply, Option<&Hash>)) {
    let out = &mut *ctx.out;
    let r = ctx.shared.ks.read_hash(a.get(1), |h| f(out, h));
    checked(out, r);
}

fn set_pairs(ctx: &mut Ctx<'_>, a: &Args<'_>, name: &str) -> Option<usize> {
    if !a.len().is_multiple_of(2) {
        wrong_arity(ctx, name);
        return None;
    }
    let pairs: Vec<&[u8]> = a.iter().skip(2).collect();
    let r = ctx.shared.ks.hset(a.get(1), &pairs, &mut ctx.s.pending);
    checked(ctx.out, r)
}

pub fn hset(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    if let Some(n) = set_pairs(ctx, a, "hset") {
        ctx.out.integer(n as i64);
    }
}

pub fn hmset(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    if set_pairs(ctx, a, "hmset").is_some() {
        ctx.out.ok();
    }
}

pub fn hsetnx(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let r = ctx
        .shared
        .ks
        .hsetnx(a.get(1), a.get(2), a.get(3), &mut ctx.s.pending);
    if let Some(set) = checked(ctx.out, r) {
        ctx.out.integer(i64::from(set));
    }
}

pub fn hget(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let field = a.get(2);
    read(ctx, a, |out, h| {
        value_or_null(out, h.and_then(|h| h.get(field)))
    });
}

pub fn hmget(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    read(ctx, a, |out, h| {
        out.array(a.len() - 2);
        for f in a.iter().skip(2) {
            value_or_null(out, h.and_then(|h| h.get(f)));
        }
    });
}

pub fn hdel(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let fields: Vec<&[u8]> = a.iter().skip(2).collect();
    let r = ctx.shared.ks.hdel(a.get(1), &fields, &mut ctx.s.pending);
    if let Some(n) = checked(ctx.out, r) {
        ctx.out.integer(n as i64);
    }
}

pub fn hexists(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let field = a.get(2);
    read(ctx, a, |out, h| {
        out.integer(i64::from(h.is_some_and(|h| h.get(field).is_some())))
    });
}

pub fn hlen(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    read(ctx, a, |out, h| out.integer(h.map_or(0, Hash::len) as i64));
}

pub fn hstrlen(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let field = a.get(2);
    read(ctx, a, |out, h| {
        let len = h.and_then(|h| h.get(field)).map_or(0, <[u8]>::len);
        out.integer(len as i64)
    });
}

pub fn hkeys(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    read(ctx, a, |out, h| {
        out.array(h.map_or(0, Hash::len));
        for (f, _) in h.into_iter().flat_map(Hash::iter) {
            out.bulk(f);
        }
    });
}

pub fn hvals(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    read(ctx, a, |out, h| {
        out.array(h.map_or(0, Hash::len));
        for (_, v) in h.into_iter().flat_map(Hash::iter) {
            out.bulk(v);
        }
    });
}

pub fn hgetall(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    read(ctx, a, |out, h| {
        let n = h.map_or(0, Hash::len);
        if out.protocol() == Protocol::Resp2 {
            out.array(n * 2);
        } else {
            out.map(n);
        }
        for (f, v) in h.into_iter().flat_map(Hash::iter) {
            out.bulk(f);
            out.bulk(v);
        }
    });
}

pub fn hincrby(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let Some(delta) = args::int(ctx, a.get(3)) else {
        return;
    };
    let r = ctx
        .shared
        .ks
        .hincrby(a.get(1), a.get(2), delta, &mut ctx.s.pending);
    if let Some(n) = checked(ctx.out, r) {
        ctx.out.integer(n);
    }
}

pub fn hincrbyfloat(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let Some(delta) = nsqr_kv::parse_float(a.get(3)) else {
        return ctx.out.error(&nsqr_kv::KvError::NotFloat.to_string());
    };
    if delta.is_infinite() {
        return ctx.out.error("ERR value is NaN or Infinity");
    }
    let r = ctx
        .shared
        .ks
        .hincrbyfloat(a.get(1), a.get(2), delta, &mut ctx.s.pending);
    if let Some(v) = checked(ctx.out, r) {
        ctx.out.bulk(&v);
    }
}

/// The count of HRANDFIELD / SRANDMEMBER, checked as Redis checks it (`withvalues` halves
/// the range); a negative count beyond [`MAX_RANDOM`] is refused, to bound the reply.
pub fn random_count(ctx: &mut Ctx<'_>, arg: &[u8], withvalues: bool) -> Option<i64> {
    let n = args::int(ctx, arg)?;
    if n == i64::MIN {
        ctx.out.error(&format!(
            "ERR value is out of range, value must between {} and {}",
            -i64::MAX,
            i64::MAX
        ));
        return None;
    }
    let beyond_half = !(-i64::MAX / 2..=i64::MAX / 2).contains(&n);
    if (withvalues && beyond_half) || (n < 0 && n.unsigned_abs() > MAX_RANDOM) {
        ctx.out.error("ERR value is out of range");
        return None;
    }
    Some(n)
}

/// HRANDFIELD key [count [WITHVALUES]].
pub fn hrandfield(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    if a.len() == 2 {
        return read(ctx, a, |out, h| {
            let pick = h.and_then(|h| h.at(*random_indices(h.len(), 1).first()?));
            value_or_null(out, pick.map(|(f, _)| f));
        });
    }
    let withvalues = a.len() == 4 && is(a.get(3), "withvalues");
    let Some(count) = random_count(ctx, a.get(2), withvalues) else {
        return;
    };
    if a.len() > 4 || (a.len() == 4 && !withvalues) {
        return ctx.out.error(SYNTAX);
    }
    read(ctx, a, |out, h| {
        let picks = h.map_or_else(Vec::new, |h| random_indices(h.len(), count));
        let resp3 = out.protocol() != Protocol::Resp2;
        out.array(if withvalues && !resp3 {
            picks.len() * 2
        } else {
            picks.len()
        });
        for (f, v) in h.into_iter().flat_map(|h| h.pairs_at(&picks)) {
            if withvalues && resp3 {
                out.array(2);
            }
            out.bulk(f);
            if withvalues {
                out.bulk(v);
            }
        }
    });
}

/// HSCAN key cursor [MATCH pattern] [COUNT count]. A hash Redis keeps small (a listpack) is
/// returned whole with cursor 0, as Redis does; a large one a step at a time (see
/// `nsqr_kv::scan_step`).
pub fn hscan(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let Some((cursor, o)) = member_scan_args(ctx, a) else {
        return;
    };
    read(ctx, a, |out, h| {
        let Some((h, o)) = member_scan_options(out, h, o) else {
            return;
        };
        let (range, next) = member_scan_step(h.len(), h.is_compact(), cursor, o.count);
        let found: Vec<(&[u8], &[u8])> = range
            .filter_map(|i| h.at(i))
            .filter(|(f, _)| o.pattern.is_none_or(|p| nsqr_kv::glob::matches(p, f)))
            .collect();
        out.array(2);
        out.bulk(next.to_string().as_bytes());
        out.array(found.len() * 2);
        for (f, v) in found {
            out.bulk(f);
            out.bulk(v);
        }
    });
}
