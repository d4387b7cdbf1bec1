//! Where scripts run: the script thread, one script at a time, each under the keyspace's
//! exclusive turn; or, for a script inside MULTI, the serving thread that runs the EXEC
//! (which already holds that turn). Each thread keeps its own Lua state.

use std::cell::RefCell;
use std::sync::mpsc;
use std::sync::Arc;

use nsqr_kv::Pending;
use resp_wire::Reply;
use tokio::sync::oneshot;

use super::super::session::{Ctx, Session, Turn};
use super::super::Shared;
use super::vm::Vm;
use super::{Job, RunState};

/// A script's reply, and the client's pending writes with the script's added (strict mode).
pub struct Done {
    pub reply: Vec<u8>,
    pub pending: Pending,
}

impl Done {
    pub fn error(msg: &str, pending: Pending) -> Done {
        let mut r = Reply::new(resp_wire::Protocol::Resp2);
        r.error(msg);
        Done {
            reply: r.as_bytes().to_vec(),
            pending,
        }
    }
}

struct Work {
    shared: Arc<Shared>,
    job: Job,
    pending: Pending,
    reply_to: oneshot::Sender<Done>,
}

/// The script thread's queue. The thread stops when the runner is dropped.
pub struct Runner {
    tx: mpsc::Sender<Work>,
}

impl Runner {
    pub fn start(state: Arc<RunState>) -> Result<Runner, String> {
        let (tx, rx) = mpsc::channel::<Work>();
        std::thread::Builder::new()
            .name("kv-scripts".into())
            .stack_size(16 << 20)
            .spawn(move || {
                let mut vm = None;
                while let Ok(w) = rx.recv() {
                    let done = serve(&mut vm, &state, &w.shared, &w.job, w.pending);
                    let _ = w.reply_to.send(done);
                }
            })
            .map_err(|e| format!("failed to start the keyspace's script thread - {e}"))?;
        Ok(Runner { tx })
    }

    pub fn submit(
        &self,
        shared: Arc<Shared>,
        job: Job,
        pending: Pending,
        reply_to: oneshot::Sender<Done>,
    ) -> Result<(), Done> {
        let work = Work {
            shared,
            job,
            pending,
            reply_to,
        };
        self.tx
            .send(work)
            .map_err(|e| Done::error("ERR the script thread stopped", e.0.pending))
    }
}

/// On the script thread: takes the exclusive turn and runs the job as its client.
fn serve(
    vm: &mut Option<Vm>,
    state: &Arc<RunState>,
    shared: &Shared,
    job: &Job,
    pending: Pending,
) -> Done {
    let alone = shared.ks.enter_alone();
    let mut session = Session::new(Arc::clone(&job.client), true);
    session.pending = pending;
    let mut out = Reply::new(job.proto);
    let mut turn = Turn::Alone;
    let mut ctx = Ctx {
        shared,
        s: &mut session,
        out: &mut out,
        turn: &mut turn,
    };
    execute(&mut ctx, vm, state, job, true);
    drop(alone);
    Done {
        reply: std::mem::take(out.buf_mut()),
        pending: session.pending,
    }
}

thread_local! {
    /// The Lua state of a serving thread, for scripts inside MULTI.
    static HERE: RefCell<Option<Vm>> = const { RefCell::new(None) };
}

/// Runs `job` on this thread, which already runs alone (EXEC).
pub fn run_here(ctx: &mut Ctx<'_>, job: &Job) {
    let state = Arc::clone(&ctx.shared.scripts.state);
    HERE.with(|cell| match cell.try_borrow_mut() {
        Ok(mut vm) => execute(ctx, &mut vm, &state, job, false),
        Err(_) => ctx.out.error("ERR a script cannot run another script"),
    });
}

/// Runs the job's script in `vm` (made anew after SCRIPT FLUSH). `own_batch`: its writes
/// form one log record of their own (not inside EXEC's).
fn execute(
    ctx: &mut Ctx<'_>,
    vm: &mut Option<Vm>,
    state: &Arc<RunState>,
    job: &Job,
    own_batch: bool,
) {
    let read_only = match super::shebang(&job.body) {
        Ok(no_writes) => job.read_only || no_writes,
        Err(e) => return ctx.out.error(&e),
    };
    let generation = ctx.shared.scripts.generation();
    if vm.as_ref().is_none_or(|v| v.generation() != generation) {
        match Vm::new(generation, Arc::clone(state)) {
            Ok(v) => *vm = Some(v),
            Err(e) => return ctx.out.error(&format!("ERR cannot start Lua: {e}")),
        }
    }
    let Some(vm) = vm.as_mut() else {
        return;
    };
    let ks = &ctx.shared.ks;
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
