//! The command table, and the checks Redis makes before a command runs, in Redis's order:
//! unknown command, wrong number of arguments, authentication, memory (`maxmemory`), a failed
//! log (strict mode), and the RESP2 subscribed context. A refused command is an error reply;
//! the connection stays open.

use std::sync::OnceLock;

use resp_wire::Args;

use super::session::Ctx;
use super::{
    acl, bitfield, bits, blocking, client, connection, databases, dump, geo, hashes, hll,
    introspection, keys, lcs, lists, lolwut, migrate, module, monitor, persistence, pubsub,
    replication, script, server, sets, slowlog, sort, stream_groups, stream_info, stream_read,
    streams, strings, transaction, zblocking, zranges, zsets,
};

/// Changes the keyspace.
pub const WRITE: u32 = 1;
pub const READONLY: u32 = 1 << 1;
/// May use more memory: refused with OOM when nothing can be evicted.
pub const DENYOOM: u32 = 1 << 2;
pub const FAST: u32 = 1 << 3;
/// Allowed while subscribed in RESP2.
pub const PUBSUB: u32 = 1 << 4;
/// Allowed before AUTH.
pub const NO_AUTH: u32 = 1 << 5;
pub const ADMIN: u32 = 1 << 6;
/// Runs at once inside MULTI instead of being queued.
pub const TX: u32 = 1 << 7;
/// Refused from a script (`redis.call`).
pub const NOSCRIPT: u32 = 1 << 8;

pub type Handler = fn(&mut Ctx<'_>, &Args<'_>);

/// One command.
pub struct Command {
    /// Lower case, as Redis names commands in its errors.
    pub name: &'static str,
    /// Exact argument count (name included) if positive, minimum if negative.
    pub arity: i32,
    pub flags: u32,
    /// Key positions (first, last, step) for `COMMAND`; last -1 = all remaining.
    pub keys: (i32, i32, i32),
    pub handler: Handler,
}

const NONE: (i32, i32, i32) = (0, 0, 0);
const ONE: (i32, i32, i32) = (1, 1, 1);
const ALL: (i32, i32, i32) = (1, -1, 1);

macro_rules! commands {
    ($( $name:literal, $arity:expr, $flags:expr, $keys:expr, $handler:path; )*) => {
        /// Every command served.
        pub static COMMANDS: &[Command] = &[ $( Command {
            name: $name,
            arity: $arity,
            flags: $flags,
            keys: $keys,
            handler: $handler,
        }, )* ];
    };
}

