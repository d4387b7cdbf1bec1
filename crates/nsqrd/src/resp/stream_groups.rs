//! Consumer group commands: XGROUP (CREATE, SETID, DESTROY, CREATECONSUMER, DELCONSUMER,
//! HELP), XACK, XPENDING, XCLAIM, XAUTOCLAIM, with Redis 7.0's order of checks (arguments
//! Redis parses first are parsed first), replies and error texts.

use nsqr_kv::{AutoClaim, ClaimOptions, Delivered, KvError, Stream, StreamError, StreamId};
use resp_wire::{Args, Reply};

use super::args::{checked, is, NOT_INTEGER, SYNTAX};
use super::command_meta;
use super::session::Ctx;
use super::streams::{copied_entry, end_bound, id_arg, start_bound, stream_error};
use super::table::{arity_ok, wrong_arity};

const XGROUP_HELP: [&str; 17] = [
    "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CREATE <key> <groupname> <id|$> [option]",
    "    Create a new consumer group. Options are:",
    "    * MKSTREAM",
    "      Create the empty stream if it does not exist.",
    "    * ENTRIESREAD entries_read",
    "      Set the group's entries_read counter (internal use).",
    "CREATECONSUMER <key> <groupname> <consumer>",
    "    Create a new consumer in the specified group.",
    "DELCONSUMER <key> <groupname> <consumer>",
    "    Remove the specified consumer.",
    "DESTROY <key> <groupname>",
    "    Remove the specified group.",
    "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
    "    Set the current group ID and entries_read counter.",
    "HELP",
    "    Prints this help.",
];

/// The HELP reply of a container command.
pub fn help(out: &mut Reply, lines: &[&str]) {
    out.array(lines.len());
    for l in lines {
        out.simple(l.as_bytes());
    }
}

/// Checks a container command's subcommand as Redis does: unknown, then its arity; the
/// subcommand's name in lower case if it may run.
pub fn subcommand(ctx: &mut Ctx<'_>, a: &Args<'_>, command: &str) -> Option<String> {
    let sub = String::from_utf8_lossy(a.get(1)).to_ascii_lowercase();
    let full = format!("{command}|{sub}");
    let Some(meta) = command_meta::COMMANDS.iter().find(|m| m.name == full) else {
        let given = String::from_utf8_lossy(a.get(1));
        let upper = command.to_ascii_uppercase();
        ctx.out.error(&format!(
            "ERR unknown subcommand '{given}'. Try {upper} HELP."
        ));
        return None;
    };
    if !arity_ok(meta.arity, a.len()) {
        wrong_arity(ctx, &full);
        return None;
    }
    Some(sub)
}

/// `ERR unknown subcommand or wrong number of arguments for '<sub>'. Try <COMMAND> HELP.`
pub fn sub_syntax(ctx: &mut Ctx<'_>, a: &Args<'_>, command: &str) {
    let given = String::from_utf8_lossy(a.get(1));
    ctx.out.error(&format!(
        "ERR unknown subcommand or wrong number of arguments for '{given}'. Try {command} HELP."
    ));
}

/// ENTRIESREAD's value: at least 0, or -1.
fn entries_read(ctx: &mut Ctx<'_>, arg: &[u8]) -> Option<i64> {
    let Some(n) = resp_wire::parse_i64(arg) else {
        ctx.out.error(NOT_INTEGER);
        return None;
    };
    if n < -1 {
        ctx.out
            .error("ERR value for ENTRIESREAD must be positive or -1");
        return None;
    }
    Some(n)
}

/// XGROUP CREATE's options: MKSTREAM, ENTRIESREAD.
fn create_options(ctx: &mut Ctx<'_>, a: &Args<'_>) -> Option<(bool, i64)> {
    let (mut mkstream, mut read) = (false, -1);
    let mut i = 5;
    while i < a.len() {
        if is(a.get(i), "mkstream") {
            mkstream = true;
            i += 1;
        } else if is(a.get(i), "entriesread") && i + 1 < a.len() {
            read = entries_read(ctx, a.get(i + 1))?;
            i += 2;
        } else {
            sub_syntax(ctx, a, "XGROUP");
            return None;
        }
    }
    Some((mkstream, read))
}

/// `$` (`None`) or an id.
fn group_id(arg: &[u8], strict: bool) -> Result<Option<StreamId>, StreamError> {
    match arg {
        b"$" => Ok(None),
        _ if strict => StreamId::strict(arg, 0).map(Some),
        _ => StreamId::loose(arg, 0).map(Some),
    }
}

