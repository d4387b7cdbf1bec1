//! String commands: GET, SET (EX / PX / EXAT / PXAT / KEEPTTL / NX / XX / GET), GETSET,
//! GETDEL, GETEX, SETEX, PSETEX, SETNX, MGET, MSET, MSETNX, INCR / INCRBY / DECR / DECRBY,
//! INCRBYFLOAT, APPEND, STRLEN, GETRANGE / SUBSTR, SETRANGE.

use nsqr_kv::{Condition, Expiry, SetOptions};
use resp_wire::{Args, Reply};

use super::args::{self, is, option_deadline, Unit, SYNTAX};
use super::session::Ctx;
use super::table::wrong_arity;

fn value_or_null(out: &mut Reply, v: Option<&[u8]>) {
    match v {
        Some(v) => out.bulk(v),
        None => out.null(),
    }
}

pub fn get(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let out = &mut *ctx.out;
    let r = ctx.shared.ks.get(a.get(1), |v| value_or_null(out, v));
    args::checked(out, r);
}

/// An expiry option still to be turned into a deadline.
struct TimeArg<'a> {
    value: &'a [u8],
    unit: Unit,
    absolute: bool,
}

/// The options SET (from argument 3) and GETEX (from argument 2) take, read as Redis's
/// `parseExtendedStringArgumentsOrReply` does: a time option may be repeated (the last one
/// counts) but not mixed with another unit, KEEPTTL or PERSIST.
struct StringOptions {
    condition: Condition,
    /// SET ... GET.
    get: bool,
    keepttl: bool,
    /// GETEX ... PERSIST.
    persist: bool,
    deadline: Option<u64>,
}

/// Which command's options [`string_options`] reads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum OptionsOf {
    Set,
    GetEx,
}

fn string_options(ctx: &mut Ctx<'_>, a: &Args<'_>, of: OptionsOf) -> Option<StringOptions> {
    let set = of == OptionsOf::Set;
    let mut o = StringOptions {
        condition: Condition::Always,
        get: false,
        keepttl: false,
        persist: false,
        deadline: None,
    };
    let mut time: Option<TimeArg<'_>> = None;
    let mut i = if set { 3 } else { 2 };
    while i < a.len() {
        let opt = a.get(i);
        let has_next = i + 1 < a.len();
        let time_opt = [
            ("ex", Unit::Seconds, false),
            ("px", Unit::Millis, false),
            ("exat", Unit::Seconds, true),
            ("pxat", Unit::Millis, true),
        ]
        .into_iter()
        .find(|(name, _, _)| is(opt, name));
        if set && is(opt, "nx") && o.condition != Condition::IfExists {
            o.condition = Condition::IfMissing;
        } else if set && is(opt, "xx") && o.condition != Condition::IfMissing {
            o.condition = Condition::IfExists;
        } else if set && is(opt, "get") {
            o.get = true;
        } else if set && is(opt, "keepttl") && time.is_none() {
            o.keepttl = true;
        } else if !set && is(opt, "persist") && time.is_none() {
            o.persist = true;
        } else if let (Some((_, unit, absolute)), true, false) =
            (time_opt, has_next, o.keepttl || o.persist)
        {
            if time
                .as_ref()
                .is_some_and(|t| (t.unit, t.absolute) != (unit, absolute))
            {
                ctx.out.error(SYNTAX);
                return None;
            }
            time = Some(TimeArg {
                value: a.get(i + 1),
                unit,
                absolute,
            });
            i += 1;
        } else {
            ctx.out.error(SYNTAX);
            return None;
        }
        i += 1;
    }
    if let Some(t) = time {
        let command = if set { "set" } else { "getex" };
        o.deadline = Some(option_deadline(ctx, t.value, t.unit, t.absolute, command)?);
    }
    Some(o)
}

/// SET's options and whether GET was given.
fn set_options(ctx: &mut Ctx<'_>, a: &Args<'_>) -> Option<(SetOptions, bool)> {
    let o = string_options(ctx, a, OptionsOf::Set)?;
    let expiry = match o.deadline {
        Some(d) => Expiry::At(d),
        None if o.keepttl => Expiry::Keep,
        None => Expiry::Clear,
    };
    let opts = SetOptions {
        condition: o.condition,
        expiry,
    };
    Some((opts, o.get))
}

/// Runs a SET; with `get`, the reply is the old value, else OK (or null when NX / XX refused).
fn run_set(ctx: &mut Ctx<'_>, key: &[u8], value: &[u8], opts: SetOptions, get: bool) {
    let Ctx { shared, s, out, .. } = ctx;
    if get {
        let mut old = |v: Option<&[u8]>| value_or_null(out, v);
        let r = shared
            .ks
            .set(key, value, opts, Some(&mut old), &mut s.pending);
        args::checked(out, r);
    } else if shared.ks.set(key, value, opts, None, &mut s.pending) == Ok(true) {
        out.ok();
    } else {
        out.null();
    }
}

pub fn set(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    if let Some((opts, get)) = set_options(ctx, a) {
        run_set(ctx, a.get(1), a.get(2), opts, get);
    }
}

pub fn getset(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    run_set(ctx, a.get(1), a.get(2), SetOptions::default(), true);
}

