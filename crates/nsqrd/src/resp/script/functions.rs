//! Redis 7.0's functions: FUNCTION LOAD / DELETE / FLUSH / LIST / DUMP / RESTORE / STATS /
//! KILL / HELP, FCALL and FCALL_RO.
//!
//! A function runs as a script does (`runner.rs`: alone, BUSY past the threshold, FUNCTION
//! KILL), in the same sandbox and with the same reply conversions. A change to the libraries
//! runs alone too, so no FCALL sees half of it; the libraries themselves live in the keyspace
//! (`nsqr_kv::functions`), which keeps them in snapshots and the strict-mode log.

use nsqr_kv::functions::{dump_libraries, restore_libraries, Libraries};
use resp_wire::Args;

use super::super::args::is;
use super::super::session::{Ctx, Turn};
use super::library::{self, Functions, FLAG_NAMES};
use super::runner;

pub fn fcall(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    start(ctx, a, false);
}

pub fn fcall_ro(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    start(ctx, a, true);
}

fn start(ctx: &mut Ctx<'_>, a: &Args<'_>, read_only: bool) {
    // Inside EXEC the turn is already exclusive and the log record is EXEC's.
    let own_batch = !matches!(ctx.turn, Turn::Alone);
    if ctx
        .run_alone(|ctx| runner::call_function(ctx, a, read_only, own_batch))
        .is_err()
    {
        ctx.out.error(super::busy_text(&ctx.shared.scripts));
    }
}

/// What RESTORE does with libraries already loaded (LOAD REPLACE is `Replace`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Policy {
    Flush,
    Append,
    Replace,
}

/// The FUNCTION container.
pub fn function(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let sub = String::from_utf8_lossy(a.get(1)).to_ascii_lowercase();
    let arity_ok = match sub.as_str() {
        "load" | "restore" => a.len() >= 3,
        "flush" | "list" => true,
        "delete" => a.len() == 3,
        "dump" | "stats" | "kill" | "help" => a.len() == 2,
        _ => {
            let name = String::from_utf8_lossy(a.get(1));
            return ctx.out.error(&format!(
                "ERR unknown subcommand '{name}'. Try FUNCTION HELP."
            ));
        }
    };
    if !arity_ok {
        return super::super::table::wrong_arity(ctx, &format!("function|{sub}"));
    }
    match sub.as_str() {
        "list" => alone(ctx, |ctx| list(ctx, a)),
        "dump" => dump(ctx),
        "stats" => stats(ctx),
        "kill" => super::kill(ctx, true),
        "help" => help(ctx),
        "flush" => flush(ctx, a),
        "load" => alone(ctx, |ctx| load(ctx, a)),
        "delete" => alone(ctx, |ctx| delete(ctx, a.get(2))),
        _ => alone(ctx, |ctx| restore(ctx, a)),
    }
}

/// Runs `f` alone (no FCALL sees a change half made), or answers BUSY.
fn alone(ctx: &mut Ctx<'_>, f: impl FnOnce(&mut Ctx<'_>)) {
    if ctx.run_alone(f).is_err() {
        ctx.out.error(super::busy_text(&ctx.shared.scripts));
    }
}

/// Runs `f` with this thread's functions, up to date.
fn with_functions(ctx: &mut Ctx<'_>, f: impl FnOnce(&mut Ctx<'_>, &mut super::vm::Vm)) {
    runner::with_vm(ctx, |ctx, vm| {
        let ks = &ctx.shared.ks;
        vm.sync_functions(ks.libraries_generation(), &ks.libraries());
        f(ctx, vm);
    });
}

/// FUNCTION LOAD [REPLACE] code.
fn load(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let mut replace = false;
    for opt in a.iter().take(a.len() - 1).skip(2) {
        if !is(opt, "replace") {
            let opt = String::from_utf8_lossy(opt);
            return ctx.out.error(&format!("ERR Unknown option given: {opt}"));
        }
        replace = true;
    }
    let code = a.get(a.len() - 1);
    let name = match library::library_name(code) {
        Ok(name) => name,
        Err(e) => return ctx.out.error(&format!("ERR {e}")),
    };
    if !replace && ctx.shared.ks.libraries().contains_key(&name) {
        return ctx
            .out
            .error(&format!("ERR Library '{name}' already exists"));
    }
    with_functions(ctx, |ctx, vm| {
        let names = match vm.load_code(code) {
            Ok(registered) => registered.into_iter().map(|f| f.name).collect(),
            Err(e) => return ctx.out.error(&format!("ERR {e}")),
        };
        let adding = vec![(name.clone(), code.to_vec(), names)];
        match merge(&vm.functions, adding, Policy::Replace) {
            Ok(libs) => {
                ctx.shared.ks.set_libraries(libs, &mut ctx.s.pending);
                ctx.out.bulk(name.as_bytes());
            }
            Err(e) => ctx.out.error(&e),
        }
    });
}

