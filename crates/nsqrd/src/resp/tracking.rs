//! CLIENT TRACKING / GETREDIR / TRACKINGINFO: client-side caching's server half, with Redis
//! 7.0's options and errors (the tracking itself is `nsqr_kv::tracking`). The keys a
//! tracking client's read-only commands name (by their key specs) are remembered after the
//! command runs. OPTIN and OPTOUT (CLIENT CACHING) are refused (`docs/compatibility.md`).

use std::sync::Arc;

use nsqr_kv::tracking::{Target, Tracker};
use resp_wire::Args;

use super::args::{is, SYNTAX};
use super::command_meta as meta;
use super::session::Ctx;
use super::table::{Command, READONLY};

/// The options of CLIENT TRACKING ON.
#[derive(Debug, Default)]
struct Options {
    redirect: Option<u64>,
    bcast: bool,
    optin: bool,
    optout: bool,
    noloop: bool,
    prefixes: Vec<Vec<u8>>,
}

fn options(ctx: &mut Ctx<'_>, a: &Args<'_>) -> Option<Options> {
    let mut o = Options::default();
    let mut j = 3;
    while j < a.len() {
        let arg = a.get(j);
        let more = j + 1 < a.len();
        if is(arg, "redirect") && more {
            j += 1;
            if o.redirect.is_some() {
                ctx.out
                    .error("ERR A client can only redirect to a single other client");
                return None;
            }
            let id = super::args::int(ctx, a.get(j))?;
            if !ctx.shared.clients.all().iter().any(|c| c.id as i64 == id) {
                ctx.out
                    .error("ERR The client ID you want redirect to does not exist");
                return None;
            }
            o.redirect = Some(id as u64);
        } else if is(arg, "bcast") {
            o.bcast = true;
        } else if is(arg, "optin") {
            o.optin = true;
        } else if is(arg, "optout") {
            o.optout = true;
        } else if is(arg, "noloop") {
            o.noloop = true;
        } else if is(arg, "prefix") && more {
            j += 1;
            o.prefixes.push(a.get(j).to_vec());
        } else {
            ctx.out.error(SYNTAX);
            return None;
        }
        j += 1;
    }
    Some(o)
}

/// Redis's checks of ON's options against each other and the client's state.
fn check(ctx: &Ctx<'_>, o: &Options) -> Result<(), &'static str> {
    if !o.bcast && !o.prefixes.is_empty() {
        return Err("ERR PREFIX option requires BCAST mode to be enabled");
    }
    if let Some(t) = &ctx.s.tracker {
        if t.prefixes.is_some() != o.bcast {
            return Err("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.");
        }
    }
    if o.bcast && (o.optin || o.optout) {
        return Err("ERR OPTIN and OPTOUT are not compatible with BCAST");
    }
    if o.optin && o.optout {
        return Err("ERR You can't use both OPTIN and OPTOUT");
    }
    if o.optin || o.optout {
        return Err("ERR OPTIN and OPTOUT (CLIENT CACHING) are not supported by nsqrd");
    }
    let overlapping = o.prefixes.iter().enumerate().any(|(i, p)| {
        o.prefixes
            .iter()
            .enumerate()
            .any(|(k, q)| i != k && (p.starts_with(q) || q.starts_with(p)))
    });
    if overlapping {
        return Err("ERR Prefix overlaps with another provided prefix. Prefixes for a single client must not overlap.");
    }
    Ok(())
}

/// Stops this client's tracking, if on.
pub fn stop(ctx: &mut Ctx<'_>) {
    if let Some(t) = ctx.s.tracker.take() {
        ctx.shared.ks.track_stop(&t);
    }
}

/// CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX p ...] [BCAST] [OPTIN] [OPTOUT] [NOLOOP].
pub fn tracking(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let Some(o) = options(ctx, a) else {
        return;
    };
    if is(a.get(2), "off") {
        stop(ctx);
        return ctx.out.ok();
    }
    if !is(a.get(2), "on") {
        return ctx.out.error(SYNTAX);
    }
    if let Err(e) = check(ctx, &o) {
        return ctx.out.error(e);
    }
    stop(ctx);
    ctx.out.ok();
    let target = match o.redirect {
        Some(id) => Target::Redirect(id),
        None => Target::Own(ctx.subscriber()),
    };
    let prefixes = o.bcast.then_some(o.prefixes);
    let t = Arc::new(Tracker::new(ctx.s.id(), target, o.noloop, prefixes));
    ctx.shared.ks.track_start(&t);
    ctx.s.tracker = Some(t);
}

/// CLIENT GETREDIR: -1 not tracking, 0 not redirecting, else the client redirected to.
pub fn getredir(ctx: &mut Ctx<'_>) {
    let id = match &ctx.s.tracker {
        None => -1,
        Some(t) => match t.target {
            Target::Redirect(id) => id as i64,
            Target::Own(_) => 0,
        },
    };
    ctx.out.integer(id);
}

/// CLIENT TRACKINGINFO.
pub fn trackinginfo(ctx: &mut Ctx<'_>) {
    let tracker = ctx.s.tracker.clone();
    let mut flags: Vec<&[u8]> = Vec::new();
    match &tracker {
        None => flags.push(b"off"),
        Some(t) => {
            flags.push(b"on");
            if t.prefixes.is_some() {
                flags.push(b"bcast");
            }
            if t.noloop {
                flags.push(b"noloop");
            }
        }
    }
    let out = &mut *ctx.out;
    out.map(3);
    out.bulk(b"flags");
    out.set(flags.len());
    for f in flags {
        out.bulk(f);
    }
    out.bulk(b"redirect");
    out.integer(match tracker.as_ref().map(|t| &t.target) {
        None => -1,
        Some(Target::Own(_)) => 0,
        Some(Target::Redirect(id)) => *id as i64,
    });
    out.bulk(b"prefixes");
    let prefixes = tracker
        .as_ref()
        .and_then(|t| t.prefixes.clone())
        .unwrap_or_default();
    out.array(prefixes.len());
    for p in prefixes {
        out.bulk(&p);
    }
}

/// After a read-only command of a tracking client: remembers the keys it read.
pub fn remember_reads(ctx: &Ctx<'_>, cmd: &Command, args: &Args<'_>) {
    let Some(t) = &ctx.s.tracker else {
        return;
    };
    if cmd.flags & READONLY == 0 || t.prefixes.is_some() {
        return;
    }
    let (_, index) = meta::of_request(cmd.name, args);
    if let Some(m) = index.map(|i| &meta::COMMANDS[i]) {
        let keys = m.keys(args);
        ctx.shared
            .ks
            .track_reads(t, keys.iter().map(|(i, _)| args.get(*i)));
    }
}
