//! XINFO (STREAM with FULL, GROUPS, CONSUMERS, HELP) and XSETID, as Redis 7.0 answers them:
//! maps in RESP3, flat name/value arrays in RESP2. `radix-tree-keys` is the number of nodes
//! of entries, as Redis's is the number of its listpacks, and `radix-tree-nodes` the size of
//! the radix tree Redis would build over their keys.

use nsqr_kv::{Group, Stream, StreamError, StreamId};
use resp_wire::{Args, Protocol, Reply};

use super::args::{checked, is, NOT_INTEGER, SYNTAX};
use super::session::Ctx;
use super::stream_groups::{help, sub_syntax, subcommand};
use super::streams::{entry, id_arg, stream_error};

const XINFO_HELP: [&str; 9] = [
    "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CONSUMERS <key> <groupname>",
    "    Show consumers of <groupname>.",
    "GROUPS <key>",
    "    Show the stream consumer groups.",
    "STREAM <key> [FULL [COUNT <count>]",
    "    Show information about the stream.",
    "HELP",
    "    Prints this help.",
];

/// A map of `n` fields: a map in RESP3, an array of names and values in RESP2.
fn fields(out: &mut Reply, n: usize) {
    if out.protocol() == Protocol::Resp3 {
        out.map(n);
    } else {
        out.array(n * 2);
    }
}

fn name(out: &mut Reply, n: &str) {
    out.bulk(n.as_bytes());
}

fn id_field(out: &mut Reply, n: &str, id: StreamId) {
    name(out, n);
    out.bulk(&id.to_bytes());
}

fn int_field(out: &mut Reply, n: &str, v: i64) {
    name(out, n);
    out.integer(v);
}

/// The head of XINFO STREAM: length to recorded-first-entry-id.
fn stream_head(out: &mut Reply, s: &Stream) {
    int_field(out, "length", s.len() as i64);
    int_field(out, "radix-tree-keys", s.nodes() as i64);
    int_field(out, "radix-tree-nodes", s.radix_tree_nodes() as i64);
    id_field(out, "last-generated-id", s.last_id());
    id_field(out, "max-deleted-entry-id", s.max_deleted());
    int_field(out, "entries-added", s.entries_added() as i64);
    id_field(out, "recorded-first-entry-id", s.first_id());
}

fn entries_read(out: &mut Reply, g: &Group) {
    name(out, "entries-read");
    if g.entries_read >= 0 {
        out.integer(g.entries_read);
    } else {
        out.null();
    }
}

fn lag(out: &mut Reply, s: &Stream, g: &Group) {
    name(out, "lag");
    match s.lag(g) {
        Some(l) => out.integer(l),
        None => out.null(),
    }
}

fn stream_summary(out: &mut Reply, s: &Stream) {
    fields(out, 10);
    stream_head(out, s);
    int_field(out, "groups", s.groups().count() as i64);
    for (n, e) in [("first-entry", s.first()), ("last-entry", s.last())] {
        name(out, n);
        match e {
            Some((id, f)) => entry(out, id, Some(f)),
            None => out.null(),
        }
    }
}

/// XINFO STREAM key FULL: `count` entries and pending entries at most (0: all).
fn stream_full(out: &mut Reply, s: &Stream, count: usize) {
    let limit = if count == 0 { usize::MAX } else { count };
    fields(out, 9);
    stream_head(out, s);
    name(out, "entries");
    let entries: Vec<_> = s
        .range(StreamId::ZERO, StreamId::MAX, false)
        .take(limit)
        .collect();
    out.array(entries.len());
    for (id, f) in entries {
        entry(out, id, Some(f));
    }
    name(out, "groups");
    out.array(s.groups().count());
    for (gname, g) in s.groups() {
        fields(out, 7);
        name(out, "name");
        out.bulk(gname);
        id_field(out, "last-delivered-id", g.last_id);
        entries_read(out, g);
        lag(out, s, g);
        int_field(out, "pel-count", g.pel().len() as i64);
        name(out, "pending");
        let pel: Vec<_> = g.pel().iter().take(limit).collect();
        out.array(pel.len());
        for (id, n) in pel {
            out.array(4);
            out.bulk(&id.to_bytes());
            out.bulk(&n.consumer);
            out.integer(n.delivered as i64);
            out.integer(n.count as i64);
        }
        name(out, "consumers");
        out.array(g.consumers().count());
        for (cname, c) in g.consumers() {
            fields(out, 4);
            name(out, "name");
            out.bulk(cname);
            int_field(out, "seen-time", c.seen as i64);
            int_field(out, "pel-count", c.pending().len() as i64);
            name(out, "pending");
            let own: Vec<_> = c.pending().iter().take(limit).collect();
            out.array(own.len());
            for id in own {
                let n = g.pel().get(id);
                out.array(3);
                out.bulk(&id.to_bytes());
                out.integer(n.map_or(0, |n| n.delivered) as i64);
                out.integer(n.map_or(0, |n| n.count) as i64);
            }
        }
    }
}