commands! {
    // connection
    "ping", -1, FAST | PUBSUB, NONE, connection::ping;
    "echo", 2, FAST, NONE, connection::echo;
    "hello", -1, FAST | NO_AUTH | NOSCRIPT, NONE, connection::hello;
    "auth", -2, FAST | NO_AUTH | NOSCRIPT, NONE, connection::auth;
    "select", 2, FAST, NONE, databases::select;
    "client", -2, NOSCRIPT, NONE, client::client;
    "quit", -1, FAST | PUBSUB | NO_AUTH | TX | NOSCRIPT, NONE, connection::quit;
    "reset", 1, FAST | PUBSUB | NO_AUTH | TX | NOSCRIPT, NONE, connection::reset;
    // transactions
    "multi", 1, FAST | TX | NOSCRIPT, NONE, transaction::multi;
    "exec", 1, TX | NOSCRIPT, NONE, transaction::exec;
    "discard", 1, FAST | TX | NOSCRIPT, NONE, transaction::discard;
    "watch", -2, FAST | TX | NOSCRIPT, ALL, transaction::watch;
    "unwatch", 1, FAST | NOSCRIPT, NONE, transaction::unwatch;
    // server
    "dbsize", 1, READONLY | FAST, NONE, databases::dbsize;
    "flushdb", -1, WRITE, NONE, databases::flushdb;
    "flushall", -1, WRITE, NONE, databases::flushall;
    "swapdb", 3, WRITE | FAST, NONE, databases::swapdb;
    "move", 3, WRITE | FAST, ONE, databases::move_key;
    "info", -1, 0, NONE, server::info;
    "save", 1, ADMIN | NOSCRIPT, NONE, persistence::save;
    "bgsave", -1, ADMIN | NOSCRIPT, NONE, persistence::bgsave;
    "lastsave", 1, FAST, NONE, persistence::lastsave;
    "object", -2, READONLY, (2, 2, 1), introspection::object;
    "memory", -2, READONLY, NONE, introspection::memory;
    "latency", -2, ADMIN | NOSCRIPT, NONE, introspection::latency;
    "role", 1, FAST, NONE, introspection::role;
    "command", -1, 0, NONE, server::command;
    "acl", -2, NOSCRIPT, NONE, acl::acl;
    "config", -2, ADMIN | NOSCRIPT, NONE, super::config::config;
    "time", 1, FAST, NONE, server::time;
    "slowlog", -2, ADMIN, NONE, slowlog::slowlog;
    "monitor", 1, ADMIN | NOSCRIPT, NONE, monitor::monitor;
    "lolwut", -1, READONLY | FAST, NONE, lolwut::lolwut;
    "module", -2, ADMIN | NOSCRIPT, NONE, module::module;
    "replicaof", 3, ADMIN | NOSCRIPT, NONE, replication::replicaof;
    "slaveof", 3, ADMIN | NOSCRIPT, NONE, replication::replicaof;
    // strings
    "get", 2, READONLY | FAST, ONE, strings::get;
    "set", -3, WRITE | DENYOOM, ONE, strings::set;
    "getset", 3, WRITE | DENYOOM | FAST, ONE, strings::getset;
    "getdel", 2, WRITE | FAST, ONE, strings::getdel;
    "getex", -2, WRITE | FAST, ONE, strings::getex;
    "setex", 4, WRITE | DENYOOM, ONE, strings::setex;
    "psetex", 4, WRITE | DENYOOM, ONE, strings::psetex;
    "setnx", 3, WRITE | DENYOOM | FAST, ONE, strings::setnx;
    "mget", -2, READONLY | FAST, ALL, strings::mget;
    "mset", -3, WRITE | DENYOOM, (1, -1, 2), strings::mset;
    "incr", 2, WRITE | DENYOOM | FAST, ONE, strings::incr;
    "incrby", 3, WRITE | DENYOOM | FAST, ONE, strings::incrby;
    "decr", 2, WRITE | DENYOOM | FAST, ONE, strings::decr;
    "decrby", 3, WRITE | DENYOOM | FAST, ONE, strings::decrby;
    "append", 3, WRITE | DENYOOM, ONE, strings::append;
    "strlen", 2, READONLY | FAST, ONE, strings::strlen;
    "msetnx", -3, WRITE | DENYOOM, (1, -1, 2), strings::msetnx;
    "incrbyfloat", 3, WRITE | DENYOOM | FAST, ONE, strings::incrbyfloat;
    "getrange", 4, READONLY, ONE, strings::getrange;
    "substr", 4, READONLY, ONE, strings::getrange;
    "lcs", -3, READONLY, (1, 2, 1), lcs::lcs_command;
    "setrange", 4, WRITE | DENYOOM, ONE, strings::setrange;
    // bitmaps
    "setbit", 4, WRITE | DENYOOM, ONE, bits::setbit;
    "getbit", 3, READONLY | FAST, ONE, bits::getbit;
    "bitcount", -2, READONLY, ONE, bits::bitcount;
    "bitpos", -3, READONLY, ONE, bits::bitpos;
    "bitop", -4, WRITE | DENYOOM, (2, -1, 1), bits::bitop;
    // geo (sorted sets of geohashes)
    "geoadd", -5, WRITE | DENYOOM, ONE, geo::geoadd;
    "geodist", -4, READONLY, ONE, geo::geodist;
    "geohash", -2, READONLY, ONE, geo::geohash;
    "geopos", -2, READONLY, ONE, geo::geopos;
    "georadius", -6, WRITE | DENYOOM, ONE, geo::georadius;
    "georadius_ro", -6, READONLY, ONE, geo::georadius_ro;
    "georadiusbymember", -5, WRITE | DENYOOM, ONE, geo::georadiusbymember;
    "georadiusbymember_ro", -5, READONLY, ONE, geo::georadiusbymember_ro;
    "geosearch", -7, READONLY, ONE, geo::geosearch;
    "geosearchstore", -8, WRITE | DENYOOM, (1, 2, 1), geo::geosearchstore;
    // HyperLogLog
    "pfadd", -2, WRITE | DENYOOM | FAST, ONE, hll::pfadd;
    "pfcount", -2, READONLY, ALL, hll::pfcount;
    "pfmerge", -2, WRITE | DENYOOM, ALL, hll::pfmerge;
    "pfdebug", 3, WRITE | DENYOOM | ADMIN, (2, 2, 1), hll::pfdebug;
    "bitfield", -2, WRITE | DENYOOM, ONE, bitfield::bitfield;
    "bitfield_ro", -2, READONLY | FAST, ONE, bitfield::bitfield_ro;
    // sort
    "sort", -2, WRITE | DENYOOM, ONE, sort::sort;
    "sort_ro", -2, READONLY, ONE, sort::sort_ro;
    // lists
    "lpush", -3, WRITE | DENYOOM | FAST, ONE, lists::lpush;
    "rpush", -3, WRITE | DENYOOM | FAST, ONE, lists::rpush;
    "lpushx", -3, WRITE | DENYOOM | FAST, ONE, lists::lpushx;
    "rpushx", -3, WRITE | DENYOOM | FAST, ONE, lists::rpushx;
    "lpop", -2, WRITE | FAST, ONE, lists::lpop;
    "rpop", -2, WRITE | FAST, ONE, lists::rpop;
    "llen", 2, READONLY | FAST, ONE, lists::llen;
    "lrange", 4, READONLY, ONE, lists::lrange;
    "lindex", 3, READONLY, ONE, lists::lindex;
    "lset", 4, WRITE | DENYOOM, ONE, lists::lset;
    "linsert", 5, WRITE | DENYOOM, ONE, lists::linsert;
    "lrem", 4, WRITE, ONE, lists::lrem;
    "ltrim", 4, WRITE, ONE, lists::ltrim;
    "lpos", -3, READONLY, ONE, lists::lpos;
    "lmove", 5, WRITE | DENYOOM, (1, 2, 1), lists::lmove;
    "rpoplpush", 3, WRITE | DENYOOM, (1, 2, 1), lists::rpoplpush;
    "lmpop", -4, WRITE, NONE, lists::lmpop;
    "blpop", -3, WRITE, (1, -2, 1), blocking::blpop;
    "brpop", -3, WRITE, (1, -2, 1), blocking::brpop;
    "blmove", 6, WRITE | DENYOOM, (1, 2, 1), blocking::blmove;
    "brpoplpush", 4, WRITE | DENYOOM, (1, 2, 1), blocking::brpoplpush;
    "blmpop", -5, WRITE, NONE, blocking::blmpop;
    // hashes
    "hset", -4, WRITE | DENYOOM | FAST, ONE, hashes::hset;
    "hsetnx", 4, WRITE | DENYOOM | FAST, ONE, hashes::hsetnx;
    "hmset", -4, WRITE | DENYOOM | FAST, ONE, hashes::hmset;
    "hget", 3, READONLY | FAST, ONE, hashes::hget;
    "hmget", -3, READONLY | FAST, ONE, hashes::hmget;
    "hdel", -3, WRITE | FAST, ONE, hashes::hdel;
    "hexists", 3, READONLY | FAST, ONE, hashes::hexists;
    "hlen", 2, READONLY | FAST, ONE, hashes::hlen;
    "hstrlen", 3, READONLY | FAST, ONE, hashes::hstrlen;
    "hkeys", 2, READONLY, ONE, hashes::hkeys;
    "hvals", 2, READONLY, ONE, hashes::hvals;
    "hgetall", 2, READONLY, ONE, hashes::hgetall;
    "hincrby", 4, WRITE | DENYOOM | FAST, ONE, hashes::hincrby;
    "hincrbyfloat", 4, WRITE | DENYOOM | FAST, ONE, hashes::hincrbyfloat;
    "hrandfield", -2, READONLY, ONE, hashes::hrandfield;
    "hscan", -3, READONLY, ONE, hashes::hscan;
    // sets
    "sadd", -3, WRITE | DENYOOM | FAST, ONE, sets::sadd;
    "srem", -3, WRITE | FAST, ONE, sets::srem;
    "sismember", 3, READONLY | FAST, ONE, sets::sismember;
    "smismember", -3, READONLY | FAST, ONE, sets::smismember;
    "smembers", 2, READONLY, ONE, sets::smembers;
    "scard", 2, READONLY | FAST, ONE, sets::scard;
    "spop", -2, WRITE | FAST, ONE, sets::spop;
    "srandmember", -2, READONLY, ONE, sets::srandmember;
    "smove", 4, WRITE | FAST, (1, 2, 1), sets::smove;
    "sinter", -2, READONLY, ALL, sets::sinter;
    "sunion", -2, READONLY, ALL, sets::sunion;
    "sdiff", -2, READONLY, ALL, sets::sdiff;
    "sinterstore", -3, WRITE | DENYOOM, ALL, sets::sinterstore;
    "sunionstore", -3, WRITE | DENYOOM, ALL, sets::sunionstore;
    "sdiffstore", -3, WRITE | DENYOOM, ALL, sets::sdiffstore;
    "sintercard", -3, READONLY, NONE, sets::sintercard;
    "sscan", -3, READONLY, ONE, sets::sscan;
    // streams
    "xadd", -5, WRITE | DENYOOM | FAST, ONE, streams::xadd;
    "xrange", -4, READONLY, ONE, streams::xrange;
    "xrevrange", -4, READONLY, ONE, streams::xrevrange;
    "xlen", 2, READONLY | FAST, ONE, streams::xlen;
    "xdel", -3, WRITE | FAST, ONE, streams::xdel;
    "xtrim", -4, WRITE, ONE, streams::xtrim;
    "xread", -4, READONLY, NONE, stream_read::xread;
    "xreadgroup", -7, WRITE, NONE, stream_read::xreadgroup;
    "xgroup", -2, WRITE | DENYOOM, (2, 2, 1), stream_groups::xgroup;
    "xack", -4, WRITE | FAST, ONE, stream_groups::xack;
    "xpending", -3, READONLY, ONE, stream_groups::xpending;
    "xclaim", -6, WRITE | FAST, ONE, stream_groups::xclaim;
    "xautoclaim", -6, WRITE | FAST, ONE, stream_groups::xautoclaim;
    "xinfo", -2, READONLY, (2, 2, 1), stream_info::xinfo;
    "xsetid", -3, WRITE | DENYOOM | FAST, ONE, stream_info::xsetid;
    // sorted sets
    "zadd", -4, WRITE | DENYOOM | FAST, ONE, zsets::zadd;
    "zincrby", 4, WRITE | DENYOOM | FAST, ONE, zsets::zincrby;
    "zrem", -3, WRITE | FAST, ONE, zsets::zrem;
    "zcard", 2, READONLY | FAST, ONE, zsets::zcard;
    "zscore", 3, READONLY | FAST, ONE, zsets::zscore;
    "zmscore", -3, READONLY | FAST, ONE, zsets::zmscore;
    "zrank", 3, READONLY | FAST, ONE, zsets::zrank;
    "zrevrank", 3, READONLY | FAST, ONE, zsets::zrevrank;
    "zcount", 4, READONLY | FAST, ONE, zranges::zcount;
    "zlexcount", 4, READONLY | FAST, ONE, zranges::zlexcount;
    "zrange", -4, READONLY, ONE, zranges::zrange;
    "zrevrange", -4, READONLY, ONE, zranges::zrevrange;
    "zrangebyscore", -4, READONLY, ONE, zranges::zrangebyscore;
    "zrevrangebyscore", -4, READONLY, ONE, zranges::zrevrangebyscore;
    "zrangebylex", -4, READONLY, ONE, zranges::zrangebylex;
    "zrevrangebylex", -4, READONLY, ONE, zranges::zrevrangebylex;
    "zrangestore", -5, WRITE | DENYOOM, (1, 2, 1), zranges::zrangestore;
    "zremrangebyrank", 4, WRITE, ONE, zranges::zremrangebyrank;
    "zremrangebyscore", 4, WRITE, ONE, zranges::zremrangebyscore;
    "zremrangebylex", 4, WRITE, ONE, zranges::zremrangebylex;
    "zpopmin", -2, WRITE | FAST, ONE, zsets::zpopmin;
    "zpopmax", -2, WRITE | FAST, ONE, zsets::zpopmax;
    "zmpop", -4, WRITE, NONE, zsets::zmpop;
    "zrandmember", -2, READONLY, ONE, zsets::zrandmember;
    "zscan", -3, READONLY, ONE, zsets::zscan;
    "zunion", -3, READONLY, NONE, zsets::zunion;
    "zinter", -3, READONLY, NONE, zsets::zinter;
    "zdiff", -3, READONLY, NONE, zsets::zdiff;
    "zunionstore", -4, WRITE | DENYOOM, ONE, zsets::zunionstore;
    "zinterstore", -4, WRITE | DENYOOM, ONE, zsets::zinterstore;
    "zdiffstore", -4, WRITE | DENYOOM, ONE, zsets::zdiffstore;
    "zintercard", -3, READONLY, NONE, zsets::zintercard;
    "bzpopmin", -3, WRITE | FAST, (1, -2, 1), zblocking::bzpopmin;
    "bzpopmax", -3, WRITE | FAST, (1, -2, 1), zblocking::bzpopmax;
    "bzmpop", -5, WRITE, NONE, zblocking::bzmpop;
    // keys
    "del", -2, WRITE, ALL, keys::del;
    "unlink", -2, WRITE | FAST, ALL, keys::del;
    "exists", -2, READONLY | FAST, ALL, keys::exists;
    "expire", -3, WRITE | FAST, ONE, keys::expire;
    "pexpire", -3, WRITE | FAST, ONE, keys::pexpire;
    "expireat", -3, WRITE | FAST, ONE, keys::expireat;
    "pexpireat", -3, WRITE | FAST, ONE, keys::pexpireat;
    "ttl", 2, READONLY | FAST, ONE, keys::ttl;
    "pttl", 2, READONLY | FAST, ONE, keys::pttl;
    "expiretime", 2, READONLY | FAST, ONE, keys::expiretime;
    "pexpiretime", 2, READONLY | FAST, ONE, keys::pexpiretime;
    "persist", 2, WRITE | FAST, ONE, keys::persist;
    "type", 2, READONLY | FAST, ONE, keys::key_type;
    "scan", -2, READONLY, NONE, keys::scan;
    "keys", 2, READONLY, NONE, keys::keys;
    "rename", 3, WRITE, (1, 2, 1), keys::rename;
    "renamenx", 3, WRITE | FAST, (1, 2, 1), keys::renamenx;
    "copy", -3, WRITE | DENYOOM, (1, 2, 1), keys::copy;
    "randomkey", 1, READONLY, NONE, keys::randomkey;
    "touch", -2, READONLY | FAST, ALL, keys::touch;
    "dump", 2, READONLY, ONE, dump::dump;
    "restore", -4, WRITE | DENYOOM, ONE, dump::restore;
    "migrate", -6, WRITE, (3, 3, 1), migrate::migrate;
    // pub/sub
    "subscribe", -2, PUBSUB | NOSCRIPT, NONE, pubsub::subscribe;
    "unsubscribe", -1, PUBSUB | NOSCRIPT, NONE, pubsub::unsubscribe;
    "psubscribe", -2, PUBSUB | NOSCRIPT, NONE, pubsub::psubscribe;
    "punsubscribe", -1, PUBSUB | NOSCRIPT, NONE, pubsub::punsubscribe;
    "publish", 3, FAST, NONE, pubsub::publish;
    "ssubscribe", -2, PUBSUB | NOSCRIPT, ALL, pubsub::ssubscribe;
    "sunsubscribe", -1, PUBSUB | NOSCRIPT, ALL, pubsub::sunsubscribe;
    "spublish", 3, FAST, ONE, pubsub::spublish;
    "pubsub", -2, 0, NONE, pubsub::pubsub;
    // scripts
    "eval", -3, NOSCRIPT, (3, 3, 1), script::eval;
    "evalsha", -3, NOSCRIPT, (3, 3, 1), script::evalsha;
    "eval_ro", -3, NOSCRIPT | READONLY, (3, 3, 1), script::eval_ro;
    "evalsha_ro", -3, NOSCRIPT | READONLY, (3, 3, 1), script::evalsha_ro;
    "script", -2, NOSCRIPT, NONE, script::script;
    "fcall", -3, NOSCRIPT, (3, 3, 1), script::fcall;
    "fcall_ro", -3, NOSCRIPT | READONLY, (3, 3, 1), script::fcall_ro;
    "function", -2, NOSCRIPT, NONE, script::function;
}

