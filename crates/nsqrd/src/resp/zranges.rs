//! The range commands of sorted sets: ZRANGE (BYSCORE, BYLEX, REV, LIMIT, WITHSCORES) and its
//! older forms (ZREVRANGE, ZRANGEBYSCORE, ZREVRANGEBYSCORE, ZRANGEBYLEX, ZREVRANGEBYLEX),
//! ZRANGESTORE, ZCOUNT, ZLEXCOUNT and ZREMRANGEBYRANK / SCORE / LEX. Arguments are read as
//! Redis 7.0's `zrangeGenericCommand` reads them: options first, then the range, then the key,
//! so a bad range is reported before WRONGTYPE.

use nsqr_kv::{LexBound, ScoreBound, ZRangeSpec};
use resp_wire::Args;

use super::args::{checked, is, NOT_INTEGER, SYNTAX};
use super::session::Ctx;
use super::zsets::scored_list;

const NOT_FLOAT_RANGE: &str = "ERR min or max is not a float";
const NOT_LEX_RANGE: &str = "ERR min or max not valid string range item";

/// What a range is by: rank, score or member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    Rank,
    Score,
    Lex,
}

/// One end of a score range: `1.5`, `(1.5`, `-inf`, `+inf`.
pub fn score_bound(arg: &[u8]) -> Option<ScoreBound> {
    let (exclusive, text) = match arg.split_first() {
        Some((b'(', rest)) => (true, rest),
        _ => (false, arg),
    };
    let value = nsqr_kv::parse_score_bound(text)?;
    Some(ScoreBound { value, exclusive })
}

/// One end of a lexicographic range: `-`, `+`, `[m`, `(m`.
pub fn lex_bound(arg: &[u8]) -> Option<LexBound<'_>> {
    match arg.split_first()? {
        (b'-', []) => Some(LexBound::Min),
        (b'+', []) => Some(LexBound::Max),
        (b'[', m) => Some(LexBound::Incl(m)),
        (b'(', m) => Some(LexBound::Excl(m)),
        _ => None,
    }
}

/// The range of `min` and `max` read as `by` says; `None` once the error is the reply.
pub fn range_spec<'a>(
    ctx: &mut Ctx<'_>,
    by: By,
    min: &'a [u8],
    max: &'a [u8],
) -> Option<ZRangeSpec<'a>> {
    let spec = match by {
        By::Rank => resp_wire::parse_i64(min)
            .zip(resp_wire::parse_i64(max))
            .map(|(a, b)| ZRangeSpec::Rank(a, b)),
        By::Score => score_bound(min)
            .zip(score_bound(max))
            .map(|(a, b)| ZRangeSpec::Score(a, b)),
        By::Lex => lex_bound(min)
            .zip(lex_bound(max))
            .map(|(a, b)| ZRangeSpec::Lex(a, b)),
    };
    if spec.is_none() {
        ctx.out.error(match by {
            By::Rank => NOT_INTEGER,
            By::Score => NOT_FLOAT_RANGE,
            By::Lex => NOT_LEX_RANGE,
        });
    }
    spec
}

/// A ZRANGE request once read.
struct Request<'a> {
    key: &'a [u8],
    spec: ZRangeSpec<'a>,
    rev: bool,
    limit: Option<(i64, i64)>,
    withscores: bool,
}

/// How a command of the family fixes its options (`None`: ZRANGE's own options decide).
#[derive(Clone, Copy)]
struct Form {
    by: Option<By>,
    rev: Option<bool>,
    store: bool,
}

/// Reads `key min max [options]` from argument `at` on, as `form` allows.
fn parse<'a>(ctx: &mut Ctx<'_>, a: &'a Args<'_>, at: usize, form: Form) -> Option<Request<'a>> {
    let (mut by, mut rev) = (form.by, form.rev);
    let (mut withscores, mut limit) = (false, None);
    let mut j = at + 3;
    while j < a.len() {
        let arg = a.get(j);
        let left = a.len() - j - 1;
        if !form.store && is(arg, "withscores") {
            withscores = true;
        } else if is(arg, "limit") && left >= 2 {
            let offset = super::args::int(ctx, a.get(j + 1))?;
            let count = super::args::int(ctx, a.get(j + 2))?;
            limit = Some((offset, count));
            j += 2;
        } else if form.rev.is_none() && rev.is_none() && is(arg, "rev") {
            rev = Some(true);
        } else if form.by.is_none() && by.is_none() && is(arg, "bylex") {
            by = Some(By::Lex);
        } else if form.by.is_none() && by.is_none() && is(arg, "byscore") {
            by = Some(By::Score);
        } else {
            ctx.out.error(SYNTAX);
            return None;
        }
        j += 1;
    }
    let (by, rev) = (by.unwrap_or(By::Rank), rev.unwrap_or(false));
    // Redis takes LIMIT 0 -1 (its "no limit") with a rank range too.
    if by == By::Rank && limit.is_some_and(|(_, count)| count != -1) {
        ctx.out.error(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        );
        return None;
    }
    if withscores && by == By::Lex {
        ctx.out
            .error("ERR syntax error, WITHSCORES not supported in combination with BYLEX");
        return None;
    }
    let (mut min, mut max) = (a.get(at + 1), a.get(at + 2));
    if rev && by != By::Rank {
        std::mem::swap(&mut min, &mut max);
    }
    let spec = range_spec(ctx, by, min, max)?;
    let limit = if by == By::Rank { None } else { limit };
    Some(Request {
        key: a.get(at),
        spec,
        rev,
        limit,
        withscores,
    })
}

