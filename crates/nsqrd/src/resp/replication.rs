//! REPLICAOF / SLAVEOF: this server is always a master (ROLE says so). `REPLICAOF NO ONE`
//! is what a master already is: OK. Replicating from another server is refused with an
//! error naming why, after the port is checked as Redis checks it.

use resp_wire::Args;

use super::args::is;
use super::session::Ctx;

pub const NOT_A_REPLICA: &str =
    "ERR nsqrd does not replicate from another server: only REPLICAOF NO ONE is accepted";

pub fn replicaof(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    if is(a.get(1), "no") && is(a.get(2), "one") {
        return ctx.out.ok();
    }
    match resp_wire::parse_i64(a.get(2)) {
        Some(port) if (0..=65535).contains(&port) => ctx.out.error(NOT_A_REPLICA),
        _ => ctx.out.error("ERR Invalid master port"),
    }
}