pub fn xgroup(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    if a.len() == 2 && is(a.get(1), "help") {
        return help(ctx.out, &XGROUP_HELP);
    }
    let Some(sub) = subcommand(ctx, a, "xgroup") else {
        return;
    };
    let (mut mkstream, mut read) = (false, -1);
    if sub == "create" {
        match create_options(ctx, a) {
            Some(o) => (mkstream, read) = o,
            None => return,
        }
    } else if sub == "setid" && a.len() == 7 {
        if !is(a.get(5), "entriesread") {
            return sub_syntax(ctx, a, "XGROUP");
        }
        match entries_read(ctx, a.get(6)) {
            Some(n) => read = n,
            None => return,
        }
    } else if sub == "setid" && a.len() != 5 {
        return sub_syntax(ctx, a, "XGROUP");
    }
    let (key, group) = (a.get(2), a.get(3));
    let needs_group = matches!(sub.as_str(), "setid" | "createconsumer" | "delconsumer");
    let r = ctx
        .shared
        .ks
        .write_stream(key, &mut ctx.s.pending, |s, now| {
            if !mkstream || s.exists() {
                s.check_group(key, group, needs_group)?;
            }
            group_command(s, &sub, a, read, now)
        });
    match checked(ctx.out, r) {
        Some(None) => ctx.out.ok(),
        Some(Some(n)) => ctx.out.integer(n),
        None => {}
    }
}

/// Runs an XGROUP subcommand on its stream: `None` for OK, else the integer reply.
fn group_command(
    s: &mut Stream,
    sub: &str,
    a: &Args<'_>,
    read: i64,
    now: u64,
) -> nsqr_kv::StreamOutcome<Option<i64>> {
    let group = a.get(3);
    Ok(match sub {
        "create" => {
            let id = group_id(a.get(4), true)?;
            (None, s.create_group(group, id, read)?)
        }
        "setid" => {
            let id = group_id(a.get(4), false)?;
            (None, s.set_group_id(group, id, read))
        }
        "destroy" => {
            let (gone, ops) = s.destroy_group(group);
            (Some(i64::from(gone)), ops)
        }
        "createconsumer" => {
            let (created, ops) = s.create_consumer(group, a.get(4), now);
            (Some(i64::from(created)), ops)
        }
        _ => {
            let (n, ops) = s.delete_consumer(group, a.get(4));
            (Some(n as i64), ops)
        }
    })
}

/// XACK key group id [id ...]: 0 for a missing key or group, before the ids are parsed.
pub fn xack(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let group = a.get(2);
    let ids: Result<Vec<StreamId>, StreamError> = a
        .iter()
        .skip(3)
        .map(|arg| StreamId::strict(arg, 0))
        .collect();
    let r = ctx
        .shared
        .ks
        .write_stream(a.get(1), &mut ctx.s.pending, |s, _| {
            if s.group(group).is_none() {
                return Ok((0, Vec::new()));
            }
            let ids = ids?;
            Ok((s.ack(group, &ids), Vec::new()))
        });
    if let Some(n) = checked(ctx.out, r) {
        ctx.out.integer(n as i64);
    }
}

/// NOGROUP (`No such key ... or consumer group ...`) unless `key` is a stream with `group`;
/// false once the error is the reply.
fn has_group(ctx: &mut Ctx<'_>, key: &[u8], group: &[u8]) -> bool {
    let r = ctx
        .shared
        .ks
        .read_stream(key, |s| s.is_some_and(|s| s.group(group).is_some()));
    match checked(ctx.out, r) {
        Some(true) => true,
        Some(false) => {
            stream_error(ctx.out, StreamError::no_group(key, group));
            false
        }
        None => false,
    }
}

/// XPENDING's extended form: IDLE, start, end, count, consumer.
struct PendingRange<'a> {
    min_idle: i64,
    start: StreamId,
    end: StreamId,
    count: usize,
    consumer: Option<&'a [u8]>,
}

