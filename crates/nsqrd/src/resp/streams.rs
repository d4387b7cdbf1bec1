//! Stream commands on entries: XADD XRANGE XREVRANGE XLEN XDEL XTRIM, with Redis 7.0's
//! argument rules, replies and error texts. The readers (XREAD, XREADGROUP) are in
//! `stream_read.rs`, the consumer groups in `stream_groups.rs`, XINFO and XSETID in
//! `stream_info.rs`.

use nsqr_kv::{AddId, StreamError, StreamFields, StreamId, Trim, TrimSpec};
use resp_wire::{Args, Reply};

use super::args::{checked, is, NOT_INTEGER, SYNTAX};
use super::session::Ctx;
use super::table::wrong_arity;

/// Trimming with `~` and no LIMIT removes at most this many entries per command (Redis's
/// `100 * stream-node-max-entries`).
const DEFAULT_APPROX_LIMIT: u64 = 100 * nsqr_kv::STREAM_NODE_ENTRIES as u64;

/// Writes a stream error as the reply.
pub fn stream_error(out: &mut Reply, e: StreamError) {
    out.error(&e.to_string());
}

/// One entry: its id and its fields and values (a null array for a deleted one).
pub fn entry(out: &mut Reply, id: StreamId, fields: Option<StreamFields<'_>>) {
    out.array(2);
    out.bulk(&id.to_bytes());
    match fields {
        Some(f) => {
            out.array(f.len());
            for item in f.iter() {
                out.bulk(item);
            }
        }
        None => out.null_array(),
    }
}

/// One entry whose fields a group read or a claim copied out (packed, as
/// `Box<[u8]>::from(StreamFields)` makes them).
pub fn copied_entry(out: &mut Reply, id: StreamId, packed: Option<&[u8]>) {
    entry(out, id, packed.and_then(StreamFields::packed));
}

/// A 64-bit integer argument; Redis's error otherwise.
fn int(ctx: &mut Ctx<'_>, arg: &[u8]) -> Option<i64> {
    let v = resp_wire::parse_i64(arg);
    if v.is_none() {
        ctx.out.error(NOT_INTEGER);
    }
    v
}

/// An id argument read by `parse`; the error reply otherwise.
pub fn id_arg(ctx: &mut Ctx<'_>, r: Result<StreamId, StreamError>) -> Option<StreamId> {
    r.map_err(|e| stream_error(ctx.out, e)).ok()
}

/// An interval's start (`(` excludes it); Redis's errors.
pub fn start_bound(ctx: &mut Ctx<'_>, arg: &[u8]) -> Option<StreamId> {
    let (id, ex) = StreamId::bound(arg, 0)
        .map_err(|e| stream_error(ctx.out, e))
        .ok()?;
    if !ex {
        return Some(id);
    }
    let next = id.next();
    if next.is_none() {
        ctx.out.error("ERR invalid start ID for the interval");
    }
    next
}

/// An interval's end (`(` excludes it).
pub fn end_bound(ctx: &mut Ctx<'_>, arg: &[u8]) -> Option<StreamId> {
    let (id, ex) = StreamId::bound(arg, u64::MAX)
        .map_err(|e| stream_error(ctx.out, e))
        .ok()?;
    if !ex {
        return Some(id);
    }
    let prev = id.prev();
    if prev.is_none() {
        ctx.out.error("ERR invalid end ID for the interval");
    }
    prev
}

/// XADD's and XTRIM's options.
#[derive(Default)]
struct AddArgs {
    trim: Option<TrimSpec>,
    no_mkstream: bool,
    id: Option<AddId>,
    /// Where the id is (XADD: the fields follow it).
    at: usize,
}

/// The threshold of MAXLEN or MINID, after an optional `=` or `~`: (strategy, approx, next
/// index).
fn threshold(
    ctx: &mut Ctx<'_>,
    a: &Args<'_>,
    i: usize,
    maxlen: bool,
) -> Option<(Trim, bool, usize)> {
    let more = a.len() - 1 - i;
    let next = a.get(i + 1);
    let mut at = i + 1;
    let mut approx = false;
    if more >= 2 && (next == b"~" || next == b"=") {
        approx = next == b"~";
        at += 1;
    }
    let arg = a.get(at);
    let strategy = if maxlen {
        let n = int(ctx, arg)?;
        if n < 0 {
            ctx.out.error("ERR The MAXLEN argument must be >= 0.");
            return None;
        }
        Trim::MaxLen(n as u64)
    } else {
        Trim::MinId(id_arg(ctx, StreamId::strict(arg, 0))?)
    };
    Some((strategy, approx, at))
}

