//! The slow log: every command that ran for at least `slowlog-log-slower-than` microseconds
//! (0: every command; -1: none), the newest `slowlog-max-len` kept, as Redis 7.0 records them:
//! its arguments (at most 32, each cut at 128 bytes, passwords redacted), the client's
//! address and name. SLOWLOG GET / LEN / RESET / HELP read it.
//!
//! The cost on the hot path is one relaxed load and one clock read per command: a command's
//! start is the end of the command before it in the batch (or the batch's start, once the
//! connection holds its turn), so the time between two requests of a pipeline, their
//! parsing, counts in the second's. A command a script calls starts at a clock read of its
//! own, as Lua code may run before it. Only a command slow enough to be kept takes the lock
//! (docs/decisions/0031-evalsha-at-redis-rate.md).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use resp_wire::Args;

use super::args::is;
use super::introspection::help;
use super::session::Ctx;
use super::table::{wrong_arity, Command};

/// Redis's defaults.
pub const DEFAULT_SLOWER_THAN_US: i64 = 10_000;
pub const DEFAULT_MAX_LEN: u64 = 128;
/// Arguments kept of one command (the last one says how many more there were).
const MAX_ARGS: usize = 32;
/// Bytes kept of one argument.
const MAX_ARG_BYTES: usize = 128;

/// One slow command.
#[derive(Debug)]
struct Entry {
    id: u64,
    unix_seconds: u64,
    micros: u64,
    args: Vec<Vec<u8>>,
    addr: String,
    name: Vec<u8>,
}

/// The log, and its two settings.
#[derive(Debug)]
pub struct SlowLog {
    slower_than_us: AtomicI64,
    max_len: AtomicU64,
    next_id: AtomicU64,
    entries: Mutex<VecDeque<Entry>>,
}

impl Default for SlowLog {
    fn default() -> SlowLog {
        SlowLog {
            slower_than_us: AtomicI64::new(DEFAULT_SLOWER_THAN_US),
            max_len: AtomicU64::new(DEFAULT_MAX_LEN),
            next_id: AtomicU64::new(0),
            entries: Mutex::new(VecDeque::new()),
        }
    }
}

impl SlowLog {
    pub fn slower_than_us(&self) -> i64 {
        self.slower_than_us.load(Ordering::Relaxed)
    }

    pub fn set_slower_than_us(&self, us: i64) {
        self.slower_than_us.store(us, Ordering::Relaxed);
    }

    pub fn max_len(&self) -> u64 {
        self.max_len.load(Ordering::Relaxed)
    }

    pub fn set_max_len(&self, n: u64) {
        self.max_len.store(n, Ordering::Relaxed);
    }

    fn len(&self) -> usize {
        self.entries.lock().len()
    }

    fn reset(&self) {
        self.entries.lock().clear();
    }
}

/// Runs a command, and logs it if it was slow.
/// `args` is what the handler runs (keys named for the client's database), `shown` what the
/// client sent (what the slow log keeps).
/// The command starts at `ctx.s.started`, which then becomes its end (the next command's
/// start).
pub fn timed(ctx: &mut Ctx<'_>, cmd: &'static Command, args: &Args<'_>, shown: &Args<'_>) {
    let start = ctx.s.started;
    (cmd.handler)(ctx, args);
    let end = Instant::now();
    ctx.s.started = end;
    let threshold = ctx.shared.slowlog.slower_than_us();
    if threshold < 0 || cmd.name == "exec" {
        return;
    }
    let micros = end.saturating_duration_since(start).as_micros() as u64;
    if micros >= threshold as u64 {
        record(ctx, shown, micros);
    }
}

fn record(ctx: &Ctx<'_>, args: &Args<'_>, micros: u64) {
    let log = &ctx.shared.slowlog;
    let entry = Entry {
        id: log.next_id.fetch_add(1, Ordering::Relaxed),
        unix_seconds: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        micros,
        args: kept_args(args),
        addr: ctx.s.client.addr.clone(),
        name: ctx.s.client.names.lock().name.clone(),
    };
    let max = log.max_len() as usize;
    let mut entries = log.entries.lock();
    entries.push_front(entry);
    entries.truncate(max);
}

/// Whether argument `i` is a secret Redis keeps out of the log (and from monitors).
pub fn redacted(args: &Args<'_>, i: usize) -> bool {
    let name = args.get(0);
    if is(name, "auth") {
        return i >= 1;
    }
    if is(name, "hello") {
        let auth = (2..args.len()).find(|&j| is(args.get(j), "auth"));
        return auth.is_some_and(|j| i == j + 1 || i == j + 2);
    }
    if is(name, "acl") && args.len() > 1 && is(args.get(1), "setuser") {
        return i >= 3;
    }
    if is(name, "config") && args.len() > 1 && is(args.get(1), "set") {
        return i >= 3
            && i % 2 == 1
            && (is(args.get(i - 1), "requirepass") || is(args.get(i - 1), "masterauth"));
    }
    false
}

