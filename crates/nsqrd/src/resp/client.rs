//! The CLIENT command: this client's id, name and library (ID, GETNAME, SETNAME, SETINFO,
//! INFO), every client (LIST with TYPE / ID, KILL with its old and new forms), PAUSE /
//! UNPAUSE, REPLY, NO-EVICT, TRACKING and its queries (`tracking.rs`), and UNBLOCK (which
//! unblocks no one: a client blocked on lists waits for its push, timeout or kill). The
//! registry they read is `registry.rs`.

use std::sync::atomic::Ordering;
use std::time::Duration;

use resp_wire::Args;

use super::args::{is, SYNTAX};
use super::connection::valid_name;
use super::registry::{Client, Pause, PauseKind};
use super::session::{Ctx, Replies};
use super::table::wrong_arity;
use super::Shared;

/// Redis's `CLIENT LIST` line of `c`.
pub fn info_line(shared: &Shared, c: &Client, cmd: &str) -> String {
    let (channels, patterns) = shared.ks.hub().counts(c.id);
    let shards = shared.ks.hub().shard_count(c.id);
    let multi = c.multi.load(Ordering::Relaxed);
    let mut flags = String::new();
    if multi >= 0 {
        flags.push('x');
    }
    if channels + patterns + shards > 0 {
        flags.push('P');
    }
    if c.no_evict.load(Ordering::Relaxed) {
        flags.push('e');
    }
    if flags.is_empty() {
        flags.push('N');
    }
    let n = c.names.lock().clone();
    format!(
        "id={} addr={} laddr={} name={} age={} idle={} flags={flags} db={} sub={channels} psub={patterns} ssub={shards} multi={multi} cmd={cmd} user={} lib-name={} lib-ver={} resp={}\n",
        c.id,
        c.addr,
        c.laddr,
        String::from_utf8_lossy(&n.name),
        c.created.elapsed().as_secs(),
        c.idle_seconds(),
        c.db(),
        c.user.lock(),
        String::from_utf8_lossy(&n.lib_name),
        String::from_utf8_lossy(&n.lib_ver),
        c.resp.load(Ordering::Relaxed),
    )
}

/// The client types CLIENT LIST / KILL filter on (no replicas or masters here).
fn client_type(ctx: &mut Ctx<'_>, arg: &[u8]) -> Option<Option<bool>> {
    let t = arg.to_ascii_lowercase();
    match t.as_slice() {
        b"normal" => Some(Some(false)),
        b"pubsub" => Some(Some(true)),
        b"master" | b"replica" | b"slave" => Some(None),
        _ => {
            let name = String::from_utf8_lossy(arg).into_owned();
            ctx.out.error(&format!("ERR Unknown client type '{name}'"));
            None
        }
    }
}

fn is_pubsub(shared: &Shared, c: &Client) -> bool {
    shared.ks.hub().total(c.id) != 0
}

pub fn client(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let sub = a.get(1).to_ascii_lowercase();
    let arity_ok = match sub.as_slice() {
        b"id" | b"getname" | b"info" | b"help" | b"unpause" | b"getredir" | b"trackinginfo" => {
            a.len() == 2
        }
        b"setname" | b"reply" | b"no-evict" => a.len() == 3,
        b"setinfo" => a.len() == 4,
        b"pause" => a.len() == 3 || a.len() == 4,
        b"unblock" => a.len() == 3 || a.len() == 4,
        b"list" => a.len() >= 2,
        b"kill" | b"tracking" => a.len() >= 3,
        _ => {
            let name = String::from_utf8_lossy(a.get(1)).into_owned();
            return ctx.out.error(&format!(
                "ERR unknown subcommand '{name}'. Try CLIENT HELP."
            ));
        }
    };
    if !arity_ok {
        let name = format!("client|{}", String::from_utf8_lossy(&sub));
        return wrong_arity(ctx, &name);
    }
    match sub.as_slice() {
        b"id" => ctx.out.integer(ctx.s.id() as i64),
        b"getname" => {
            let name = ctx.s.client.names.lock().name.clone();
            if name.is_empty() {
                ctx.out.null();
            } else {
                ctx.out.bulk(&name);
            }
        }
        b"setname" => {
            if valid_name(a.get(2)) {
                ctx.s.client.names.lock().name = a.get(2).to_vec();
                ctx.out.ok();
            } else {
                ctx.out.error(
                    "ERR Client names cannot contain spaces, newlines or special characters.",
                );
            }
        }
        b"setinfo" => setinfo(ctx, a),
        b"info" => {
            let line = info_line(ctx.shared, &ctx.s.client, "client|info");
            ctx.out.verbatim(b"txt", line.as_bytes());
        }
        b"list" => list(ctx, a),
        b"kill" => kill(ctx, a),
        b"pause" => pause(ctx, a),
        b"unpause" => {
            ctx.shared.clients.unpause();
            ctx.out.ok();
        }
        b"reply" => reply(ctx, a),
        b"no-evict" => {
            let on = if is(a.get(2), "on") {
                true
            } else if is(a.get(2), "off") {
                false
            } else {
                return ctx.out.error(SYNTAX);
            };
            ctx.s.client.no_evict.store(on, Ordering::Relaxed);
            ctx.out.ok();
        }
        b"unblock" => {
            if a.len() == 4 && !is(a.get(3), "timeout") && !is(a.get(3), "error") {
                return ctx
                    .out
                    .error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR");
            }
            // A blocked client is not unblocked from outside (docs/keyspace.md).
            ctx.out.integer(0);
        }
        b"getredir" => super::tracking::getredir(ctx),
        b"trackinginfo" => super::tracking::trackinginfo(ctx),
        b"tracking" => super::tracking::tracking(ctx, a),
        _ => help(ctx),
    }
}

