//! CONFIG GET / SET / RESETSTAT / REWRITE. The parameters that mean something here can be
//! read; the runtime settings (`maxmemory`, `maxmemory-policy`, `maxmemory-samples`,
//! `notify-keyspace-events`, `busy-reply-threshold`, `requirepass`, `protected-mode`,
//! `timeout`, `slowlog-log-slower-than`, `slowlog-max-len`) can be changed, several at once
//! and all or none, as in Redis 7. Clients that only probe (redis-benchmark asks for `save`
//! and `appendonly`) get the values that describe this server; the parameters with no
//! switch here are in `params.rs`.

use nsqr_kv::{NotifyFlags, Policy};
use resp_wire::Args;

use std::sync::atomic::Ordering::Relaxed;

use super::args::is;
use super::params;
use super::session::Ctx;
use super::table::wrong_arity;

/// The parameters read from the running server, in the order CONFIG GET lists them (then
/// `params::FIXED`).
const PARAMS: [&str; 17] = [
    "maxmemory",
    "maxmemory-policy",
    "maxmemory-samples",
    "notify-keyspace-events",
    "save",
    "appendonly",
    "appendfsync",
    "databases",
    "proto-max-bulk-len",
    "client-output-buffer-limit",
    "timeout",
    "busy-reply-threshold",
    "lua-time-limit",
    "requirepass",
    "protected-mode",
    "slowlog-log-slower-than",
    "slowlog-max-len",
];

fn value(ctx: &Ctx<'_>, name: &str) -> String {
    let s = ctx.shared.ks.settings();
    let strict = ctx.shared.ks.is_strict();
    let l = ctx.shared.pubsub_limit;
    match name {
        "maxmemory" => s.maxmemory().to_string(),
        "maxmemory-policy" => s.policy().name().to_string(),
        "maxmemory-samples" => s.samples().to_string(),
        "notify-keyspace-events" => s.notify().to_string(),
        "save" => String::new(),
        "appendonly" => if strict { "yes" } else { "no" }.to_string(),
        "appendfsync" => if strict { "always" } else { "no" }.to_string(),
        "databases" => "1".to_string(),
        "proto-max-bulk-len" => ctx.shared.max_bulk.to_string(),
        "busy-reply-threshold" | "lua-time-limit" => ctx.shared.scripts.busy_after_ms().to_string(),
        "requirepass" => ctx.shared.requirepass.lock().clone(),
        "protected-mode" => if ctx
            .shared
            .protected_mode
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            "yes"
        } else {
            "no"
        }
        .to_string(),
        "timeout" => ctx.shared.idle_timeout_secs.load(Relaxed).to_string(),
        "slowlog-log-slower-than" => ctx.shared.slowlog.slower_than_us().to_string(),
        "slowlog-max-len" => ctx.shared.slowlog.max_len().to_string(),
        "client-output-buffer-limit" => format!(
            "normal 0 0 0 slave 0 0 0 pubsub {} {} {}",
            l.hard,
            l.soft,
            l.soft_time.as_secs()
        ),
        _ => params::fixed(name).unwrap_or("0").to_string(),
    }
}

pub fn config(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let sub = a.get(1).to_ascii_lowercase();
    match sub.as_slice() {
        b"get" if a.len() >= 3 => get(ctx, a),
        b"set" if a.len() >= 4 && a.len().is_multiple_of(2) => set(ctx, a),
        b"resetstat" | b"rewrite" if a.len() == 2 => {
            if sub == b"rewrite" {
                ctx.out
                    .error("ERR The server is running without a config file");
            } else {
                reset_stats(ctx);
                ctx.out.ok();
            }
        }
        b"get" | b"set" | b"resetstat" | b"rewrite" => {
            wrong_arity(ctx, &format!("config|{}", String::from_utf8_lossy(&sub)));
        }
        _ => {
            let name = String::from_utf8_lossy(a.get(1)).into_owned();
            ctx.out.error(&format!(
                "ERR unknown subcommand '{name}'. Try CONFIG HELP."
            ));
        }
    }
}

