//! Redis's ACL: users with passwords, and the commands, keys and channels each may use.
//!
//! ```text
//! acl/user.rs   one user, ACL SETUSER's rules, how ACL LIST describes it
//! acl/selector.rs what a user (or one of its `(...)` selectors) may run, on which keys and channels
//! acl/users.rs  every user by name (in memory), AUTH's lookup
//! acl/check.rs  the check before each command, and its NOPERM errors
//! acl/log.rs    ACL LOG
//! acl/mod.rs    the ACL command
//! ```
//!
//! The categories of each command are in `command_meta.rs`, beside the command table.

mod check;
mod log;
mod selector;
mod user;
mod users;

pub use check::{check, context, log as log_refusal};
pub use log::{Context, Log, Reason};
pub use user::User;
pub use users::Users;

use resp_wire::Args;

use super::args::is;
use super::command_meta as meta;
use super::session::Ctx;
use super::table::{self, wrong_arity};

/// `ACL GENPASS`'s default and largest number of bits.
const GENPASS_BITS: i64 = 256;
const GENPASS_MAX: i64 = 4096;

const NO_FILE: &str = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.";

const HELP: &[&str] = &[
    "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CAT [<category>]",
    "    List all commands that belong to <category>, or all command categories",
    "    when no category is specified.",
    "DELUSER <username> [<username> ...]",
    "    Delete a list of users.",
    "DRYRUN <username> <command> [<arg> ...]",
    "    Returns whether the user can execute the given command without executing the command.",
    "GETUSER <username>",
    "    Get the user's details.",
    "GENPASS [<bits>]",
    "    Generate a secure 256-bit user password. The optional `bits` argument can",
    "    be used to specify a different size.",
    "LIST",
    "    Show users details in config file format.",
    "LOAD",
    "    Reload users from the ACL file.",
    "LOG [<count> | RESET]",
    "    Show the ACL log entries.",
    "SAVE",
    "    Save the current config to the ACL file.",
    "SETUSER <username> <attribute> [<attribute> ...]",
    "    Create or modify a user with the specified attributes.",
    "USERS",
    "    List all the registered usernames.",
    "WHOAMI",
    "    Return the current connection username.",
    "HELP",
    "    Prints this help.",
];

/// Each subcommand's arity (Redis's, name and subcommand included).
const SUBCOMMANDS: &[(&str, i32)] = &[
    ("cat", -2),
    ("deluser", -3),
    ("dryrun", -4),
    ("genpass", -2),
    ("getuser", 3),
    ("help", 2),
    ("list", 2),
    ("load", 2),
    ("log", -2),
    ("save", 2),
    ("setuser", -3),
    ("users", 2),
    ("whoami", 2),
];

pub fn acl(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let sub = String::from_utf8_lossy(a.get(1)).to_ascii_lowercase();
    let Some(&(_, arity)) = SUBCOMMANDS.iter().find(|(n, _)| *n == sub) else {
        let name = String::from_utf8_lossy(a.get(1)).into_owned();
        return ctx
            .out
            .error(&format!("ERR unknown subcommand '{name}'. Try ACL HELP."));
    };
    if !table::arity_ok(arity, a.len()) {
        return wrong_arity(ctx, &format!("acl|{sub}"));
    }
    match sub.as_str() {
        "whoami" => ctx.out.bulk(ctx.s.user.name.as_bytes()),
        "users" => {
            let users = ctx.shared.users.all();
            ctx.out.array(users.len());
            for u in users {
                ctx.out.bulk(u.name.as_bytes());
            }
        }
        "list" => {
            let users = ctx.shared.users.all();
            ctx.out.array(users.len());
            for u in users {
                ctx.out.bulk(u.describe().as_bytes());
            }
        }
        "getuser" => getuser(ctx, a.get(2)),
        "setuser" => {
            let rules: Vec<&[u8]> = a.iter().skip(3).collect();
            match ctx.shared.users.set(a.get(2), &rules) {
                Ok(()) => {
                    close_refused_subscribers(ctx, &String::from_utf8_lossy(a.get(2)));
                    ctx.out.ok();
                }
                Err(e) => ctx.out.error(&e.to_string()),
            }
        }
        "deluser" => deluser(ctx, a),
        "cat" if a.len() <= 3 => cat(ctx, a),
        "genpass" if a.len() <= 3 => genpass(ctx, a),
        "log" if a.len() <= 3 => log(ctx, a),
        "dryrun" => dryrun(ctx, a),
        "save" | "load" => ctx.out.error(NO_FILE),
        "help" => {
            ctx.out.array(HELP.len());
            for l in HELP {
                ctx.out.simple(l.as_bytes());
            }
        }
        _ => {
            let name = String::from_utf8_lossy(a.get(1)).into_owned();
            ctx.out.error(&format!(
                "ERR unknown subcommand or wrong number of arguments for '{name}'. Try ACL HELP."
            ));
        }
    }
}

fn getuser(ctx: &mut Ctx<'_>, name: &[u8]) {
    let Some(u) = ctx.shared.users.get(&String::from_utf8_lossy(name)) else {
        return ctx.out.null();
    };
    let out = &mut *ctx.out;
    out.map(6);
    out.bulk(b"flags");
    let flags = u.flags();
    out.array(flags.len());
    for f in flags {
        out.bulk(f.as_bytes());
    }
    out.bulk(b"passwords");
    out.array(u.passwords.len());
    for p in &u.passwords {
        out.bulk(p.as_bytes());
    }
    selector_fields(out, &u.root);
    out.bulk(b"selectors");
    out.array(u.selectors.len());
    for s in &u.selectors {
        out.map(3);
        selector_fields(out, s);
    }
}

