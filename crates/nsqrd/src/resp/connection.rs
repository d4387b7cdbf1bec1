//! Connection commands: PING, ECHO, HELLO, AUTH, SELECT, CLIENT, QUIT, RESET.

use resp_wire::{Args, Protocol};

use super::acl;
use super::args::{is, SYNTAX};
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

/// Logs the connection in as `user` if `pass` is its password (passwords are compared as
/// SHA-256 hashes); a refusal goes to `ACL LOG`.
fn log_in(ctx: &mut Ctx<'_>, user: &[u8], pass: &[u8]) -> Result<(), &'static str> {
    match ctx.shared.users.authenticate(user, pass) {
        Some(u) => {
            ctx.s.log_in(u);
            Ok(())
        }
        None => {
            let name = String::from_utf8_lossy(user).into_owned();
            let context = acl::context(ctx);
            acl::log_refusal(ctx, acl::Reason::Auth, context, "AUTH".into(), name, "auth");
            Err(WRONGPASS)
        }
    }
}

pub fn auth(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let (user, pass) = match a.len() {
        2 => {
            if ctx.shared.users.default_is_open() {
                ctx.out.error("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?");
                return;
            }
            (&b"default"[..], a.get(1))
        }
        3 => (a.get(1), a.get(2)),
        _ => return ctx.out.error(SYNTAX),
    };
    match log_in(ctx, user, pass) {
        Ok(()) => ctx.out.ok(),
        Err(e) => ctx.out.error(e),
    }
}

/// Client names and library names: printable ASCII without spaces.
pub fn valid_name(name: &[u8]) -> bool {
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
            if let Err(e) = log_in(ctx, a.get(i + 1), a.get(i + 2)) {
                return ctx.out.error(e);
            }
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
    if !ctx.s.authenticated {
        ctx.out.error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time");
        return;
    }
    if let Some(n) = name {
        if !valid_name(n) {
            ctx.out
                .error("ERR Client names cannot contain spaces, newlines or special characters.");
            return;
        }
        ctx.s.client.names.lock().name = n.to_vec();
    }
    ctx.out.set_protocol(proto);
    ctx.s
        .client
        .resp
        .store(proto.number() as u8, std::sync::atomic::Ordering::Relaxed);
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
    out.integer(ctx.s.id() as i64);
    out.bulk(b"mode");
    out.bulk(b"standalone");
    out.bulk(b"role");
    out.bulk(b"master");
    out.bulk(b"modules");
    out.array(0);
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
    ctx.s.client.names.lock().name.clear();
    ctx.s
        .client
        .resp
        .store(2, std::sync::atomic::Ordering::Relaxed);
    ctx.s.replies = super::session::Replies::On;
    super::databases::switch(ctx, 0);
    ctx.s.tx = None;
    ctx.s
        .client
        .multi
        .store(-1, std::sync::atomic::Ordering::Relaxed);
    ctx.shared.ks.unwatch(&mut ctx.s.watch);
    super::tracking::stop(ctx);
    ctx.s.log_out(ctx.shared.users.default_user());
    ctx.out.set_protocol(Protocol::Resp2);
    if let Some(sub) = &ctx.s.sub {
        sub.set_protocol(Protocol::Resp2);
    }
    ctx.out.simple(b"RESET");
}