/// CONFIG RESETSTAT: the counters INFO shows start again from zero.
fn reset_stats(ctx: &Ctx<'_>) {
    use std::sync::atomic::Ordering::Relaxed;
    ctx.shared.total_commands.store(0, Relaxed);
    ctx.shared.total_connections.store(0, Relaxed);
    ctx.shared.ks.reset_stats();
}

fn get(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let patterns: Vec<Vec<u8>> = a.iter().skip(2).map(|p| p.to_ascii_lowercase()).collect();
    let matched: Vec<&str> = PARAMS
        .iter()
        .copied()
        .chain(params::FIXED.iter().map(|(n, _)| *n))
        .filter(|name| {
            patterns
                .iter()
                .any(|p| nsqr_kv::glob::matches(p, name.as_bytes()))
        })
        .collect();
    let pairs: Vec<(&str, String)> = matched.iter().map(|n| (*n, value(ctx, n))).collect();
    ctx.out.map(pairs.len());
    for (n, v) in pairs {
        ctx.out.bulk(n.as_bytes());
        ctx.out.bulk(v.as_bytes());
    }
}

/// A new setting, checked before any is applied (CONFIG SET is all or nothing).
enum Change {
    Maxmemory(u64),
    Policy(Policy),
    Samples(usize),
    Notify(NotifyFlags),
    BusyAfterMs(u64),
    /// The default user's password (empty: none).
    Requirepass(String),
    ProtectedMode(bool),
    /// Seconds a client may stay idle (0: forever).
    Timeout(u64),
    SlowerThanUs(i64),
    SlowlogMaxLen(u64),
    Nothing,
}

/// An integer parameter between `min` and `max`, with Redis's errors.
fn int_in(text: &str, min: i64, max: i64, failed: impl Fn(&str) -> String) -> Result<i64, String> {
    match resp_wire::parse_i64(text.as_bytes()) {
        None => Err(failed("argument couldn't be parsed into an integer")),
        Some(n) if n < min || n > max => Err(failed(&format!(
            "argument must be between {min} and {max} inclusive"
        ))),
        Some(n) => Ok(n),
    }
}

/// The canonical name of a parameter CONFIG SET knows (lower case), or `None`.
fn known(name: &[u8]) -> Option<String> {
    let lower = String::from_utf8_lossy(name).to_ascii_lowercase();
    let known = PARAMS.contains(&lower.as_str()) || params::fixed(&lower).is_some();
    known.then_some(lower)
}

fn parse_one(name: &[u8], v: &[u8]) -> Result<Change, String> {
    let text = String::from_utf8_lossy(v);
    let failed = |what: &str| {
        format!(
            "ERR CONFIG SET failed (possibly related to argument '{}') - {what}",
            String::from_utf8_lossy(name)
        )
    };
    if is(name, "maxmemory") {
        nsqr_kv::config::parse_memory(&text)
            .map(Change::Maxmemory)
            .ok_or_else(|| failed("argument must be a memory value"))
    } else if is(name, "maxmemory-policy") {
        Policy::parse(&text).map(Change::Policy).ok_or_else(|| {
            failed("argument(s) must be one of the following: volatile-lru, allkeys-lru, volatile-lfu, allkeys-lfu, volatile-random, allkeys-random, volatile-ttl, noeviction")
        })
    } else if is(name, "maxmemory-samples") {
        match text.parse::<usize>() {
            Ok(n) if (1..=64).contains(&n) => Ok(Change::Samples(n)),
            _ => Err(failed("argument must be between 1 and 64 inclusive")),
        }
    } else if is(name, "notify-keyspace-events") {
        NotifyFlags::parse(&text)
            .map(Change::Notify)
            .map_err(|e| failed(&e.to_string()))
    } else if is(name, "busy-reply-threshold") || is(name, "lua-time-limit") {
        match text.parse::<u64>() {
            Ok(ms) if ms <= i64::MAX as u64 => Ok(Change::BusyAfterMs(ms)),
            _ => Err(failed("argument couldn't be parsed into an integer")),
        }
    } else if is(name, "requirepass") {
        Ok(Change::Requirepass(text.into_owned()))
    } else if is(name, "protected-mode") {
        match text.to_ascii_lowercase().as_str() {
            "yes" => Ok(Change::ProtectedMode(true)),
            "no" => Ok(Change::ProtectedMode(false)),
            _ => Err(failed("argument must be 'yes' or 'no'")),
        }
    } else if is(name, "timeout") {
        int_in(&text, 0, i64::from(i32::MAX), failed).map(|n| Change::Timeout(n as u64))
    } else if is(name, "slowlog-log-slower-than") {
        int_in(&text, -1, i64::MAX, failed).map(Change::SlowerThanUs)
    } else if is(name, "slowlog-max-len") {
        int_in(&text, 0, i64::MAX, failed).map(|n| Change::SlowlogMaxLen(n as u64))
    } else if is(name, "save") && v.is_empty() {
        // No periodic snapshots here, which is what `save ""` asks for.
        Ok(Change::Nothing)
    } else {
        Err(failed(
            "this parameter cannot be changed at runtime by nsqrd",
        ))
    }
}