/// The command named `name` (any case). Looked up on every request: the table hashes with
/// foldhash, not the standard library's SipHash (which guards against collisions chosen by a
/// client, and the names here are fixed).
pub fn lookup(name: &[u8]) -> Option<&'static Command> {
    static BY_NAME: OnceLock<foldhash::HashMap<&'static [u8], usize>> = OnceLock::new();
    let map = BY_NAME.get_or_init(|| {
        COMMANDS
            .iter()
            .enumerate()
            .map(|(i, c)| (c.name.as_bytes(), i))
            .collect()
    });
    // The longest name served is `georadiusbymember_ro` (20 bytes).
    let mut lower = [0u8; 24];
    let name = lower.get_mut(..name.len()).map(|l| {
        for (d, s) in l.iter_mut().zip(name) {
            *d = s.to_ascii_lowercase();
        }
        &*l
    })?;
    map.get(name).map(|&i| &COMMANDS[i])
}

/// Whether `n` arguments (name included) fit `arity`.
pub fn arity_ok(arity: i32, n: usize) -> bool {
    let n = n as i64;
    let a = i64::from(arity);
    if a >= 0 {
        n == a
    } else {
        n >= -a
    }
}

/// `ERR wrong number of arguments for '<name>' command`.
pub fn wrong_arity(ctx: &mut Ctx<'_>, name: &str) {
    ctx.out.error(&format!(
        "ERR wrong number of arguments for '{name}' command"
    ));
}

