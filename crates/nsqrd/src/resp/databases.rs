//! Redis's numbered databases over RESP: SELECT, SWAPDB, MOVE, DBSIZE, FLUSHDB / FLUSHALL,
//! and the one place a request's keys learn their database.
//!
//! The engine keeps a key of database `n > 0` under an internal name that carries `n`
//! (`nsqr_kv::db`). Before a command runs, [`in_database`] rewrites the key arguments of the
//! request (found by Redis's key specs for the command, as `COMMAND GETKEYS` finds them) to
//! their internal names, so every command family serves every database with no code of its
//! own. A client in database 0 pays one look at each argument's first byte: only a request
//! with an argument starting with the marker byte is rewritten (the key of database 0 that
//! begins with it is stored escaped). Scripts get their keys as the client named them: their
//! `redis.call`s are rewritten in turn, with the script's own database.

use nsqr_kv::db;
use resp_wire::{Args, OwnedArgs};

use super::args::{self, is, SYNTAX};
use super::command_meta as meta;
use super::session::Ctx;
use super::table::Command;

/// Redis's reply to a database number outside `0..databases`.
pub const OUT_OF_RANGE: &str = "ERR DB index is out of range";

/// Commands whose keys are a script's `KEYS`: given to the script as named.
pub(super) const SCRIPTS: &[&str] = &[
    "eval",
    "evalsha",
    "eval_ro",
    "evalsha_ro",
    "fcall",
    "fcall_ro",
];

/// The request with its keys renamed for the client's database, or `None` when it runs as
/// it came.
pub fn in_database(ctx: &Ctx<'_>, cmd: &Command, args: &Args<'_>) -> Option<OwnedArgs> {
    let n = ctx.s.db;
    if n == 0 && !args.iter().any(|a| a.first() == Some(&db::MARKER)) {
        return None;
    }
    if SCRIPTS.contains(&cmd.name) {
        return None;
    }
    let (_, index) = meta::of_request(cmd.name, args);
    let m = &meta::COMMANDS[index?];
    let keys: Vec<usize> = m
        .keys(args)
        .into_iter()
        .filter(|(_, flags)| !flags.contains(&"not_key"))
        .map(|(i, _)| i)
        .collect();
    if !keys.iter().any(|&i| db::is_renamed(n, args.get(i))) {
        return None;
    }
    let mut owned = OwnedArgs::default();
    for (i, a) in args.iter().enumerate() {
        if keys.contains(&i) {
            owned.push(&db::internal(n, a));
        } else {
            owned.push(a);
        }
    }
    Some(owned)
}

/// A database number argument; `None` once the error (`bad`, or out of range) is the reply.
fn number(ctx: &mut Ctx<'_>, arg: &[u8], bad: &str) -> Option<u8> {
    let Some(n) = resp_wire::parse_i64(arg) else {
        ctx.out.error(bad);
        return None;
    };
    match u8::try_from(n) {
        Ok(n) if usize::from(n) < ctx.shared.databases => Some(n),
        _ => {
            ctx.out.error(OUT_OF_RANGE);
            None
        }
    }
}

/// A database number given after `DB` (COPY) or to MOVE.
pub fn parse(ctx: &mut Ctx<'_>, arg: &[u8]) -> Option<u8> {
    number(ctx, arg, args::NOT_INTEGER)
}

/// Makes `n` the database of the client's next commands.
pub fn switch(ctx: &mut Ctx<'_>, n: u8) {
    if n != 0 {
        ctx.shared.ks.use_databases();
    }
    ctx.s.db = n;
    ctx.s.client.set_db(n);
}

pub fn select(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    if let Some(n) = parse(ctx, a.get(1)) {
        switch(ctx, n);
        ctx.out.ok();
    }
}

pub fn swapdb(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let Some(first) = number(ctx, a.get(1), "ERR invalid first DB index") else {
        return;
    };
    let Some(second) = number(ctx, a.get(2), "ERR invalid second DB index") else {
        return;
    };
    if first != second {
        ctx.shared.ks.use_databases();
        ctx.shared.ks.swap_db(first, second, &mut ctx.s.pending);
    }
    ctx.out.ok();
}

/// MOVE key db (the key arrives under its internal name).
pub fn move_key(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let Some(to) = parse(ctx, a.get(2)) else {
        return;
    };
    if to == ctx.s.db {
        return ctx
            .out
            .error("ERR source and destination objects are the same");
    }
    ctx.shared.ks.use_databases();
    let moved = ctx.shared.ks.move_key(a.get(1), to, &mut ctx.s.pending);
    ctx.out.integer(i64::from(moved));
}

pub fn dbsize(ctx: &mut Ctx<'_>, _a: &Args<'_>) {
    ctx.out.integer(ctx.shared.ks.keys_in(ctx.s.db) as i64);
}

fn flush_mode_ok(a: &Args<'_>) -> bool {
    a.len() == 1 || (a.len() == 2 && (is(a.get(1), "async") || is(a.get(1), "sync")))
}

/// FLUSHDB: the client's database.
pub fn flushdb(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    if !flush_mode_ok(a) {
        return ctx.out.error(SYNTAX);
    }
    ctx.shared.ks.flush_db(ctx.s.db, &mut ctx.s.pending);
    ctx.out.ok();
}

/// FLUSHALL: every database.
pub fn flushall(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    if !flush_mode_ok(a) {
        return ctx.out.error(SYNTAX);
    }
    ctx.shared.ks.flush(&mut ctx.s.pending);
    ctx.out.ok();
}