/// Every name known, none twice (Redis checks the names before any value).
fn check_names(a: &Args<'_>) -> Result<(), String> {
    let mut seen: Vec<String> = Vec::new();
    for i in (2..a.len()).step_by(2) {
        let Some(name) = known(a.get(i)) else {
            return Err(format!(
                "ERR Unknown option or number of arguments for CONFIG SET - '{}'",
                String::from_utf8_lossy(a.get(i))
            ));
        };
        if seen.contains(&name) {
            return Err(format!(
                "ERR CONFIG SET failed (possibly related to argument '{}') - duplicate parameter",
                String::from_utf8_lossy(a.get(i))
            ));
        }
        seen.push(name);
    }
    Ok(())
}

fn set(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    if let Err(e) = check_names(a) {
        return ctx.out.error(&e);
    }
    let mut changes = Vec::new();
    for i in (2..a.len()).step_by(2) {
        match parse_one(a.get(i), a.get(i + 1)) {
            Ok(c) => changes.push(c),
            Err(e) => return ctx.out.error(&e),
        }
    }
    let s = ctx.shared.ks.settings();
    for c in changes {
        match c {
            Change::Maxmemory(v) => s.set_maxmemory(v),
            Change::Policy(p) => s.set_policy(p),
            Change::Samples(n) => s.set_samples(n),
            Change::Notify(f) => s.set_notify(f),
            Change::BusyAfterMs(ms) => ctx.shared.scripts.set_busy_after_ms(ms),
            Change::Requirepass(p) => set_requirepass(ctx, p),
            Change::ProtectedMode(on) => ctx
                .shared
                .protected_mode
                .store(on, std::sync::atomic::Ordering::Relaxed),
            Change::Timeout(secs) => ctx.shared.idle_timeout_secs.store(secs, Relaxed),
            Change::SlowerThanUs(us) => ctx.shared.slowlog.set_slower_than_us(us),
            Change::SlowlogMaxLen(n) => ctx.shared.slowlog.set_max_len(n),
            Change::Nothing => {}
        }
    }
    ctx.out.ok();
}

/// `CONFIG SET requirepass`: the default user's only password (none: `nopass`), as Redis.
fn set_requirepass(ctx: &Ctx<'_>, password: String) {
    let rule = format!(">{password}");
    let rules: [&[u8]; 2] = if password.is_empty() {
        [b"resetpass", b"nopass"]
    } else {
        [b"resetpass", rule.as_bytes()]
    };
    // Both rules are always valid.
    let _ = ctx.shared.users.set(b"default", &rules);
    *ctx.shared.requirepass.lock() = password;
}
