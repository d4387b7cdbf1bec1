//! MONITOR: every command run by any client, as Redis 7.0 shows it to its monitors: one
//! status line per command, `+<unix seconds>.<micros> [<db> <client address>] "arg" ...`, the
//! arguments quoted and escaped as Redis's `sdscatrepr` does, secrets redacted. Commands
//! flagged admin are not shown, as in Redis.
//!
//! A monitor receives the lines through its outbox (the one pub/sub uses, with its output
//! limit: a monitor that does not read is cut off rather than growing without bound). With
//! no monitor, a command pays one relaxed load.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use nsqr_kv::Subscriber;
use parking_lot::Mutex;
use resp_wire::Args;

use super::session::Ctx;
use super::slowlog::redacted;
use super::table::{Command, ADMIN};

/// The clients monitoring.
#[derive(Debug, Default)]
pub struct Monitors {
    count: AtomicUsize,
    subs: Mutex<Vec<Arc<Subscriber>>>,
}

impl Monitors {
    fn add(&self, sub: Arc<Subscriber>) {
        let mut subs = self.subs.lock();
        if !subs.iter().any(|s| Arc::ptr_eq(s, &sub)) {
            subs.push(sub);
            self.count.store(subs.len(), Ordering::Relaxed);
        }
    }
}

/// MONITOR: from now on this client sees every command.
pub fn monitor(ctx: &mut Ctx<'_>, _a: &Args<'_>) {
    ctx.s.monitoring = true;
    ctx.out.ok();
    let sub = ctx.subscriber();
    ctx.shared.monitors.add(sub);
}

/// Shows a command that ran to every monitor (none: one load).
pub fn feed(ctx: &Ctx<'_>, cmd: &Command, args: &Args<'_>) {
    let monitors = &ctx.shared.monitors;
    if monitors.count.load(Ordering::Relaxed) == 0 || cmd.flags & ADMIN != 0 {
        return;
    }
    let line = line(ctx.s.db, &ctx.s.client.addr, args);
    let mut subs = monitors.subs.lock();
    // A monitor whose connection has ended holds the last reference to its outbox.
    subs.retain(|s| Arc::strong_count(s) > 1 && !s.is_killed());
    monitors.count.store(subs.len(), Ordering::Relaxed);
    for s in subs.iter() {
        s.write(|r| r.raw(&line));
    }
}

/// The status line a monitor is sent.
fn line(db: u8, addr: &str, args: &Args<'_>) -> Vec<u8> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let mut out = format!(
        "+{}.{:06} [{db} {addr}] ",
        now.as_secs(),
        now.subsec_micros()
    )
    .into_bytes();
    for i in 0..args.len() {
        if i > 0 {
            out.push(b' ');
        }
        if redacted(args, i) {
            quote(b"(redacted)", &mut out);
        } else {
            quote(args.get(i), &mut out);
        }
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// Redis's `sdscatrepr`: double quotes, backslash escapes, `\xHH` for other bytes.
fn quote(s: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &b in s {
        match b {
            b'\\' | b'"' => out.extend_from_slice(&[b'\\', b]),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x07 => out.extend_from_slice(b"\\a"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x20..=0x7e => out.push(b),
            _ => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_as_sdscatrepr() {
        let mut out = Vec::new();
        quote(b"a\"b\\c\n\x01\xff ok", &mut out);
        assert_eq!(out, b"\"a\\\"b\\\\c\\n\\x01\\xff ok\"".to_vec());
    }
}
