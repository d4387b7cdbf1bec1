//! Connection commands: PING, ECHO, HELLO, AUTH, SELECT, CLIENT, QUIT, RESET.

use resp_wire::{Args, Protocol};

use super::args::{self, is, SYNTAX};
use super::session::Ctx;
use super::table::wrong_arity;

/// The Redis version clients are told (the protocol level served: RESP3, `CLIENT SETINFO`).
pub const REDIS_VERSION: &str = "7.2.0";

const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

pub fn ping(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    if a.len() > 2 {
        return wrong_arity(ctx, "ping");
    }
    if ctx.in_resp2_pubsub() {
        ctx.out.array(2);
        ctx.out.bulk(b"pong");
        ctx.out.bulk(a.get(1));
    } else if a.len() == 2 {
        ctx.out.bulk(a.get(1));
    } else {
        ctx.out.simple(b"PONG");
    }
}

pub fn echo(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    ctx.out.bulk(a.get(1));
}

/// Compares without stopping at the first difference (no timing hint about the password).
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Checks a username / password pair; the error text if it is refused.
fn check_credentials(ctx: &Ctx<'_>, user: &[u8], pass: &[u8]) -> Result<(), &'static str> {
    if !user.eq_ignore_ascii_case(b"default") {
        return Err(WRONGPASS);
    }
    match &ctx.shared.password {
        None => Ok(()),
        Some(p) if same(p.as_bytes(), pass) => Ok(()),
        Some(_) => Err(WRONGPASS),
    }
}

pub fn auth(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let (user, pass) = match a.len() {
        2 => {
            if ctx.shared.password.is_none() {
                ctx.out.error("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?");
                return;
            }
            (&b"default"[..], a.get(1))
        }
        3 => (a.get(1), a.get(2)),
        _ => return ctx.out.error(SYNTAX),
    };
    match check_credentials(ctx, user, pass) {
        Ok(()) => {
            ctx.s.authenticated = true;
            ctx.out.ok();
        }
        Err(e) => ctx.out.error(e),
    }
}

/// Client names and library names: printable ASCII without spaces.
fn valid_name(name: &[u8]) -> bool {
    name.iter().all(|&c| (b'!'..=b'~').contains(&c))
}

pub fn hello(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let mut proto = ctx.proto();
    if a.len() >= 2 {
        let Some(v) = resp_wire::parse_i64(a.get(1)) else {
            ctx.out
                .error("ERR Protocol version is not an integer or out of range");
            return;
        };
        proto = match v {
            2 => Protocol::Resp2,
            3 => Protocol::Resp3,
            _ => return ctx.out.error("NOPROTO unsupported protocol version"),
        };
    }
    let mut name = None;
    let mut i = 2;
    while i < a.len() {
        let more = a.len() - i - 1;
        if is(a.get(i), "auth") && more >= 2 {
            if let Err(e) = check_credentials(ctx, a.get(i + 1), a.get(i + 2)) {
                return ctx.out.error(e);
            }
            ctx.s.authenticated = true;
            i += 3;
        } else if is(a.get(i), "setname") && more >= 1 {
            name = Some(a.get(i + 1));
            i += 2;
        } else {
            let opt = String::from_utf8_lossy(a.get(i)).into_owned();
            return ctx
                .out
                .error(&format!("ERR Syntax error in HELLO option '{opt}'"));
        }
    }
    if ctx.shared.password.is_some() && !ctx.s.authenticated {
        ctx.out.error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time");
        return;
    }
    if let Some(n) = name {
        if !valid_name(n) {
            ctx.out
                .error("ERR Client names cannot contain spaces, newlines or special characters.");
            return;
        }
        ctx.s.name = n.to_vec();
    }
    ctx.out.set_protocol(proto);
    if let Some(sub) = &ctx.s.sub {
        sub.set_protocol(proto);
    }
    let out = &mut *ctx.out;
    out.map(7);
    out.bulk(b"server");
    out.bulk(b"nsqrd");
    out.bulk(b"version");
    out.bulk(REDIS_VERSION.as_bytes());
    out.bulk(b"proto");
    out.integer(proto.number());
    out.bulk(b"id");
    out.integer(ctx.s.id as i64);
    out.bulk(b"mode");
    out.bulk(b"standalone");
    out.bulk(b"role");
    out.bulk(b"master");
    out.bulk(b"modules");
    out.array(0);
}

pub fn select(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let Some(db) = args::int(ctx, a.get(1)) else {
        return;
    };
    if db == 0 {
        ctx.out.ok();
    } else {
        ctx.out.error("ERR DB index is out of range");
    }
}

pub fn quit(ctx: &mut Ctx<'_>, _a: &Args<'_>) {
    ctx.s.quit = true;
    ctx.out.ok();
}

pub fn reset(ctx: &mut Ctx<'_>, _a: &Args<'_>) {
    if let Some(sub) = ctx.s.sub.clone() {
        // Unsubscribe quietly: RESET's reply is its only one.
        ctx.move_to_outbox();
        ctx.shared.ks.hub().remove_client(sub.id());
    }
    ctx.s.name.clear();
    ctx.s.tx = None;
    ctx.shared.ks.unwatch(&mut ctx.s.watch);
    ctx.s.authenticated = ctx.shared.password.is_none();
    ctx.out.set_protocol(Protocol::Resp2);
    if let Some(sub) = &ctx.s.sub {
        sub.set_protocol(Protocol::Resp2);
    }
    ctx.out.simple(b"RESET");
}

/// The `CLIENT INFO` line of this client.
fn info_line(ctx: &Ctx<'_>) -> String {
    let (channels, patterns) = ctx.s.subscriptions(ctx.shared);
    format!(
        "id={} addr={} laddr=127.0.0.1:{} name={} age={} idle=0 flags={} db=0 sub={} psub={} multi={} cmd=client|info user=default lib-name={} lib-ver={} resp={}\n",
        ctx.s.id,
        ctx.s.addr,
        ctx.shared.port,
        String::from_utf8_lossy(&ctx.s.name),
        ctx.s.created.elapsed().as_secs(),
        match (&ctx.s.tx, channels + patterns) {
            (Some(_), _) => "x",
            (None, 0) => "N",
            (None, _) => "P",
        },
        channels,
        patterns,
        ctx.s.tx.as_ref().map_or(-1, |t| t.len() as i64),
        String::from_utf8_lossy(&ctx.s.lib_name),
        String::from_utf8_lossy(&ctx.s.lib_ver),
        ctx.proto().number(),
    )
}

pub fn client(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let sub = a.get(1).to_ascii_lowercase();
    let arity_ok = match sub.as_slice() {
        b"id" | b"getname" | b"info" | b"help" => a.len() == 2,
        b"setname" => a.len() == 3,
        b"setinfo" => a.len() == 4,
        b"list" => a.len() >= 2,
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
        b"id" => ctx.out.integer(ctx.s.id as i64),
        b"getname" if ctx.s.name.is_empty() => ctx.out.null(),
        b"getname" => ctx.out.bulk(&ctx.s.name.clone()),
        b"setname" => {
            if valid_name(a.get(2)) {
                ctx.s.name = a.get(2).to_vec();
                ctx.out.ok();
            } else {
                ctx.out.error(
                    "ERR Client names cannot contain spaces, newlines or special characters.",
                );
            }
        }
        b"setinfo" => client_setinfo(ctx, a),
        b"info" => {
            let line = info_line(ctx);
            ctx.out.verbatim(b"txt", line.as_bytes());
        }
        b"list" => {
            let line = info_line(ctx).replace("cmd=client|info", "cmd=client|list");
            ctx.out.verbatim(b"txt", line.as_bytes());
        }
        _ => {
            let lines: [&[u8]; 6] = [
                b"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                b"ID, GETNAME, SETNAME <name>, INFO, LIST (this client only),",
                b"SETINFO <LIB-NAME|LIB-VER> <value>,",
                b"HELP",
                b"Other CLIENT subcommands of Redis are not served by nsqrd.",
                b"See docs/keyspace.md.",
            ];
            ctx.out.array(lines.len());
            for l in lines {
                ctx.out.simple(l);
            }
        }
    }
}

fn client_setinfo(ctx: &mut Ctx<'_>, a: &Args<'_>) {
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
    if which == "lib-name" {
        ctx.s.lib_name = value.to_vec();
    } else {
        ctx.s.lib_ver = value.to_vec();
    }
    ctx.out.ok();
}
