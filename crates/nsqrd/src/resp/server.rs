//! Server commands: INFO, COMMAND, TIME. (CONFIG and the
//! snapshots have their own files.)

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use resp_wire::{Args, Reply};

use super::command_meta as meta;
use super::connection::REDIS_VERSION;
use super::session::Ctx;
use super::table::{self, Command, COMMANDS};

pub fn time(ctx: &mut Ctx<'_>, _a: &Args<'_>) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    ctx.out.array(2);
    ctx.out.bulk(now.as_secs().to_string().as_bytes());
    ctx.out.bulk(now.subsec_micros().to_string().as_bytes());
}

fn human(bytes: u64) -> String {
    let (v, unit) = match bytes {
        b if b >= 1 << 30 => (b as f64 / f64::from(1u32 << 30), "G"),
        b if b >= 1 << 20 => (b as f64 / f64::from(1u32 << 20), "M"),
        b if b >= 1 << 10 => (b as f64 / 1024.0, "K"),
        b => (b as f64, "B"),
    };
    format!("{v:.2}{unit}")
}

/// The sections INFO knows, in the order it prints them.
const SECTIONS: [&str; 8] = [
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cluster",
    "keyspace",
];

fn section(ctx: &Ctx<'_>, stats: &nsqr_kv::KvStats, name: &str, out: &mut String) {
    let sh = ctx.shared;
    let ks = &sh.ks;
    let settings = ks.settings();
    let up = sh.started.elapsed().as_secs();
    let _ = match name {
        "server" => write!(
            out,
            "# Server\r\nredis_version:{REDIS_VERSION}\r\nnsqrd_version:{}\r\nredis_mode:standalone\r\nos:{}\r\narch_bits:64\r\nprocess_id:{}\r\ntcp_port:{}\r\nuptime_in_seconds:{up}\r\nuptime_in_days:{}\r\n",
            env!("CARGO_PKG_VERSION"),
            std::env::consts::OS,
            std::process::id(),
            sh.port,
            up / 86_400
        ),
        "clients" => write!(
            out,
            "# Clients\r\nconnected_clients:{}\r\n",
            sh.connected.load(Ordering::Relaxed)
        ),
        "memory" => write!(
            out,
            "# Memory\r\nused_memory:{}\r\nused_memory_human:{}\r\nmaxmemory:{}\r\nmaxmemory_human:{}\r\nmaxmemory_policy:{}\r\n",
            stats.used_memory,
            human(stats.used_memory),
            settings.maxmemory(),
            human(settings.maxmemory()),
            settings.policy().name()
        ),
        "persistence" => write!(
            out,
            "# Persistence\r\nloading:0\r\naof_enabled:{}\r\n",
            u8::from(ks.is_strict())
        ),
        "stats" => write!(
            out,
            "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\nexpired_keys:{}\r\nevicted_keys:{}\r\nkeyspace_hits:{}\r\nkeyspace_misses:{}\r\npubsub_channels:{}\r\npubsub_patterns:{}\r\nchange_feed_revision:{}\r\nchange_feed_errors:{}\r\n",
            sh.total_connections.load(Ordering::Relaxed),
            sh.total_commands.load(Ordering::Relaxed),
            stats.expired,
            stats.evicted,
            stats.hits,
            stats.misses,
            ks.hub().channels(nsqr_kv::Kind::Channel, None).len(),
            ks.hub().numpat(),
            stats.revision,
            ks.feed_errors()
        ),
        "replication" => write!(out, "# Replication\r\nrole:master\r\nconnected_slaves:0\r\n"),
        "cluster" => write!(out, "# Cluster\r\ncluster_enabled:0\r\n"),
        _ => {
            out.push_str("# Keyspace\r\n");
            for db in ctx.shared.ks.db_stats() {
                let _ = write!(out, "db{}:keys={},expires={},avg_ttl=0\r\n", db.db, db.keys, db.expires);
            }
            Ok(())
        }
    };
}

