//! Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH, as Redis runs them.
//!
//! After MULTI a client's commands are checked (name, arity, authentication, memory, a failed
//! log) and queued, never run: each gets `+QUEUED`, or its error, which dooms the transaction
//! (`EXECABORT` at EXEC). EXEC gives up the client's shared turn and takes the keyspace's
//! exclusive one (`nsqr_kv::Keyspace::enter_alone`): no other client's command, nor the
//! expiry thread, runs until the last queued command has answered. A WATCHed key that
//! changed since (written by anyone, expired, evicted or flushed) makes EXEC answer a null
//! array and run nothing. In strict mode the transaction's changes reach the log as one
//! record, so a crash keeps all of them or none.
//!
//! Queued commands are copied one after another into two buffers ([`OwnedRequests`]), which
//! go back to their serving thread's spare after EXEC or DISCARD: queueing a command costs
//! its copy and, once the buffers have grown, no allocation.

use std::cell::RefCell;
use std::sync::atomic::Ordering;

use resp_wire::{Args, OwnedRequests};

use super::acl;
use super::session::{Ctx, BUSY};
use super::table::{self, DENYOOM, WRITE};

/// Most bytes of commands one transaction may queue (Redis's `client-query-buffer-limit`).
const MAX_QUEUED_BYTES: usize = 1 << 30;
/// Largest queue buffers a serving thread keeps for its next transaction.
const SPARE_BYTES: usize = 64 << 10;

thread_local! {
    /// The queue buffers of this serving thread's last transaction, for its next one.
    static SPARE: RefCell<OwnedRequests> = RefCell::default();
}

/// A client between MULTI and EXEC.
#[derive(Debug, Default)]
pub struct Transaction {
    queued: OwnedRequests,
    /// Commands queued (`CLIENT LIST`'s `multi=`, still counted while EXEC runs them).
    count: usize,
    bytes: usize,
    /// The flags of every queued command, or'ed (memory and log checks at EXEC).
    flags: u32,
    /// A command was refused while queueing: EXEC answers EXECABORT.
    doomed: bool,
}

impl Ctx<'_> {
    /// A command was refused: if the client is in MULTI, its EXEC will abort.
    pub fn doom_transaction(&mut self) {
        if let Some(tx) = &mut self.s.tx {
            tx.doomed = true;
        }
    }
}

/// Queues a command that passed its checks (the client is in MULTI).
pub fn queue(ctx: &mut Ctx<'_>, flags: u32, args: &Args<'_>) {
    let Some(tx) = &mut ctx.s.tx else {
        return;
    };
    let size = args.iter().map(<[u8]>::len).sum::<usize>()
        + (args.len() + 1) * std::mem::size_of::<std::ops::Range<usize>>();
    if tx.bytes + size > MAX_QUEUED_BYTES {
        tx.doomed = true;
        ctx.out
            .error("ERR transaction discarded: more than 1 GiB of queued commands");
        return;
    }
    tx.bytes += size;
    tx.count += 1;
    tx.flags |= flags;
    tx.queued.push(args);
    ctx.s.client.multi.store(tx.count as i64, Ordering::Relaxed);
    ctx.out.simple(b"QUEUED");
}

pub fn multi(ctx: &mut Ctx<'_>, _a: &Args<'_>) {
    if ctx.s.tx.is_some() {
        return ctx.out.error("ERR MULTI calls can not be nested");
    }
    let queued = SPARE.with(|spare| std::mem::take(&mut *spare.borrow_mut()));
    ctx.s.tx = Some(Transaction {
        queued,
        ..Transaction::default()
    });
    ctx.s.client.multi.store(0, Ordering::Relaxed);
    ctx.out.ok();
}

pub fn discard(ctx: &mut Ctx<'_>, _a: &Args<'_>) {
    let Some(tx) = ctx.s.tx.take() else {
        return ctx.out.error("ERR DISCARD without MULTI");
    };
    keep_spare(tx.queued);
    ctx.s.client.multi.store(-1, Ordering::Relaxed);
    ctx.shared.ks.unwatch(&mut ctx.s.watch);
    ctx.out.ok();
}

pub fn watch(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    if ctx.s.tx.is_some() {
        return ctx.out.error("ERR WATCH inside MULTI is not allowed");
    }
    for key in a.iter().skip(1) {
        ctx.shared.ks.watch(&mut ctx.s.watch, key);
    }
    ctx.out.ok();
}

pub fn unwatch(ctx: &mut Ctx<'_>, _a: &Args<'_>) {
    ctx.shared.ks.unwatch(&mut ctx.s.watch);
    ctx.out.ok();
}

pub fn exec(ctx: &mut Ctx<'_>, _a: &Args<'_>) {
    // The client stays in MULTI while its commands run, as in Redis (`CLIENT INFO`).
    let Some(tx) = &mut ctx.s.tx else {
        return ctx.out.error("ERR EXEC without MULTI");
    };
    let (queued, flags, doomed) = (std::mem::take(&mut tx.queued), tx.flags, tx.doomed);
    exec_queued(ctx, &queued, flags, doomed);
    keep_spare(queued);
    ctx.s.tx = None;
    ctx.s.client.multi.store(-1, Ordering::Relaxed);
}

/// Gives a finished transaction's queue buffers to this thread's next transaction, unless
/// they grew past [`SPARE_BYTES`].
fn keep_spare(mut queued: OwnedRequests) {
    if queued.capacity() <= SPARE_BYTES {
        queued.clear();
        SPARE.with(|spare| *spare.borrow_mut() = queued);
    }
}

/// EXEC of `queued`: EXECABORT if `doomed`, a null array if a watched key changed, else
/// each command's reply; `flags` are the queued commands' flags or'ed.
fn exec_queued(ctx: &mut Ctx<'_>, queued: &OwnedRequests, flags: u32, doomed: bool) {
    let shared = ctx.shared;
    let ks = &shared.ks;
    if doomed {
        ks.unwatch(&mut ctx.s.watch);
        return ctx
            .out
            .error("EXECABORT Transaction discarded because of previous errors.");
    }
    let ran = ctx.run_alone(|ctx| {
        let broken = ks.watch_broken(&ctx.s.watch);
        ks.unwatch(&mut ctx.s.watch);
        if broken {
            ctx.out.null_array();
        } else if let Err(e) = admit(ctx, flags) {
            ctx.out.error(&e.to_string());
        } else {
            ctx.out.array(queued.len());
            ks.begin_transaction(&mut ctx.s.pending);
            for args in queued.iter() {
                match table::lookup(args.get(0)) {
                    Some(cmd) => {
                        // Permissions may have changed since the command was queued.
                        match acl::check(ctx, cmd, &args, acl::Context::Multi) {
                            Ok(()) => table::run(ctx, cmd, &args),
                            Err(e) => ctx.out.error(&e),
                        }
                    }
                    None => ctx.out.error(&table::unknown_command_text(&args)),
                }
            }
            ks.end_transaction(&mut ctx.s.pending);
        }
    });
    if ran.is_err() {
        ks.unwatch(&mut ctx.s.watch);
        ctx.out.error(BUSY);
    }
}

/// The checks EXEC makes for the transaction as a whole, as Redis does: memory for any
/// command that may use more, a working log for any write.
fn admit(ctx: &Ctx<'_>, flags: u32) -> Result<(), nsqr_kv::KvError> {
    if flags & DENYOOM != 0 {
        ctx.shared.ks.make_room()?;
    }
    if flags & WRITE != 0 {
        ctx.shared.ks.check_writable()?;
    }
    Ok(())
}