/// Parses XADD's (`xadd`) or XTRIM's options from argument 2 as Redis does.
fn add_args(ctx: &mut Ctx<'_>, a: &Args<'_>, xadd: bool) -> Option<AddArgs> {
    let mut out = AddArgs::default();
    let (mut limit, mut limit_given) = (0u64, false);
    let mut strategy: Option<(Trim, bool)> = None;
    let mut i = 2;
    while i < a.len() {
        let more = a.len() - 1 - i;
        let opt = a.get(i);
        if xadd && opt == b"*" {
            out.id = Some(AddId::Auto);
            break;
        } else if (is(opt, "maxlen") || is(opt, "minid")) && more > 0 {
            if strategy.is_some() {
                ctx.out.error("ERR syntax error, MAXLEN and MINID options at the same time are not compatible");
                return None;
            }
            let (s, approx, at) = threshold(ctx, a, i, is(opt, "maxlen"))?;
            strategy = Some((s, approx));
            i = at;
        } else if is(opt, "limit") && more > 0 {
            let n = int(ctx, a.get(i + 1))?;
            if n < 0 {
                ctx.out.error("ERR The LIMIT argument must be >= 0.");
                return None;
            }
            (limit, limit_given) = (n as u64, true);
            i += 1;
        } else if xadd && is(opt, "nomkstream") {
            out.no_mkstream = true;
        } else if xadd {
            out.id = Some(add_id(ctx, opt)?);
            break;
        } else {
            ctx.out.error(SYNTAX);
            return None;
        }
        i += 1;
    }
    out.at = i;
    if limit > 0 && strategy.is_none() {
        ctx.out
            .error("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy");
        return None;
    }
    let Some((strategy, approx)) = strategy else {
        if !xadd {
            ctx.out
                .error("ERR syntax error, XTRIM must be called with a trimming strategy");
            return None;
        }
        return Some(out);
    };
    if limit_given && !approx {
        ctx.out
            .error("ERR syntax error, LIMIT cannot be used without the special ~ option");
        return None;
    }
    if !limit_given && approx {
        limit = DEFAULT_APPROX_LIMIT;
    }
    out.trim = Some(TrimSpec {
        strategy,
        approx,
        limit,
    });
    Some(out)
}

/// XADD's explicit id: `ms-seq`, `ms` or `ms-*`.
fn add_id(ctx: &mut Ctx<'_>, arg: &[u8]) -> Option<AddId> {
    if let Some(ms) = arg.strip_suffix(b"-*") {
        return match StreamId::parse(ms, 0) {
            Some(id) if !ms.contains(&b'-') => Some(AddId::AutoSeq(id.ms)),
            _ => {
                stream_error(ctx.out, StreamError::InvalidId);
                None
            }
        };
    }
    let id = id_arg(ctx, StreamId::strict(arg, 0))?;
    if id == StreamId::ZERO {
        stream_error(ctx.out, StreamError::IdZero);
        return None;
    }
    Some(AddId::Explicit(id))
}

/// XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value ...
pub fn xadd(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let Some(args) = add_args(ctx, a, true) else {
        return;
    };
    let fields = args.at + 1;
    let (Some(id), n) = (args.id, a.len().saturating_sub(fields)) else {
        return wrong_arity(ctx, "xadd");
    };
    if n < 2 || n % 2 == 1 {
        return wrong_arity(ctx, "xadd");
    }
    let pairs: Vec<&[u8]> = a.iter().skip(fields).collect();
    let r = ctx
        .shared
        .ks
        .write_stream(a.get(1), &mut ctx.s.pending, |s, now| {
            if args.no_mkstream && !s.exists() {
                return Ok((None, Vec::new()));
            }
            let (id, ops) = s.add(id, &pairs, args.trim, now)?;
            Ok((Some(id), ops))
        });
    match checked(ctx.out, r) {
        Some(Some(id)) => ctx.out.bulk(&id.to_bytes()),
        Some(None) => ctx.out.null(),
        None => {}
    }
}

/// XRANGE / XREVRANGE key start end [COUNT count] (XREVRANGE names the end first).
fn range(ctx: &mut Ctx<'_>, a: &Args<'_>, rev: bool) {
    let (s, e) = if rev {
        (a.get(3), a.get(2))
    } else {
        (a.get(2), a.get(3))
    };
    let Some(start) = start_bound(ctx, s) else {
        return;
    };
    let Some(end) = end_bound(ctx, e) else {
        return;
    };
    let mut count: Option<usize> = None;
    let mut i = 4;
    while i < a.len() {
        if is(a.get(i), "count") && i + 1 < a.len() {
            let n = match int(ctx, a.get(i + 1)) {
                Some(n) => n,
                None => return,
            };
            count = Some(usize::try_from(n).unwrap_or(0));
            i += 2;
        } else {
            return ctx.out.error(SYNTAX);
        }
    }
    let out = &mut *ctx.out;
    let r = ctx.shared.ks.read_stream(a.get(1), |st| {
        let Some(st) = st else {
            return out.array(0);
        };
        let limit = count.unwrap_or(usize::MAX);
        if limit == 0 {
            return out.null_array();
        }
        let items: Vec<_> = st.range(start, end, rev).take(limit).collect();
        out.array(items.len());
        for (id, f) in items {
            entry(out, id, Some(f));
        }
    });
    checked(ctx.out, r);
}

pub fn xrange(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    range(ctx, a, false);
}

pub fn xrevrange(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    range(ctx, a, true);
}

pub fn xlen(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let out = &mut *ctx.out;
    let r = ctx
        .shared
        .ks
        .read_stream(a.get(1), |s| out.integer(s.map_or(0, |s| s.len()) as i64));
    checked(ctx.out, r);
}

/// XDEL key id [id ...]: every id is parsed before the key is looked at.
pub fn xdel(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let mut ids = Vec::with_capacity(a.len() - 2);
    for arg in a.iter().skip(2) {
        let Some(id) = id_arg(ctx, StreamId::strict(arg, 0)) else {
            return;
        };
        ids.push(id);
    }
    let r = ctx
        .shared
        .ks
        .write_stream(a.get(1), &mut ctx.s.pending, |s, _| Ok(s.delete_ids(&ids)));
    if let Some(n) = checked(ctx.out, r) {
        ctx.out.integer(n as i64);
    }
}

/// XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count].
pub fn xtrim(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let Some(args) = add_args(ctx, a, false) else {
        return;
    };
    let Some(spec) = args.trim else {
        return ctx.out.error(SYNTAX);
    };
    let r = ctx
        .shared
        .ks
        .write_stream(a.get(1), &mut ctx.s.pending, |s, _| Ok(s.trim_by(spec)));
    if let Some(n) = checked(ctx.out, r) {
        ctx.out.integer(n as i64);
    }
}
