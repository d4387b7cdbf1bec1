//! Lua scripts: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT, as Redis 7.0 runs them.
//!
//! - **Atomic.** A script runs alone: it holds the keyspace's exclusive turn, like EXEC, so no
//!   other client's command runs between its `redis.call`s; in strict mode its writes reach
//!   the log as one record.
//! - **Never wedging the server** (`runner.rs`). Once a script has run past
//!   `busy-reply-threshold` (5 s), every other command is answered `BUSY` instead of
//!   waiting, and `SCRIPT KILL` stops a script that has not written (`UNKILLABLE` otherwise,
//!   as in Redis).
//! - **Sandboxed** (`vm.rs`): Lua 5.1 from the `mlua` crate with only the base, table, string
//!   and math libraries, `cjson`, `cmsgpack` and `bit`, no file system, no network, read-only globals.
//! - **Replies converted** both ways as Redis converts them (`convert.rs`).
//!
//! Scripts are cached by SHA1 until SCRIPT FLUSH (`cache.rs`). Scripts loaded with EVAL past
//! [`cache::MAX_EVAL_SCRIPTS`] are not kept (EVALSHA then answers NOSCRIPT and clients fall back to
//! EVAL), so a client that builds a new script per call cannot grow the cache without bound.

mod cache;
mod convert;
mod dispatch;
mod functions;
mod library;
mod libs;
mod runner;
mod vm;

pub use functions::{fcall, fcall_ro, function};

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use resp_wire::Args;
use sha1::{Digest as _, Sha1};

use super::args::{int, is};
use super::session::{Ctx, BUSY};

/// Redis's default `busy-reply-threshold`.
const BUSY_AFTER: Duration = Duration::from_secs(5);

/// The script cache and what a running script shares with the rest of the server.
#[derive(Default)]
pub struct Scripts {
    cache: cache::Cache,
    state: Arc<RunState>,
}

/// The running script, as other clients see it (BUSY, SCRIPT KILL).
#[derive(Debug)]
pub struct RunState {
    epoch: Instant,
    /// Milliseconds after `epoch` the running script started, 0 when none runs.
    started: AtomicU64,
    busy_after_ms: AtomicU64,
    /// The running script wrote: it cannot be killed.
    wrote: AtomicBool,
    /// SCRIPT KILL (or the server stopping) asked the running script to stop.
    kill: AtomicBool,
    /// The serving thread running it (`workers::this_thread`).
    thread: AtomicUsize,
    /// What runs (FUNCTION STATS, and which KILL stops it).
    running: Mutex<Running>,
}

/// The script or function running, as FUNCTION STATS shows it; its buffers are reused from
/// one run to the next, so a run allocates nothing for it.
#[derive(Debug, Clone, Default)]
pub struct Running {
    active: bool,
    /// The function's name; for a script `f_<sha1>`, as Redis names it.
    name: String,
    /// The request that started it: its arguments back to back, and where each ends.
    args: Vec<u8>,
    ends: Vec<usize>,
    /// A function (FCALL) rather than a script (EVAL).
    function: bool,
}

impl Running {
    /// The request's arguments.
    fn command(&self) -> impl Iterator<Item = &[u8]> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts.zip(&self.ends).map(|(s, &e)| &self.args[s..e])
    }
}

impl Default for RunState {
    fn default() -> RunState {
        RunState {
            epoch: Instant::now(),
            started: AtomicU64::new(0),
            busy_after_ms: AtomicU64::new(BUSY_AFTER.as_millis() as u64),
            wrote: AtomicBool::new(false),
            kill: AtomicBool::new(false),
            thread: AtomicUsize::new(0),
            running: Mutex::default(),
        }
    }
}

impl RunState {
    fn now_ms(&self) -> u64 {
        self.ms_at(Instant::now())
    }

    /// `at` in milliseconds after `epoch`, never 0.
    fn ms_at(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.epoch).as_millis() as u64 + 1
    }

    /// A run starts, its command having started `at`: a function (or a script) named by the
    /// parts of `name`, started by `request`.
    fn begin(&self, function: bool, name: &[&str], request: &Args<'_>, at: Instant) {
        self.wrote.store(false, Ordering::Relaxed);
        self.kill.store(false, Ordering::Relaxed);
        {
            let mut r = self.running.lock();
            r.name.clear();
            for part in name {
                r.name.push_str(part);
            }
            r.args.clear();
            r.ends.clear();
            for arg in request.iter() {
                r.args.extend_from_slice(arg);
                let end = r.args.len();
                r.ends.push(end);
            }
            r.function = function;
            r.active = true;
        }
        self.started.store(self.ms_at(at), Ordering::Release);
    }

    fn end(&self) {
        self.started.store(0, Ordering::Release);
        self.kill.store(false, Ordering::Relaxed);
        self.running.lock().active = false;
    }

    /// What runs, and for how many milliseconds it has run.
    fn running(&self) -> Option<(Running, u64)> {
        let started = self.started.load(Ordering::Acquire);
        let running = self.running.lock();
        (started != 0 && running.active)
            .then(|| (running.clone(), self.now_ms().saturating_sub(started)))
    }

    /// Whether a function (rather than a script) runs.
    fn function_runs(&self) -> bool {
        let r = self.running.lock();
        r.active && r.function
    }

    fn killed(&self) -> bool {
        self.kill.load(Ordering::Relaxed)
    }
}