pub fn info(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let asked: Vec<String> = a
        .iter()
        .skip(1)
        .map(|s| String::from_utf8_lossy(s).to_ascii_lowercase())
        .collect();
    let all = asked.is_empty()
        || asked
            .iter()
            .any(|s| s == "all" || s == "default" || s == "everything");
    // Counters are summed over every shard once per INFO.
    let stats = ctx.shared.ks.stats();
    let mut text = String::new();
    for name in SECTIONS {
        if all || asked.iter().any(|s| s == name) {
            if !text.is_empty() {
                text.push_str("\r\n");
            }
            section(ctx, &stats, name, &mut text);
        }
    }
    ctx.out.verbatim(b"txt", text.as_bytes());
}

fn flag_names(flags: u32) -> Vec<&'static str> {
    [
        (table::WRITE, "write"),
        (table::READONLY, "readonly"),
        (table::DENYOOM, "denyoom"),
        (table::ADMIN, "admin"),
        (table::PUBSUB, "pubsub"),
        (table::NO_AUTH, "no_auth"),
        (table::FAST, "fast"),
        (table::NOSCRIPT, "noscript"),
    ]
    .into_iter()
    .filter(|(bit, _)| flags & bit != 0)
    .map(|(_, n)| n)
    .collect()
}

/// One command as `COMMAND INFO` describes it (Redis 7's ten fields): its arity from the
/// table, the rest as Redis 7.0 describes it (`command_meta.rs`).
fn command_info(ctx: &mut Ctx<'_>, c: &Command) {
    match meta::get(c.name) {
        Some(m) => meta_info(ctx.out, m, c.arity),
        None => {
            let m = meta::Meta {
                name: c.name,
                arity: c.arity,
                flags: &[],
                categories: 0,
                keys: c.keys,
                tips: &[],
                key_specs: &[],
            };
            let flags = flag_names(c.flags);
            info_fields(ctx.out, &m, c.arity, &flags);
            ctx.out.set(0);
        }
    }
}

fn meta_info(out: &mut Reply, m: &meta::Meta, arity: i32) {
    info_fields(out, m, arity, m.flags);
    // As Redis: an array of subcommands, or an empty set.
    let subs = meta::subcommands(m.name);
    if subs.is_empty() {
        out.set(0);
    } else {
        out.array(subs.len());
    }
    for s in subs {
        meta_info(out, s, s.arity);
    }
}

/// The first nine fields (all but the subcommands).
fn info_fields(out: &mut Reply, m: &meta::Meta, arity: i32, flags: &[&str]) {
    out.array(10);
    out.bulk(m.name.as_bytes());
    out.integer(i64::from(arity));
    out.set(flags.len());
    for f in flags {
        out.simple(f.as_bytes());
    }
    out.integer(i64::from(m.keys.0));
    out.integer(i64::from(m.keys.1));
    out.integer(i64::from(m.keys.2));
    let cats: Vec<&str> = meta::category_names(m.categories).collect();
    out.set(cats.len());
    for cat in cats {
        out.simple(format!("@{cat}").as_bytes());
    }
    out.set(m.tips.len());
    for t in m.tips {
        out.bulk(t.as_bytes());
    }
    out.set(m.key_specs.len());
    for k in m.key_specs {
        key_spec(out, k);
    }
}

fn key_spec(out: &mut Reply, k: &meta::KeySpec) {
    out.map(if k.notes.is_some() { 4 } else { 3 });
    if let Some(n) = k.notes {
        out.bulk(b"notes");
        out.bulk(n.as_bytes());
    }
    out.bulk(b"flags");
    out.set(k.flags.len());
    for f in k.flags {
        out.simple(f.as_bytes());
    }
    out.bulk(b"begin_search");
    out.map(2);
    out.bulk(b"type");
    match k.begin {
        meta::Begin::Index(i) => {
            spec_head(out, "index", 1);
            spec_int(out, "index", i);
        }
        meta::Begin::Keyword(kw, from) => {
            spec_head(out, "keyword", 2);
            out.bulk(b"keyword");
            out.bulk(kw.as_bytes());
            spec_int(out, "startfrom", from);
        }
        meta::Begin::Unknown => spec_head(out, "unknown", 0),
    }
    out.bulk(b"find_keys");
    out.map(2);
    out.bulk(b"type");
    match k.find {
        meta::Find::Range(last, step, limit) => {
            spec_head(out, "range", 3);
            spec_int(out, "lastkey", last);
            spec_int(out, "keystep", step);
            spec_int(out, "limit", limit);
        }
        meta::Find::Keynum(idx, first, step) => {
            spec_head(out, "keynum", 3);
            spec_int(out, "keynumidx", idx);
            spec_int(out, "firstkey", first);
            spec_int(out, "keystep", step);
        }
        meta::Find::Unknown => spec_head(out, "unknown", 0),
    }
}

