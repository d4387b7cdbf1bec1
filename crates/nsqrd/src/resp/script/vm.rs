//! One Lua 5.1 state (the `mlua` crate, its Lua built from crates.io) set up as Redis sets up
//! its own: the base, table, string and math libraries, `cjson` and `bit`, Redis's `redis`
//! table (`prelude.lua`), read-only globals, and a hook that stops a script killed with
//! SCRIPT KILL. Scripts are compiled once and kept by SHA1 until SCRIPT FLUSH.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

use mlua::{
    Function, HookTriggers, Lua, LuaOptions, MultiValue, StdLib, Table, Value, Variadic, VmState,
};
use resp_wire::{Protocol, Reply};

use std::time::Instant;

use super::super::session::Ctx;
use super::super::table::{self, NOSCRIPT, WRITE};
use super::cache::{ByDigest, Cache, Script};
use super::dispatch::Dispatch;
use super::library::{self, Functions, Registered};
use super::{convert, libs, Job, RunState, Source, NO_SUCH_SCRIPT};

/// What `prelude.lua` returns (see there).
type Prelude = (Function, Function, Function, Function, Function);

/// Instructions between two checks for SCRIPT KILL.
const CHECK_EVERY: u32 = 100_000;
/// Most memory one Lua state may use (Redis sets none; this keeps a runaway script bounded).
const MEMORY_LIMIT: usize = 1 << 30;
/// Lua memory in use past which a full collection follows a script (Lua 5.1 does not collect
/// when an allocation fails, so a script that ran out of memory would starve the next).
const COLLECT_ABOVE: usize = 64 << 20;
/// The error of a killed script.
const KILLED: &str = "ERR Script killed by user with SCRIPT KILL...";
/// The error of a library whose loading ran past its time.
const LOAD_TIMEOUT: &str = "ERR FUNCTION LOAD timeout";

/// A Lua state ready to run scripts.
pub struct Vm {
    pub(super) lua: Lua,
    /// The scripts of the cache this state compiled, by digest.
    compiled: ByDigest<Rc<Compiled>>,
    /// The script cache's generation the compiled scripts belong to.
    generation: u64,
    run: Function,
    prepare: Function,
    /// Where `redis.call` finds the client of the run in progress.
    dispatch: Rc<Dispatch>,
    /// Runs a library's code in the loading environment (`prelude.lua`).
    pub(super) load_library: Function,
    /// Calls a registered function with its keys and arguments (`prelude.lua`).
    run_function: Function,
    /// What `redis.register_function` registered while a library loads.
    pub(super) registered: Rc<RefCell<Vec<Registered>>>,
    /// When a library's load must have ended (`FUNCTION LOAD timeout`).
    pub(super) load_deadline: Rc<Cell<Option<Instant>>>,
    /// The functions of every library, as of `functions_generation` (`library.rs`).
    pub(super) functions: Functions,
    /// The protocol `redis.call` replies come in (`redis.setresp`).
    resp: Rc<Cell<Protocol>>,
    pub(super) failure: Slot,
    keys: Table,
    argv: Table,
}

/// A script and its compiled function.
pub struct Compiled {
    pub function: Function,
    pub script: Arc<Script>,
}

/// The run in progress, as `redis.call` sees it (through [`Dispatch`]).
struct Run<'r, 'c> {
    ctx: RefCell<&'r mut Ctx<'c>>,
    read_only: bool,
}

#[derive(Default)]
struct Scratch {
    args: resp_wire::OwnedArgs,
    reply: Vec<u8>,
}

