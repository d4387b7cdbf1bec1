//! List commands: LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP (with a count) LLEN LRANGE LINDEX LSET
//! LINSERT LREM LTRIM LPOS LMOVE RPOPLPUSH LMPOP, with Redis 7.0's replies and error texts.

use nsqr_kv::List;
use resp_wire::{Args, Reply};

use super::args::{self, checked, is, SYNTAX};
use super::session::Ctx;
use super::table::wrong_arity;

/// Runs `f` on the list of argument 1 (`None` if missing); WRONGTYPE is the reply otherwise.
fn read(ctx: &mut Ctx<'_>, a: &Args<'_>, f: impl FnOnce(&mut Reply, Option<&List>)) {
    let out = &mut *ctx.out;
    let r = ctx.shared.ks.read_list(a.get(1), |l| f(out, l));
    checked(out, r);
}

fn push(ctx: &mut Ctx<'_>, a: &Args<'_>, left: bool, existing: bool) {
    let items: Vec<&[u8]> = a.iter().skip(2).collect();
    let r = ctx
        .shared
        .ks
        .push(a.get(1), &items, left, existing, &mut ctx.s.pending);
    if let Some(n) = checked(ctx.out, r) {
        ctx.out.integer(n as i64);
    }
}

pub fn lpush(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    push(ctx, a, true, false);
}

pub fn rpush(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    push(ctx, a, false, false);
}

pub fn lpushx(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    push(ctx, a, true, true);
}

pub fn rpushx(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    push(ctx, a, false, true);
}

/// A count that must be 0 or more (`msg` is Redis's error for anything else).
fn positive(ctx: &mut Ctx<'_>, arg: &[u8], msg: &str) -> Option<usize> {
    let n = resp_wire::parse_i64(arg).and_then(|n| usize::try_from(n).ok());
    if n.is_none() {
        ctx.out.error(msg);
    }
    n
}

fn elements(out: &mut Reply, items: &[Box<[u8]>]) {
    out.array(items.len());
    for e in items {
        out.bulk(e);
    }
}

/// LPOP / RPOP key [count].
fn pop(ctx: &mut Ctx<'_>, a: &Args<'_>, left: bool) {
    if a.len() > 3 {
        return wrong_arity(ctx, if left { "lpop" } else { "rpop" });
    }
    let count = if a.len() == 3 {
        match positive(ctx, a.get(2), "ERR value is out of range, must be positive") {
            Some(n) => Some(n),
            None => return,
        }
    } else {
        None
    };
    // A count of 0 still checks the key (missing: null; wrong type: WRONGTYPE).
    let r = ctx
        .shared
        .ks
        .pop(a.get(1), left, count.unwrap_or(1), &mut ctx.s.pending);
    let Some(popped) = checked(ctx.out, r) else {
        return;
    };
    match count {
        None => match popped.first() {
            Some(e) => ctx.out.bulk(e),
            None => ctx.out.null(),
        },
        Some(0) => {
            let exists = ctx.shared.ks.contains(a.get(1));
            if exists {
                ctx.out.array(0);
            } else {
                ctx.out.null_array();
            }
        }
        Some(_) if popped.is_empty() => ctx.out.null_array(),
        Some(_) => elements(ctx.out, &popped),
    }
}

pub fn lpop(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    pop(ctx, a, true);
}

pub fn rpop(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    pop(ctx, a, false);
}

pub fn llen(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    read(ctx, a, |out, l| out.integer(l.map_or(0, List::len) as i64));
}

pub fn lrange(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let Some(start) = args::int(ctx, a.get(2)) else {
        return;
    };
    let Some(stop) = args::int(ctx, a.get(3)) else {
        return;
    };
    read(ctx, a, |out, l| {
        let Some((l, range)) = l.and_then(|l| Some((l, l.range(start, stop)?))) else {
            return out.array(0);
        };
        out.array(range.len());
        for e in l.iter_range(range) {
            out.bulk(e);
        }
    });
}