/// Redis's text for an unknown command: the name, then the arguments (quoted, at most 128
/// characters of them in all).
pub fn unknown_command_text(args: &Args<'_>) -> String {
    let name = String::from_utf8_lossy(&args.get(0)[..args.get(0).len().min(128)]).into_owned();
    let mut list = String::new();
    for a in args.iter().skip(1) {
        if list.len() >= 128 {
            break;
        }
        let room = 128 - list.len();
        list.push('\'');
        list.push_str(&String::from_utf8_lossy(&a[..a.len().min(room)]));
        list.push_str("' ");
    }
    format!("ERR unknown command '{name}', with args beginning with: {list}")
}

/// Runs one request: the checks, then the command (or, inside MULTI, queues it). A request
/// refused by a check inside MULTI dooms the transaction.
pub fn dispatch(ctx: &mut Ctx<'_>, args: &Args<'_>) {
    let Some(cmd) = lookup(args.get(0)) else {
        ctx.doom_transaction();
        ctx.out.error(&unknown_command_text(args));
        return;
    };
    if !arity_ok(cmd.arity, args.len()) {
        ctx.doom_transaction();
        return wrong_arity(ctx, cmd.name);
    }
    let context = acl::context(ctx);
    if let Err(e) = admit(ctx, cmd, args, context) {
        ctx.doom_transaction();
        ctx.out.error(&e);
        return;
    }
    if ctx.s.tx.is_some() && cmd.flags & TX == 0 {
        return transaction::queue(ctx, cmd.flags, args);
    }
    run(ctx, cmd, args);
}

