//! The check every command passes before it runs: may the connection's user run it, on
//! these keys and channels? Made only for a user with some restriction: the `default` user
//! of a plain server (every command, key and channel) costs one relaxed load per command,
//! the users' generation, and one flag.

use std::time::Instant;

use resp_wire::Args;

use super::log::{Context, Entry, Reason};
use super::user::{User, READ, WRITE};
use crate::resp::command_meta as meta;
use crate::resp::session::Ctx;
use crate::resp::table::{Command, WRITE as WRITES};

/// What the user may not do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denied {
    /// The command's full name (`get`, `config|get`).
    Command(String),
    Key(Vec<u8>),
    Channel(Vec<u8>),
}

impl Denied {
    fn reason(&self) -> Reason {
        match self {
            Denied::Command(_) => Reason::Command,
            Denied::Key(_) => Reason::Key,
            Denied::Channel(_) => Reason::Channel,
        }
    }

    fn object(&self) -> String {
        match self {
            Denied::Command(n) => n.clone(),
            Denied::Key(k) | Denied::Channel(k) => String::from_utf8_lossy(k).into_owned(),
        }
    }

    /// The error reply, as Redis words it where the command came from.
    pub fn error(&self, context: Context) -> String {
        match (context, self) {
            (Context::Lua, Denied::Command(_)) => {
                "ERR The user executing the script can't run this command or subcommand".into()
            }
            (Context::Lua, Denied::Key(_)) => "ERR The user executing the script can't access at least one of the keys mentioned in the command arguments".into(),
            (Context::Lua, Denied::Channel(_)) => "ERR The user executing the script can't publish to the channel mentioned in the command".into(),
            (_, Denied::Command(n)) => {
                format!("NOPERM this user has no permissions to run the '{n}' command")
            }
            (_, Denied::Key(_)) => {
                "NOPERM this user has no permissions to access one of the keys used as arguments"
                    .into()
            }
            (_, Denied::Channel(_)) => "NOPERM this user has no permissions to access one of the channels used as arguments".into(),
        }
    }

    /// `ACL DRYRUN`'s text.
    pub fn dry_run_text(&self) -> String {
        match self {
            Denied::Command(n) => format!("This user has no permissions to run the '{n}' command"),
            Denied::Key(_) => format!(
                "This user has no permissions to access the '{}' key",
                self.object()
            ),
            Denied::Channel(_) => format!(
                "This user has no permissions to access the '{}' channel",
                self.object()
            ),
        }
    }
}

/// The command's name as ACL rules know it: `config|get` for a subcommand Redis knows.
fn full_name(cmd: &Command, args: &Args<'_>) -> (String, Option<usize>) {
    if args.len() >= 2 && !meta::subcommands(cmd.name).is_empty() {
        let sub = String::from_utf8_lossy(args.get(1)).to_ascii_lowercase();
        let full = format!("{}|{sub}", cmd.name);
        if let Some(i) = meta::index(&full) {
            return (full, Some(i));
        }
    }
    (cmd.name.to_owned(), meta::index(cmd.name))
}

/// The keys a request names and what it does with each ([`READ`], [`WRITE`]), from Redis's
/// key specs (an `access` key is read; an `insert`, `delete` or `update` one written).
fn keys(cmd: &Command, meta: Option<&meta::Meta>, args: &Args<'_>) -> Vec<(usize, u8)> {
    let Some(m) = meta else {
        let perms = if cmd.flags & WRITES != 0 { WRITE } else { READ };
        return crate::resp::server::key_positions(cmd, args.len())
            .into_iter()
            .map(|i| (i, perms))
            .collect();
    };
    m.keys(args)
        .into_iter()
        .map(|(i, flags)| {
            if flags.contains(&"variable_flags") {
                return (i, variable_perms(m.name, args));
            }
            let perms = flags.iter().fold(0, |p, f| match *f {
                "access" => p | READ,
                "insert" | "delete" | "update" => p | WRITE,
                _ => p,
            });
            (i, perms)
        })
        .collect()
}

/// The two commands whose key flags depend on their options, decided as Redis does: `SET`
/// reads its key only with `GET`; `BITFIELD` writes only with `SET` or `INCRBY`.
fn variable_perms(name: &str, args: &Args<'_>) -> u8 {
    let has = |word: &str| {
        args.iter()
            .skip(2)
            .any(|a| a.eq_ignore_ascii_case(word.as_bytes()))
    };
    match name {
        "set" if has("get") => READ | WRITE,
        "set" => WRITE,
        _ if has("set") || has("incrby") => READ | WRITE,
        _ => READ,
    }
}

/// The channels a request names, and whether they are patterns.
fn channels<'a>(cmd: &Command, args: &'a Args<'a>) -> (Vec<&'a [u8]>, bool) {
    match cmd.name {
        "publish" => (vec![args.get(1)], false),
        "subscribe" => (args.iter().skip(1).collect(), false),
        "psubscribe" => (args.iter().skip(1).collect(), true),
        _ => (Vec::new(), false),
    }
}

/// What `user` may not do of this request, if anything.
pub fn denial(user: &User, cmd: &Command, args: &Args<'_>) -> Option<Denied> {
    if user.unrestricted() {
        return None;
    }
    let (name, index) = full_name(cmd, args);
    if !index.is_some_and(|i| user.may_run(i)) {
        return Some(Denied::Command(name));
    }
    for (i, perms) in keys(cmd, index.map(|i| &meta::COMMANDS[i]), args) {
        if !user.may_access(args.get(i), perms) {
            return Some(Denied::Key(args.get(i).to_vec()));
        }
    }
    let (chans, pattern) = channels(cmd, args);
    chans
        .into_iter()
        .find(|c| !user.may_use_channel(c, pattern))
        .map(|c| Denied::Channel(c.to_vec()))
}

/// Looks the connection's user up again if any user changed since it last did.
pub fn refresh_user(ctx: &mut Ctx<'_>) {
    let users = &ctx.shared.users;
    let g = users.generation();
    if g != ctx.s.acl_generation {
        ctx.s.acl_generation = g;
        if let Some(u) = users.get(&ctx.s.user.name) {
            ctx.s.user = u;
        }
    }
}

/// The check: Ok, or the error reply (and an `ACL LOG` entry).
pub fn check(
    ctx: &mut Ctx<'_>,
    cmd: &Command,
    args: &Args<'_>,
    context: Context,
) -> Result<(), String> {
    refresh_user(ctx);
    if ctx.s.user.unrestricted() {
        return Ok(());
    }
    let Some(d) = denial(&ctx.s.user, cmd, args) else {
        return Ok(());
    };
    let user = ctx.s.user.name.clone();
    let command = if let Denied::Command(n) = &d {
        n.clone()
    } else {
        cmd.name.to_owned()
    };
    log(ctx, d.reason(), context, d.object(), user, &command);
    Err(d.error(context))
}

/// Adds an `ACL LOG` entry for this connection.
pub fn log(
    ctx: &Ctx<'_>,
    reason: Reason,
    context: Context,
    object: String,
    username: String,
    command: &str,
) {
    let client_info = crate::resp::client::info_line(ctx.shared, &ctx.s.client, command);
    ctx.shared.acl_log.add(Entry {
        count: 1,
        reason,
        context,
        object,
        username,
        at: Instant::now(),
        client_info: client_info.trim_end().to_owned(),
    });
}
