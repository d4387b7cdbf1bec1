//! Function libraries in a Lua state: a library's `#!lua name=<lib>` line, the functions its
//! code registers with `redis.register_function` (both forms, Redis's checks and error
//! texts), and each state's table of every library's functions.
//!
//! The keyspace keeps only the libraries' code (`nsqr_kv::functions`). Each serving thread's
//! Lua state runs that code again whenever the libraries change (a library's code can only
//! register functions and log, so running it twice does nothing more) and keeps the
//! functions it registered, by name.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use mlua::{Function, Lua, Table, Value};
use nsqr_kv::functions::Libraries;

use super::vm::{compile_chunk, Vm, LIBRARY_CHUNK};

/// How long a library's code may run while it loads (Redis's `LOAD_TIMEOUT_MS`).
const LOAD_TIMEOUT: Duration = Duration::from_millis(500);

/// A function's flags, in the order Redis lists them.
pub const FLAG_NAMES: [&str; 5] = [
    "no-writes",
    "allow-oom",
    "allow-stale",
    "no-cluster",
    "allow-cross-slot-keys",
];
pub const NO_WRITES: u8 = 1;
pub const ALLOW_OOM: u8 = 1 << 1;

const BAD_NAME: &str = "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long";

/// A function a library registered.
pub struct Registered {
    pub name: String,
    pub callback: Function,
    pub description: Option<String>,
    /// Bits of [`FLAG_NAMES`].
    pub flags: u8,
}

/// One library's functions, in the order it registered them.
pub struct Library {
    pub name: String,
    pub code: std::sync::Arc<[u8]>,
    pub functions: Vec<Registered>,
}

/// Every library's functions in one Lua state.
#[derive(Default)]
pub struct Functions {
    /// The keyspace's libraries generation these were loaded at.
    generation: Option<u64>,
    /// In library name order.
    pub libraries: Vec<Library>,
    /// A function's library and place in it.
    by_name: HashMap<String, (usize, usize)>,
}

impl Functions {
    pub fn get(&self, name: &[u8]) -> Option<&Registered> {
        let name = std::str::from_utf8(name).ok()?;
        let &(lib, i) = self.by_name.get(name)?;
        Some(&self.libraries[lib].functions[i])
    }

    pub fn function_count(&self) -> usize {
        self.by_name.len()
    }
}

/// Whether `name` is a valid library or function name.
fn valid_name(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_')
}

/// The library name of a library's `#!<engine> name=<name>` line: Redis's error (without its
/// `ERR `) if it has none, a bad one, or an engine other than Lua.
pub fn library_name(code: &[u8]) -> Result<String, String> {
    let Some(rest) = code.strip_prefix(b"#!") else {
        return Err("Missing library metadata".into());
    };
    let Some(end) = rest.iter().position(|&c| c == b'\n') else {
        return Err("Invalid library metadata".into());
    };
    let line = String::from_utf8_lossy(&rest[..end]);
    let mut parts = line.split_ascii_whitespace().map(unquote);
    let engine = parts.next().unwrap_or_default();
    let mut name = None;
    for part in parts {
        if part.len() >= 5 && part[..5].eq_ignore_ascii_case("name=") {
            if name.is_some() {
                return Err(
                    "Invalid metadata value, name argument was given multiple times".into(),
                );
            }
            name = Some(unquote(&part[5..]).to_owned());
        } else {
            return Err(format!("Invalid metadata value given: {part}"));
        }
    }
    let Some(name) = name else {
        return Err("Library name was not given".into());
    };
    if !valid_name(name.as_bytes()) {
        return Err(BAD_NAME.into());
    }
    if !engine.eq_ignore_ascii_case("lua") {
        return Err(format!("Engine '{engine}' not found"));
    }
    Ok(name)
}

/// A word of the `#!` line without the double quotes around it (or around its value).
fn unquote(word: &str) -> &str {
    match word.strip_prefix('"').and_then(|w| w.strip_suffix('"')) {
        Some(inner) => inner,
        None => word,
    }
}

/// `redis.register_function(name, callback)` or `redis.register_function{function_name =
/// ..., callback = ..., flags = {...}, description = ...}`: the function, or Redis's error.
pub fn register(lua: &Lua, args: &[Value], so_far: &[Registered]) -> Result<Registered, String> {
    let text = |v: &Value| -> Option<String> {
        match v {
            Value::String(s) => Some(s.to_string_lossy()),
            Value::Integer(_) | Value::Number(_) => lua
                .coerce_string(v.clone())
                .ok()
                .flatten()
                .map(|s| s.to_string_lossy()),
            _ => None,
        }
    };
    let r = match args {
        [Value::Table(t)] => named(t, &text)?,
        [_] => return Err("ERR calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).".into()),
        [name, callback] => {
            let name = text(name)
                .ok_or("ERR first argument to redis.register_function must be a string")?;
            let Value::Function(callback) = callback else {
                return Err("ERR second argument to redis.register_function must be a function".into());
            };
            Registered {
                name,
                callback: callback.clone(),
                description: None,
                flags: 0,
            }
        }
        _ => return Err("ERR wrong number of arguments to redis.register_function".into()),
    };
    if !valid_name(r.name.as_bytes()) {
        return Err(format!("ERR {BAD_NAME}"));
    }
    if so_far.iter().any(|f| f.name == r.name) {
        return Err("ERR Function already exists in the library".into());
    }
    Ok(r)
}

