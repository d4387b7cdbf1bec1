//! BITFIELD and BITFIELD_RO: the operations read from the arguments with Redis's rules and
//! errors (the field arithmetic is `nsqr_kv::bitfield`). Every argument is checked before
//! anything runs, so a bad one changes nothing.

use nsqr_kv::bitfield::{Field, FieldOp, Overflow};
use resp_wire::Args;

use super::args::{self, checked, is, SYNTAX};
use super::session::Ctx;

const BAD_TYPE: &str =
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";
const BAD_OFFSET: &str = "ERR bit offset is not an integer or out of range";

/// `i<bits>` or `u<bits>`: whether signed, and the width.
fn field_type(arg: &[u8]) -> Option<(bool, u32)> {
    let (signed, max) = match arg.first() {
        Some(b'i') => (true, 64),
        Some(b'u') => (false, 63),
        _ => return None,
    };
    let bits = resp_wire::parse_i64(&arg[1..])?;
    (1..=max).contains(&bits).then_some((signed, bits as u32))
}

/// A bit offset, `#n` meaning `n` fields of this width; below `proto-max-bulk-len` bytes.
fn field_offset(ctx: &Ctx<'_>, arg: &[u8], bits: u32) -> Option<u64> {
    let (times, digits) = match arg.first() {
        Some(b'#') => (i64::from(bits), &arg[1..]),
        _ => (1, arg),
    };
    let offset = resp_wire::parse_i64(digits)?.wrapping_mul(times);
    (offset >= 0 && (offset as u64 >> 3) < ctx.shared.max_bulk).then_some(offset as u64)
}

/// Reads the operations; `None` once the error is the reply.
fn fields(ctx: &mut Ctx<'_>, a: &Args<'_>) -> Option<Vec<Field>> {
    let mut out = Vec::new();
    let mut overflow = Overflow::default();
    let mut j = 2;
    while j < a.len() {
        let sub = a.get(j);
        let left = a.len() - j - 1;
        let op = if is(sub, "get") && left >= 2 {
            FieldOp::Get
        } else if (is(sub, "set") || is(sub, "incrby")) && left >= 3 {
            FieldOp::Set(0)
        } else if is(sub, "overflow") && left >= 1 {
            let how = a.get(j + 1);
            overflow = if is(how, "wrap") {
                Overflow::Wrap
            } else if is(how, "sat") {
                Overflow::Sat
            } else if is(how, "fail") {
                Overflow::Fail
            } else {
                ctx.out.error("ERR Invalid OVERFLOW type specified");
                return None;
            };
            j += 2;
            continue;
        } else {
            ctx.out.error(SYNTAX);
            return None;
        };
        let Some((signed, bits)) = field_type(a.get(j + 1)) else {
            ctx.out.error(BAD_TYPE);
            return None;
        };
        let Some(offset) = field_offset(ctx, a.get(j + 2), bits) else {
            ctx.out.error(BAD_OFFSET);
            return None;
        };
        let op = match op {
            FieldOp::Get => FieldOp::Get,
            _ => {
                let n = args::int(ctx, a.get(j + 3))?;
                if is(sub, "set") {
                    FieldOp::Set(n)
                } else {
                    FieldOp::IncrBy(n)
                }
            }
        };
        out.push(Field {
            op,
            signed,
            bits,
            offset,
            overflow,
        });
        j += if op == FieldOp::Get { 3 } else { 4 };
    }
    Some(out)
}

pub fn bitfield(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    run(ctx, a, false);
}

pub fn bitfield_ro(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    run(ctx, a, true);
}

fn run(ctx: &mut Ctx<'_>, a: &Args<'_>, readonly: bool) {
    let Some(fields) = fields(ctx, a) else {
        return;
    };
    if readonly && fields.iter().any(|f| f.op != FieldOp::Get) {
        return ctx
            .out
            .error("ERR BITFIELD_RO only supports the GET subcommand");
    }
    let r = ctx
        .shared
        .ks
        .bitfield(a.get(1), &fields, &mut ctx.s.pending);
    let Some(answers) = checked(ctx.out, r) else {
        return;
    };
    ctx.out.array(answers.len());
    for answer in answers {
        match answer {
            Some(n) => ctx.out.integer(n),
            None => ctx.out.null(),
        }
    }
}