pub fn lindex(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let Some(index) = args::int(ctx, a.get(2)) else {
        return;
    };
    read(ctx, a, |out, l| {
        match l.and_then(|l| l.get(l.position(index)?)) {
            Some(e) => out.bulk(e),
            None => out.null(),
        }
    });
}

pub fn lset(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let Some(index) = args::int(ctx, a.get(2)) else {
        return;
    };
    let r = ctx
        .shared
        .ks
        .lset(a.get(1), index, a.get(3), &mut ctx.s.pending);
    if checked(ctx.out, r).is_some() {
        ctx.out.ok();
    }
}

pub fn linsert(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let before = if is(a.get(2), "before") {
        true
    } else if is(a.get(2), "after") {
        false
    } else {
        return ctx.out.error(SYNTAX);
    };
    let r = ctx
        .shared
        .ks
        .linsert(a.get(1), before, a.get(3), a.get(4), &mut ctx.s.pending);
    if let Some(n) = checked(ctx.out, r) {
        ctx.out.integer(n);
    }
}

pub fn lrem(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let Some(count) = args::int(ctx, a.get(2)) else {
        return;
    };
    let r = ctx
        .shared
        .ks
        .lrem(a.get(1), count, a.get(3), &mut ctx.s.pending);
    if let Some(n) = checked(ctx.out, r) {
        ctx.out.integer(n as i64);
    }
}

pub fn ltrim(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let Some(start) = args::int(ctx, a.get(2)) else {
        return;
    };
    let Some(stop) = args::int(ctx, a.get(3)) else {
        return;
    };
    let r = ctx
        .shared
        .ks
        .ltrim(a.get(1), start, stop, &mut ctx.s.pending);
    if checked(ctx.out, r).is_some() {
        ctx.out.ok();
    }
}

/// LPOS's options.
struct LposOptions {
    rank: i64,
    count: Option<usize>,
    maxlen: usize,
}

fn lpos_options(ctx: &mut Ctx<'_>, a: &Args<'_>) -> Option<LposOptions> {
    let mut o = LposOptions {
        rank: 1,
        count: None,
        maxlen: 0,
    };
    let mut i = 3;
    while i < a.len() {
        let (opt, has_value) = (a.get(i), i + 1 < a.len());
        if is(opt, "rank") && has_value {
            let rank = args::int(ctx, a.get(i + 1))?;
            if rank == 0 {
                ctx.out.error("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list");
                return None;
            }
            // Redis 7.0 negates the rank to walk from the tail; i64::MIN stays negative and
            // matches the first element found, as -1 does.
            o.rank = if rank == i64::MIN { -1 } else { rank };
        } else if is(opt, "count") && has_value {
            o.count = Some(positive(ctx, a.get(i + 1), "ERR COUNT can't be negative")?);
        } else if is(opt, "maxlen") && has_value {
            o.maxlen = positive(ctx, a.get(i + 1), "ERR MAXLEN can't be negative")?;
        } else {
            ctx.out.error(SYNTAX);
            return None;
        }
        i += 2;
    }
    Some(o)
}

/// The positions of the elements equal to `element` among `items`.
fn matches<'a>(
    items: impl Iterator<Item = (usize, &'a [u8])> + 'a,
    element: &'a [u8],
) -> impl Iterator<Item = usize> + 'a {
    items.filter(move |(_, e)| *e == element).map(|(i, _)| i)
}

/// LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len].
pub fn lpos(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let Some(o) = lpos_options(ctx, a) else {
        return;
    };
    let element = a.get(2);
    read(ctx, a, |out, l| {
        let len = l.map_or(0, List::len);
        let scanned = if o.maxlen == 0 {
            len
        } else {
            o.maxlen.min(len)
        };
        let want = match o.count {
            Some(0) => usize::MAX,
            Some(n) => n,
            None => 1,
        };
        let skip = usize::try_from(o.rank.unsigned_abs() - 1).unwrap_or(usize::MAX);
        let found: Vec<usize> = match l {
            None => Vec::new(),
            Some(l) if o.rank > 0 => matches(l.iter().enumerate().take(scanned), element)
                .skip(skip)
                .take(want)
                .collect(),
            Some(l) => matches(l.iter().enumerate().rev().take(scanned), element)
                .skip(skip)
                .take(want)
                .collect(),
        };
        match o.count {
            None => match found.first() {
                Some(&i) => out.integer(i as i64),
                None => out.null(),
            },
            Some(_) => {
                out.array(found.len());
                for i in found {
                    out.integer(i as i64);
                }
            }
        }
    });
}

