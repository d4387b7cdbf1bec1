//! Replies between Redis and Lua, converted as Redis 7.0 converts them.
//!
//! A command's reply becomes a Lua value for `redis.call`: integers are numbers, bulk strings
//! strings, arrays tables, a status `{ok = ...}`, an error `{err = ...}`, a RESP2 null
//! `false`; under `redis.setresp(3)` a map is `{map = {...}}`, a set `{set = {...}}`, a null
//! `nil`, a double `{double = n}`, booleans booleans. A script's return value goes the other
//! way. Nesting is bounded: a deeper (or self-referencing) table gives an error element.

use mlua::{Lua, Table, Value};
use resp_wire::{Frame, Protocol, Reply};

/// Deepest table a script's reply may nest.
const MAX_DEPTH: usize = 1000;

/// `{err = msg}`.
pub fn error_table(lua: &Lua, msg: &str) -> mlua::Result<Value> {
    let t = lua.create_table()?;
    t.raw_set("err", msg)?;
    Ok(Value::Table(t))
}

/// A command's reply as Lua sees it, and whether it is an error.
pub fn to_lua(lua: &Lua, frame: &Frame, resp: Protocol) -> mlua::Result<(Value, bool)> {
    let is_error = matches!(frame, Frame::Error(_));
    Ok((value(lua, frame, resp)?, is_error))
}

/// The reply `bytes` (one reply, as the command wrote it in protocol `resp`) as Lua sees it,
/// and whether it is an error; `None` if they hold no reply. A bulk string, an integer, a
/// status, an error or a null (what plain reads and writes answer) becomes its Lua value
/// straight from the bytes; an aggregate goes through a [`Frame`].
pub fn reply_to_lua(
    lua: &Lua,
    bytes: &[u8],
    resp: Protocol,
) -> mlua::Result<Option<(Value, bool)>> {
    let string = |b: &[u8]| -> mlua::Result<Value> { Ok(Value::String(lua.create_string(b)?)) };
    let Some(scalar) = scalar(bytes) else {
        return match resp_wire::decode(bytes) {
            Ok(Some((frame, _))) => to_lua(lua, &frame, resp).map(Some),
            _ => Ok(None),
        };
    };
    let value = match scalar {
        Scalar::Simple(s) => (tagged(lua, "ok", string(s)?)?, false),
        Scalar::Error(e) => (tagged(lua, "err", string(e)?)?, true),
        Scalar::Integer(n) => (Value::Number(n as f64), false),
        Scalar::Bulk(b) => (string(b)?, false),
        Scalar::Null if resp == Protocol::Resp2 => (Value::Boolean(false), false),
        Scalar::Null => (Value::Nil, false),
    };
    Ok(Some(value))
}

/// A reply that is one value, not an aggregate, read in place.
#[derive(Debug, PartialEq)]
enum Scalar<'a> {
    Simple(&'a [u8]),
    Error(&'a [u8]),
    Integer(i64),
    Bulk(&'a [u8]),
    Null,
}

/// `bytes` as one [`Scalar`], if that is all they hold.
fn scalar(bytes: &[u8]) -> Option<Scalar<'_>> {
    let (&tag, rest) = bytes.split_first()?;
    let cr = rest.iter().position(|&c| c == b'\r')?;
    let (text, after) = (&rest[..cr], rest.get(cr + 1..)?.strip_prefix(b"\n")?);
    let alone = after.is_empty();
    match tag {
        b'+' if alone => Some(Scalar::Simple(text)),
        b'-' if alone => Some(Scalar::Error(text)),
        b':' if alone => resp_wire::parse_i64(text).map(Scalar::Integer),
        b'_' if alone => Some(Scalar::Null),
        b'$' if text == b"-1" => alone.then_some(Scalar::Null),
        b'$' => {
            let len = usize::try_from(resp_wire::parse_u64(text)?).ok()?;
            let data = after.strip_suffix(b"\r\n")?;
            (data.len() == len).then_some(Scalar::Bulk(data))
        }
        _ => None,
    }
}

/// `{tag = v}`.
fn tagged(lua: &Lua, tag: &str, v: Value) -> mlua::Result<Value> {
    let t = lua.create_table()?;
    t.raw_set(tag, v)?;
    Ok(Value::Table(t))
}

fn value(lua: &Lua, frame: &Frame, resp: Protocol) -> mlua::Result<Value> {
    let tagged = |tag: &str, v: Value| tagged(lua, tag, v);
    let string = |b: &[u8]| -> mlua::Result<Value> { Ok(Value::String(lua.create_string(b)?)) };
    Ok(match frame {
        Frame::Simple(s) => tagged("ok", string(s)?)?,
        Frame::Error(e) => tagged("err", string(e)?)?,
        Frame::Integer(n) => Value::Number(*n as f64),
        Frame::Bulk(b) => string(b)?,
        Frame::Null if resp == Protocol::Resp2 => Value::Boolean(false),
        Frame::Null => Value::Nil,
        Frame::Boolean(b) => Value::Boolean(*b),
        Frame::Double(d) => tagged("double", Value::Number(*d))?,
        Frame::BigNumber(d) => tagged("big_number", string(d)?)?,
        Frame::Verbatim(format, text) => {
            let t = lua.create_table()?;
            t.raw_set("format", lua.create_string(format)?)?;
            t.raw_set("string", lua.create_string(text)?)?;
            tagged("verbatim_string", Value::Table(t))?
        }
        Frame::Array(items) | Frame::Push(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, f) in items.iter().enumerate() {
                t.raw_set(i + 1, value(lua, f, resp)?)?;
            }
            Value::Table(t)
        }
        Frame::Map(pairs) => {
            let t = lua.create_table_with_capacity(0, pairs.len())?;
            for (k, v) in pairs {
                t.raw_set(value(lua, k, resp)?, value(lua, v, resp)?)?;
            }
            tagged("map", Value::Table(t))?
        }
        Frame::Set(items) => {
            let t = lua.create_table_with_capacity(0, items.len())?;
            for f in items {
                t.raw_set(value(lua, f, resp)?, true)?;
            }
            tagged("set", Value::Table(t))?
        }
    })
}