/// The error a Rust function raised, with the script's line and chunk then, for the error
/// handler (`prelude.lua`): Lua sees only an opaque userdata.
pub(super) type Slot = Rc<RefCell<Option<(String, Option<(usize, &'static str)>)>>>;

/// Raises `msg` as the script's error.
pub(super) fn raise(lua: &Lua, slot: &Slot, msg: &str) -> mlua::Error {
    *slot.borrow_mut() = Some((msg.to_owned(), script_line(lua)));
    mlua::Error::runtime(msg.to_owned())
}

impl Vm {
    pub fn new(generation: u64, state: Arc<RunState>) -> mlua::Result<Vm> {
        let lua = Lua::new_with(
            StdLib::TABLE | StdLib::STRING | StdLib::MATH,
            LuaOptions::new(),
        )?;
        lua.set_memory_limit(MEMORY_LIMIT)?;
        let failure: Slot = Rc::default();
        let load_deadline: Rc<Cell<Option<Instant>>> = Rc::default();
        {
            let (failure, deadline) = (Rc::clone(&failure), Rc::clone(&load_deadline));
            lua.set_hook(
                HookTriggers::new().every_nth_instruction(CHECK_EVERY),
                move |lua, _| {
                    if state.killed() {
                        return Err(raise(lua, &failure, KILLED));
                    }
                    if deadline.get().is_some_and(|d| Instant::now() >= d) {
                        return Err(raise(lua, &failure, LOAD_TIMEOUT));
                    }
                    Ok(VmState::Continue)
                },
            )?;
        }
        libs::install(&lua)?;
        let resp = Rc::new(Cell::new(Protocol::Resp2));
        let take_failure = {
            let failure = Rc::clone(&failure);
            lua.create_function(move |_, ()| {
                Ok(match failure.borrow_mut().take() {
                    Some((why, Some((line, source)))) => (Some(why), Some(line), Some(source)),
                    Some((why, None)) => (Some(why), None, None),
                    None => (None, None, None),
                })
            })?
        };
        let where_ = lua.create_function(|lua, ()| Ok(script_line(lua).unzip()))?;
        let sha1hex = {
            let failure = Rc::clone(&failure);
            lua.create_function(move |lua, args: Variadic<Value>| {
                let text = match &args[..] {
                    [v] => lua.coerce_string(v.clone())?,
                    _ => None,
                };
                match text {
                    Some(t) => Ok(super::sha1_hex(&t.as_bytes())),
                    None => Err(raise(lua, &failure, "ERR wrong number of arguments")),
                }
            })?
        };
        let log = {
            let failure = Rc::clone(&failure);
            lua.create_function(move |lua, args: Variadic<Value>| log(lua, &failure, &args))?
        };
        let set_resp = {
            let (resp, failure) = (Rc::clone(&resp), Rc::clone(&failure));
            lua.create_function(move |lua, args: Variadic<Value>| {
                let version = match &args[..] {
                    [v] => lua.coerce_string(v.clone())?.map(|s| s.to_string_lossy()),
                    _ => {
                        return Err(raise(
                            lua,
                            &failure,
                            "ERR redis.setresp() requires one argument.",
                        ))
                    }
                };
                match version.as_deref() {
                    Some("2") => resp.set(Protocol::Resp2),
                    Some("3") => resp.set(Protocol::Resp3),
                    _ => return Err(raise(lua, &failure, "ERR RESP version must be 2 or 3.")),
                }
                Ok(())
            })?
        };
        let registered: Rc<RefCell<Vec<Registered>>> = Rc::default();
        let register = {
            let (registered, failure) = (Rc::clone(&registered), Rc::clone(&failure));
            lua.create_function(move |lua, args: Variadic<Value>| {
                let mut registered = registered.borrow_mut();
                match library::register(lua, &args, &registered) {
                    Ok(r) => {
                        registered.push(r);
                        Ok(())
                    }
                    Err(e) => Err(raise(lua, &failure, &e)),
                }
            })?
        };
        let (keys, argv) = (lua.create_table()?, lua.create_table()?);
        lua.globals().raw_set("KEYS", &keys)?;
        lua.globals().raw_set("ARGV", &argv)?;
        let (run, set_dispatch, prepare, load_library, run_function): Prelude = lua
            .load(include_str!("prelude.lua"))
            .set_name("=redis")
            .call((take_failure, where_, sha1hex, log, set_resp, register))?;
        let dispatch = Rc::new(Dispatch::default());
        let command = |raise_errors| redis_call(&lua, &dispatch, &resp, &failure, raise_errors);
        set_dispatch.call::<()>((command(true)?, command(false)?))?;
        Ok(Vm {
            lua,
            compiled: ByDigest::default(),
            generation,
            run,
            prepare,
            dispatch,
            load_library,
            run_function,
            registered,
            load_deadline,
            functions: Functions::default(),
            resp,
            failure,
            keys,
            argv,
        })
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The script `source` names, compiled: a script this state ran before is looked up once,
    /// by digest. Redis's error for a script not in the cache, a bad `#!` line, or a script
    /// that does not compile.
    pub fn script(&mut self, cache: &Cache, source: &Source) -> Result<Rc<Compiled>, String> {
        let digest = match source {
            Source::Body(s) => &s.digest,
            Source::Sha(d) => d,
        };
        if let Some(compiled) = self.compiled.get(digest) {
            return Ok(Rc::clone(compiled));
        }
        let script = match source {
            Source::Body(s) => Arc::clone(s),
            Source::Sha(d) => cache.get(d).ok_or(NO_SUCH_SCRIPT)?,
        };
        script.no_writes.clone()?;
        let function = compile(&self.lua, &script.body)?;
        let function: Function = self
            .prepare
            .call(function)
            .map_err(|e| format!("ERR Error compiling script (new function): {e}"))?;
        let compiled = Rc::new(Compiled { function, script });
        if compiled.script.kept {
            self.compiled
                .insert(compiled.script.digest, Rc::clone(&compiled));
        }
        Ok(compiled)
    }

    /// Runs the script `compiled` with `job`'s keys and arguments as `ctx`'s client and
    /// writes its reply (or error) to `ctx.out`. A SELECT in the script holds until the
    /// script ends, as in Redis.
    pub fn run(&self, ctx: &mut Ctx<'_>, compiled: &Compiled, job: &Job<'_>, read_only: bool) {
        let db = ctx.s.db;
        if let Err(e) = unlimited(&self.lua, || self.set_keys_and_args(job)) {
            ctx.out.error(&format!("ERR {e}"));
        } else {
            let sha = &compiled.script.sha;
            self.invoke(ctx, read_only, sha, || self.run.call(&compiled.function));
        }
        if ctx.s.db != db {
            crate::resp::databases::switch(ctx, db);
        }
    }

    /// Runs a registered function with its keys and arguments as `ctx`'s client; `name` is
    /// its name (for errors).
    pub(super) fn call_function(
        &mut self,
        ctx: &mut Ctx<'_>,
        name: &str,
        f: &Function,
        (keys, args): (&[&[u8]], &[&[u8]]),
        read_only: bool,
    ) {
        let db = ctx.s.db;
        let tables = unlimited(&self.lua, || {
            let list = |items: &[&[u8]]| -> mlua::Result<Table> {
                let t = self.lua.create_table_with_capacity(items.len(), 0)?;
                for (i, item) in items.iter().enumerate() {
                    t.raw_set(i + 1, self.lua.create_string(item)?)?;
                }
                Ok(t)
            };
            Ok::<_, mlua::Error>((list(keys)?, list(args)?))
        });
        match tables {
            Ok(tables) => self.invoke(ctx, read_only, name, || {
                self.run_function.call((f, tables.0, tables.1))
            }),
            Err(e) => ctx.out.error(&format!("ERR {e}")),
        }
        if ctx.s.db != db {
            crate::resp::databases::switch(ctx, db);
        }
    }

    /// Runs what `start` starts with `redis.call` and `redis.pcall` set for `ctx`'s client,
    /// and writes its reply; `name` names the script in its errors.
    fn invoke(
        &self,
        ctx: &mut Ctx<'_>,
        read_only: bool,
        name: &str,
        start: impl FnOnce() -> mlua::Result<(bool, Value)>,
    ) {
        self.resp.set(Protocol::Resp2);
        self.failure.borrow_mut().take();
        let run = Run {
            ctx: RefCell::new(ctx),
            read_only,
        };
        let outcome = {
            let _active = self.dispatch.activate(&run);
            start()
        };
        let ctx = run.ctx.into_inner();
        if self.lua.used_memory() > COLLECT_ABOVE {
            // A failed collection leaves the state as it was: nothing to undo.
            let _ = self.lua.gc_collect();
        }
        match outcome {
            Ok((true, value)) => convert::to_reply(&value, ctx.out, self.resp.get()),
            Ok((false, err)) => ctx.out.error(&convert::error_text(&err, name)),
            Err(e) => ctx.out.error(&format!("ERR {e}")),
        }
    }

    /// Fills KEYS and ARGV (the same two tables every run: scripts cannot keep them, globals
    /// being read-only).
    fn set_keys_and_args(&self, job: &Job<'_>) -> mlua::Result<()> {
        let args = job.request;
        let given = args.len().saturating_sub(3);
        let (nkeys, nargs) = (job.numkeys, given - job.numkeys.min(given));
        for (i, a) in args.iter().skip(3).enumerate() {
            let s = self.lua.create_string(a)?;
            if i < nkeys {
                self.keys.raw_set(i + 1, s)?;
            } else {
                self.argv.raw_set(i + 1 - nkeys, s)?;
            }
        }
        clear_from(&self.keys, nkeys + 1)?;
        clear_from(&self.argv, nargs + 1)
    }
}

/// Runs `f` with the state's memory limit lifted. mlua creates a value from Rust (a string,
/// a table, a field) inside a protected call of its own (a new C closure and a `pcall`)
/// whenever a limit could make the allocation fail, and unprotected otherwise; what the
/// callers make here (KEYS and ARGV, a command's reply) is bounded by the request and the
/// reply, and the limit is back before Lua code runs again, so a script that grows past it
/// still fails at its next allocation
/// (docs/decisions/0027-scripts-and-transactions-cpu.md).
fn unlimited<R>(lua: &Lua, f: impl FnOnce() -> R) -> R {
    struct Restore<'l>(&'l Lua);
    impl Drop for Restore<'_> {
        fn drop(&mut self) {
            // Fails only for a Lua loaded as a module, which this never is.
            let _ = self.0.set_memory_limit(MEMORY_LIMIT);
        }
    }
    let _ = lua.set_memory_limit(0);
    let _restore = Restore(lua);
    f()
}

/// Removes `t[from]`, `t[from + 1]`, ... up to the first nil.
fn clear_from(t: &Table, from: usize) -> mlua::Result<()> {
    let mut i = from;
    while !t.raw_get::<Value>(i)?.is_nil() {
        t.raw_set(i, Value::Nil)?;
        i += 1;
    }
    Ok(())
}

/// The line the innermost frame of the user's script (or function library) is at, and its
/// chunk's name, if it is on the stack.
fn script_line(lua: &Lua) -> Option<(usize, &'static str)> {
    (0..)
        .map_while(|level| {
            lua.inspect_stack(level, |d| {
                let chunk = match d.source().source.as_deref() {
                    Some(SCRIPT_CHUNK) => SCRIPT_CHUNK,
                    Some(LIBRARY_CHUNK) => LIBRARY_CHUNK,
                    _ => return None,
                };
                d.current_line().map(|line| (line, chunk))
            })
        })
        .find_map(|found| found)
}

/// The chunk names Redis gives a script and a function library (errors show them).
const SCRIPT_CHUNK: &str = "@user_script";
pub(super) const LIBRARY_CHUNK: &str = "@user_function";

/// Compiles `body` (its `#!` line blanked, so line numbers stay) as the chunk `chunk`: Lua's
/// error text if it does not compile.
pub(super) fn compile_chunk(lua: &Lua, body: &[u8], chunk: &str) -> Result<Function, String> {
    let code: std::borrow::Cow<'_, [u8]> = match body.iter().position(|&c| c == b'\n') {
        Some(end) if body.starts_with(b"#!") => {
            let mut blanked = vec![b' '; end];
            blanked.extend_from_slice(&body[end..]);
            blanked.into()
        }
        None if body.starts_with(b"#!") => (&[][..]).into(),
        _ => body.into(),
    };
    lua.load(&*code)
        .set_name(chunk)
        .into_function()
        .map_err(|e| match e {
            mlua::Error::SyntaxError { message, .. } => message,
            other => other.to_string(),
        })
}

