//! The libraries Redis gives scripts beyond Lua's own: `cjson` (through serde_json),
//! `cmsgpack` (through rmp and rmpv) and LuaBitOp's `bit` (32-bit operations on Lua numbers).

use mlua::{Lua, LuaSerdeExt, Table, Value, Variadic};

/// Deepest value `cmsgpack` packs or unpacks.
const MAX_DEPTH: usize = 64;

pub fn install(lua: &Lua) -> mlua::Result<()> {
    install_cjson(lua)?;
    install_cmsgpack(lua)?;
    install_bit(lua)
}

/// `cjson.encode` / `cjson.decode` through serde_json.
fn install_cjson(lua: &Lua) -> mlua::Result<()> {
    let cjson = lua.create_table()?;
    cjson.set(
        "encode",
        lua.create_function(|lua, v: Value| {
            let json: serde_json::Value = lua.from_value(v)?;
            serde_json::to_string(&json).map_err(mlua::Error::external)
        })?,
    )?;
    cjson.set(
        "decode",
        lua.create_function(|lua, s: mlua::String| {
            let json: serde_json::Value =
                serde_json::from_slice(&s.as_bytes()).map_err(mlua::Error::external)?;
            lua.to_value(&json)
        })?,
    )?;
    cjson.set("null", Value::NULL)?;
    lua.globals().set("cjson", cjson)
}

/// LuaBitOp's `bit` library: 32-bit operations on Lua numbers.
fn install_bit(lua: &Lua) -> mlua::Result<()> {
    fn tobit(x: f64) -> i32 {
        (x as i64) as i32
    }
    let bit: Table = lua.create_table()?;
    bit.set("tobit", lua.create_function(|_, x: f64| Ok(tobit(x)))?)?;
    bit.set("bnot", lua.create_function(|_, x: f64| Ok(!tobit(x)))?)?;
    bit.set(
        "band",
        lua.create_function(|_, xs: Variadic<f64>| {
            Ok(xs.iter().fold(-1i32, |a, &x| a & tobit(x)))
        })?,
    )?;
    bit.set(
        "bor",
        lua.create_function(|_, xs: Variadic<f64>| Ok(xs.iter().fold(0i32, |a, &x| a | tobit(x))))?,
    )?;
    bit.set(
        "bxor",
        lua.create_function(|_, xs: Variadic<f64>| Ok(xs.iter().fold(0i32, |a, &x| a ^ tobit(x))))?,
    )?;
    bit.set(
        "lshift",
        lua.create_function(|_, (x, n): (f64, f64)| {
            Ok(tobit(x).wrapping_shl(tobit(n) as u32 & 31))
        })?,
    )?;
    bit.set(
        "rshift",
        lua.create_function(|_, (x, n): (f64, f64)| {
            Ok(((tobit(x) as u32) >> (tobit(n) as u32 & 31)) as i32)
        })?,
    )?;
    bit.set(
        "arshift",
        lua.create_function(|_, (x, n): (f64, f64)| Ok(tobit(x) >> (tobit(n) as u32 & 31)))?,
    )?;
    bit.set(
        "tohex",
        lua.create_function(|_, (x, n): (f64, Option<f64>)| {
            let n = n.map_or(8, tobit);
            let digits = n.unsigned_abs().min(8) as usize;
            let v = tobit(x) as u32;
            let hex = if n < 0 {
                format!("{v:08X}")
            } else {
                format!("{v:08x}")
            };
            Ok(hex[8 - digits..].to_owned())
        })?,
    )?;
    lua.globals().set("bit", bit)
}

