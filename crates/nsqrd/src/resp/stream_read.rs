//! XREAD and XREADGROUP, with BLOCK.
//!
//! Each stream is served when it has entries after the id asked for (XREADGROUP `>`: after
//! the group's last delivered id; with an id: the consumer's own pending entries, always
//! served). When none is and BLOCK was given, the client blocks on the streams' keys through
//! the lists' machinery (`blocking.rs`): an XADD wakes the first client blocked on the key,
//! which runs its request again and, served, wakes the next one. The ids are resolved once,
//! when the client first blocks (`$` is the last id then), and kept with its place. A client
//! woken that finds nothing for it (an XREADGROUP whose entry another consumer took) passes
//! the wake-up on and takes a place at the back, so every reader of the key gets its turn.

use std::time::Duration;

use nsqr_kv::{Delivered, StreamError, StreamId};
use resp_wire::{Args, Protocol};
use tokio::time::Instant;

use super::args::{checked, is, NOT_INTEGER, SYNTAX};
use super::blocking::{run, NULL_ARRAY};
use super::session::Ctx;
use super::streams::{copied_entry, stream_error};

/// The options of XREAD / XREADGROUP.
struct ReadArgs<'a> {
    /// `None`: no BLOCK; `Some(None)`: BLOCK 0 (forever).
    block: Option<Option<Instant>>,
    count: usize,
    group: Option<(&'a [u8], &'a [u8])>,
    no_ack: bool,
    keys: Vec<&'a [u8]>,
    ids: Vec<&'a [u8]>,
}

/// BLOCK's milliseconds: the deadline (`None`: forever).
fn block_deadline(ctx: &mut Ctx<'_>, arg: &[u8]) -> Result<Option<Instant>, ()> {
    let Some(ms) = resp_wire::parse_i64(arg) else {
        ctx.out
            .error("ERR timeout is not an integer or out of range");
        return Err(());
    };
    if ms < 0 {
        ctx.out.error("ERR timeout is negative");
        return Err(());
    }
    if ms == 0 {
        return Ok(None);
    }
    Ok(Instant::now().checked_add(Duration::from_millis(ms as u64)))
}

fn read_args<'a>(ctx: &mut Ctx<'_>, a: &'a Args<'_>, grouped: bool) -> Option<ReadArgs<'a>> {
    let mut r = ReadArgs {
        block: None,
        count: 0,
        group: None,
        no_ack: false,
        keys: Vec::new(),
        ids: Vec::new(),
    };
    let mut streams = None;
    let mut i = 1;
    while i < a.len() {
        let more = a.len() - 1 - i;
        let opt = a.get(i);
        if is(opt, "block") && more > 0 {
            i += 1;
            r.block = Some(block_deadline(ctx, a.get(i)).ok()?);
        } else if is(opt, "count") && more > 0 {
            i += 1;
            let Some(n) = resp_wire::parse_i64(a.get(i)) else {
                ctx.out.error(NOT_INTEGER);
                return None;
            };
            r.count = usize::try_from(n).unwrap_or(0);
        } else if is(opt, "streams") && more > 0 {
            if !more.is_multiple_of(2) {
                ctx.out.error("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.");
                return None;
            }
            streams = Some(i + 1);
            break;
        } else if is(opt, "group") && more >= 2 {
            if !grouped {
                ctx.out.error(
                    "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.",
                );
                return None;
            }
            r.group = Some((a.get(i + 1), a.get(i + 2)));
            i += 2;
        } else if is(opt, "noack") {
            if !grouped {
                ctx.out.error(
                    "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.",
                );
                return None;
            }
            r.no_ack = true;
        } else {
            ctx.out.error(SYNTAX);
            return None;
        }
        i += 1;
    }
    let Some(first) = streams else {
        ctx.out.error(SYNTAX);
        return None;
    };
    if grouped && r.group.is_none() {
        ctx.out.error("ERR Missing GROUP option for XREADGROUP");
        return None;
    }
    let n = (a.len() - first) / 2;
    r.keys = a.iter().skip(first).take(n).collect();
    r.ids = a.iter().skip(first + n).collect();
    Some(r)
}

/// Checks each key (a stream or missing; with a group, a stream that has it) and resolves
/// its id: `$` the last id, `>` [`StreamId::MAX`].
fn resolve(ctx: &mut Ctx<'_>, r: &ReadArgs<'_>) -> Option<Vec<StreamId>> {
    let mut ids = Vec::with_capacity(r.keys.len());
    for (key, arg) in r.keys.iter().zip(&r.ids) {
        let res = ctx.shared.ks.read_stream(key, |s| {
            if let Some((group, _)) = r.group {
                if s.is_none_or(|s| s.group(group).is_none()) {
                    return Err(StreamError::no_group_read(key, group));
                }
            }
            match (*arg, r.group.is_some()) {
                (b"$", true) => Err(StreamError::DollarInGroup),
                (b"$", false) => Ok(s.map_or(StreamId::ZERO, |s| s.last_id())),
                (b">", false) => Err(StreamError::NewWithoutGroup),
                (b">", true) => Ok(StreamId::MAX),
                _ => StreamId::strict(arg, 0),
            }
        });
        match checked(ctx.out, res)? {
            Ok(id) => ids.push(id),
            Err(e) => {
                stream_error(ctx.out, e);
                return None;
            }
        }
    }
    Some(ids)
}