/// The libraries after adding `adding` (name, code, function names) to those of `current`
/// under `policy`: Redis's error if a library or function name collides.
fn merge(
    current: &Functions,
    adding: Vec<(String, Vec<u8>, Vec<String>)>,
    policy: Policy,
) -> Result<Libraries, String> {
    let mut kept: Vec<(String, std::sync::Arc<[u8]>, Vec<String>)> = Vec::new();
    if policy != Policy::Flush {
        for lib in &current.libraries {
            let names = lib.functions.iter().map(|f| f.name.clone()).collect();
            kept.push((lib.name.clone(), std::sync::Arc::clone(&lib.code), names));
        }
    }
    for (name, code, functions) in adding {
        if let Some(at) = kept.iter().position(|(n, _, _)| *n == name) {
            if policy != Policy::Replace {
                return Err(format!("ERR Library {name} already exists"));
            }
            kept.remove(at);
        }
        let taken = |f: &String| kept.iter().any(|(_, _, fs)| fs.contains(f));
        if let Some(f) = functions.iter().find(|f| taken(f)) {
            return Err(format!("ERR Function {f} already exists"));
        }
        kept.push((name, code.into(), functions));
    }
    Ok(kept.into_iter().map(|(n, code, _)| (n, code)).collect())
}

/// FUNCTION DELETE library.
fn delete(ctx: &mut Ctx<'_>, name: &[u8]) {
    let mut libs = (*ctx.shared.ks.libraries()).clone();
    let removed = std::str::from_utf8(name).ok().and_then(|n| libs.remove(n));
    if removed.is_none() {
        return ctx.out.error("ERR Library not found");
    }
    ctx.shared.ks.set_libraries(libs, &mut ctx.s.pending);
    ctx.out.ok();
}

/// FUNCTION FLUSH [ASYNC|SYNC].
fn flush(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    if a.len() > 3 {
        return syntax_error(ctx, a);
    }
    if a.len() == 3 && !is(a.get(2), "sync") && !is(a.get(2), "async") {
        return ctx
            .out
            .error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
    }
    alone(ctx, |ctx| {
        ctx.shared
            .ks
            .set_libraries(Libraries::new(), &mut ctx.s.pending);
        ctx.out.ok();
    });
}

/// Redis's error for a subcommand given too many arguments.
fn syntax_error(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let sub = String::from_utf8_lossy(a.get(1));
    ctx.out.error(&format!(
        "ERR unknown subcommand or wrong number of arguments for '{sub}'. Try FUNCTION HELP."
    ));
}

/// FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE].
fn list(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let (mut with_code, mut pattern) = (false, None);
    let mut i = 2;
    while i < a.len() {
        let arg = a.get(i);
        if !with_code && is(arg, "withcode") {
            with_code = true;
        } else if pattern.is_none() && is(arg, "libraryname") {
            if i + 1 >= a.len() {
                return ctx.out.error("ERR library name argument was not given");
            }
            i += 1;
            pattern = Some(a.get(i));
        } else {
            let arg = String::from_utf8_lossy(arg);
            return ctx.out.error(&format!("ERR Unknown argument {arg}"));
        }
        i += 1;
    }
    with_functions(ctx, |ctx, vm| {
        let shown: Vec<_> = vm
            .functions
            .libraries
            .iter()
            .filter(|l| pattern.is_none_or(|p| nsqr_kv::glob::matches(p, l.name.as_bytes())))
            .collect();
        let out = &mut *ctx.out;
        out.array(shown.len());
        for lib in shown {
            out.map(3 + usize::from(with_code));
            out.bulk(b"library_name");
            out.bulk(lib.name.as_bytes());
            out.bulk(b"engine");
            out.bulk(b"LUA");
            out.bulk(b"functions");
            out.array(lib.functions.len());
            for f in &lib.functions {
                out.map(3);
                out.bulk(b"name");
                out.bulk(f.name.as_bytes());
                out.bulk(b"description");
                match &f.description {
                    Some(d) => out.bulk(d.as_bytes()),
                    None => out.null(),
                }
                out.bulk(b"flags");
                let flags: Vec<&str> = (0..FLAG_NAMES.len())
                    .filter(|bit| f.flags & (1 << bit) != 0)
                    .map(|bit| FLAG_NAMES[bit])
                    .collect();
                out.set(flags.len());
                for flag in flags {
                    out.simple(flag.as_bytes());
                }
            }
            if with_code {
                out.bulk(b"library_code");
                out.bulk(&lib.code);
            }
        }
    });
}

