//! Pub/sub commands: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH, the shard
//! channels' SSUBSCRIBE, SUNSUBSCRIBE and SPUBLISH, PUBSUB CHANNELS / NUMSUB / NUMPAT /
//! SHARDCHANNELS / SHARDNUMSUB. Subscription replies and messages go through the client's
//! outbox (`nsqr_kv::Subscriber`), in order; the hub writes them (`nsqr_kv::pubsub`).

use nsqr_kv::Kind;
use resp_wire::Args;

use super::session::Ctx;
use super::table::wrong_arity;

fn subscribe_kind(ctx: &mut Ctx<'_>, a: &Args<'_>, kind: Kind) {
    let sub = ctx.subscriber();
    let targets: Vec<&[u8]> = a.iter().skip(1).collect();
    ctx.shared.ks.hub().subscribe(&sub, kind, targets);
}

fn unsubscribe_kind(ctx: &mut Ctx<'_>, a: &Args<'_>, kind: Kind) {
    let targets: Vec<&[u8]> = a.iter().skip(1).collect();
    match ctx.s.sub.clone() {
        Some(sub) => {
            ctx.move_to_outbox();
            ctx.shared.ks.hub().unsubscribe(&sub, kind, targets);
        }
        None => {
            // Never subscribed: one confirmation per name (or one with a null), count 0.
            let name = kind.unsubscribe_name();
            let out = &mut *ctx.out;
            let mut confirm = |target: Option<&[u8]>| {
                out.push(3);
                out.bulk(name);
                match target {
                    Some(t) => out.bulk(t),
                    None => out.null(),
                }
                out.integer(0);
            };
            if targets.is_empty() {
                confirm(None);
            }
            for t in targets {
                confirm(Some(t));
            }
        }
    }
}

pub fn subscribe(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    subscribe_kind(ctx, a, Kind::Channel);
}

pub fn psubscribe(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    subscribe_kind(ctx, a, Kind::Pattern);
}

pub fn unsubscribe(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    unsubscribe_kind(ctx, a, Kind::Channel);
}

pub fn punsubscribe(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    unsubscribe_kind(ctx, a, Kind::Pattern);
}

pub fn ssubscribe(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    subscribe_kind(ctx, a, Kind::Shard);
}

pub fn sunsubscribe(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    unsubscribe_kind(ctx, a, Kind::Shard);
}

pub fn spublish(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let n = ctx.shared.ks.hub().publish_shard(a.get(1), a.get(2));
    ctx.out.integer(n as i64);
}

pub fn publish(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let n = ctx.shared.ks.hub().publish(a.get(1), a.get(2));
    // A publisher subscribed to the channel reads its own message before this reply, as in
    // Redis: the message went into its outbox, the reply follows it there.
    ctx.out.integer(n as i64);
}

pub fn pubsub(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let sub = a.get(1).to_ascii_lowercase();
    let hub = ctx.shared.ks.hub();
    let kind = if sub.starts_with(b"shard") {
        Kind::Shard
    } else {
        Kind::Channel
    };
    match sub.as_slice() {
        b"channels" | b"shardchannels" if a.len() <= 3 => {
            let pattern = (a.len() == 3).then(|| a.get(2));
            let list = hub.channels(kind, pattern);
            ctx.out.array(list.len());
            for c in &list {
                ctx.out.bulk(c);
            }
        }
        b"numsub" | b"shardnumsub" => {
            let names: Vec<&[u8]> = a.iter().skip(2).collect();
            ctx.out.array(names.len() * 2);
            for n in names {
                ctx.out.bulk(n);
                ctx.out.integer(hub.numsub(kind, n) as i64);
            }
        }
        b"numpat" if a.len() == 2 => ctx.out.integer(hub.numpat() as i64),
        b"channels" | b"shardchannels" | b"numpat" => {
            wrong_arity(ctx, &format!("pubsub|{}", String::from_utf8_lossy(&sub)));
        }
        _ => {
            let name = String::from_utf8_lossy(a.get(1)).into_owned();
            ctx.out.error(&format!(
                "ERR unknown subcommand '{name}'. Try PUBSUB HELP."
            ));
        }
    }
}