/// `cmsgpack.pack(...)` (each argument packed, the results concatenated) and
/// `cmsgpack.unpack(s)` (every value in `s`).
fn install_cmsgpack(lua: &Lua) -> mlua::Result<()> {
    let m = lua.create_table()?;
    m.set(
        "pack",
        lua.create_function(|lua, vs: Variadic<Value>| {
            let mut out = Vec::new();
            for v in vs.iter() {
                pack(v, &mut out, 0)?;
            }
            lua.create_string(&out)
        })?,
    )?;
    m.set(
        "unpack",
        lua.create_function(|lua, s: mlua::String| {
            let bytes = s.as_bytes();
            let mut rest: &[u8] = &bytes;
            let mut values = Vec::new();
            while !rest.is_empty() {
                let v = rmpv::decode::read_value_with_max_depth(&mut rest, MAX_DEPTH)
                    .map_err(mlua::Error::external)?;
                values.push(from_msgpack(lua, &v)?);
            }
            Ok(Variadic::from_iter(values))
        })?,
    )?;
    lua.globals().set("cmsgpack", m)
}

/// Packs `v` as cmsgpack does: Lua strings as msgpack strings (whatever their bytes),
/// integral numbers as integers.
fn pack(v: &Value, out: &mut Vec<u8>, depth: usize) -> mlua::Result<()> {
    use rmp::encode;
    if depth > MAX_DEPTH {
        return Err(mlua::Error::runtime("cmsgpack: table too deep"));
    }
    match v {
        Value::Boolean(b) => encode::write_bool(out, *b).map_err(ext)?,
        Value::Integer(n) => {
            encode::write_sint(out, *n).map_err(ext)?;
        }
        Value::Number(x) if x.fract() == 0.0 && x.abs() < 9.0e18 => {
            encode::write_sint(out, *x as i64).map_err(ext)?;
        }
        // A float that a single-precision float holds exactly is written as one.
        Value::Number(x) if f64::from(*x as f32) == *x => {
            encode::write_f32(out, *x as f32).map_err(ext)?
        }
        Value::Number(x) => encode::write_f64(out, *x).map_err(ext)?,
        Value::String(s) => {
            let bytes = s.as_bytes();
            encode::write_str_len(out, bytes.len() as u32).map_err(ext)?;
            out.extend_from_slice(&bytes);
        }
        Value::Table(t) => pack_table(t, out, depth)?,
        _ => encode::write_nil(out).map_err(ext)?,
    }
    Ok(())
}

/// An encoding error as a Lua error (writing into a `Vec` does not fail).
fn ext<E: std::error::Error + Send + Sync + 'static>(e: E) -> mlua::Error {
    mlua::Error::external(e)
}

/// A table is an array when its keys are exactly 1..n, a map otherwise.
fn pack_table(t: &Table, out: &mut Vec<u8>, depth: usize) -> mlua::Result<()> {
    let pairs: Vec<(Value, Value)> = t.pairs().collect::<mlua::Result<_>>()?;
    let len = t.raw_len();
    if len == pairs.len() {
        rmp::encode::write_array_len(out, len as u32).map_err(ext)?;
        for i in 1..=len {
            pack(&t.raw_get::<Value>(i)?, out, depth + 1)?;
        }
    } else {
        rmp::encode::write_map_len(out, pairs.len() as u32).map_err(ext)?;
        for (k, v) in &pairs {
            pack(k, out, depth + 1)?;
            pack(v, out, depth + 1)?;
        }
    }
    Ok(())
}

fn from_msgpack(lua: &Lua, v: &rmpv::Value) -> mlua::Result<Value> {
    use rmpv::Value as M;
    Ok(match v {
        M::Nil => Value::Nil,
        M::Boolean(b) => Value::Boolean(*b),
        M::Integer(n) => Value::Number(n.as_f64().unwrap_or(0.0)),
        M::F32(x) => Value::Number(f64::from(*x)),
        M::F64(x) => Value::Number(*x),
        M::String(s) => Value::String(lua.create_string(s.as_bytes())?),
        M::Binary(b) => Value::String(lua.create_string(b)?),
        M::Array(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, from_msgpack(lua, item)?)?;
            }
            Value::Table(t)
        }
        M::Map(pairs) => {
            let t = lua.create_table_with_capacity(0, pairs.len())?;
            for (k, v) in pairs {
                t.raw_set(from_msgpack(lua, k)?, from_msgpack(lua, v)?)?;
            }
            Value::Table(t)
        }
        M::Ext(_, data) => Value::String(lua.create_string(data)?),
    })
}