fn pending_range<'a>(ctx: &mut Ctx<'_>, a: &'a Args<'_>) -> Option<PendingRange<'a>> {
    let mut at = 3;
    let mut min_idle = 0;
    if is(a.get(3), "idle") {
        min_idle = resp_wire::parse_i64(a.get(4)).or_else(|| {
            ctx.out.error(NOT_INTEGER);
            None
        })?;
        if a.len() < 8 {
            ctx.out.error(SYNTAX);
            return None;
        }
        at = 5;
    }
    let Some(count) = resp_wire::parse_i64(a.get(at + 2)) else {
        ctx.out.error(NOT_INTEGER);
        return None;
    };
    let start = start_bound(ctx, a.get(at))?;
    let end = end_bound(ctx, a.get(at + 1))?;
    Some(PendingRange {
        min_idle,
        start,
        end,
        count: usize::try_from(count).unwrap_or(0),
        consumer: (at + 3 < a.len()).then(|| a.get(at + 3)),
    })
}

/// XPENDING key group [[IDLE min-idle-time] start end count [consumer]]
pub fn xpending(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    if a.len() != 3 && !(6..=9).contains(&a.len()) {
        return ctx.out.error(SYNTAX);
    }
    let range = if a.len() >= 6 {
        match pending_range(ctx, a) {
            Some(r) => Some(r),
            None => return,
        }
    } else {
        None
    };
    let (key, group) = (a.get(1), a.get(2));
    if !has_group(ctx, key, group) {
        return;
    }
    let now = ctx.shared.ks.now_ms();
    let out = &mut *ctx.out;
    let r = ctx.shared.ks.read_stream(key, |s| {
        let Some(g) = s.and_then(|s| s.group(group)) else {
            return stream_error(out, StreamError::no_group(key, group));
        };
        match &range {
            None => pending_summary(out, g),
            Some(r) => pending_entries(out, g, r, now),
        }
    });
    checked(ctx.out, r);
}

fn pending_summary(out: &mut Reply, g: &nsqr_kv::Group) {
    out.array(4);
    out.integer(g.pel().len() as i64);
    let (Some((first, _)), Some((last, _))) = (g.pel().first_key_value(), g.pel().last_key_value())
    else {
        out.null();
        out.null();
        return out.null_array();
    };
    out.bulk(&first.to_bytes());
    out.bulk(&last.to_bytes());
    let owners: Vec<_> = g
        .consumers()
        .filter(|(_, c)| !c.pending().is_empty())
        .collect();
    out.array(owners.len());
    for (name, c) in owners {
        out.array(2);
        out.bulk(name);
        out.bulk(itoa::Buffer::new().format(c.pending().len()).as_bytes());
    }
}

fn pending_entries(out: &mut Reply, g: &nsqr_kv::Group, r: &PendingRange<'_>, now: u64) {
    let ids: Box<dyn Iterator<Item = StreamId>> = match r.consumer {
        Some(name) => match g.consumer(name) {
            Some(c) => Box::new(c.pending().range(r.start..).copied()),
            None => return out.array(0),
        },
        None => Box::new(g.pel().range(r.start..).map(|(id, _)| *id)),
    };
    let rows: Vec<_> = ids
        .take_while(|id| *id <= r.end)
        .filter_map(|id| g.pel().get(&id).map(|n| (id, n)))
        .filter(|(_, n)| r.min_idle <= 0 || now.saturating_sub(n.delivered) >= r.min_idle as u64)
        .take(r.count)
        .collect();
    out.array(rows.len());
    for (id, n) in rows {
        out.array(4);
        out.bulk(&id.to_bytes());
        out.bulk(&n.consumer);
        out.integer(now.saturating_sub(n.delivered) as i64);
        out.integer(n.count as i64);
    }
}

/// An integer option of XCLAIM / XAUTOCLAIM with its own error text.
fn claim_int(ctx: &mut Ctx<'_>, arg: &[u8], what: &str) -> Option<i64> {
    let n = resp_wire::parse_i64(arg);
    if n.is_none() {
        ctx.out.error(&format!("ERR Invalid {what}"));
    }
    n
}

