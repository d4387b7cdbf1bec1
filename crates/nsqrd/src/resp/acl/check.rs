//! The check every command passes before it runs: may the connection's user run it, on
//! these keys and channels? Made only for a user with some restriction: the `default` user
//! of a plain server (every command, key and channel) costs one relaxed load per command,
//! the users' generation, and one flag.

use std::time::Instant;

use resp_wire::Args;

use super::log::{Context, Entry, Reason};
use super::selector::{Selector, READ, WRITE};
use super::user::User;
use crate::resp::command_meta as meta;
use crate::resp::session::Ctx;
use crate::resp::table::Command;

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

/// The keys a request names and what it does with each ([`READ`], [`WRITE`]), from Redis's
/// key specs (an `access` key is read; an `insert`, `delete` or `update` one written).
fn keys(m: &meta::Meta, args: &Args<'_>) -> Vec<(usize, u8)> {
    m.keys(args)
        .into_iter()
        .map(|(i, flags)| {
            let perms = flags.iter().fold(0, |p, f| match *f {
                "access" => p | READ,
                "insert" | "delete" | "update" => p | WRITE,
                _ => p,
            });
            (i, perms)
        })
        .collect()
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

/// What `user` may not do of this request, if anything: nothing if any of its selectors
/// allows all of it; else, as Redis, the most telling refusal (a channel, then a key, then
/// the command).
pub fn denial(user: &User, cmd: &Command, args: &Args<'_>) -> Option<Denied> {
    if user.unrestricted() {
        return None;
    }
    let rank = |d: &Denied| match d {
        Denied::Command(_) => 0,
        Denied::Key(_) => 1,
        Denied::Channel(_) => 2,
    };
    let mut worst: Option<Denied> = None;
    for s in user.all_selectors() {
        // A selector that allows it all ends the search: allowed.
        let d = selector_denial(s, cmd, args)?;
        if worst.as_ref().is_none_or(|w| rank(&d) > rank(w)) {
            worst = Some(d);
        }
    }
    worst
}

/// What one selector does not allow of this request.
fn selector_denial(s: &Selector, cmd: &Command, args: &Args<'_>) -> Option<Denied> {
    let (name, index) = meta::of_request(cmd.name, args);
    let Some(index) = index.filter(|&i| s.may_run(i)) else {
        return Some(Denied::Command(name));
    };
    for (i, perms) in keys(&meta::COMMANDS[index], args) {
        if !s.may_access(args.get(i), perms) {
            return Some(Denied::Key(args.get(i).to_vec()));
        }
    }
    let (chans, pattern) = channels(cmd, args);
    chans
        .into_iter()
        .find(|c| !s.may_use_channel(c, pattern))
        .map(|c| Denied::Channel(c.to_vec()))
}

/// Looks the connection's user up again if any user changed since it last did.
#[inline]
fn refresh_user(ctx: &mut Ctx<'_>) {
    let users = &ctx.shared.users;
    let g = users.generation();
    if g != ctx.s.acl_generation {
        ctx.s.acl_generation = g;
        if let Some(u) = users.get(&ctx.s.user.name) {
            ctx.s.user = u;
        }
    }
}

/// Where a command from this connection comes from, for `ACL LOG` (scripts say so themselves).
pub fn context(ctx: &Ctx<'_>) -> Context {
    if ctx.s.tx.is_some() {
        Context::Multi
    } else {
        Context::Toplevel
    }
}

/// The check: Ok, or the error reply (and an `ACL LOG` entry).
#[inline]
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
    check_restricted(ctx, cmd, args, context)
}