/// Compiles a script: Redis's error text if it does not compile.
fn compile(lua: &Lua, body: &str) -> Result<Function, String> {
    compile_chunk(lua, body.as_bytes(), SCRIPT_CHUNK)
        .map_err(|e| format!("ERR Error compiling script (new function): {e}"))
}

/// Whether `body` compiles (SCRIPT LOAD), with a throwaway state.
pub fn check_syntax(body: &str) -> Result<(), String> {
    super::shebang(body)?;
    let lua = Lua::new_with(StdLib::NONE, LuaOptions::new()).map_err(|e| format!("ERR {e}"))?;
    compile(&lua, body).map(drop)
}

/// `redis.call` (`raise_errors`) or `redis.pcall`, made once per state: runs its command as
/// the client of the run in progress.
fn redis_call(
    lua: &Lua,
    dispatch: &Rc<Dispatch>,
    resp: &Rc<Cell<Protocol>>,
    failure: &Slot,
    raise_errors: bool,
) -> mlua::Result<Function> {
    let (dispatch, resp, failure) = (Rc::clone(dispatch), Rc::clone(resp), Rc::clone(failure));
    let scratch = RefCell::new(Scratch::default());
    lua.create_function(move |lua, mut args: MultiValue| {
        let on = Call {
            dispatch: &dispatch,
            scratch: &scratch,
            resp: &resp,
            failure: &failure,
            raise_errors,
        };
        unlimited(lua, || on.call(lua, args.make_contiguous()))
    })
}

