//! Sorted set commands other than ranges (`zranges.rs`): ZADD ZINCRBY ZREM ZCARD ZSCORE
//! ZMSCORE ZRANK ZREVRANK ZPOPMIN ZPOPMAX ZMPOP ZRANDMEMBER ZSCAN, ZUNION ZINTER ZDIFF (and
//! their STORE forms) and ZINTERCARD, with Redis 7.0's replies and error texts. Scores are
//! written as Redis 7.0 writes them (`%.17g`): bulk strings in RESP2, doubles in RESP3, where
//! a list of members with scores is a list of pairs.

use nsqr_kv::{random_indices, Aggregate, KeyType, SetOp, ZPopped, ZSet, ZaddOptions, ZaddReply};
use resp_wire::{Args, Protocol, Reply};

use super::args::{checked, is, SYNTAX};
use super::hashes::random_count;
use super::keys::{member_scan_args, member_scan_options, member_scan_step};
use super::session::Ctx;

const NOT_FLOAT: &str = "ERR value is not a valid float";

/// A score: a double in RESP3, a bulk string in RESP2 (a zero is `0`).
pub fn score(out: &mut Reply, v: f64) {
    out.double(v + 0.0);
}

/// `n` members, with their scores if `withscores`: flat in RESP2, pairs in RESP3.
pub fn scored_list<'m>(
    out: &mut Reply,
    n: usize,
    items: impl Iterator<Item = (&'m [u8], f64)>,
    withscores: bool,
) {
    if !withscores {
        out.array(n);
        items.for_each(|(m, _)| out.bulk(m));
        return;
    }
    pairs(out, n, items, out.protocol() == Protocol::Resp3);
}

/// `n` members with their scores, as pairs (`nested`) or flat.
fn pairs<'m>(
    out: &mut Reply,
    n: usize,
    items: impl Iterator<Item = (&'m [u8], f64)>,
    nested: bool,
) {
    out.array(if nested { n } else { 2 * n });
    for (m, s) in items {
        if nested {
            out.array(2);
        }
        out.bulk(m);
        score(out, s);
    }
}

/// Runs `f` on the sorted set of argument 1 (`None` if missing); WRONGTYPE is the reply
/// otherwise.
fn read(ctx: &mut Ctx<'_>, a: &Args<'_>, f: impl FnOnce(&mut Reply, Option<&ZSet>)) {
    let out = &mut *ctx.out;
    let r = ctx.shared.ks.read_zset(a.get(1), |z| f(out, z));
    checked(out, r);
}

/// ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...].
pub fn zadd(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let mut o = ZaddOptions::default();
    let mut at = 2;
    while at < a.len() {
        let flag = a.get(at);
        let slot = [
            ("nx", &mut o.nx),
            ("xx", &mut o.xx),
            ("gt", &mut o.gt),
            ("lt", &mut o.lt),
            ("ch", &mut o.ch),
            ("incr", &mut o.incr),
        ]
        .into_iter()
        .find(|(name, _)| is(flag, name));
        let Some((_, slot)) = slot else { break };
        *slot = true;
        at += 1;
    }
    let rest = a.len() - at;
    if rest == 0 || !rest.is_multiple_of(2) {
        return ctx.out.error(SYNTAX);
    }
    if o.nx && o.xx {
        return ctx
            .out
            .error("ERR XX and NX options at the same time are not compatible");
    }
    if (o.nx && (o.gt || o.lt)) || (o.gt && o.lt) {
        return ctx
            .out
            .error("ERR GT, LT, and/or NX options at the same time are not compatible");
    }
    if o.incr && rest > 2 {
        return ctx
            .out
            .error("ERR INCR option supports a single increment-element pair");
    }
    let mut items = Vec::with_capacity(rest / 2);
    for i in (at..a.len()).step_by(2) {
        let Some(s) = nsqr_kv::parse_score(a.get(i)) else {
            return ctx.out.error(NOT_FLOAT);
        };
        items.push((s, a.get(i + 1)));
    }
    add(ctx, a.get(1), &items, o);
}

fn add(ctx: &mut Ctx<'_>, key: &[u8], items: &[(f64, &[u8])], o: ZaddOptions) {
    let r = ctx.shared.ks.zadd(key, items, o, &mut ctx.s.pending);
    match checked(ctx.out, r) {
        Some(ZaddReply::Count(n)) => ctx.out.integer(n as i64),
        Some(ZaddReply::Score(Some(s))) => score(ctx.out, s),
        Some(ZaddReply::Score(None)) => ctx.out.null(),
        None => {}
    }
}

