//! Reading command arguments as Redis does: integers by Redis's own rule (`string2ll`), option
//! names in any case, and times turned into absolute deadlines with Redis's overflow checks and
//! error texts. Each reader writes the error reply itself and returns `None`, so a handler
//! stops at the first bad argument with Redis's exact answer.

use super::session::Ctx;

pub const NOT_INTEGER: &str = "ERR value is not an integer or out of range";
pub const SYNTAX: &str = "ERR syntax error";

/// The value of a keyspace operation, or `None` once its error is the reply.
pub fn checked<T>(out: &mut resp_wire::Reply, r: Result<T, nsqr_kv::KvError>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) => {
            out.error(&e.to_string());
            None
        }
    }
}

/// Whether `arg` is `word` in any case.
pub fn is(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

/// A 64-bit integer argument.
pub fn int(ctx: &mut Ctx<'_>, arg: &[u8]) -> Option<i64> {
    let v = resp_wire::parse_i64(arg);
    if v.is_none() {
        ctx.out.error(NOT_INTEGER);
    }
    v
}

/// The unit of a time argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Seconds,
    Millis,
}

/// `ERR invalid expire time in '<command>' command`.
pub fn invalid_expire(ctx: &mut Ctx<'_>, command: &str) {
    ctx.out
        .error(&format!("ERR invalid expire time in '{command}' command"));
}

/// The deadline of SET / GETEX / SETEX options (EX, PX relative; EXAT, PXAT absolute): a
/// positive number that, in milliseconds and made absolute, fits 64 bits.
pub fn option_deadline(
    ctx: &mut Ctx<'_>,
    arg: &[u8],
    unit: Unit,
    absolute: bool,
    command: &str,
) -> Option<u64> {
    let v = int(ctx, arg)?;
    if v <= 0 || (unit == Unit::Seconds && v > i64::MAX / 1000) {
        invalid_expire(ctx, command);
        return None;
    }
    let ms = if unit == Unit::Seconds { v * 1000 } else { v };
    let at = if absolute {
        Some(ms)
    } else {
        ms.checked_add(ctx.shared.ks.now_ms() as i64)
    };
    match at {
        Some(at) if at > 0 => Some(at as u64),
        _ => {
            invalid_expire(ctx, command);
            None
        }
    }
}

/// The deadline of EXPIRE and its variants: any integer (past or negative deletes the key),
/// but the conversion to absolute milliseconds must not overflow.
pub fn expire_deadline(
    ctx: &mut Ctx<'_>,
    arg: &[u8],
    unit: Unit,
    absolute: bool,
    command: &str,
) -> Option<i64> {
    let v = int(ctx, arg)?;
    let ms = match unit {
        Unit::Seconds => v.checked_mul(1000),
        Unit::Millis => Some(v),
    };
    let base = if absolute {
        0
    } else {
        ctx.shared.ks.now_ms() as i64
    };
    match ms.and_then(|ms| ms.checked_add(base)) {
        Some(at) => Some(at),
        None => {
            invalid_expire(ctx, command);
            None
        }
    }
}
