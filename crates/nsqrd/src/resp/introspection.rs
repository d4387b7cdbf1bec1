//! What a client may ask about the server's insides: OBJECT (a key's encoding, idle time,
//! frequency), MEMORY USAGE / STATS / DOCTOR / PURGE, LATENCY (no latency monitor: empty
//! answers, as Redis with `latency-monitor-threshold 0`), ROLE (a master without replicas).

use nsqr_kv::KeyInfo;
use resp_wire::Args;

use super::args::{self, is, SYNTAX};
use super::session::Ctx;
use super::table::wrong_arity;

const OBJECT_HELP: [&str; 14] = [
    "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ENCODING <key>",
    "    Return the kind of internal representation used in order to store the value",
    "    associated with a <key>.",
    "FREQ <key>",
    "    Return the access frequency index of the <key>. The returned integer is",
    "    proportional to the logarithm of the recent access frequency of the key.",
    "IDLETIME <key>",
    "    Return the idle time of the <key>, that is the approximated number of",
    "    seconds elapsed since the last access to the key.",
    "REFCOUNT <key>",
    "    Return the number of references of the value associated with the specified",
    "    <key>.",
    "HELP",
];

fn unknown_subcommand(ctx: &mut Ctx<'_>, a: &Args<'_>, command: &str) {
    let sub = String::from_utf8_lossy(a.get(1)).into_owned();
    ctx.out.error(&format!(
        "ERR unknown subcommand '{sub}'. Try {command} HELP."
    ));
}

/// A HELP subcommand's answer: one status line each.
pub fn help(ctx: &mut Ctx<'_>, lines: &[&str]) {
    ctx.out.array(lines.len());
    for l in lines {
        ctx.out.simple(l.as_bytes());
    }
}

pub fn object(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let sub = a.get(1).to_ascii_lowercase();
    let known = [&b"encoding"[..], b"freq", b"idletime", b"refcount"];
    if sub == b"help" && a.len() == 2 {
        return help(ctx, &OBJECT_HELP);
    }
    if !known.contains(&sub.as_slice()) {
        return unknown_subcommand(ctx, a, "OBJECT");
    }
    if a.len() != 3 {
        return wrong_arity(ctx, &format!("object|{}", String::from_utf8_lossy(&sub)));
    }
    let lfu = ctx.shared.ks.settings().policy().is_lfu();
    if sub == b"freq" && !lfu {
        return ctx.out.error("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.");
    }
    if sub == b"idletime" && lfu {
        return ctx.out.error("ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.");
    }
    let Some(KeyInfo {
        encoding,
        idle_seconds,
        frequency,
        ..
    }) = ctx.shared.ks.key_info(a.get(2))
    else {
        return ctx.out.null();
    };
    match sub.as_slice() {
        b"encoding" => ctx.out.bulk(encoding.as_bytes()),
        b"freq" => ctx.out.integer(i64::from(frequency)),
        b"idletime" => ctx.out.integer(idle_seconds as i64),
        // Values are never shared between keys here.
        _ => ctx.out.integer(1),
    }
}

const MEMORY_HELP: [&str; 11] = [
    "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    Return memory problems reports.",
    "MALLOC-STATS",
    "    Return internal statistics report from the memory allocator.",
    "PURGE",
    "    Attempt to purge dirty pages for reclamation by the allocator.",
    "STATS",
    "    Return information about the memory usage of the server.",
    "USAGE <key> [SAMPLES <count>]",
    "    Return memory in bytes used by <key> and its value. Nested values are",
];

pub fn memory(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let sub = a.get(1).to_ascii_lowercase();
    match (sub.as_slice(), a.len()) {
        (b"usage", n) if n >= 3 => memory_usage(ctx, a),
        (b"stats", 2) => memory_stats(ctx),
        (b"doctor", 2) => ctx
            .out
            .bulk(b"Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base."),
        (b"malloc-stats", 2) => ctx.out.bulk(b"Stats not supported for the current allocator"),
        (b"purge", 2) => ctx.out.ok(),
        (b"help", 2) => help(ctx, &MEMORY_HELP),
        (b"usage" | b"stats" | b"doctor" | b"malloc-stats" | b"purge" | b"help", _) => {
            wrong_arity(ctx, &format!("memory|{}", String::from_utf8_lossy(&sub)))
        }
        _ => unknown_subcommand(ctx, a, "MEMORY"),
    }
}

/// MEMORY USAGE key [SAMPLES n]: the key's block and table slot (SAMPLES is read and
/// checked; a string has nothing to sample).
fn memory_usage(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    match a.len() {
        3 => {}
        5 if is(a.get(3), "samples") => {
            if args::int(ctx, a.get(4)).is_none() {
                return;
            }
        }
        _ => return ctx.out.error(SYNTAX),
    }
    match ctx.shared.ks.key_info(a.get(2)) {
        Some(info) => ctx.out.integer(info.memory as i64),
        None => ctx.out.null(),
    }
}

fn memory_stats(ctx: &mut Ctx<'_>) {
    let stats = ctx.shared.ks.stats();
    let out = &mut *ctx.out;
    out.map(4);
    out.bulk(b"dataset.bytes");
    out.integer(stats.used_memory as i64);
    out.bulk(b"keys.count");
    out.integer(stats.keys as i64);
    out.bulk(b"keys.bytes-per-key");
    out.integer((stats.used_memory / stats.keys.max(1)) as i64);
    out.bulk(b"db.0");
    out.map(2);
    out.bulk(b"overhead.hashtable.main");
    out.integer(0);
    out.bulk(b"overhead.hashtable.expires");
    out.integer(0);
}

pub fn latency(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let sub = a.get(1).to_ascii_lowercase();
    match (sub.as_slice(), a.len()) {
        (b"latest", 2) => ctx.out.array(0),
        (b"history", 3) => ctx.out.array(0),
        (b"reset", _) => ctx.out.integer(0),
        (b"doctor", 2) => ctx.out.verbatim(
            b"txt",
            b"Latency monitoring is disabled in this server: nothing was recorded.",
        ),
        (b"graph", 3) => ctx.out.error("ERR No samples available for event"),
        (b"help", 2) => help(
            ctx,
            &[
                "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "DOCTOR",
                "GRAPH <event>",
                "HISTORY <event>",
                "LATEST",
                "RESET [<event> ...]",
                "HELP",
            ],
        ),
        (b"latest" | b"history" | b"doctor" | b"graph" | b"help", _) => {
            wrong_arity(ctx, &format!("latency|{}", String::from_utf8_lossy(&sub)))
        }
        _ => unknown_subcommand(ctx, a, "LATENCY"),
    }
}

pub fn role(ctx: &mut Ctx<'_>, _a: &Args<'_>) {
    ctx.out.array(3);
    ctx.out.bulk(b"master");
    ctx.out.integer(0);
    ctx.out.array(0);
}