fn groups(out: &mut Reply, s: &Stream) {
    out.array(s.groups().count());
    for (gname, g) in s.groups() {
        fields(out, 6);
        name(out, "name");
        out.bulk(gname);
        int_field(out, "consumers", g.consumers().count() as i64);
        int_field(out, "pending", g.pel().len() as i64);
        id_field(out, "last-delivered-id", g.last_id);
        entries_read(out, g);
        lag(out, s, g);
    }
}

fn consumers(out: &mut Reply, g: &Group, now: u64) {
    out.array(g.consumers().count());
    for (cname, c) in g.consumers() {
        fields(out, 3);
        name(out, "name");
        out.bulk(cname);
        int_field(out, "pending", c.pending().len() as i64);
        int_field(out, "idle", now.saturating_sub(c.seen) as i64);
    }
}

/// XINFO STREAM's FULL [COUNT n] (default 10); `None` once the error is the reply.
fn full_count(ctx: &mut Ctx<'_>, a: &Args<'_>) -> Option<Option<usize>> {
    match a.len() {
        3 => Some(None),
        4 if is(a.get(3), "full") => Some(Some(10)),
        6 if is(a.get(3), "full") && is(a.get(4), "count") => {
            let Some(n) = resp_wire::parse_i64(a.get(5)) else {
                ctx.out.error(NOT_INTEGER);
                return None;
            };
            Some(Some(usize::try_from(n).unwrap_or(0)))
        }
        _ => {
            sub_syntax(ctx, a, "XINFO");
            None
        }
    }
}

pub fn xinfo(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    if a.len() == 2 && is(a.get(1), "help") {
        return help(ctx.out, &XINFO_HELP);
    }
    let Some(sub) = subcommand(ctx, a, "xinfo") else {
        return;
    };
    let full = if sub == "stream" {
        match full_count(ctx, a) {
            Some(f) => f,
            None => return,
        }
    } else {
        None
    };
    let key = a.get(2);
    let now = ctx.shared.ks.now_ms();
    let out = &mut *ctx.out;
    let r = ctx.shared.ks.read_stream(key, |s| {
        let Some(s) = s else {
            return out.error("ERR no such key");
        };
        match (sub.as_str(), full) {
            ("stream", None) => stream_summary(out, s),
            ("stream", Some(count)) => stream_full(out, s, count),
            ("groups", _) => groups(out, s),
            _ => match s.group(a.get(3)) {
                Some(g) => consumers(out, g, now),
                None => stream_error(out, StreamError::no_group_named(key, a.get(3))),
            },
        }
    });
    checked(ctx.out, r);
}

/// XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]
pub fn xsetid(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let Some(id) = id_arg(ctx, StreamId::strict(a.get(2), 0)) else {
        return;
    };
    let (mut added, mut max_deleted) = (None, None);
    let mut i = 3;
    while i < a.len() {
        let more = i + 1 < a.len();
        if is(a.get(i), "entriesadded") && more {
            match resp_wire::parse_i64(a.get(i + 1)) {
                None => return ctx.out.error(NOT_INTEGER),
                Some(n) if n < 0 => return ctx.out.error("ERR entries_added must be positive"),
                Some(n) => added = Some(n as u64),
            }
        } else if is(a.get(i), "maxdeletedid") && more {
            let Some(d) = id_arg(ctx, StreamId::strict(a.get(i + 1), 0)) else {
                return;
            };
            if id < d {
                return stream_error(ctx.out, StreamError::SetIdBelowDeleted);
            }
            max_deleted = Some(d);
        } else {
            return ctx.out.error(SYNTAX);
        }
        i += 2;
    }
    let r = ctx
        .shared
        .ks
        .write_stream(a.get(1), &mut ctx.s.pending, |s, _| {
            Ok(((), s.set_id(id, added, max_deleted)?))
        });
    if checked(ctx.out, r).is_some() {
        ctx.out.ok();
    }
}