/// Writes a script's return value. `resp` is the script's `redis.setresp` version, which
/// decides what a Lua boolean becomes.
pub fn to_reply(v: &Value, out: &mut Reply, resp: Protocol) {
    write(v, out, resp, 0);
}

fn write(v: &Value, out: &mut Reply, resp: Protocol, depth: usize) {
    if depth > MAX_DEPTH {
        return out.error("ERR reached lua stack limit");
    }
    match v {
        Value::Boolean(b) if resp == Protocol::Resp3 => out.boolean(*b),
        Value::Boolean(true) => out.integer(1),
        Value::Integer(n) => out.integer(*n),
        Value::Number(x) => out.integer(to_integer(*x)),
        Value::String(s) => out.bulk(&s.as_bytes()),
        Value::Table(t) => write_table(t, out, resp, depth),
        _ => out.null(),
    }
}

fn field(t: &Table, name: &str) -> Value {
    t.raw_get(name).unwrap_or(Value::Nil)
}

fn write_table(t: &Table, out: &mut Reply, resp: Protocol, depth: usize) {
    if let Value::String(e) = field(t, "err") {
        return out.error(&String::from_utf8_lossy(&e.as_bytes()));
    }
    if let Value::String(s) = field(t, "ok") {
        let text: Vec<u8> = s
            .as_bytes()
            .iter()
            .map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c })
            .collect();
        return out.simple(&text);
    }
    match field(t, "double") {
        Value::Number(d) => return out.double(d),
        // A whole number comes back from Lua as an integer.
        Value::Integer(n) => return out.double(n as f64),
        _ => {}
    }
    if let Value::String(d) = field(t, "big_number") {
        return out.big_number(&d.as_bytes());
    }
    if let Value::Table(m) = field(t, "map") {
        let pairs: Vec<(Value, Value)> = m.pairs().filter_map(Result::ok).collect();
        out.map(pairs.len());
        for (k, v) in &pairs {
            write(k, out, resp, depth + 1);
            write(v, out, resp, depth + 1);
        }
        return;
    }
    if let Value::Table(s) = field(t, "set") {
        let members: Vec<Value> = s
            .pairs::<Value, Value>()
            .filter_map(Result::ok)
            .map(|(k, _)| k)
            .collect();
        out.set(members.len());
        for m in &members {
            write(m, out, resp, depth + 1);
        }
        return;
    }
    if let Value::Table(v) = field(t, "verbatim_string") {
        if let (Value::String(f), Value::String(s)) = (field(&v, "format"), field(&v, "string")) {
            let f = f.as_bytes();
            if let Ok(format) = <[u8; 3]>::try_from(&f[..]) {
                return out.verbatim(&format, &s.as_bytes());
            }
        }
    }
    let mut items = Vec::new();
    loop {
        match t.raw_get::<Value>(items.len() + 1) {
            Ok(Value::Nil) | Err(_) => break,
            Ok(v) => items.push(v),
        }
    }
    out.array(items.len());
    for v in &items {
        write(v, out, resp, depth + 1);
    }
}

/// A Lua number as Redis's C code casts it to an integer: out of range (or NaN) gives the
/// x86 result, `i64::MIN`.
fn to_integer(x: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if x.is_nan() || !(-LIMIT..LIMIT).contains(&x) {
        i64::MIN
    } else {
        x as i64
    }
}