/// The check for a user with some restriction.
fn check_restricted(
    ctx: &mut Ctx<'_>,
    cmd: &Command,
    args: &Args<'_>,
    context: Context,
) -> Result<(), String> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resp::table::lookup;

    fn denied(rules: &[&str], request: &[&str]) -> Option<Denied> {
        let mut u = User::new("u");
        for r in rules {
            u.apply(r.as_bytes()).unwrap();
        }
        let owned = resp_wire::OwnedArgs::from_parts(request);
        let cmd = lookup(request[0].as_bytes()).unwrap();
        denial(&u, cmd, &owned.args())
    }

    #[test]
    fn commands_and_subcommands() {
        let rules = ["+get", "+config|get", "~*"];
        assert_eq!(denied(&rules, &["get", "k"]), None);
        assert_eq!(
            denied(&rules, &["set", "k", "v"]),
            Some(Denied::Command("set".into()))
        );
        assert_eq!(denied(&rules, &["CONFIG", "GET", "x"]), None);
        assert_eq!(
            denied(&rules, &["config", "set", "x", "y"]),
            Some(Denied::Command("config|set".into()))
        );
        // -@all refuses even PING (AUTH, HELLO, QUIT and RESET are not checked at all).
        assert_eq!(
            denied(&["-@all"], &["ping"]),
            Some(Denied::Command("ping".into()))
        );
    }

    #[test]
    fn keys_by_what_the_command_does_with_them() {
        let rules = ["+@all", "%R~r*", "%W~w*"];
        assert_eq!(denied(&rules, &["get", "r1"]), None);
        assert_eq!(
            denied(&rules, &["get", "w1"]),
            Some(Denied::Key(b"w1".to_vec()))
        );
        assert_eq!(denied(&rules, &["set", "w1", "v"]), None);
        assert_eq!(
            denied(&rules, &["set", "w1", "v", "GET"]),
            Some(Denied::Key(b"w1".to_vec()))
        );
        assert_eq!(
            denied(&rules, &["mget", "r1", "x"]),
            Some(Denied::Key(b"x".to_vec()))
        );
        // A script's keys are read and written (Redis's key spec for EVAL).
        assert_eq!(
            denied(&rules, &["eval", "s", "1", "r1"]),
            Some(Denied::Key(b"r1".to_vec()))
        );
        let rules = ["+@all", "~k*"];
        assert_eq!(denied(&rules, &["eval", "s", "1", "k1", "x"]), None);
        assert_eq!(
            denied(&rules, &["eval", "s", "2", "k1", "x"]),
            Some(Denied::Key(b"x".to_vec()))
        );
    }

    #[test]
    fn channels_and_patterns() {
        let rules = ["+@all", "&news.*"];
        assert_eq!(denied(&rules, &["publish", "news.1", "m"]), None);
        assert_eq!(
            denied(&rules, &["subscribe", "news.1", "other"]),
            Some(Denied::Channel(b"other".to_vec()))
        );
        assert_eq!(denied(&rules, &["psubscribe", "news.*"]), None);
        assert_eq!(
            denied(&rules, &["psubscribe", "news.1*"]),
            Some(Denied::Channel(b"news.1*".to_vec()))
        );
    }

    #[test]
    fn any_selector_may_allow_it() {
        let rules = ["+get", "~a*", "(+set %W~app*)"];
        assert_eq!(denied(&rules, &["get", "a1"]), None);
        assert_eq!(denied(&rules, &["set", "app1", "v"]), None);
        // The root refuses the command, the selector the key: the key is the answer.
        assert_eq!(
            denied(&rules, &["set", "a1", "v"]),
            Some(Denied::Key(b"a1".to_vec()))
        );
        assert_eq!(
            denied(&rules, &["del", "a1"]),
            Some(Denied::Command("del".into()))
        );
    }

    #[test]
    fn texts_as_redis() {
        let d = Denied::Command("config|get".into());
        assert_eq!(
            d.error(Context::Toplevel),
            "NOPERM this user has no permissions to run the 'config|get' command"
        );
        assert_eq!(
            Denied::Key(b"x".to_vec()).dry_run_text(),
            "This user has no permissions to access the 'x' key"
        );
        assert!(Denied::Key(b"x".to_vec())
            .error(Context::Lua)
            .starts_with("ERR The user executing the script"));
    }
}