/// EVALSHA's error for a script not in the cache.
const NO_SUCH_SCRIPT: &str = "NOSCRIPT No matching script. Please use EVAL.";

/// Which command asked, and what it says of the script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    Eval,
    EvalSha,
}

/// Which script a request runs.
#[derive(Debug, Clone)]
pub enum Source {
    /// EVAL's, cached or not.
    Body(Arc<cache::Script>),
    /// EVALSHA's, still to be looked up.
    Sha(cache::Digest),
}

/// A script to run, with its keys and arguments.
pub struct Job<'a> {
    source: Source,
    /// The whole request: the keys and arguments follow its first three arguments.
    request: Args<'a>,
    numkeys: usize,
    read_only: bool,
}

impl Scripts {
    /// Whether a script has run past `busy-reply-threshold`.
    pub fn busy(&self) -> bool {
        let started = self.state.started.load(Ordering::Acquire);
        started != 0
            && self.state.now_ms().saturating_sub(started)
                >= self.state.busy_after_ms.load(Ordering::Relaxed)
    }

    /// Stops a running script whatever it did (the server is stopping).
    pub fn abort(&self) {
        self.state.kill.store(true, Ordering::Relaxed);
    }

    /// `busy-reply-threshold` in milliseconds (CONFIG).
    pub fn busy_after_ms(&self) -> u64 {
        self.state.busy_after_ms.load(Ordering::Relaxed)
    }

    pub fn set_busy_after_ms(&self, ms: u64) {
        self.state.busy_after_ms.store(ms, Ordering::Relaxed);
    }

    /// The serving thread running a script, if one runs.
    pub fn running_thread(&self) -> Option<usize> {
        (self.state.started.load(Ordering::Acquire) != 0)
            .then(|| self.state.thread.load(Ordering::Relaxed))
    }

    pub(super) fn generation(&self) -> u64 {
        self.cache.generation()
    }
}

/// A script's `#!lua` line: whether it says `flags=no-writes`; Redis's error for another
/// engine or an unknown flag.
pub fn shebang(body: &str) -> Result<bool, String> {
    let Some(rest) = body.strip_prefix("#!") else {
        return Ok(false);
    };
    let Some((line, _)) = rest.split_once('\n') else {
        return Err("ERR Invalid script shebang".to_owned());
    };
    let mut words = line.split(' ').filter(|w| !w.is_empty());
    if words.next() != Some("lua") {
        return Err(format!(
            "ERR Unexpected engine in script shebang: #!{}",
            line.split(' ').next().unwrap_or_default()
        ));
    }
    let mut no_writes = false;
    for w in words {
        let Some(flags) = w.strip_prefix("flags=") else {
            return Err(format!("ERR Unknown lua shebang option: {w}"));
        };
        for flag in flags.split(',').filter(|f| !f.is_empty()) {
            match flag {
                "no-writes" => no_writes = true,
                "allow-oom" | "allow-stale" | "no-cluster" | "allow-cross-slot-keys" => {}
                other => return Err(format!("ERR Unexpected flag in script shebang: {other}")),
            }
        }
    }
    Ok(no_writes)
}