/// What one of `redis.call` and `redis.pcall` works with.
struct Call<'a> {
    dispatch: &'a Dispatch,
    /// The arguments and the reply of its command, reused from call to call.
    scratch: &'a RefCell<Scratch>,
    resp: &'a Cell<Protocol>,
    failure: &'a Slot,
    /// `redis.call` (rather than `redis.pcall`): an error reply is raised.
    raise_errors: bool,
}

impl Call<'_> {
    /// Runs the command `args` as the client of the run in progress.
    fn call(&self, lua: &Lua, args: &[Value]) -> mlua::Result<Value> {
        let busy = || raise(lua, self.failure, "ERR a script cannot run another script");
        #[allow(unsafe_code)]
        // SAFETY: `invoke` is the only place this dispatch is activated, always with a `Run`.
        let outcome = unsafe {
            self.dispatch.with(|run: &Run<'_, '_>| {
                let mut ctx = run.ctx.try_borrow_mut().map_err(|_| busy())?;
                let mut scratch = self.scratch.try_borrow_mut().map_err(|_| busy())?;
                call(
                    lua,
                    &mut ctx,
                    &mut scratch,
                    self.resp.get(),
                    run.read_only,
                    args,
                )
            })
        };
        let idle = || raise(lua, self.failure, "ERR no script is running");
        match outcome.ok_or_else(idle)?? {
            (Value::Table(t), true) if self.raise_errors => {
                let msg: String = t.raw_get("err")?;
                Err(raise(lua, self.failure, &msg))
            }
            (reply, _) => Ok(reply),
        }
    }
}