/// The checks after name and arity: authentication, the user's permissions (ACL), memory,
/// a failed log, the RESP2 subscribed context.
pub fn admit(
    ctx: &mut Ctx<'_>,
    cmd: &Command,
    args: &Args<'_>,
    context: acl::Context,
) -> Result<(), String> {
    if !ctx.s.authenticated && cmd.flags & NO_AUTH == 0 {
        return Err("NOAUTH Authentication required.".into());
    }
    if cmd.flags & NO_AUTH == 0 {
        acl::check(ctx, cmd, args, context)?;
    }
    if cmd.flags & DENYOOM != 0 {
        ctx.shared.ks.make_room().map_err(|e| e.to_string())?;
    }
    if cmd.flags & WRITE != 0 {
        ctx.shared.ks.check_writable().map_err(|e| e.to_string())?;
    }
    if cmd.flags & PUBSUB == 0 && ctx.in_resp2_pubsub() {
        return Err(format!(
            "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
            full_name(cmd, args)
        ));
    }
    Ok(())
}

/// Commands whose first argument names a subcommand (Redis's container commands).
const CONTAINERS: &[&str] = &[
    "client", "config", "pubsub", "script", "object", "memory", "command", "latency", "function",
];

/// The name Redis's errors give a command: `client|info` for a container's subcommand.
pub fn full_name(cmd: &Command, args: &Args<'_>) -> String {
    if CONTAINERS.contains(&cmd.name) && args.len() > 1 {
        let sub = String::from_utf8_lossy(args.get(1)).to_ascii_lowercase();
        format!("{}|{sub}", cmd.name)
    } else {
        cmd.name.to_owned()
    }
}

