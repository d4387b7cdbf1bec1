//! The blocking list commands: BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP (and the machinery
//! the blocking sorted set pops of `zblocking.rs` share).
//!
//! Each first tries its non-blocking form. When every key is empty, the client takes a place
//! in the queues of its keys (`nsqr_kv::Keyspace::block`, in the order clients blocked) and
//! the command is left unanswered: the connection (`conn.rs`) keeps the request unparsed,
//! waits until a push wakes the client, the timeout passes, or the client leaves, then runs
//! the same request again. Inside a transaction, or whatever else runs alone, the command never
//! blocks: it answers at once as on a timeout, as in Redis.

use std::time::Duration;

use resp_wire::{Args, Reply};
use tokio::time::Instant;

use super::args::{checked, SYNTAX};
use super::lists::{lmpop_args, lmpop_reply, side};
use super::session::Ctx;

/// A client blocked on lists.
pub struct Blocking {
    pub on: nsqr_kv::Blocked,
    /// `None`: no timeout.
    pub deadline: Option<Instant>,
    /// Set by the connection when the deadline passed.
    pub timed_out: bool,
    /// XREAD's ids as resolved when it blocked (`$`: the last id then).
    pub stream_ids: Vec<nsqr_kv::StreamId>,
}

/// A timeout in seconds, as Redis 7.0 reads it (a float, rounded up to a millisecond; one
/// whose milliseconds do not fit in 64 bits, or below 0, is negative): the deadline, `None`
/// for 0 (forever); `Err` once the error is the reply.
pub(super) fn deadline(ctx: &mut Ctx<'_>, arg: &[u8]) -> Result<Option<Instant>, ()> {
    let Some(secs) = nsqr_kv::parse_float(arg) else {
        ctx.out.error("ERR timeout is not a float or out of range");
        return Err(());
    };
    let ms = (secs * 1000.0).ceil();
    if !(0.0..9.223_372_036_854_775e18).contains(&ms) {
        ctx.out.error("ERR timeout is negative");
        return Err(());
    }
    // A positive timeout below what a double holds (`1e-400`) reads as 0: it is still a
    // timeout (Redis's long double keeps it), not "forever".
    let tiny = arg
        .iter()
        .take_while(|c| !matches!(c, b'e' | b'E'))
        .any(|c| (b'1'..=b'9').contains(c));
    if ms == 0.0 && !tiny {
        return Ok(None);
    }
    let ms = ms.max(1.0);
    // A deadline beyond what the clock can represent is as good as none, as in Redis.
    Ok(Instant::now().checked_add(Duration::from_millis(ms as u64)))
}

/// What a blocking command answers when it gives up: on its timeout, and inside a
/// transaction (where BLMOVE answers a null string, the others a null array, as in Redis).
pub(super) struct GiveUp {
    timeout: fn(&mut Reply),
    in_transaction: fn(&mut Reply),
}

pub(super) const NULL_ARRAY: GiveUp = GiveUp {
    timeout: Reply::null_array,
    in_transaction: Reply::null_array,
};

/// Runs a blocking command: `attempt` tries it at once and says whether it answered; if not,
/// the client blocks on `keys` (or, timed out or in a transaction, gives up).
pub(super) fn run(
    ctx: &mut Ctx<'_>,
    keys: &[&[u8]],
    deadline: Option<Instant>,
    attempt: impl FnOnce(&mut Ctx<'_>) -> bool,
    give_up: GiveUp,
) {
    if ctx.s.blocked.as_ref().is_some_and(|b| b.timed_out) {
        ctx.s.blocked = None;
        return (give_up.timeout)(ctx.out);
    }
    if attempt(ctx) {
        if ctx.s.blocked.take().is_some() {
            // The list may hold more: the next client blocked on it tries.
            for k in keys {
                ctx.shared.ks.wake_blocked(k);
            }
        }
        return;
    }
    // Running alone (EXEC, or a script) or queued in MULTI: never block.
    if matches!(ctx.turn, super::session::Turn::Alone) || ctx.s.tx.is_some() {
        ctx.s.blocked = None;
        return (give_up.in_transaction)(ctx.out);
    }
    if ctx.s.blocked.is_none() {
        ctx.s.blocked = Some(Blocking {
            on: ctx.shared.ks.block(keys),
            deadline,
            timed_out: false,
            stream_ids: Vec::new(),
        });
    }
    ctx.s.block_now = true;
}

fn bpop(ctx: &mut Ctx<'_>, a: &Args<'_>, left: bool) {
    let Ok(deadline) = deadline(ctx, a.get(a.len() - 1)) else {
        return;
    };
    let keys: Vec<&[u8]> = a.iter().skip(1).take(a.len() - 2).collect();
    let attempt = |ctx: &mut Ctx<'_>| {
        let r = ctx.shared.ks.lmpop(&keys, left, 1, &mut ctx.s.pending);
        match checked(ctx.out, r) {
            Some(Some((key, popped))) => {
                ctx.out.array(2);
                ctx.out.bulk(nsqr_kv::db::user_key(&key));
                if let Some(e) = popped.first() {
                    ctx.out.bulk(e);
                }
                true
            }
            Some(None) => false,
            None => true,
        }
    };
    run(ctx, &keys, deadline, attempt, NULL_ARRAY);
}

pub fn blpop(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    bpop(ctx, a, true);
}

pub fn brpop(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    bpop(ctx, a, false);
}

fn bmove(ctx: &mut Ctx<'_>, a: &Args<'_>, from_left: bool, to_left: bool, timeout: &[u8]) {
    let Ok(deadline) = deadline(ctx, timeout) else {
        return;
    };
    let (src, dst) = (a.get(1), a.get(2));
    let attempt = |ctx: &mut Ctx<'_>| {
        let r = ctx
            .shared
            .ks
            .lmove(src, dst, from_left, to_left, &mut ctx.s.pending);
        match checked(ctx.out, r) {
            Some(Some(e)) => {
                ctx.out.bulk(&e);
                true
            }
            Some(None) => false,
            None => true,
        }
    };
    let give_up = GiveUp {
        timeout: Reply::null_array,
        in_transaction: Reply::null,
    };
    run(ctx, &[src], deadline, attempt, give_up);
}

/// BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout.
pub fn blmove(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    match (side(a.get(3)), side(a.get(4))) {
        (Some(from), Some(to)) => bmove(ctx, a, from, to, a.get(5)),
        _ => ctx.out.error(SYNTAX),
    }
}

/// BRPOPLPUSH source destination timeout.
pub fn brpoplpush(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    bmove(ctx, a, false, true, a.get(3));
}

/// BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count].
pub fn blmpop(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let Ok(deadline) = deadline(ctx, a.get(1)) else {
        return;
    };
    let Some((keys, left, count)) = lmpop_args(ctx, a, 2) else {
        return;
    };
    let attempt = |ctx: &mut Ctx<'_>| {
        let r = ctx.shared.ks.lmpop(&keys, left, count, &mut ctx.s.pending);
        lmpop_reply(ctx, r)
    };
    run(ctx, &keys, deadline, attempt, NULL_ARRAY);
}
