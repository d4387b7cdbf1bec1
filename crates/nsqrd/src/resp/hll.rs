//! HyperLogLog commands: PFADD, PFCOUNT, PFMERGE and PFDEBUG, with Redis 7.0's replies and
//! errors (the HLL format and the commands' logic are `nsqr_kv::hll` and the keyspace's
//! `pfadd` / `pfcount` / `pfmerge` / `pfdebug`).

use nsqr_kv::{PfDebug, PfDebugReply};
use resp_wire::Args;

use super::args::{checked, is};
use super::session::Ctx;

pub fn pfadd(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let elements: Vec<&[u8]> = a.iter().skip(2).collect();
    let r = ctx.shared.ks.pfadd(a.get(1), &elements, &mut ctx.s.pending);
    if let Some(updated) = checked(ctx.out, r) {
        ctx.out.integer(i64::from(updated));
    }
}

pub fn pfcount(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let keys: Vec<&[u8]> = a.iter().skip(1).collect();
    let r = ctx.shared.ks.pfcount(&keys, &mut ctx.s.pending);
    if let Some(card) = checked(ctx.out, r) {
        ctx.out.integer(i64::try_from(card).unwrap_or(i64::MAX));
    }
}

pub fn pfmerge(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let sources: Vec<&[u8]> = a.iter().skip(2).collect();
    let r = ctx
        .shared
        .ks
        .pfmerge(a.get(1), &sources, &mut ctx.s.pending);
    if checked(ctx.out, r).is_some() {
        ctx.out.ok();
    }
}

/// PFDEBUG GETREG|DECODE|ENCODING|TODENSE key. As in Redis, the key is looked up and checked
/// before the subcommand's name.
pub fn pfdebug(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let name = a.get(1);
    let sub = [
        ("getreg", PfDebug::GetReg),
        ("decode", PfDebug::Decode),
        ("encoding", PfDebug::Encoding),
        ("todense", PfDebug::ToDense),
    ]
    .into_iter()
    .find(|(n, _)| is(name, n))
    .map(|(_, s)| s);
    let r = ctx.shared.ks.pfdebug(
        sub.unwrap_or(PfDebug::Encoding),
        a.get(2),
        &mut ctx.s.pending,
    );
    let Some(reply) = checked(ctx.out, r) else {
        return;
    };
    let out = &mut *ctx.out;
    match reply {
        PfDebugReply::NoKey => out.error("ERR The specified key does not exist"),
        _ if sub.is_none() => out.error(&format!(
            "ERR Unknown PFDEBUG subcommand '{}'",
            String::from_utf8_lossy(name)
        )),
        PfDebugReply::NotSparse => out.error("ERR HLL encoding is not sparse"),
        PfDebugReply::Registers(regs) => {
            out.array(regs.len());
            for r in regs {
                out.integer(i64::from(r));
            }
        }
        PfDebugReply::Decoded(d) => out.bulk(d.as_bytes()),
        PfDebugReply::Encoding(e) => out.simple(e.as_bytes()),
        PfDebugReply::Converted(c) => out.integer(i64::from(c)),
    }
}
