//! Where scripts and functions run: on the serving thread of the client that sent EVAL or
//! FCALL, holding the keyspace's exclusive turn (as EXEC does), in that thread's own Lua state.
//!
//! While a script runs, the other clients of its thread wait, as every client waits in Redis;
//! clients of other threads wait for the turn until the script passes
//! `busy-reply-threshold`, then are answered BUSY. A client that connects while a script
//! runs is served by a thread not running it (`workers.rs`), so `SCRIPT KILL` can always
//! arrive.

use std::cell::RefCell;
use std::sync::atomic::Ordering;

use resp_wire::Args;

use super::super::session::Ctx;
use super::super::workers;
use super::library::{ALLOW_OOM, NO_WRITES};
use super::vm::Vm;
use super::Job;

thread_local! {
    /// This thread's Lua state, made on its first script.
    static VM: RefCell<Option<Vm>> = const { RefCell::new(None) };
}

/// Runs `f` with this thread's Lua state (made anew after SCRIPT FLUSH).
pub fn with_vm(ctx: &mut Ctx<'_>, f: impl FnOnce(&mut Ctx<'_>, &mut Vm)) {
    VM.with(|cell| match cell.try_borrow_mut() {
        Ok(mut vm) => {
            let generation = ctx.shared.scripts.generation();
            if vm.as_ref().is_none_or(|v| v.generation() != generation) {
                let state = std::sync::Arc::clone(&ctx.shared.scripts.state);
                match Vm::new(generation, state) {
                    Ok(v) => *vm = Some(v),
                    Err(e) => return ctx.out.error(&format!("ERR cannot start Lua: {e}")),
                }
            }
            if let Some(vm) = vm.as_mut() {
                f(ctx, vm);
            }
        }
        Err(_) => ctx.out.error("ERR a script cannot run another script"),
    });
}

/// Runs `job` on this thread, which runs alone. `own_batch`: its writes form one log record
/// of their own (false inside EXEC, whose record holds them).
pub fn run_here(ctx: &mut Ctx<'_>, job: &Job<'_>, own_batch: bool) {
    with_vm(ctx, |ctx, vm| {
        let compiled = match vm.script(&ctx.shared.scripts.cache, &job.source) {
            Ok(compiled) => compiled,
            Err(e) => return ctx.out.error(&e),
        };
        let read_only = job.read_only || compiled.script.no_writes == Ok(true);
        let name = ["f_", compiled.script.sha.as_str()];
        running_alone(ctx, (false, &name, &job.request), own_batch, |ctx| {
            vm.run(ctx, &compiled, job, read_only)
        });
    });
}

/// FCALL / FCALL_RO `request` on this thread, which runs alone (`own_batch` as for
/// [`run_here`]).
pub fn call_function(ctx: &mut Ctx<'_>, request: &Args<'_>, read_only: bool, own_batch: bool) {
    with_vm(ctx, |ctx, vm| {
        let ks = &ctx.shared.ks;
        vm.sync_functions(ks.libraries_generation(), &ks.libraries());
        let Some(f) = vm.functions.get(request.get(1)) else {
            return ctx.out.error("ERR Function not found");
        };
        let (name, callback, flags) = (f.name.clone(), f.callback.clone(), f.flags);
        let numkeys = match super::function_numkeys(request) {
            Ok(n) => n,
            Err(e) => return ctx.out.error(e),
        };
        if read_only && flags & NO_WRITES == 0 {
            return ctx
                .out
                .error("ERR Can not execute a script with write flag using *_ro command.");
        }
        if flags & (NO_WRITES | ALLOW_OOM) == 0 {
            if let Err(e) = ctx.shared.ks.make_room() {
                return ctx.out.error(&e.to_string());
            }
        }
        let given: Vec<&[u8]> = request.iter().skip(3).collect();
        let read_only = read_only || flags & NO_WRITES != 0;
        running_alone(ctx, (true, &[&name], request), own_batch, |ctx| {
            let split = given.split_at(numkeys);
            vm.call_function(ctx, &name, &callback, split, read_only);
        });
    });
}

/// Runs `f` as the running script `running` (a function or not, its name's parts, its
/// request), its writes one log record if `own_batch`.
fn running_alone(
    ctx: &mut Ctx<'_>,
    running: (bool, &[&str], &Args<'_>),
    own_batch: bool,
    f: impl FnOnce(&mut Ctx<'_>),
) {
    let state = std::sync::Arc::clone(&ctx.shared.scripts.state);
    let ks = std::sync::Arc::clone(&ctx.shared.ks);
    state
        .thread
        .store(workers::this_thread(), Ordering::Relaxed);
    state.begin(running.0, running.1, running.2, ctx.s.started);
    if own_batch {
        ks.begin_transaction(&mut ctx.s.pending);
    }
    f(ctx);
    if own_batch {
        ks.end_transaction(&mut ctx.s.pending);
    }
    state.end();
}