/// What each served stream gave.
type Served = Vec<(Vec<u8>, Vec<Delivered>)>;

/// XREAD: the entries after each id.
fn collect(ctx: &mut Ctx<'_>, r: &ReadArgs<'_>, ids: &[StreamId]) -> Option<Served> {
    let limit = if r.count == 0 { usize::MAX } else { r.count };
    let mut served = Vec::new();
    for (key, &after) in r.keys.iter().zip(ids) {
        let got = ctx.shared.ks.read_stream(key, |s| {
            let s = s?;
            let start = after.next()?;
            s.last().filter(|(top, _)| *top > after)?;
            Some(
                s.range(start, StreamId::MAX, false)
                    .take(limit)
                    .map(|(id, f)| (id, Some(Box::from(f))))
                    .collect::<Vec<_>>(),
            )
        });
        if let Some(got) = checked(ctx.out, got)? {
            served.push((key.to_vec(), got));
        }
    }
    Some(served)
}

/// XREADGROUP: delivers each stream's entries to the consumer.
fn deliver(ctx: &mut Ctx<'_>, r: &ReadArgs<'_>, ids: &[StreamId]) -> Option<Served> {
    let (group, consumer) = r.group?;
    let mut served = Vec::new();
    for (key, &id) in r.keys.iter().zip(ids) {
        let history = (id != StreamId::MAX).then_some(id);
        let got = ctx
            .shared
            .ks
            .write_stream(key, &mut ctx.s.pending, |s, now| {
                if s.group(group).is_none() {
                    return Err(StreamError::no_group_read(key, group).into());
                }
                Ok(s.read_group(group, consumer, history, r.count, r.no_ack, now))
            });
        if let Some(got) = checked(ctx.out, got)? {
            served.push((key.to_vec(), got));
        }
    }
    Some(served)
}

/// Serves what can be served: whether it replied (entries or an error).
fn serve(ctx: &mut Ctx<'_>, r: &ReadArgs<'_>, ids: &[StreamId]) -> bool {
    let served = if r.group.is_some() {
        deliver(ctx, r, ids)
    } else {
        collect(ctx, r, ids)
    };
    let Some(served) = served else {
        return true;
    };
    if served.is_empty() {
        return false;
    }
    let resp3 = ctx.proto() == Protocol::Resp3;
    if resp3 {
        ctx.out.map(served.len());
    } else {
        ctx.out.array(served.len());
    }
    for (key, entries) in served {
        if !resp3 {
            ctx.out.array(2);
        }
        ctx.out.bulk(nsqr_kv::db::user_key(&key));
        ctx.out.array(entries.len());
        for (id, f) in &entries {
            copied_entry(ctx.out, *id, f.as_deref());
        }
    }
    true
}

fn read(ctx: &mut Ctx<'_>, a: &Args<'_>, grouped: bool) {
    let Some(r) = read_args(ctx, a, grouped) else {
        return;
    };
    let kept = ctx
        .s
        .blocked
        .as_ref()
        .map(|b| b.stream_ids.clone())
        .filter(|ids| ids.len() == r.keys.len());
    let ids = match kept {
        Some(ids) => ids,
        None => match resolve(ctx, &r) {
            Some(ids) => ids,
            None => return,
        },
    };
    let Some(fresh) = r.block else {
        if !serve(ctx, &r, &ids) {
            ctx.out.null_array();
        }
        return;
    };
    let deadline = ctx.s.blocked.as_ref().map_or(fresh, |b| b.deadline);
    let attempt = |ctx: &mut Ctx<'_>| {
        if serve(ctx, &r, &ids) {
            return true;
        }
        // Woken for nothing: pass the wake-up on, and block again at the back.
        drop(ctx.s.blocked.take());
        false
    };
    run(ctx, &r.keys, deadline, attempt, NULL_ARRAY);
    if let Some(b) = &mut ctx.s.blocked {
        if b.stream_ids.is_empty() {
            b.stream_ids = ids;
        }
    }
}

/// XREAD [COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]
pub fn xread(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    read(ctx, a, false);
}

/// XREADGROUP GROUP group consumer [COUNT count] [BLOCK milliseconds] [NOACK] STREAMS key
/// [key ...] id [id ...]
pub fn xreadgroup(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    read(ctx, a, true);
}