/// FUNCTION DUMP.
fn dump(ctx: &mut Ctx<'_>) {
    let libs = ctx.shared.ks.libraries();
    let payload = dump_libraries(libs.values().map(|code| &code[..]));
    ctx.out.bulk(&payload);
}

/// FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE].
fn restore(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let policy =
        match a.len() {
            5.. => return syntax_error(ctx, a),
            3 => Policy::Append,
            _ if is(a.get(3), "flush") => Policy::Flush,
            _ if is(a.get(3), "append") => Policy::Append,
            _ if is(a.get(3), "replace") => Policy::Replace,
            _ => return ctx.out.error(
                "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
            ),
        };
    let codes = match restore_libraries(a.get(2)) {
        Ok(codes) => codes,
        Err(e) => return ctx.out.error(&e.to_string()),
    };
    with_functions(ctx, |ctx, vm| {
        let mut adding = Vec::with_capacity(codes.len());
        for code in codes {
            let loaded = library::library_name(&code).and_then(|name| {
                let registered = vm.load_code(&code)?;
                Ok((name, registered.into_iter().map(|f| f.name).collect()))
            });
            match loaded {
                Ok((name, functions)) => adding.push((name, code, functions)),
                Err(e) => return ctx.out.error(&format!("ERR {e}")),
            }
        }
        if let Some(dup) = adding
            .iter()
            .enumerate()
            .find(|(i, (n, _, _))| adding[..*i].iter().any(|(m, _, _)| m == n))
        {
            let name = &(dup.1).0;
            return ctx.out.error(&format!("ERR Library {name} already exists"));
        }
        match merge(&vm.functions, adding, policy) {
            Ok(libs) => {
                ctx.shared.ks.set_libraries(libs, &mut ctx.s.pending);
                ctx.out.ok();
            }
            Err(e) => ctx.out.error(&e),
        }
    });
}

/// FUNCTION STATS: what runs, and the Lua engine's library and function counts.
pub fn stats(ctx: &mut Ctx<'_>) {
    let running = ctx.shared.scripts.state.running();
    with_functions(ctx, |ctx, vm| {
        let out = &mut *ctx.out;
        out.map(2);
        out.bulk(b"running_script");
        match running {
            None => out.null(),
            Some((r, ms)) => {
                out.map(3);
                out.bulk(b"name");
                out.bulk(r.name.as_bytes());
                out.bulk(b"command");
                out.array(r.command().count());
                for arg in r.command() {
                    out.bulk(arg);
                }
                out.bulk(b"duration_ms");
                out.integer(i64::try_from(ms).unwrap_or(i64::MAX));
            }
        }
        out.bulk(b"engines");
        out.map(1);
        out.bulk(b"LUA");
        out.map(2);
        out.bulk(b"libraries_count");
        out.integer(vm.functions.libraries.len() as i64);
        out.bulk(b"functions_count");
        out.integer(vm.functions.function_count() as i64);
    });
}

fn help(ctx: &mut Ctx<'_>) {
    let lines: &[&str] = &[
        "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "LOAD [REPLACE] <FUNCTION CODE>",
        "    Create a new library with the given library name and code.",
        "DELETE <LIBRARY NAME>",
        "    Delete the given library.",
        "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
        "    Return general information on all the libraries:",
        "    * Library name",
        "    * The engine used to run the Library",
        "    * Library description",
        "    * Functions list",
        "    * Library code (if WITHCODE is given)",
        "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
        "STATS",
        "    Return information about the current function running:",
        "    * Function name",
        "    * Command used to run the function",
        "    * Duration in MS that the function is running",
        "    If no function is running, return nil",
        "    In addition, returns a list of available engines.",
        "KILL",
        "    Kill the current running function.",
        "FLUSH [ASYNC|SYNC]",
        "    Delete all the libraries.",
        "    When called without the optional mode argument, the behavior is determined by the",
        "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        "    * ASYNC: Asynchronously flush the libraries.",
        "    * SYNC: Synchronously flush the libraries.",
        "DUMP",
        "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
        "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
        "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
        "    control how to handle existing libraries (default APPEND):",
        "    * FLUSH: delete all existing libraries.",
        "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
        "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
        "      libraries with the new libraries (notice that even on this option there is a chance of failure",
        "      in case of functions name collision with another library).",
        "HELP",
        "    Prints this help.",
    ];
    ctx.out.array(lines.len());
    for l in lines {
        ctx.out.simple(l.as_bytes());
    }
}