/// The arguments as the log keeps them.
fn kept_args(args: &Args<'_>) -> Vec<Vec<u8>> {
    let n = args.len();
    let shown = if n > MAX_ARGS { MAX_ARGS - 1 } else { n };
    let mut out: Vec<Vec<u8>> = (0..shown)
        .map(|i| {
            let a = args.get(i);
            if redacted(args, i) {
                b"(redacted)".to_vec()
            } else if a.len() > MAX_ARG_BYTES {
                let mut v = a[..MAX_ARG_BYTES].to_vec();
                v.extend_from_slice(
                    format!("... ({} more bytes)", a.len() - MAX_ARG_BYTES).as_bytes(),
                );
                v
            } else {
                a.to_vec()
            }
        })
        .collect();
    if n > MAX_ARGS {
        out.push(format!("... ({} more arguments)", n - shown).into_bytes());
    }
    out
}

const HELP: [&str; 12] = [
    "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET [<count>]",
    "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
    "    Entries are made of:",
    "    id, timestamp, time in microseconds, arguments array, client IP and port,",
    "    client name",
    "LEN",
    "    Return the length of the slowlog.",
    "RESET",
    "    Reset the slowlog.",
    "HELP",
    "    Prints this help.",
];

/// SLOWLOG GET [count] | LEN | RESET | HELP.
pub fn slowlog(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let sub = a.get(1).to_ascii_lowercase();
    let sub_text = String::from_utf8_lossy(a.get(1)).into_owned();
    match (sub.as_slice(), a.len()) {
        (b"get", 2 | 3) => get(ctx, a),
        (b"len", 2) => ctx.out.integer(ctx.shared.slowlog.len() as i64),
        (b"reset", 2) => {
            ctx.shared.slowlog.reset();
            ctx.out.ok();
        }
        (b"help", 2) => help(ctx, &HELP),
        (b"len" | b"reset" | b"help", _) => {
            wrong_arity(ctx, &format!("slowlog|{}", String::from_utf8_lossy(&sub)))
        }
        (b"get", _) => ctx.out.error(&format!(
            "ERR unknown subcommand or wrong number of arguments for '{sub_text}'. Try SLOWLOG HELP."
        )),
        _ => ctx.out.error(&format!(
            "ERR unknown subcommand '{sub_text}'. Try SLOWLOG HELP."
        )),
    }
}

fn get(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let count = if a.len() == 3 {
        match resp_wire::parse_i64(a.get(2)) {
            Some(-1) => usize::MAX,
            Some(n) if n >= 0 => usize::try_from(n).unwrap_or(usize::MAX),
            _ => {
                return ctx
                    .out
                    .error("ERR count should be greater than or equal to -1")
            }
        }
    } else {
        10
    };
    let entries = ctx.shared.slowlog.entries.lock();
    let n = entries.len().min(count);
    ctx.out.array(n);
    for e in entries.iter().take(n) {
        ctx.out.array(6);
        ctx.out.integer(e.id as i64);
        ctx.out.integer(e.unix_seconds as i64);
        ctx.out.integer(e.micros as i64);
        ctx.out.array(e.args.len());
        for arg in &e.args {
            ctx.out.bulk(arg);
        }
        ctx.out.bulk(e.addr.as_bytes());
        ctx.out.bulk(&e.name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(line: &[u8]) -> (resp_wire::RequestParser, Vec<u8>) {
        let mut p = resp_wire::RequestParser::default();
        let _ = p.parse(line);
        (p, line.to_vec())
    }

    #[test]
    fn long_commands_are_cut_as_redis() {
        let mut line = b"rpush k".to_vec();
        for i in 0..40 {
            line.extend_from_slice(format!(" {i}").as_bytes());
        }
        line.extend_from_slice(b"\r\n");
        let (p, buf) = parsed(&line);
        let kept = kept_args(&p.args(&buf));
        assert_eq!(kept.len(), 32);
        assert_eq!(kept[31], b"... (11 more arguments)".to_vec());
        let line = format!("set k {}\r\n", "a".repeat(200));
        let (p, buf) = parsed(line.as_bytes());
        let kept = kept_args(&p.args(&buf));
        assert_eq!(kept[2].len(), 128 + "... (72 more bytes)".len());
    }

    #[test]
    fn secrets_are_redacted() {
        let (p, buf) = parsed(b"hello 3 auth default pw\r\n");
        let kept = kept_args(&p.args(&buf));
        assert_eq!(kept[3], b"(redacted)".to_vec());
        assert_eq!(kept[4], b"(redacted)".to_vec());
        assert_eq!(kept[1], b"3".to_vec());
        let (p, buf) = parsed(b"config set requirepass x maxmemory 0\r\n");
        let kept = kept_args(&p.args(&buf));
        assert_eq!(kept[3], b"(redacted)".to_vec());
        assert_eq!(kept[5], b"0".to_vec());
    }
}