fn help(ctx: &mut Ctx<'_>) {
    let lines: [&[u8]; 12] = [
        b"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        b"ID, GETNAME, SETNAME <name>, SETINFO <LIB-NAME|LIB-VER> <value>, INFO",
        b"LIST [TYPE NORMAL|MASTER|REPLICA|PUBSUB] [ID id [id ...]]",
        b"KILL <ip:port> | KILL [ID id] [TYPE type] [USER user] [ADDR ip:port] [LADDR ip:port] [SKIPME yes|no]",
        b"PAUSE <timeout> [WRITE|ALL], UNPAUSE",
        b"REPLY ON|OFF|SKIP",
        b"NO-EVICT ON|OFF",
        b"UNBLOCK <id> [TIMEOUT|ERROR] (unblocks no one here: always 0)",
        b"TRACKING ON|OFF [REDIRECT id] [PREFIX p ...] [BCAST] [NOLOOP], GETREDIR, TRACKINGINFO",
        b"HELP",
        b"Other CLIENT subcommands of Redis are not served by nsqrd.",
        b"See docs/keyspace.md.",
    ];
    ctx.out.array(lines.len());
    for l in lines {
        ctx.out.simple(l);
    }
}

fn setinfo(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let (attr, value) = (a.get(2), a.get(3));
    let which = if is(attr, "lib-name") {
        "lib-name"
    } else if is(attr, "lib-ver") {
        "lib-ver"
    } else {
        let opt = String::from_utf8_lossy(attr).into_owned();
        return ctx.out.error(&format!("ERR Unrecognized option '{opt}'"));
    };
    if !valid_name(value) {
        return ctx.out.error(&format!(
            "ERR {which} cannot contain spaces, newlines or special characters."
        ));
    }
    let mut names = ctx.s.client.names.lock();
    if which == "lib-name" {
        names.lib_name = value.to_vec();
    } else {
        names.lib_ver = value.to_vec();
    }
    drop(names);
    ctx.out.ok();
}

/// CLIENT LIST [TYPE type] [ID id ...].
fn list(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let mut kind: Option<Option<bool>> = None;
    let mut ids: Option<Vec<u64>> = None;
    match a.len() {
        2 => {}
        4 if is(a.get(2), "type") => match client_type(ctx, a.get(3)) {
            Some(t) => kind = Some(t),
            None => return,
        },
        n if n >= 4 && is(a.get(2), "id") => {
            let mut v = Vec::new();
            for arg in a.iter().skip(3) {
                match resp_wire::parse_i64(arg) {
                    Some(id) if id > 0 => v.push(id as u64),
                    _ => return ctx.out.error("ERR Invalid client ID"),
                }
            }
            ids = Some(v);
        }
        _ => return ctx.out.error(SYNTAX),
    }
    let me = ctx.s.id();
    let mut text = String::new();
    for c in ctx.shared.clients.all() {
        let keep = match (&kind, &ids) {
            (Some(None), _) => false,
            (Some(Some(pubsub)), _) => is_pubsub(ctx.shared, &c) == *pubsub,
            (_, Some(ids)) => ids.contains(&c.id),
            _ => true,
        };
        if keep {
            let cmd = if c.id == me {
                "client|list"
            } else {
                c.last_command()
            };
            text.push_str(&info_line(ctx.shared, &c, cmd));
        }
    }
    ctx.out.verbatim(b"txt", text.as_bytes());
}

