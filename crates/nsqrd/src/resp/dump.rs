//! DUMP and RESTORE, with Redis's payload format (`nsqr_kv::dump`) and its options: REPLACE,
//! ABSTTL, IDLETIME, FREQ.

use nsqr_kv::dump::{self, Access, Restored};
use resp_wire::Args;

use super::args::{self, is, SYNTAX};
use super::session::Ctx;

pub fn dump(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    match ctx.shared.ks.dump(a.get(1)) {
        Some(payload) => ctx.out.bulk(&payload),
        None => ctx.out.null(),
    }
}

/// RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f], checked in Redis's
/// order: options, an existing key, the TTL, the payload.
pub fn restore(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let (mut replace, mut absttl) = (false, false);
    let mut access = Access::Now;
    let mut i = 4;
    while i < a.len() {
        let more = i + 1 < a.len();
        if is(a.get(i), "replace") {
            replace = true;
        } else if is(a.get(i), "absttl") {
            absttl = true;
        } else if is(a.get(i), "idletime") && more && !matches!(access, Access::Frequency(_)) {
            let Some(s) = args::int(ctx, a.get(i + 1)) else {
                return;
            };
            let Ok(s) = u64::try_from(s) else {
                return ctx.out.error("ERR Invalid IDLETIME value, must be >= 0");
            };
            access = Access::IdleSeconds(s);
            i += 1;
        } else if is(a.get(i), "freq") && more && !matches!(access, Access::IdleSeconds(_)) {
            let Some(f) = args::int(ctx, a.get(i + 1)) else {
                return;
            };
            let Ok(f) = u8::try_from(f) else {
                return ctx
                    .out
                    .error("ERR Invalid FREQ value, must be >= 0 and <= 255");
            };
            access = Access::Frequency(f);
            i += 1;
        } else {
            return ctx.out.error(SYNTAX);
        }
        i += 1;
    }
    let key = a.get(1);
    if !replace && ctx.shared.ks.contains(key) {
        return ctx.out.error("BUSYKEY Target key name already exists.");
    }
    let Some(ttl) = args::int(ctx, a.get(2)) else {
        return;
    };
    if ttl < 0 {
        return ctx.out.error("ERR Invalid TTL value, must be >= 0");
    }
    let value = match dump::restore_value(a.get(3)) {
        Ok(v) => v,
        Err(e) => return ctx.out.error(&e.to_string()),
    };
    let deadline = match (ttl, absttl) {
        (0, _) => None,
        (t, true) => Some(t as u64),
        (t, false) => Some((ctx.shared.ks.now_ms() as i64).saturating_add(t) as u64),
    };
    match ctx
        .shared
        .ks
        .restore(key, value, deadline, replace, access, &mut ctx.s.pending)
    {
        Restored::Written | Restored::Expired => ctx.out.ok(),
        Restored::Busy => ctx.out.error("BUSYKEY Target key name already exists."),
    }
}
