//! Bitmap commands on strings: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, with Redis's argument
//! rules and errors (the bit logic is `nsqr_kv::bits`).

use nsqr_kv::bits::{self, BitOp, BitRange};
use resp_wire::Args;

use super::args::{self, is, SYNTAX};
use super::session::Ctx;

/// A bit offset: 0 up to the bits of `proto-max-bulk-len`.
fn offset(ctx: &mut Ctx<'_>, arg: &[u8]) -> Option<u64> {
    let max_bits = ctx.shared.max_bulk.saturating_mul(8);
    match resp_wire::parse_i64(arg) {
        Some(o) if o >= 0 && (o as u64) < max_bits => Some(o as u64),
        _ => {
            ctx.out
                .error("ERR bit offset is not an integer or out of range");
            None
        }
    }
}

pub fn getbit(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    if let Some(o) = offset(ctx, a.get(2)) {
        if let Some(bit) = args::checked(ctx.out, ctx.shared.ks.getbit(a.get(1), o)) {
            ctx.out.integer(i64::from(bit));
        }
    }
}

pub fn setbit(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let Some(o) = offset(ctx, a.get(2)) else {
        return;
    };
    let bit = match a.get(3) {
        b"0" => false,
        b"1" => true,
        _ => return ctx.out.error("ERR bit is not an integer or out of range"),
    };
    match ctx.shared.ks.setbit(a.get(1), o, bit, &mut ctx.s.pending) {
        Ok(old) => ctx.out.integer(i64::from(old)),
        Err(e) => ctx.out.error(&e.to_string()),
    }
}

/// BYTE or BIT (BITCOUNT's and BITPOS's last argument).
fn unit(ctx: &mut Ctx<'_>, arg: &[u8]) -> Option<bool> {
    if is(arg, "bit") {
        Some(true)
    } else if is(arg, "byte") {
        Some(false)
    } else {
        ctx.out.error(SYNTAX);
        None
    }
}

/// BITCOUNT key [start end [BYTE|BIT]]: a missing key counts 0 before the range is read.
pub fn bitcount(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let value = ctx.shared.ks.get(a.get(1), |v| v.map(<[u8]>::to_vec));
    let Some(value) = args::checked(ctx.out, value) else {
        return;
    };
    let Some(value) = value else {
        return ctx.out.integer(0);
    };
    let range = match a.len() {
        2 => None,
        4 | 5 => {
            let Some(start) = args::int(ctx, a.get(2)) else {
                return;
            };
            let Some(end) = args::int(ctx, a.get(3)) else {
                return;
            };
            let bits = match a.len() {
                5 => match unit(ctx, a.get(4)) {
                    Some(b) => b,
                    None => return,
                },
                _ => false,
            };
            Some(BitRange { start, end, bits })
        }
        _ => return ctx.out.error(SYNTAX),
    };
    ctx.out.integer(bits::bitcount(&value, range) as i64);
}

/// BITPOS key bit [start [end [BYTE|BIT]]].
pub fn bitpos(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let Some(bit) = args::int(ctx, a.get(2)) else {
        return;
    };
    if bit != 0 && bit != 1 {
        return ctx.out.error("ERR The bit argument must be 1 or 0.");
    }
    if a.len() > 6 {
        return ctx.out.error(SYNTAX);
    }
    let value = ctx.shared.ks.get(a.get(1), |v| v.map(<[u8]>::to_vec));
    let Some(value) = args::checked(ctx.out, value) else {
        return;
    };
    if value.is_none() {
        return ctx.out.integer(if bit == 1 { -1 } else { 0 });
    }
    let mut start = None;
    let mut end = None;
    let mut bits = false;
    if a.len() >= 4 {
        let Some(s) = args::int(ctx, a.get(3)) else {
            return;
        };
        start = Some(s);
    }
    if a.len() == 6 {
        match unit(ctx, a.get(5)) {
            Some(b) => bits = b,
            None => return,
        }
    }
    if a.len() >= 5 {
        let Some(e) = args::int(ctx, a.get(4)) else {
            return;
        };
        end = Some(e);
    }
    let pos = bits::bitpos(value.as_deref(), bit == 1, start, end, bits);
    ctx.out.integer(pos);
}

/// BITOP AND|OR|XOR|NOT destkey key [key ...].
pub fn bitop(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let op = match a.get(1).to_ascii_lowercase().as_slice() {
        b"and" => BitOp::And,
        b"or" => BitOp::Or,
        b"xor" => BitOp::Xor,
        b"not" => BitOp::Not,
        _ => return ctx.out.error(SYNTAX),
    };
    if op == BitOp::Not && a.len() != 4 {
        return ctx
            .out
            .error("ERR BITOP NOT must be called with a single source key.");
    }
    let keys: Vec<&[u8]> = a.iter().skip(3).collect();
    let n = ctx.shared.ks.bitop(op, a.get(2), &keys, &mut ctx.s.pending);
    if let Some(n) = args::checked(ctx.out, n) {
        ctx.out.integer(n as i64);
    }
}