/// `redis.call` / `redis.pcall`: runs one command as the script's client. Returns the reply
/// and whether it is an error (which `redis.call` raises).
fn call(
    lua: &Lua,
    ctx: &mut Ctx<'_>,
    scratch: &mut Scratch,
    resp: Protocol,
    read_only: bool,
    args: &[Value],
) -> mlua::Result<(Value, bool)> {
    let fail = |msg: &str| Ok((convert::error_table(lua, msg)?, true));
    if args.is_empty() {
        return fail("ERR Please specify at least one argument for this redis lib call");
    }
    let owned = &mut scratch.args;
    owned.clear();
    for v in args.iter() {
        match v {
            Value::String(s) => owned.push(&s.as_bytes()),
            Value::Integer(n) => owned.push(n.to_string().as_bytes()),
            Value::Number(x) => owned.push(convert::number_text(*x).as_bytes()),
            _ => return fail("ERR Lua redis lib command arguments must be strings or integers"),
        }
    }
    let args = owned.args();
    let Some(cmd) = table::lookup(args.get(0)) else {
        return fail("ERR Unknown Redis command called from script");
    };
    if cmd.flags & NOSCRIPT != 0 {
        return fail("ERR This Redis command is not allowed from script");
    }
    if !table::arity_ok(cmd.arity, args.len()) {
        return fail("ERR Wrong number of args calling Redis command from script");
    }
    if cmd.flags & WRITE != 0 && read_only {
        return fail("ERR Write commands are not allowed from read-only scripts.");
    }
    if let Err(e) = table::admit(ctx, cmd, &args, crate::resp::acl::Context::Lua) {
        return fail(&e);
    }
    if cmd.flags & WRITE != 0 {
        ctx.shared
            .scripts
            .state
            .wrote
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }
    let mut buf = std::mem::take(&mut scratch.reply);
    buf.clear();
    let mut out = Reply::from_buf(resp, buf);
    // Lua code ran since the script's last command (`slowlog.rs`).
    ctx.s.started = Instant::now();
    {
        let mut inner = Ctx {
            shared: ctx.shared,
            s: &mut *ctx.s,
            out: &mut out,
            turn: &mut *ctx.turn,
        };
        table::run(&mut inner, cmd, &args);
    }
    let converted = match convert::reply_to_lua(lua, out.as_bytes(), resp) {
        Ok(Some(converted)) => Ok(converted),
        Ok(None) => fail("ERR the command gave no reply"),
        Err(e) => Err(e),
    };
    scratch.reply = std::mem::take(out.buf_mut());
    converted
}

/// `redis.log(level, message, ...)`.
fn log(lua: &Lua, failure: &Slot, args: &[Value]) -> mlua::Result<()> {
    if args.len() < 2 {
        return Err(raise(
            lua,
            failure,
            "ERR redis.log() requires two arguments or more.",
        ));
    }
    let level = match &args[0] {
        Value::Integer(n) => *n as f64,
        Value::Number(n) => *n,
        _ => -1.0,
    };
    if !(0.0..=3.0).contains(&level) {
        return Err(raise(lua, failure, "ERR Invalid debug level."));
    }
    let mut text = String::new();
    for (i, v) in args[1..].iter().enumerate() {
        if i > 0 {
            text.push(' ');
        }
        if let Some(s) = lua.coerce_string(v.clone())? {
            text.push_str(&s.to_string_lossy());
        }
    }
    match level as u8 {
        0 => tracing::debug!("KV script: {text}"),
        1 | 2 => tracing::info!("KV script: {text}"),
        _ => tracing::warn!("KV script: {text}"),
    }
    Ok(())
}