/// The named-arguments form of `redis.register_function`.
fn named(t: &Table, text: &dyn Fn(&Value) -> Option<String>) -> Result<Registered, String> {
    let (mut name, mut callback, mut description, mut flags) = (None, None, None, 0u8);
    for pair in t.pairs::<Value, Value>() {
        let (k, v) = pair.map_err(|e| format!("ERR {e}"))?;
        let key = match &k {
            Value::String(s) => s.to_string_lossy(),
            _ => String::new(),
        };
        match key.as_str() {
            "function_name" => {
                name = Some(text(&v).ok_or(
                    "ERR function_name argument given to redis.register_function must be a string",
                )?);
            }
            "description" => {
                description = Some(text(&v).ok_or(
                    "ERR description argument given to redis.register_function must be a string",
                )?);
            }
            "callback" => {
                match v {
                    Value::Function(f) => callback = Some(f),
                    _ => return Err(
                        "ERR callback argument given to redis.register_function must be a function"
                            .into(),
                    ),
                }
            }
            "flags" => flags = parse_flags(&v)?,
            _ => return Err("ERR unknown argument given to redis.register_function".into()),
        }
    }
    let name = name.ok_or("ERR redis.register_function must get a function name argument")?;
    let callback = callback.ok_or("ERR redis.register_function must get a callback argument")?;
    Ok(Registered {
        name,
        callback,
        description,
        flags,
    })
}

fn parse_flags(v: &Value) -> Result<u8, String> {
    let Value::Table(t) = v else {
        return Err("ERR flags argument to redis.register_function must be a table representing function flags".into());
    };
    let mut flags = 0;
    for item in t.sequence_values::<Value>() {
        let known = match item {
            Ok(Value::String(s)) => FLAG_NAMES.iter().position(|f| s.as_bytes() == f.as_bytes()),
            _ => None,
        };
        match known {
            Some(bit) => flags |= 1 << bit,
            None => return Err("ERR unknown flag given".into()),
        }
    }
    Ok(flags)
}

impl Vm {
    /// Runs a library's code and returns the functions it registered: Redis's error text
    /// (without the `ERR ` of the reply) if it does not compile, fails, runs past its time or
    /// registers nothing.
    pub fn load_code(&mut self, code: &[u8]) -> Result<Vec<Registered>, String> {
        let f = compile_chunk(&self.lua, code, LIBRARY_CHUNK)
            .map_err(|e| format!("Error compiling function: {e}"))?;
        self.registered.borrow_mut().clear();
        self.failure.borrow_mut().take();
        self.load_deadline.set(Some(Instant::now() + LOAD_TIMEOUT));
        let outcome = self.load_library.call::<(bool, Value)>(f);
        self.load_deadline.set(None);
        let registered = std::mem::take(&mut *self.registered.borrow_mut());
        match outcome {
            Ok((true, _)) if registered.is_empty() => Err("No functions registered".into()),
            Ok((true, _)) => Ok(registered),
            Ok((false, err)) => Err(format!(
                "Error registering functions: {}",
                super::convert::error_message(&err)
            )),
            Err(e) => Err(format!("Error registering functions: {e}")),
        }
    }

    /// Loads every library of `libraries` (at `generation`) unless they already are.
    pub fn sync_functions(&mut self, generation: u64, libraries: &Libraries) {
        if self.functions.generation == Some(generation) {
            return;
        }
        let mut functions = Functions {
            generation: Some(generation),
            ..Functions::default()
        };
        for (name, code) in libraries {
            match self.load_code(code) {
                Ok(registered) => {
                    let lib = functions.libraries.len();
                    for (i, f) in registered.iter().enumerate() {
                        functions.by_name.insert(f.name.clone(), (lib, i));
                    }
                    functions.libraries.push(Library {
                        name: name.clone(),
                        code: std::sync::Arc::clone(code),
                        functions: registered,
                    });
                }
                Err(e) => tracing::warn!("KV: function library {name} does not load - {e}"),
            }
        }
        self.functions = functions;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_lines_as_redis_reads_them() {
        let name = |code: &str| library_name(code.as_bytes());
        assert_eq!(name("#!lua name=lib_1\ncode"), Ok("lib_1".into()));
        assert_eq!(name("#!LUA  NAME=x\t\n"), Ok("x".into()));
        assert_eq!(name("#!lua name=\"q\"\n"), Ok("q".into()));
        for (code, error) in [
            ("return 1", "Missing library metadata"),
            ("#!lua name=x", "Invalid library metadata"),
            ("#!lua\n", "Library name was not given"),
            ("#!lua foo=bar\n", "Invalid metadata value given: foo=bar"),
            (
                "#!lua name=a name=b\n",
                "Invalid metadata value, name argument was given multiple times",
            ),
            ("#!lua name=a-b\n", BAD_NAME),
            ("#!lua name=\n", BAD_NAME),
            ("#!js name=x\n", "Engine 'js' not found"),
        ] {
            assert_eq!(name(code), Err(error.to_owned()), "{code}");
        }
    }

    #[test]
    fn names_are_letters_digits_and_underscores() {
        assert!(valid_name(b"a_1Z"));
        assert!(!valid_name(b""));
        assert!(!valid_name(b"a b"));
        assert!(!valid_name("é".as_bytes()));
    }
}