/// ZINCRBY key increment member.
pub fn zincrby(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let Some(by) = nsqr_kv::parse_score(a.get(2)) else {
        return ctx.out.error(NOT_FLOAT);
    };
    let o = ZaddOptions {
        incr: true,
        ..ZaddOptions::default()
    };
    add(ctx, a.get(1), &[(by, a.get(3))], o);
}

pub fn zrem(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let m: Vec<&[u8]> = a.iter().skip(2).collect();
    let r = ctx.shared.ks.zrem(a.get(1), &m, &mut ctx.s.pending);
    if let Some(n) = checked(ctx.out, r) {
        ctx.out.integer(n as i64);
    }
}

pub fn zcard(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    read(ctx, a, |out, z| out.integer(z.map_or(0, ZSet::len) as i64));
}

pub fn zscore(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let m = a.get(2);
    read(ctx, a, |out, z| match z.and_then(|z| z.score(m)) {
        Some(s) => score(out, s),
        None => out.null(),
    });
}

pub fn zmscore(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    read(ctx, a, |out, z| {
        out.array(a.len() - 2);
        for m in a.iter().skip(2) {
            match z.and_then(|z| z.score(m)) {
                Some(s) => score(out, s),
                None => out.null(),
            }
        }
    });
}

fn rank(ctx: &mut Ctx<'_>, a: &Args<'_>, rev: bool) {
    let m = a.get(2);
    read(ctx, a, |out, z| {
        let r = z.and_then(|z| Some((z.len(), z.rank(m)?)));
        match r {
            Some((len, r)) if rev => out.integer((len - 1 - r) as i64),
            Some((_, r)) => out.integer(r as i64),
            None => out.null(),
        }
    });
}

pub fn zrank(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    rank(ctx, a, false);
}

pub fn zrevrank(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    rank(ctx, a, true);
}

/// ZPOPMIN / ZPOPMAX key [count].
fn pop(ctx: &mut Ctx<'_>, a: &Args<'_>, max: bool) {
    if a.len() > 3 {
        return ctx.out.error(SYNTAX);
    }
    let count = if a.len() == 3 {
        match resp_wire::parse_i64(a.get(2)).map(usize::try_from) {
            Some(Ok(n)) => Some(n),
            Some(Err(_)) => return ctx.out.error("ERR value is out of range, must be positive"),
            None => return ctx.out.error(super::args::NOT_INTEGER),
        }
    } else {
        None
    };
    let r = ctx
        .shared
        .ks
        .zpop(a.get(1), count.unwrap_or(1), max, &mut ctx.s.pending);
    let Some(popped) = checked(ctx.out, r) else {
        return;
    };
    // Without a count, one flat pair even in RESP3.
    let nested = count.is_some() && ctx.out.protocol() == Protocol::Resp3;
    pairs(
        ctx.out,
        popped.len(),
        popped.iter().map(|(m, s)| (&**m, *s)),
        nested,
    );
}

pub fn zpopmin(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    pop(ctx, a, false);
}

pub fn zpopmax(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    pop(ctx, a, true);
}

/// The keys, side (MAX) and count of ZMPOP / BZMPOP, read from argument `at` (numkeys).
pub struct MpopArgs<'a> {
    pub keys: Vec<&'a [u8]>,
    pub max: bool,
    pub count: usize,
}

/// Reads `numkeys key [key ...] MIN|MAX [COUNT count]`; `None` once the error is the reply.
pub fn mpop_args<'a>(ctx: &mut Ctx<'_>, a: &'a Args<'_>, at: usize) -> Option<MpopArgs<'a>> {
    let numkeys = resp_wire::parse_i64(a.get(at)).filter(|&n| n > 0);
    let Some(numkeys) = numkeys.and_then(|n| usize::try_from(n).ok()) else {
        ctx.out.error("ERR numkeys should be greater than 0");
        return None;
    };
    let side = at + 1 + numkeys;
    if side >= a.len() {
        ctx.out.error(SYNTAX);
        return None;
    }
    let max = match a.get(side) {
        w if is(w, "min") => false,
        w if is(w, "max") => true,
        _ => {
            ctx.out.error(SYNTAX);
            return None;
        }
    };
    let mut count = None;
    let mut j = side + 1;
    while j < a.len() {
        if count.is_none() && is(a.get(j), "count") && j + 1 < a.len() {
            let n = resp_wire::parse_i64(a.get(j + 1)).filter(|&n| n > 0);
            let Some(n) = n.and_then(|n| usize::try_from(n).ok()) else {
                ctx.out.error("ERR count should be greater than 0");
                return None;
            };
            count = Some(n);
            j += 2;
        } else {
            ctx.out.error(SYNTAX);
            return None;
        }
    }
    let keys = a.iter().skip(at + 1).take(numkeys).collect();
    Some(MpopArgs {
        keys,
        max,
        count: count.unwrap_or(1),
    })
}