fn range(ctx: &mut Ctx<'_>, a: &Args<'_>, form: Form) {
    let Some(req) = parse(ctx, a, 1, form) else {
        return;
    };
    let out = &mut *ctx.out;
    let r = ctx.shared.ks.read_zset(req.key, |z| {
        let Some(z) = z else {
            return out.array(0);
        };
        let ranks = req.spec.ranks(z, req.rev, req.limit);
        let n = ranks.len();
        let items = z.by_rank(ranks);
        if req.rev {
            scored_list(out, n, items.rev(), req.withscores);
        } else {
            scored_list(out, n, items, req.withscores);
        }
    });
    checked(out, r);
}

const ZRANGE: Form = Form {
    by: None,
    rev: None,
    store: false,
};

pub fn zrange(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    range(ctx, a, ZRANGE);
}

pub fn zrevrange(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let form = Form {
        by: Some(By::Rank),
        rev: Some(true),
        store: false,
    };
    range(ctx, a, form);
}

fn by(by: By, rev: bool) -> Form {
    Form {
        by: Some(by),
        rev: Some(rev),
        store: false,
    }
}

pub fn zrangebyscore(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    range(ctx, a, by(By::Score, false));
}

pub fn zrevrangebyscore(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    range(ctx, a, by(By::Score, true));
}

pub fn zrangebylex(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    range(ctx, a, by(By::Lex, false));
}

pub fn zrevrangebylex(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    range(ctx, a, by(By::Lex, true));
}

/// ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count].
pub fn zrangestore(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let form = Form {
        store: true,
        ..ZRANGE
    };
    let Some(req) = parse(ctx, a, 2, form) else {
        return;
    };
    let r = ctx.shared.ks.zrangestore(
        a.get(1),
        req.key,
        req.spec,
        req.rev,
        req.limit,
        &mut ctx.s.pending,
    );
    if let Some(n) = checked(ctx.out, r) {
        ctx.out.integer(n as i64);
    }
}

/// ZCOUNT / ZLEXCOUNT key min max.
fn count(ctx: &mut Ctx<'_>, a: &Args<'_>, by: By) {
    let Some(spec) = range_spec(ctx, by, a.get(2), a.get(3)) else {
        return;
    };
    let out = &mut *ctx.out;
    let r = ctx.shared.ks.read_zset(a.get(1), |z| {
        out.integer(z.map_or(0, |z| spec.ranks(z, false, None).len()) as i64);
    });
    checked(out, r);
}

pub fn zcount(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    count(ctx, a, By::Score);
}

pub fn zlexcount(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    count(ctx, a, By::Lex);
}

/// ZREMRANGEBYRANK / SCORE / LEX key min max.
fn remove(ctx: &mut Ctx<'_>, a: &Args<'_>, by: By) {
    let Some(spec) = range_spec(ctx, by, a.get(2), a.get(3)) else {
        return;
    };
    let r = ctx.shared.ks.zrem_range(a.get(1), spec, &mut ctx.s.pending);
    if let Some(n) = checked(ctx.out, r) {
        ctx.out.integer(n as i64);
    }
}

pub fn zremrangebyrank(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    remove(ctx, a, By::Rank);
}

pub fn zremrangebyscore(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    remove(ctx, a, By::Score);
}

pub fn zremrangebylex(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    remove(ctx, a, By::Lex);
}

#[cfg(test)]
mod tests {
    use super::*;
    use nsqr_kv::ZSet;

    fn members_of<'z>(z: &'z ZSet, spec: ZRangeSpec<'_>) -> Vec<&'z [u8]> {
        z.by_rank(spec.ranks(z, false, None))
            .map(|(m, _)| m)
            .collect()
    }

    #[test]
    fn bounds_read_as_redis() {
        assert_eq!(
            score_bound(b"(1.5"),
            Some(ScoreBound {
                value: 1.5,
                exclusive: true
            })
        );
        assert_eq!(
            score_bound(b"-inf").map(|b| b.value),
            Some(f64::NEG_INFINITY)
        );
        assert_eq!(score_bound(b"+inf").map(|b| b.value), Some(f64::INFINITY));
        assert_eq!(score_bound(b"(").map(|b| b.value), Some(0.0));
        for bad in [&b"nan"[..], b"abc", b"1 "] {
            assert_eq!(score_bound(bad), None, "{bad:?}");
        }
        assert_eq!(lex_bound(b"-"), Some(LexBound::Min));
        assert_eq!(lex_bound(b"[a"), Some(LexBound::Incl(b"a")));
        assert_eq!(lex_bound(b"("), Some(LexBound::Excl(b"")));
        for bad in [&b"a"[..], b"", b"--", b"+x"] {
            assert_eq!(lex_bound(bad), None, "{bad:?}");
        }
        let mut z = ZSet::default();
        z.insert(b"a", 0.0);
        z.insert(b"b", 0.0);
        let spec = ZRangeSpec::Lex(LexBound::Excl(b"a"), LexBound::Max);
        assert_eq!(members_of(&z, spec), vec![&b"b"[..]]);
    }
}