/// A Lua number passed to `redis.call`, as Redis writes it: C's `%.17g`.
pub fn number_text(x: f64) -> String {
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.to_owned();
    }
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.to_owned();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    let sci = format!("{x:.16e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            s.to_owned()
        }
    };
    if !(-4..17).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.abs())
    } else {
        trim(&format!("{x:.*}", (16 - exp) as usize))
    }
}

/// The message of a script's error table (`{err = ...}`).
pub fn error_message(err: &Value) -> String {
    match err {
        Value::Table(t) => match field(t, "err") {
            Value::String(s) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
            _ => "ERR unknown error".to_owned(),
        },
        Value::String(s) => format!("ERR {}", s.to_string_lossy()),
        _ => "ERR unknown error".to_owned(),
    }
}

/// The error a failed script answers: its message, the script, and where it failed.
pub fn error_text(err: &Value, sha: &str) -> String {
    let t = match err {
        Value::Table(t) => t,
        // An error the handler never saw: Lua's "not enough memory".
        Value::String(s) => return format!("ERR {} script: {sha}", s.to_string_lossy()),
        _ => return "ERR unknown error".to_owned(),
    };
    let msg = error_message(err);
    match (field(t, "source"), field(t, "line")) {
        (Value::String(source), Value::Integer(line)) => {
            format!(
                "{msg} script: {sha}, on {}:{line}.",
                source.to_string_lossy()
            )
        }
        (Value::String(source), Value::Number(line)) => format!(
            "{msg} script: {sha}, on {}:{}.",
            source.to_string_lossy(),
            line as i64
        ),
        _ => msg,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn numbers_are_written_as_c_writes_them() {
        for (x, text) in [
            (1.5, "1.5"),
            (1.0 / 3.0, "0.33333333333333331"),
            (1e15, "1000000000000000"),
            (1e17, "1e+17"),
            (123456789.0, "123456789"),
            (0.0001, "0.0001"),
            (0.00001, "1.0000000000000001e-05"),
            (-2.5, "-2.5"),
            (f64::INFINITY, "inf"),
        ] {
            assert_eq!(number_text(x), text, "{x}");
        }
    }

    #[test]
    fn single_values_are_read_in_place() {
        assert_eq!(scalar(b"+OK\r\n"), Some(Scalar::Simple(b"OK")));
        assert_eq!(scalar(b"-ERR no\r\n"), Some(Scalar::Error(b"ERR no")));
        assert_eq!(scalar(b":-12\r\n"), Some(Scalar::Integer(-12)));
        assert_eq!(scalar(b"$-1\r\n"), Some(Scalar::Null));
        assert_eq!(scalar(b"_\r\n"), Some(Scalar::Null));
        assert_eq!(scalar(b"$0\r\n\r\n"), Some(Scalar::Bulk(b"")));
        assert_eq!(scalar(b"$4\r\na\r\nb\r\n"), Some(Scalar::Bulk(b"a\r\nb")));
        // Aggregates, other types, more than one reply, or a broken one: not read in place.
        for other in [
            &b"*1\r\n:1\r\n"[..],
            b",1.5\r\n",
            b"#t\r\n",
            b":1\r\n:2\r\n",
            b"$3\r\nab\r\n",
            b"$2\r\nabc\r\n",
            b"$99999999999999999999\r\n",
            b":x\r\n",
            b"+OK\r",
            b"+OK",
            b"",
        ] {
            assert_eq!(scalar(other), None, "{:?}", String::from_utf8_lossy(other));
        }
    }

    #[test]
    fn replies_read_in_place_are_what_frames_give() {
        let lua = Lua::new();
        for resp in [Protocol::Resp2, Protocol::Resp3] {
            for bytes in [
                &b"+OK\r\n"[..],
                b"-ERR no\r\n",
                b":7\r\n",
                b"$-1\r\n",
                b"_\r\n",
                b"$3\r\nabc\r\n",
            ] {
                let fast = reply_to_lua(&lua, bytes, resp).unwrap().unwrap();
                let (frame, _) = resp_wire::decode(bytes).unwrap().unwrap();
                let slow = to_lua(&lua, &frame, resp).unwrap();
                assert_eq!(fast.1, slow.1);
                let (mut a, mut b) = (Reply::new(resp), Reply::new(resp));
                to_reply(&fast.0, &mut a, resp);
                to_reply(&slow.0, &mut b, resp);
                assert_eq!(
                    a.as_bytes(),
                    b.as_bytes(),
                    "{:?}",
                    String::from_utf8_lossy(bytes)
                );
            }
        }
    }

    #[test]
    fn numbers_become_integers_as_c_casts_them() {
        assert_eq!(to_integer(3.99), 3);
        assert_eq!(to_integer(-3.5), -3);
        assert_eq!(to_integer(f64::INFINITY), i64::MIN);
        assert_eq!(to_integer(f64::NAN), i64::MIN);
        assert_eq!(to_integer(1e30), i64::MIN);
    }
}