/// A key and the members popped from it.
pub type PoppedFrom<'k> = (&'k [u8], Vec<ZPopped>);

/// Pops from the first of `keys` that is not empty: its key and members, or `None`; `Err`
/// once WRONGTYPE is the reply.
pub fn pop_first<'k>(ctx: &mut Ctx<'_>, m: &MpopArgs<'k>) -> Result<Option<PoppedFrom<'k>>, ()> {
    for &key in &m.keys {
        let r = ctx.shared.ks.zpop(key, m.count, m.max, &mut ctx.s.pending);
        match checked(ctx.out, r) {
            None => return Err(()),
            Some(popped) if popped.is_empty() => {}
            Some(popped) => return Ok(Some((key, popped))),
        }
    }
    Ok(None)
}

/// `[key, [[member, score], ...]]`, as ZMPOP and BZMPOP answer.
pub fn mpop_reply(out: &mut Reply, key: &[u8], popped: &[ZPopped]) {
    out.array(2);
    out.bulk(nsqr_kv::db::user_key(key));
    pairs(
        out,
        popped.len(),
        popped.iter().map(|(m, s)| (&**m, *s)),
        true,
    );
}

/// ZMPOP numkeys key [key ...] MIN|MAX [COUNT count].
pub fn zmpop(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let Some(m) = mpop_args(ctx, a, 1) else {
        return;
    };
    match pop_first(ctx, &m) {
        Ok(Some((key, popped))) => mpop_reply(ctx.out, key, &popped),
        Ok(None) => ctx.out.null_array(),
        Err(()) => {}
    }
}

/// ZRANDMEMBER key [count [WITHSCORES]].
pub fn zrandmember(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    if a.len() == 2 {
        return read(ctx, a, |out, z| {
            match z.and_then(|z| z.at(*random_indices(z.len(), 1).first()?)) {
                Some((m, _)) => out.bulk(m),
                None => out.null(),
            }
        });
    }
    let withscores = a.len() == 4 && is(a.get(3), "withscores");
    let Some(count) = random_count(ctx, a.get(2), withscores) else {
        return;
    };
    if a.len() > 4 || (a.len() == 4 && !withscores) {
        return ctx.out.error(SYNTAX);
    }
    read(ctx, a, |out, z| {
        let picks = z.map_or_else(Vec::new, |z| random_indices(z.len(), count));
        let items = picks.iter().filter_map(|&i| z.and_then(|z| z.at(i)));
        scored_list(out, picks.len(), items, withscores);
    });
}

/// ZSCAN key cursor [MATCH pattern] [COUNT count]. A sorted set Redis keeps small (a
/// listpack) is returned whole with cursor 0, as Redis does.
pub fn zscan(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let Some((cursor, o)) = member_scan_args(ctx, a) else {
        return;
    };
    read(ctx, a, |out, z| {
        let Some((z, o)) = member_scan_options(out, z, o) else {
            return;
        };
        let (range, next) = member_scan_step(z.len(), z.is_compact(), cursor, o.count);
        let found: Vec<(&[u8], f64)> = range
            .filter_map(|i| z.at(i))
            .filter(|(m, _)| o.pattern.is_none_or(|p| nsqr_kv::glob::matches(p, m)))
            .collect();
        out.array(2);
        out.bulk(next.to_string().as_bytes());
        out.array(2 * found.len());
        for (m, s) in found {
            out.bulk(m);
            out.bulk(nsqr_kv::format_score(s).as_bytes());
        }
    });
}

/// The inputs and options of ZUNION / ZINTER / ZDIFF and their STORE forms.
struct Algebra<'a> {
    keys: Vec<&'a [u8]>,
    weights: Vec<f64>,
    agg: Aggregate,
    withscores: bool,
}

