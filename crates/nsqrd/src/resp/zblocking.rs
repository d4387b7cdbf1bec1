//! The blocking sorted set pops: BZPOPMIN, BZPOPMAX, BZMPOP. They block as the list pops do
//! (`blocking.rs`): first blocked, first served; a ZADD, ZINCRBY or a sorted set written whole
//! wakes the first client blocked on its key; inside a transaction or a script they answer at
//! once as on a timeout.

use resp_wire::Args;

use super::blocking::{deadline, run, NULL_ARRAY};
use super::session::Ctx;
use super::zsets::{mpop_args, mpop_reply, pop_first, score, MpopArgs};

/// BZPOPMIN / BZPOPMAX key [key ...] timeout: `[key, member, score]`.
fn bzpop(ctx: &mut Ctx<'_>, a: &Args<'_>, max: bool) {
    let Ok(deadline) = deadline(ctx, a.get(a.len() - 1)) else {
        return;
    };
    let m = MpopArgs {
        keys: a.iter().skip(1).take(a.len() - 2).collect(),
        max,
        count: 1,
    };
    let attempt = |ctx: &mut Ctx<'_>| match pop_first(ctx, &m) {
        Ok(Some((key, popped))) => {
            let Some((member, s)) = popped.first() else {
                return false;
            };
            ctx.out.array(3);
            ctx.out.bulk(nsqr_kv::db::user_key(key));
            ctx.out.bulk(member);
            score(ctx.out, *s);
            true
        }
        Ok(None) => false,
        Err(()) => true,
    };
    run(ctx, &m.keys, deadline, attempt, NULL_ARRAY);
}

pub fn bzpopmin(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    bzpop(ctx, a, false);
}

pub fn bzpopmax(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    bzpop(ctx, a, true);
}

/// BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count].
pub fn bzmpop(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let Ok(deadline) = deadline(ctx, a.get(1)) else {
        return;
    };
    let Some(m) = mpop_args(ctx, a, 2) else {
        return;
    };
    let attempt = |ctx: &mut Ctx<'_>| match pop_first(ctx, &m) {
        Ok(Some((key, popped))) => {
            mpop_reply(ctx.out, key, &popped);
            true
        }
        Ok(None) => false,
        Err(()) => true,
    };
    run(ctx, &m.keys, deadline, attempt, NULL_ARRAY);
}