/// XCLAIM's ids and options, from argument 5.
fn claim_args(ctx: &mut Ctx<'_>, a: &Args<'_>, now: u64) -> Option<(Vec<StreamId>, ClaimOptions)> {
    let mut ids = Vec::new();
    let mut j = 5;
    while j < a.len() {
        match StreamId::loose(a.get(j), 0) {
            Ok(id) => ids.push(id),
            Err(_) => break,
        }
        j += 1;
    }
    let mut o = ClaimOptions::default();
    while j < a.len() {
        let more = a.len() - 1 - j;
        let opt = a.get(j);
        if is(opt, "force") {
            o.force = true;
        } else if is(opt, "justid") {
            o.just_id = true;
        } else if is(opt, "idle") && more > 0 {
            j += 1;
            let idle = claim_int(ctx, a.get(j), "IDLE option argument for XCLAIM")?;
            o.delivered = Some((now as i64).saturating_sub(idle));
        } else if is(opt, "time") && more > 0 {
            j += 1;
            o.delivered = Some(claim_int(ctx, a.get(j), "TIME option argument for XCLAIM")?);
        } else if is(opt, "retrycount") && more > 0 {
            j += 1;
            let n = claim_int(ctx, a.get(j), "RETRYCOUNT option argument for XCLAIM")?;
            o.retry_count = u64::try_from(n).ok();
        } else if is(opt, "lastid") && more > 0 {
            j += 1;
            o.last_id = Some(id_arg(ctx, StreamId::strict(a.get(j), 0))?);
        } else {
            let given = String::from_utf8_lossy(opt);
            ctx.out
                .error(&format!("ERR Unrecognized XCLAIM option '{given}'"));
            return None;
        }
        j += 1;
    }
    Some((ids, o))
}

/// Claimed entries: with JUSTID their ids, else the entries.
fn claimed(out: &mut Reply, items: &[Delivered], just_id: bool) {
    out.array(items.len());
    for (id, f) in items {
        if just_id {
            out.bulk(&id.to_bytes());
        } else {
            copied_entry(out, *id, f.as_deref());
        }
    }
}

/// XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME ms] [RETRYCOUNT
/// count] [FORCE] [JUSTID] [LASTID id]
pub fn xclaim(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let (key, group, consumer) = (a.get(1), a.get(2), a.get(3));
    if !has_group(ctx, key, group) {
        return;
    }
    let Some(min_idle) = claim_int(ctx, a.get(4), "min-idle-time argument for XCLAIM") else {
        return;
    };
    let now = ctx.shared.ks.now_ms();
    let Some((ids, mut o)) = claim_args(ctx, a, now) else {
        return;
    };
    o.min_idle = u64::try_from(min_idle).unwrap_or(0);
    let r = ctx
        .shared
        .ks
        .write_stream(key, &mut ctx.s.pending, |s, now| {
            if s.group(group).is_none() {
                return Err(KvError::from(StreamError::no_group(key, group)));
            }
            Ok(s.claim(group, consumer, &ids, o, now))
        });
    if let Some(items) = checked(ctx.out, r) {
        claimed(ctx.out, &items, o.just_id);
    }
}

/// XAUTOCLAIM's COUNT and JUSTID, from argument 6.
fn autoclaim_options(ctx: &mut Ctx<'_>, a: &Args<'_>) -> Option<(usize, bool)> {
    let (mut count, mut just_id) = (100usize, false);
    let mut j = 6;
    while j < a.len() {
        if is(a.get(j), "count") && j + 1 < a.len() {
            let max = i64::MAX / 16;
            match resp_wire::parse_i64(a.get(j + 1)) {
                Some(n) if (1..=max).contains(&n) => count = n as usize,
                _ => {
                    ctx.out.error("ERR COUNT must be > 0");
                    return None;
                }
            }
            j += 1;
        } else if is(a.get(j), "justid") {
            just_id = true;
        } else {
            ctx.out.error(SYNTAX);
            return None;
        }
        j += 1;
    }
    Some((count, just_id))
}

/// XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]
pub fn xautoclaim(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let (key, group, consumer) = (a.get(1), a.get(2), a.get(3));
    let Some(min_idle) = claim_int(ctx, a.get(4), "min-idle-time argument for XAUTOCLAIM") else {
        return;
    };
    let Some(start) = start_bound(ctx, a.get(5)) else {
        return;
    };
    let Some((count, just_id)) = autoclaim_options(ctx, a) else {
        return;
    };
    let args = AutoClaim {
        start,
        min_idle: u64::try_from(min_idle).unwrap_or(0),
        count,
        just_id,
    };
    let r = ctx
        .shared
        .ks
        .write_stream(key, &mut ctx.s.pending, |s, now| {
            if s.group(group).is_none() {
                return Err(KvError::from(StreamError::no_group(key, group)));
            }
            Ok(s.auto_claim(group, consumer, args, now))
        });
    let Some(c) = checked(ctx.out, r) else {
        return;
    };
    ctx.out.array(3);
    ctx.out.bulk(&c.next.to_bytes());
    claimed(ctx.out, &c.claimed, just_id);
    ctx.out.array(c.deleted.len());
    for id in &c.deleted {
        ctx.out.bulk(&id.to_bytes());
    }
}