/// Reads `numkeys key [key ...] [WEIGHTS w ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]` from
/// argument `at`, as `name` takes them.
fn algebra_args<'a>(
    ctx: &mut Ctx<'_>,
    a: &'a Args<'_>,
    at: usize,
    op: SetOp,
    store: bool,
    name: &str,
) -> Option<Algebra<'a>> {
    let numkeys = super::args::int(ctx, a.get(at))?;
    if numkeys < 1 {
        ctx.out.error(&format!(
            "ERR at least 1 input key is needed for '{name}' command"
        ));
        return None;
    }
    let numkeys = usize::try_from(numkeys).unwrap_or(usize::MAX);
    if numkeys > a.len() - at - 1 {
        ctx.out.error(SYNTAX);
        return None;
    }
    let keys: Vec<&[u8]> = a.iter().skip(at + 1).take(numkeys).collect();
    let mut alg = Algebra {
        keys,
        weights: Vec::new(),
        agg: Aggregate::Sum,
        withscores: false,
    };
    let mut j = at + 1 + numkeys;
    while j < a.len() {
        let arg = a.get(j);
        let left = a.len() - j - 1;
        if op != SetOp::Diff && is(arg, "weights") && left >= numkeys {
            for k in 0..numkeys {
                let Some(w) = nsqr_kv::parse_score(a.get(j + 1 + k)) else {
                    options_error(ctx, &alg.keys, "ERR weight value is not a float");
                    return None;
                };
                alg.weights.push(w);
            }
            j += numkeys;
        } else if op != SetOp::Diff && is(arg, "aggregate") && left >= 1 {
            alg.agg = match a.get(j + 1) {
                w if is(w, "sum") => Aggregate::Sum,
                w if is(w, "min") => Aggregate::Min,
                w if is(w, "max") => Aggregate::Max,
                _ => {
                    options_error(ctx, &alg.keys, SYNTAX);
                    return None;
                }
            };
            j += 1;
        } else if !store && is(arg, "withscores") {
            alg.withscores = true;
        } else {
            options_error(ctx, &alg.keys, SYNTAX);
            return None;
        }
        j += 1;
    }
    Some(alg)
}

/// An error in the options of ZUNION / ZINTER / ZDIFF: Redis checks the keys' types first, so
/// a key of another type makes the reply WRONGTYPE.
fn options_error(ctx: &mut Ctx<'_>, keys: &[&[u8]], msg: &str) {
    let wrong = keys.iter().any(|k| {
        ctx.shared
            .ks
            .key_type(k)
            .is_some_and(|t| !matches!(t, KeyType::Zset | KeyType::Set))
    });
    if wrong {
        ctx.out.error(&nsqr_kv::KvError::WrongType.to_string());
    } else {
        ctx.out.error(msg);
    }
}

fn combine(ctx: &mut Ctx<'_>, a: &Args<'_>, op: SetOp, name: &str) {
    let Some(alg) = algebra_args(ctx, a, 1, op, false, name) else {
        return;
    };
    let out = &mut *ctx.out;
    let r = ctx
        .shared
        .ks
        .zset_combine(op, &alg.keys, &alg.weights, alg.agg, |z| {
            scored_list(out, z.len(), z.iter(), alg.withscores)
        });
    checked(out, r);
}

fn combine_store(ctx: &mut Ctx<'_>, a: &Args<'_>, op: SetOp, name: &str) {
    let Some(alg) = algebra_args(ctx, a, 2, op, true, name) else {
        return;
    };
    let r = ctx.shared.ks.zset_combine_store(
        op,
        a.get(1),
        &alg.keys,
        &alg.weights,
        alg.agg,
        &mut ctx.s.pending,
    );
    if let Some(n) = checked(ctx.out, r) {
        ctx.out.integer(n as i64);
    }
}

pub fn zunion(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    combine(ctx, a, SetOp::Union, "zunion");
}

pub fn zinter(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    combine(ctx, a, SetOp::Inter, "zinter");
}

pub fn zdiff(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    combine(ctx, a, SetOp::Diff, "zdiff");
}

pub fn zunionstore(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    combine_store(ctx, a, SetOp::Union, "zunionstore");
}

pub fn zinterstore(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    combine_store(ctx, a, SetOp::Inter, "zinterstore");
}

pub fn zdiffstore(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    combine_store(ctx, a, SetOp::Diff, "zdiffstore");
}

/// ZINTERCARD numkeys key [key ...] [LIMIT limit].
pub fn zintercard(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let Some(numkeys) = super::args::int(ctx, a.get(1)) else {
        return;
    };
    if numkeys < 1 {
        return ctx
            .out
            .error("ERR at least 1 input key is needed for 'zintercard' command");
    }
    let numkeys = usize::try_from(numkeys).unwrap_or(usize::MAX);
    if numkeys > a.len() - 2 {
        return ctx.out.error(SYNTAX);
    }
    let Some((keys, limit)) = super::sets::intercard_keys_and_limit(ctx, a, numkeys) else {
        return;
    };
    let r = ctx.shared.ks.zintercard(&keys, limit);
    if let Some(n) = checked(ctx.out, r) {
        ctx.out.integer(n as i64);
    }
}