/// A search's type, then its spec map's header.
fn spec_head(out: &mut Reply, kind: &str, fields: usize) {
    out.bulk(kind.as_bytes());
    out.bulk(b"spec");
    out.map(fields);
}

fn spec_int(out: &mut Reply, name: &str, v: i64) {
    out.bulk(name.as_bytes());
    out.integer(v);
}

fn all_commands(ctx: &mut Ctx<'_>) {
    ctx.out.array(COMMANDS.len());
    for c in COMMANDS {
        command_info(ctx, c);
    }
}

/// COMMAND GETKEYS / GETKEYSANDFLAGS command arg ...: the keys a request would touch, as
/// Redis 7.0's key specs find them (with the specs' flags).
fn getkeys(ctx: &mut Ctx<'_>, a: &Args<'_>, with_flags: bool) {
    let Some(c) = table::lookup(a.get(2)) else {
        return ctx.out.error("ERR Invalid command specified");
    };
    let parts: Vec<&[u8]> = a.iter().skip(2).collect();
    let owned = resp_wire::OwnedArgs::from_parts(&parts);
    let req = owned.args();
    let (_, index) = meta::of_request(c.name, &req);
    let Some(m) = index
        .map(|i| &meta::COMMANDS[i])
        .filter(|m| !m.key_specs.is_empty())
    else {
        return ctx.out.error("ERR The command has no key arguments");
    };
    if !table::arity_ok(m.arity, req.len()) {
        return ctx
            .out
            .error("ERR Invalid number of arguments specified for command");
    }
    let keys = if c.name == "migrate" {
        const MOVED: &[&str] = &["RW", "access", "delete"];
        super::migrate::key_positions(&req)
            .into_iter()
            .map(|i| (i, MOVED))
            .collect()
    } else {
        m.keys(&req)
    };
    if keys.is_empty() && !m.flags.contains(&"no_mandatory_keys") {
        return ctx.out.error("ERR Invalid arguments specified for command");
    }
    ctx.out.array(keys.len());
    for (i, flags) in keys {
        if with_flags {
            ctx.out.array(2);
            ctx.out.bulk(req.get(i));
            ctx.out.set(flags.len());
            for f in flags {
                ctx.out.simple(f.as_bytes());
            }
        } else {
            ctx.out.bulk(req.get(i));
        }
    }
}

pub fn command(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    if a.len() == 1 {
        return all_commands(ctx);
    }
    let sub = a.get(1).to_ascii_lowercase();
    match sub.as_slice() {
        b"count" if a.len() == 2 => ctx.out.integer(COMMANDS.len() as i64),
        b"list" => super::command_list::list(ctx, a),
        b"info" => {
            let names: Vec<Vec<u8>> = a.iter().skip(2).map(<[u8]>::to_vec).collect();
            if names.is_empty() {
                return all_commands(ctx);
            }
            ctx.out.array(names.len());
            for n in names {
                match table::lookup(&n) {
                    Some(c) => command_info(ctx, c),
                    None => ctx.out.null_array(),
                }
            }
        }
        b"docs" => ctx.out.map(0),
        b"getkeys" if a.len() >= 4 => getkeys(ctx, a, false),
        b"getkeysandflags" if a.len() >= 4 => getkeys(ctx, a, true),
        b"count" | b"getkeys" | b"getkeysandflags" => {
            table::wrong_arity(ctx, &format!("command|{}", String::from_utf8_lossy(&sub)))
        }
        _ => {
            let name = String::from_utf8_lossy(a.get(1)).into_owned();
            ctx.out.error(&format!(
                "ERR unknown subcommand '{name}'. Try COMMAND HELP."
            ));
        }
    }
}
