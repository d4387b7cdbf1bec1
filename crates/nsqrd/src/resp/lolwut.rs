//! LOLWUT: Redis's version art. This server draws none; it answers what Redis 7 answers
//! for its own version, the version line, after reading `VERSION n` as Redis does.

use resp_wire::Args;

use super::args::{self, is};
use super::connection::REDIS_VERSION;
use super::session::Ctx;

/// LOLWUT [VERSION n] [...].
pub fn lolwut(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    if a.len() >= 3 && is(a.get(1), "version") && args::int(ctx, a.get(2)).is_none() {
        return;
    }
    let text = format!("Redis ver. {REDIS_VERSION}\n");
    ctx.out.verbatim(b"txt", text.as_bytes());
}