/// A selector's commands, keys and channels, as `ACL GETUSER` shows them.
fn selector_fields(out: &mut resp_wire::Reply, s: &selector::Selector) {
    out.bulk(b"commands");
    out.bulk(s.describe_commands().as_bytes());
    out.bulk(b"keys");
    out.bulk(s.describe_keys().as_bytes());
    out.bulk(b"channels");
    out.bulk(s.describe_channels().as_bytes());
}

/// After `ACL SETUSER`, as Redis: the user's clients subscribed to a channel or pattern it
/// may no longer use are closed.
fn close_refused_subscribers(ctx: &Ctx<'_>, name: &str) {
    let Some(user) = ctx.shared.users.get(name) else {
        return;
    };
    if user.unrestricted() || ctx.shared.ks.hub().is_idle() {
        return;
    }
    let hub = ctx.shared.ks.hub();
    ctx.shared.clients.kill_where(|c| {
        if *c.user.lock() != name {
            return false;
        }
        let (channels, patterns) = hub.subscriptions(c.id);
        channels.iter().any(|ch| !user.may_use_channel(ch, false))
            || patterns.iter().any(|p| !user.may_use_channel(p, true))
    });
}

fn deluser(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let names: Vec<String> = a
        .iter()
        .skip(2)
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .collect();
    if names.iter().any(|n| n == "default") {
        return ctx.out.error("ERR The 'default' user cannot be removed");
    }
    let gone = ctx.shared.users.delete(&names);
    // Their connections are closed, as in Redis (this one after its reply).
    ctx.shared
        .clients
        .kill_where(|c| gone.iter().any(|g| *g == *c.user.lock()));
    ctx.out.integer(gone.len() as i64);
}

fn cat(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    if a.len() == 2 {
        ctx.out.array(meta::NAMES.len());
        for n in meta::NAMES {
            ctx.out.bulk(n.as_bytes());
        }
        return;
    }
    let name = String::from_utf8_lossy(a.get(2)).into_owned();
    let bits = match meta::category(&name) {
        Some(b) if !name.eq_ignore_ascii_case("all") => b,
        _ => return ctx.out.error(&format!("ERR Unknown category '{name}'")),
    };
    let names: Vec<&str> = meta::COMMANDS
        .iter()
        .filter(|m| m.categories & bits != 0)
        .map(|m| m.name)
        .collect();
    ctx.out.array(names.len());
    for n in names {
        ctx.out.bulk(n.as_bytes());
    }
}

fn genpass(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let bits = if a.len() == 3 {
        match resp_wire::parse_i64(a.get(2)) {
            Some(b) => b,
            None => return ctx.out.error(super::args::NOT_INTEGER),
        }
    } else {
        GENPASS_BITS
    };
    if bits <= 0 || bits > GENPASS_MAX {
        return ctx.out.error("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096");
    }
    let chars = (bits as usize).div_ceil(4);
    let mut bytes = vec![0u8; chars.div_ceil(2)];
    if getrandom::getrandom(&mut bytes).is_err() {
        return ctx.out.error("ERR failed to generate random bytes");
    }
    let mut hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    hex.truncate(chars);
    ctx.out.bulk(hex.as_bytes());
}

fn log(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let mut count = 10usize;
    if a.len() == 3 {
        if is(a.get(2), "reset") {
            ctx.shared.acl_log.reset();
            return ctx.out.ok();
        }
        match resp_wire::parse_i64(a.get(2)) {
            Some(n) => count = n.max(0) as usize,
            None => return ctx.out.error(super::args::NOT_INTEGER),
        }
    }
    let entries = ctx.shared.acl_log.newest(count);
    let out = &mut *ctx.out;
    out.array(entries.len());
    for e in entries {
        out.map(7);
        out.bulk(b"count");
        out.integer(e.count as i64);
        out.bulk(b"reason");
        out.bulk(e.reason.name().as_bytes());
        out.bulk(b"context");
        out.bulk(e.context.name().as_bytes());
        out.bulk(b"object");
        out.bulk(e.object.as_bytes());
        out.bulk(b"username");
        out.bulk(e.username.as_bytes());
        out.bulk(b"age-seconds");
        out.double(e.at.elapsed().as_millis() as f64 / 1000.0);
        out.bulk(b"client-info");
        out.bulk(e.client_info.as_bytes());
    }
}

fn dryrun(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let name = String::from_utf8_lossy(a.get(2)).into_owned();
    let Some(user) = ctx.shared.users.get(&name) else {
        return ctx.out.error(&format!("ERR User '{name}' not found"));
    };
    let Some(cmd) = table::lookup(a.get(3)) else {
        let c = String::from_utf8_lossy(a.get(3)).into_owned();
        return ctx.out.error(&format!("ERR Command '{c}' not found"));
    };
    let mut owned = resp_wire::OwnedArgs::default();
    for arg in a.iter().skip(3) {
        owned.push(arg);
    }
    let args = owned.args();
    if !table::arity_ok(cmd.arity, args.len()) {
        return wrong_arity(ctx, cmd.name);
    }
    match check::denial(&user, cmd, &args) {
        None => ctx.out.ok(),
        Some(d) => ctx.out.bulk(d.dry_run_text().as_bytes()),
    }
}
