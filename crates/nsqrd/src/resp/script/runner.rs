//! Where scripts run: on the serving thread of the client that sent EVAL, holding the
//! keyspace's exclusive turn (as EXEC does), in that thread's own Lua state.
//!
//! While a script runs, the other clients of its thread wait, as every client waits in Redis;
//! clients of other threads wait for the turn until the script passes
//! `busy-reply-threshold`, then are answered BUSY. A client that connects while a script
//! runs is served by a thread not running it (`workers.rs`), so `SCRIPT KILL` can always
//! arrive.

use std::cell::RefCell;
use std::sync::atomic::Ordering;

use super::super::session::Ctx;
use super::super::workers;
use super::vm::Vm;
use super::Job;

thread_local! {
    /// This thread's Lua state, made on its first script.
    static VM: RefCell<Option<Vm>> = const { RefCell::new(None) };
}

/// Runs `job` on this thread, which runs alone. `own_batch`: its writes form one log record
/// of their own (false inside EXEC, whose record holds them).
pub fn run_here(ctx: &mut Ctx<'_>, job: &Job<'_>, own_batch: bool) {
    VM.with(|cell| match cell.try_borrow_mut() {
        Ok(mut vm) => execute(ctx, &mut vm, job, own_batch),
        Err(_) => ctx.out.error("ERR a script cannot run another script"),
    });
}

/// Runs the job's script in `vm` (made anew after SCRIPT FLUSH).
fn execute(ctx: &mut Ctx<'_>, vm: &mut Option<Vm>, job: &Job<'_>, own_batch: bool) {
    let read_only = match super::shebang(&job.body) {
        Ok(no_writes) => job.read_only || no_writes,
        Err(e) => return ctx.out.error(&e),
    };
    let scripts = &ctx.shared.scripts;
    let state = std::sync::Arc::clone(&scripts.state);
    let generation = scripts.generation();
    if vm.as_ref().is_none_or(|v| v.generation() != generation) {
        match Vm::new(generation, std::sync::Arc::clone(&state)) {
            Ok(v) => *vm = Some(v),
            Err(e) => return ctx.out.error(&format!("ERR cannot start Lua: {e}")),
        }
    }
    let Some(vm) = vm.as_mut() else {
        return;
    };
    let ks = &ctx.shared.ks;
    state
        .thread
        .store(workers::this_thread(), Ordering::Relaxed);
    state.begin();
    if own_batch {
        ks.begin_transaction(&mut ctx.s.pending);
    }
    vm.run(ctx, job, read_only);
    if own_batch {
        ks.end_transaction(&mut ctx.s.pending);
    }
    state.end();
}
