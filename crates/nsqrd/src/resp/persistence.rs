//! Snapshots on demand: SAVE, BGSAVE, LASTSAVE.
//!
//! SAVE runs alone, as in Redis (which blocks every client while it writes): it takes the
//! keyspace's exclusive turn, so its snapshot is one point in time with no transaction or
//! multi-key command half in it. BGSAVE writes while clients go on (`Keyspace::save_in_background`).

use resp_wire::Args;

use super::args::{is, SYNTAX};
use super::session::{Busy, Ctx, BUSY};

pub fn save(ctx: &mut Ctx<'_>, _a: &Args<'_>) {
    match ctx.run_alone(|ctx| ctx.shared.ks.save()) {
        Ok(Ok(())) => ctx.out.ok(),
        Ok(Err(e)) => ctx.out.error(&format!("ERR {e}")),
        Err(Busy) => ctx.out.error(BUSY),
    }
}

/// BGSAVE [SCHEDULE]: with no append-only rewrite to wait for, SCHEDULE starts one at once.
pub fn bgsave(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    if a.len() > 2 || (a.len() == 2 && !is(a.get(1), "schedule")) {
        return ctx.out.error(SYNTAX);
    }
    match ctx.shared.ks.save_in_background() {
        Ok(true) => ctx.out.simple(b"Background saving started"),
        Ok(false) => ctx.out.error("ERR Background save already in progress"),
        Err(e) => ctx
            .out
            .error(&format!("ERR cannot start a background save: {e}")),
    }
}

pub fn lastsave(ctx: &mut Ctx<'_>, _a: &Args<'_>) {
    ctx.out.integer(ctx.shared.ks.last_save() as i64);
}