/// What CLIENT KILL's filters ask for.
#[derive(Default)]
struct KillFilter {
    id: Option<u64>,
    kind: Option<Option<bool>>,
    user: Option<Vec<u8>>,
    addr: Option<String>,
    laddr: Option<String>,
    skip_me: bool,
}

/// CLIENT KILL ip:port (OK or an error), or CLIENT KILL with filters (how many).
fn kill(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let me = ctx.s.id();
    if a.len() == 3 {
        let addr = String::from_utf8_lossy(a.get(2)).into_owned();
        let n = ctx.shared.clients.kill_where(|c| c.addr == addr);
        if n == 0 {
            return ctx.out.error("ERR No such client");
        }
        ctx.s.quit |= ctx.s.client.is_killed();
        return ctx.out.ok();
    }
    if a.len() % 2 == 1 {
        return ctx.out.error(SYNTAX);
    }
    let mut f = KillFilter {
        skip_me: true,
        ..KillFilter::default()
    };
    for i in (2..a.len()).step_by(2) {
        let (opt, v) = (a.get(i), a.get(i + 1));
        if is(opt, "id") {
            match resp_wire::parse_i64(v) {
                Some(id) if id > 0 => f.id = Some(id as u64),
                _ => return ctx.out.error("ERR client-id should be greater than 0"),
            }
        } else if is(opt, "type") {
            match client_type(ctx, v) {
                Some(t) => f.kind = Some(t),
                None => return,
            }
        } else if is(opt, "user") {
            f.user = Some(v.to_vec());
        } else if is(opt, "addr") {
            f.addr = Some(String::from_utf8_lossy(v).into_owned());
        } else if is(opt, "laddr") {
            f.laddr = Some(String::from_utf8_lossy(v).into_owned());
        } else if is(opt, "skipme") && (is(v, "yes") || is(v, "no")) {
            f.skip_me = is(v, "yes");
        } else {
            return ctx.out.error(SYNTAX);
        }
    }
    let shared = ctx.shared;
    let n = shared.clients.kill_where(|c| {
        !(f.skip_me && c.id == me)
            && f.id.is_none_or(|id| c.id == id)
            && f.kind.is_none_or(|k| k == Some(is_pubsub(shared, c)))
            && f.user
                .as_deref()
                .is_none_or(|u| u == c.user.lock().as_bytes())
            && f.addr.as_deref().is_none_or(|a| c.addr == a)
            && f.laddr.as_deref().is_none_or(|a| c.laddr == a)
    });
    ctx.s.quit |= ctx.s.client.is_killed();
    ctx.out.integer(n as i64);
}

/// CLIENT PAUSE timeout [WRITE|ALL].
fn pause(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let Some(ms) = resp_wire::parse_i64(a.get(2)) else {
        return ctx
            .out
            .error("ERR timeout is not an integer or out of range");
    };
    if ms < 0 {
        return ctx.out.error("ERR timeout is negative");
    }
    let kind = match a.len() {
        3 => PauseKind::All,
        _ if is(a.get(3), "all") => PauseKind::All,
        _ if is(a.get(3), "write") => PauseKind::Write,
        _ => return ctx.out.error("ERR CLIENT PAUSE mode must be WRITE or ALL"),
    };
    let until = tokio::time::Instant::now() + Duration::from_millis(ms as u64);
    ctx.shared.clients.pause(Pause { until, kind });
    ctx.out.ok();
}

/// CLIENT REPLY ON|OFF|SKIP: OFF and SKIP are not answered (the connection drops their
/// reply, `conn.rs`).
fn reply(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    if is(a.get(2), "on") {
        ctx.s.replies = Replies::On;
        ctx.out.ok();
    } else if is(a.get(2), "off") {
        ctx.s.replies = Replies::Off;
    } else if is(a.get(2), "skip") {
        ctx.s.replies = Replies::SkipNext;
    } else {
        ctx.out.error(SYNTAX);
    }
}