pub fn setnx(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let opts = SetOptions {
        condition: Condition::IfMissing,
        ..SetOptions::default()
    };
    let written = ctx
        .shared
        .ks
        .set(a.get(1), a.get(2), opts, None, &mut ctx.s.pending);
    ctx.out.integer(i64::from(written == Ok(true)));
}

fn set_with_ttl(ctx: &mut Ctx<'_>, a: &Args<'_>, unit: Unit, command: &str) {
    let Some(d) = option_deadline(ctx, a.get(2), unit, false, command) else {
        return;
    };
    let opts = SetOptions {
        expiry: Expiry::At(d),
        ..SetOptions::default()
    };
    run_set(ctx, a.get(1), a.get(3), opts, false);
}

pub fn setex(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    set_with_ttl(ctx, a, Unit::Seconds, "setex");
}

pub fn psetex(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    set_with_ttl(ctx, a, Unit::Millis, "psetex");
}

pub fn getdel(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let Ctx { shared, s, out, .. } = ctx;
    let r = shared
        .ks
        .getdel(a.get(1), &mut s.pending, |v| value_or_null(out, v));
    args::checked(out, r);
}

pub fn getex(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let Some(o) = string_options(ctx, a, OptionsOf::GetEx) else {
        return;
    };
    let change = match o.deadline {
        Some(d) => Some(Expiry::At(d)),
        None if o.persist => Some(Expiry::Clear),
        None => None,
    };
    let Ctx { shared, s, out, .. } = ctx;
    let r = shared
        .ks
        .getex(a.get(1), change, &mut s.pending, |v| value_or_null(out, v));
    args::checked(out, r);
}

pub fn mget(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let keys: Vec<&[u8]> = a.iter().skip(1).collect();
    let out = &mut *ctx.out;
    out.array(keys.len());
    ctx.shared.ks.mget(&keys, |v| value_or_null(out, v));
}

/// MSET's and MSETNX's key-value pairs (an odd count is a wrong number of arguments).
fn pairs<'a>(ctx: &mut Ctx<'_>, a: &Args<'a>, name: &str) -> Option<Vec<(&'a [u8], &'a [u8])>> {
    if a.len().is_multiple_of(2) {
        wrong_arity(ctx, name);
        return None;
    }
    Some(
        (1..a.len())
            .step_by(2)
            .map(|i| (a.get(i), a.get(i + 1)))
            .collect(),
    )
}

pub fn mset(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    if let Some(pairs) = pairs(ctx, a, "mset") {
        ctx.shared.ks.mset(&pairs, &mut ctx.s.pending);
        ctx.out.ok();
    }
}

pub fn msetnx(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    if let Some(pairs) = pairs(ctx, a, "msetnx") {
        let written = ctx.shared.ks.msetnx(&pairs, &mut ctx.s.pending);
        ctx.out.integer(i64::from(written));
    }
}

fn add(ctx: &mut Ctx<'_>, key: &[u8], delta: i64) {
    match ctx.shared.ks.incr_by(key, delta, &mut ctx.s.pending) {
        Ok(v) => ctx.out.integer(v),
        Err(e) => ctx.out.error(&e.to_string()),
    }
}

pub fn incr(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    add(ctx, a.get(1), 1);
}

pub fn decr(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    add(ctx, a.get(1), -1);
}

pub fn incrby(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    if let Some(d) = args::int(ctx, a.get(2)) {
        add(ctx, a.get(1), d);
    }
}

pub fn decrby(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let Some(d) = args::int(ctx, a.get(2)) else {
        return;
    };
    match d.checked_neg() {
        Some(d) => add(ctx, a.get(1), d),
        None => ctx.out.error("ERR decrement would overflow"),
    }
}

pub fn append(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    match ctx.shared.ks.append(a.get(1), a.get(2), &mut ctx.s.pending) {
        Ok(n) => ctx.out.integer(n as i64),
        Err(e) => ctx.out.error(&e.to_string()),
    }
}

pub fn strlen(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    if let Some(n) = args::checked(ctx.out, ctx.shared.ks.strlen(a.get(1))) {
        ctx.out.integer(n as i64);
    }
}

pub fn incrbyfloat(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let Some(delta) = nsqr_kv::parse_float(a.get(2)) else {
        return ctx.out.error(&nsqr_kv::KvError::NotFloat.to_string());
    };
    match ctx
        .shared
        .ks
        .incr_by_float(a.get(1), delta, &mut ctx.s.pending)
    {
        Ok(v) => ctx.out.bulk(&v),
        Err(e) => ctx.out.error(&e.to_string()),
    }
}

/// GETRANGE and SUBSTR.
pub fn getrange(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let Some(start) = args::int(ctx, a.get(2)) else {
        return;
    };
    let Some(end) = args::int(ctx, a.get(3)) else {
        return;
    };
    let out = &mut *ctx.out;
    let r = ctx
        .shared
        .ks
        .getrange(a.get(1), start, end, |v| out.bulk(v));
    args::checked(out, r);
}

pub fn setrange(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let Some(offset) = args::int(ctx, a.get(2)) else {
        return;
    };
    let Ok(offset) = usize::try_from(offset) else {
        return ctx.out.error("ERR offset is out of range");
    };
    match ctx
        .shared
        .ks
        .setrange(a.get(1), offset, a.get(3), &mut ctx.s.pending)
    {
        Ok(n) => ctx.out.integer(n as i64),
        Err(e) => ctx.out.error(&e.to_string()),
    }
}
