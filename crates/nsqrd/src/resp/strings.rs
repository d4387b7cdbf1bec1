//! String commands: GET, SET (EX / PX / EXAT / PXAT / KEEPTTL / NX / XX / GET), GETSET,
//! GETDEL, GETEX, SETEX, PSETEX, SETNX, MGET, MSET, INCR / INCRBY / DECR / DECRBY, APPEND,
//! STRLEN.

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
    ctx.shared.ks.get(a.get(1), |v| value_or_null(out, v));
}

/// An expiry option still to be turned into a deadline.
struct TimeArg<'a> {
    value: &'a [u8],
    unit: Unit,
    absolute: bool,
}

/// Reads SET's options from argument 3 on (Redis's `parseExtendedStringArgumentsOrReply`):
/// the options and whether GET was given.
fn set_options(ctx: &mut Ctx<'_>, a: &Args<'_>) -> Option<(SetOptions, bool)> {
    let mut opts = SetOptions::default();
    let (mut get, mut keepttl) = (false, false);
    let mut time: Option<TimeArg<'_>> = None;
    let mut i = 3;
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
        if is(opt, "nx") && opts.condition != Condition::IfExists {
            opts.condition = Condition::IfMissing;
        } else if is(opt, "xx") && opts.condition != Condition::IfMissing {
            opts.condition = Condition::IfExists;
        } else if is(opt, "get") {
            get = true;
        } else if is(opt, "keepttl") && time.is_none() {
            keepttl = true;
        } else if let (Some((_, unit, absolute)), true, false) = (time_opt, has_next, keepttl) {
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
    opts.expiry = match time {
        Some(t) => Expiry::At(option_deadline(ctx, t.value, t.unit, t.absolute, "set")?),
        None if keepttl => Expiry::Keep,
        None => Expiry::Clear,
    };
    Some((opts, get))
}

/// Runs a SET; with `get`, the reply is the old value, else OK (or null when NX / XX refused).
fn run_set(ctx: &mut Ctx<'_>, key: &[u8], value: &[u8], opts: SetOptions, get: bool) {
    let Ctx { shared, s, out, .. } = ctx;
    if get {
        let mut old = |v: Option<&[u8]>| value_or_null(out, v);
        shared
            .ks
            .set(key, value, opts, Some(&mut old), &mut s.pending);
    } else if shared.ks.set(key, value, opts, None, &mut s.pending) {
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
    ctx.out.integer(i64::from(written));
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
    shared
        .ks
        .getdel(a.get(1), &mut s.pending, |v| value_or_null(out, v));
}

pub fn getex(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let change = match a.len() {
        2 => None,
        3 if is(a.get(2), "persist") => Some(Expiry::Clear),
        4 => {
            let (unit, absolute) = match a.get(2).to_ascii_lowercase().as_slice() {
                b"ex" => (Unit::Seconds, false),
                b"px" => (Unit::Millis, false),
                b"exat" => (Unit::Seconds, true),
                b"pxat" => (Unit::Millis, true),
                _ => return ctx.out.error(SYNTAX),
            };
            let Some(d) = option_deadline(ctx, a.get(3), unit, absolute, "getex") else {
                return;
            };
            Some(Expiry::At(d))
        }
        _ => return ctx.out.error(SYNTAX),
    };
    let Ctx { shared, s, out, .. } = ctx;
    shared
        .ks
        .getex(a.get(1), change, &mut s.pending, |v| value_or_null(out, v));
}

pub fn mget(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let keys: Vec<&[u8]> = a.iter().skip(1).collect();
    let out = &mut *ctx.out;
    out.array(keys.len());
    ctx.shared.ks.mget(&keys, |v| value_or_null(out, v));
}

pub fn mset(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    if a.len().is_multiple_of(2) {
        return wrong_arity(ctx, "mset");
    }
    let pairs: Vec<(&[u8], &[u8])> = (1..a.len())
        .step_by(2)
        .map(|i| (a.get(i), a.get(i + 1)))
        .collect();
    ctx.shared.ks.mset(&pairs, &mut ctx.s.pending);
    ctx.out.ok();
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
    ctx.out.integer(ctx.shared.ks.strlen(a.get(1)) as i64);
}