/// Runs a command that passed its checks.
/// Runs a command that passed its checks, its keys named for the client's database.
pub fn run(ctx: &mut Ctx<'_>, cmd: &'static Command, args: &Args<'_>) {
    ctx.s.last_command = cmd.name;
    match databases::in_database(ctx, cmd, args) {
        None => slowlog::timed(ctx, cmd, args, args),
        Some(renamed) => slowlog::timed(ctx, cmd, &renamed.args(), args),
    }
    monitor::feed(ctx, cmd, args);
    super::tracking::remember_reads(ctx, cmd, args);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_ignores_case_and_refuses_long_names() {
        assert_eq!(lookup(b"GeT").map(|c| c.name), Some("get"));
        assert!(lookup(b"nosuchcommand").is_none());
        assert!(lookup(&[b'a'; 100]).is_none());
        assert!(lookup(b"").is_none());
    }

    #[test]
    fn names_are_unique_and_lower_case() {
        for (i, c) in COMMANDS.iter().enumerate() {
            assert_eq!(c.name, c.name.to_ascii_lowercase());
            assert!(c.name.len() <= 24);
            assert!(COMMANDS[..i].iter().all(|d| d.name != c.name), "{}", c.name);
        }
    }

    #[test]
    fn arity_rules() {
        assert!(arity_ok(2, 2) && !arity_ok(2, 3));
        assert!(arity_ok(-2, 2) && arity_ok(-2, 9) && !arity_ok(-2, 1));
    }

    #[test]
    fn unknown_command_text_as_redis() {
        let input = b"FOO bar baz\r\n";
        let (args, _) = resp_wire::parse(input).unwrap().unwrap();
        let mut p = resp_wire::RequestParser::default();
        let _ = p.parse(input).unwrap();
        let a = p.args(input);
        assert_eq!(args.len(), 3);
        assert_eq!(
            unknown_command_text(&a),
            "ERR unknown command 'FOO', with args beginning with: 'bar' 'baz' "
        );
        let long = format!("x {}\r\n", "a".repeat(300));
        let _ = p.parse(long.as_bytes()).unwrap();
        let text = unknown_command_text(&p.args(long.as_bytes()));
        assert_eq!(
            text.len(),
            "ERR unknown command 'x', with args beginning with: ".len() + 128 + 3
        );
    }
}