/// LEFT or RIGHT: whether it is LEFT.
pub fn side(arg: &[u8]) -> Option<bool> {
    if is(arg, "left") {
        Some(true)
    } else if is(arg, "right") {
        Some(false)
    } else {
        None
    }
}

fn lmove_generic(ctx: &mut Ctx<'_>, a: &Args<'_>, from_left: bool, to_left: bool) {
    let r = ctx
        .shared
        .ks
        .lmove(a.get(1), a.get(2), from_left, to_left, &mut ctx.s.pending);
    match checked(ctx.out, r) {
        Some(Some(e)) => ctx.out.bulk(&e),
        Some(None) => ctx.out.null(),
        None => {}
    }
}

pub fn lmove(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    match (side(a.get(3)), side(a.get(4))) {
        (Some(from), Some(to)) => lmove_generic(ctx, a, from, to),
        _ => ctx.out.error(SYNTAX),
    }
}

pub fn rpoplpush(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    lmove_generic(ctx, a, false, true);
}

/// LMPOP's (and BLMPOP's) arguments from `numkeys` at `at`: the keys, whether LEFT, and the
/// count.
pub fn lmpop_args<'a>(
    ctx: &mut Ctx<'_>,
    a: &Args<'a>,
    at: usize,
) -> Option<(Vec<&'a [u8]>, bool, usize)> {
    let Some(numkeys) = resp_wire::parse_i64(a.get(at)).filter(|&n| n > 0) else {
        ctx.out.error("ERR numkeys should be greater than 0");
        return None;
    };
    let numkeys = usize::try_from(numkeys).unwrap_or(usize::MAX);
    if numkeys > a.len() - at - 2 {
        ctx.out.error(SYNTAX);
        return None;
    }
    let Some(left) = side(a.get(at + 1 + numkeys)) else {
        ctx.out.error(SYNTAX);
        return None;
    };
    let mut count = None;
    let mut i = at + 2 + numkeys;
    while i < a.len() {
        if is(a.get(i), "count") && i + 1 < a.len() && count.is_none() {
            let Some(n) = resp_wire::parse_i64(a.get(i + 1)).filter(|&n| n > 0) else {
                ctx.out.error("ERR count should be greater than 0");
                return None;
            };
            count = Some(usize::try_from(n).unwrap_or(usize::MAX));
            i += 2;
        } else {
            ctx.out.error(SYNTAX);
            return None;
        }
    }
    let keys = a.iter().skip(at + 1).take(numkeys).collect();
    Some((keys, left, count.unwrap_or(1)))
}

/// Answers LMPOP's (and BLMPOP's) result: the key and its elements; `Ok(None)` is left to the
/// caller. Whether it answered.
pub fn lmpop_reply(
    ctx: &mut Ctx<'_>,
    r: Result<Option<nsqr_kv::Popped>, nsqr_kv::KvError>,
) -> bool {
    match checked(ctx.out, r) {
        Some(Some((key, popped))) => {
            ctx.out.array(2);
            ctx.out.bulk(nsqr_kv::db::user_key(&key));
            elements(ctx.out, &popped);
            true
        }
        Some(None) => false,
        None => true,
    }
}

/// LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count].
pub fn lmpop(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let Some((keys, left, count)) = lmpop_args(ctx, a, 1) else {
        return;
    };
    let r = ctx.shared.ks.lmpop(&keys, left, count, &mut ctx.s.pending);
    if !lmpop_reply(ctx, r) {
        ctx.out.null_array();
    }
}