/// FCALL's number of keys: Redis's error if it is not one, or not as many as given.
fn function_numkeys(a: &Args<'_>) -> Result<usize, &'static str> {
    let n = resp_wire::parse_i64(a.get(2)).ok_or("ERR Bad number of keys provided")?;
    if n > (a.len() - 3) as i64 {
        return Err("ERR Number of keys can't be greater than number of args");
    }
    usize::try_from(n).map_err(|_| "ERR Number of keys can't be negative")
}

/// SHA1 of `data` in lower-case hex, as Redis names scripts.
pub fn sha1_hex(data: &[u8]) -> String {
    cache::hex(&Sha1::digest(data))
}

pub fn eval(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    start(ctx, a, Flavor::Eval, false);
}

pub fn evalsha(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    start(ctx, a, Flavor::EvalSha, false);
}

pub fn eval_ro(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    start(ctx, a, Flavor::Eval, true);
}

pub fn evalsha_ro(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    start(ctx, a, Flavor::EvalSha, true);
}

/// Checks an EVAL-like request and either runs it here (inside EXEC) or leaves it for the
/// connection to hand to the script thread.
fn start(ctx: &mut Ctx<'_>, a: &Args<'_>, flavor: Flavor, read_only: bool) {
    let Some(numkeys) = int(ctx, a.get(2)) else {
        return;
    };
    if numkeys < 0 {
        return ctx.out.error("ERR Number of keys can't be negative");
    }
    let numkeys = numkeys as u64;
    if numkeys > (a.len() - 3) as u64 {
        return ctx
            .out
            .error("ERR Number of keys can't be greater than number of args");
    }
    let source = match flavor {
        Flavor::Eval => {
            let text = String::from_utf8_lossy(a.get(1));
            Source::Body(ctx.shared.scripts.cache.add(&text, true))
        }
        Flavor::EvalSha => match cache::parse_sha(a.get(1)) {
            Some(digest) => Source::Sha(digest),
            None => return ctx.out.error(NO_SUCH_SCRIPT),
        },
    };
    let job = Job {
        source,
        request: *a,
        numkeys: numkeys as usize,
        read_only,
    };
    // Inside EXEC the turn is already exclusive and the log record is EXEC's.
    let own_batch = !matches!(ctx.turn, super::session::Turn::Alone);
    if ctx
        .run_alone(|ctx| runner::run_here(ctx, &job, own_batch))
        .is_err()
    {
        ctx.out.error(busy_text(&ctx.shared.scripts));
    }
}

/// SCRIPT LOAD | EXISTS | FLUSH | KILL | HELP.
pub fn script(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let sub = a.get(1);
    let scripts = &ctx.shared.scripts;
    if is(sub, "load") && a.len() == 3 {
        let body = String::from_utf8_lossy(a.get(2));
        if let Err(e) = vm::check_syntax(&body) {
            return ctx.out.error(&e);
        }
        ctx.out.bulk(scripts.cache.add(&body, false).sha.as_bytes());
    } else if is(sub, "exists") && a.len() >= 3 {
        ctx.out.array(a.len() - 2);
        for sha in a.iter().skip(2) {
            let known = cache::parse_sha(sha).and_then(|d| scripts.cache.get(&d));
            ctx.out.integer(i64::from(known.is_some()));
        }
    } else if is(sub, "flush")
        && (a.len() == 2 || (a.len() == 3 && (is(a.get(2), "sync") || is(a.get(2), "async"))))
    {
        scripts.cache.flush();
        ctx.out.ok();
    } else if is(sub, "flush") && a.len() == 3 {
        ctx.out
            .error("ERR SCRIPT FLUSH only support SYNC|ASYNC option");
    } else if is(sub, "kill") && a.len() == 2 {
        kill(ctx, false);
    } else if is(sub, "help") && a.len() == 2 {
        help(ctx);
    } else if ["load", "exists", "flush", "kill", "help"]
        .iter()
        .any(|known| is(sub, known))
    {
        let name = String::from_utf8_lossy(sub).to_ascii_lowercase();
        super::table::wrong_arity(ctx, &format!("script|{name}"));
    } else {
        let name = String::from_utf8_lossy(sub);
        ctx.out.error(&format!(
            "ERR unknown subcommand '{name}'. Try SCRIPT HELP."
        ));
    }
}

/// SCRIPT KILL (`function` false) or FUNCTION KILL: each stops only its own kind.
fn kill(ctx: &mut Ctx<'_>, function: bool) {
    let state = &ctx.shared.scripts.state;
    if state.started.load(Ordering::Acquire) == 0 {
        ctx.out.error("NOTBUSY No scripts in execution right now.");
    } else if state.wrote.load(Ordering::Relaxed) {
        ctx.out.error("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.");
    } else if state.function_runs() != function {
        ctx.out.error(busy_text(&ctx.shared.scripts));
    } else {
        state.kill.store(true, Ordering::Relaxed);
        ctx.out.ok();
    }
}

/// Redis's BUSY error for what runs: each names the KILL that stops it.
fn busy_text(scripts: &Scripts) -> &'static str {
    if scripts.state.function_runs() {
        "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
    } else {
        BUSY
    }
}

fn help(ctx: &mut Ctx<'_>) {
    let lines: &[&str] = &[
        "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "EXISTS <sha1> [<sha1> ...]",
        "    Return information about the existence of the scripts in the script cache.",
        "FLUSH [ASYNC|SYNC]",
        "    Flush the Lua scripts cache. Very dangerous on replicas.",
        "    When called without the optional mode argument, the behavior is determined by the",
        "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        "    * ASYNC: Asynchronously flush the scripts cache.",
        "    * SYNC: Synchronously flush the scripts cache.",
        "KILL",
        "    Kill the currently executing Lua script.",
        "LOAD <script>",
        "    Load a script into the scripts cache without executing it.",
        "HELP",
        "    Prints this help.",
    ];
    ctx.out.array(lines.len());
    for l in lines {
        ctx.out.simple(l.as_bytes());
    }
}

/// A request that comes while a script is busy: SCRIPT KILL, FUNCTION KILL and FUNCTION
/// STATS run, everything else is answered BUSY.
pub fn answer_busy(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    if is(a.get(0), "script") && is(a.get(1), "kill") && a.len() == 2 {
        kill(ctx, false);
    } else if is(a.get(0), "function") && is(a.get(1), "kill") && a.len() == 2 {
        kill(ctx, true);
    } else if is(a.get(0), "function") && is(a.get(1), "stats") && a.len() == 2 {
        functions::stats(ctx);
    } else {
        ctx.out.error(busy_text(&ctx.shared.scripts));
    }
}
