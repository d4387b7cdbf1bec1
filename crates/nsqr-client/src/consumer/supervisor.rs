//! The consumer's background work, one task: RDY redistribution on a ticker, nsqlookupd
//! polling (and an extra poll when a connection drops), and reconnecting to nsqd addresses
//! given directly, every `lookupd_poll_interval` until it works (go-nsq's behaviour without
//! lookupd). Connecting itself ([`connect_nsqd`]) is shared with the consumer's handle.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::{interval_at, Instant, MissedTickBehavior};

use super::conn::{self, Conn, Transport};
use super::readers::ConnReader;
use super::shared::{Event, Shared};
use crate::address::Address;
use crate::error::Error;
use crate::lookupd;
use crate::wire::commands::Commands;
use crate::wire::handshake;

/// Connect to the nsqd at `name` and subscribe; Ok if it is already connected.
pub(crate) async fn connect_nsqd(sh: &Arc<Shared>, name: &str) -> Result<(), Error> {
    let addr = Address::parse(name)?;
    if addr == Address::Inproc {
        return Err(Error::Address {
            addr: name.to_string(),
            why: "inproc:// is not an nsqd",
        });
    }
    if sh.is_stopping() {
        return Err(Error::Stopped);
    }
    {
        let mut c = sh.conns.lock();
        if c.live.contains_key(name) || !c.pending.insert(name.to_string()) {
            return Ok(());
        }
    }
    let opened = handshake::open(&addr, &sh.cfg, Some((&sh.topic, &sh.channel))).await;
    sh.conns.lock().pending.remove(name);
    let opened = opened?;
    if opened.identify.max_rdy_count < sh.rdy.max_in_flight() {
        tracing::warn!(
            "nsqr-client: {name} max RDY count {} < max_in_flight {}, truncation possible",
            opened.identify.max_rdy_count,
            sh.rdy.max_in_flight()
        );
    }
    let conn = Arc::new(Conn::new(
        name.to_string(),
        Transport::Wire(Commands::new()),
        Arc::clone(sh),
        opened.identify.max_rdy_count,
    ));
    if sh.is_stopping() {
        return Err(Error::Stopped);
    }
    sh.conns
        .lock()
        .live
        .insert(name.to_string(), Arc::clone(&conn));
    conn::spawn_writer(Arc::clone(&conn), opened.writer);
    let _ = sh
        .new_conns
        .send(ConnReader::new(Arc::clone(&conn), opened.reader));
    // Every connection's share just shrank: lower the largest first, so the room they
    // give up is there when the new one (RDY 0, last) asks for its share.
    let mut conns = sh.live_conns();
    conns.sort_by_key(|c| std::cmp::Reverse(c.rdy.load(std::sync::atomic::Ordering::Relaxed)));
    for c in conns {
        sh.rdy.maybe_update(sh, &c);
    }
    Ok(())
}

/// Ask one lookupd (each in turn, up to three on errors) and connect to what it lists.
async fn query_lookupd(sh: &Arc<Shared>, next: &mut usize) {
    let addrs = sh.conns.lock().lookupd.clone();
    if addrs.is_empty() {
        return;
    }
    let bearer = sh
        .cfg
        .auth_secret
        .as_deref()
        .filter(|_| sh.cfg.lookupd_authorization);
    for _ in 0..addrs.len().min(3) {
        let addr = &addrs[*next % addrs.len()];
        *next = next.wrapping_add(1);
        match lookupd::lookup(addr, &sh.topic, sh.cfg.lookupd_poll_timeout, bearer).await {
            Ok(producers) => {
                for p in producers {
                    let nsqd = p.tcp_address();
                    if let Err(e) = connect_nsqd(sh, &nsqd).await {
                        tracing::warn!("nsqr-client: connecting to {nsqd}: {e}");
                    }
                }
                return;
            }
            Err(e) => tracing::warn!("nsqr-client: {e}"),
        }
    }
}

/// Try `name` again every poll interval until it connects, is removed or the consumer stops.
async fn reconnect(sh: Arc<Shared>, name: String) {
    loop {
        tokio::time::sleep(sh.cfg.lookupd_poll_interval).await;
        if sh.is_stopping() || !sh.conns.lock().nsqd.contains(&name) {
            return;
        }
        match connect_nsqd(&sh, &name).await {
            Ok(()) => return,
            Err(e) => tracing::warn!("nsqr-client: reconnecting to {name}: {e}"),
        }
    }
}

/// Run until aborted by the consumer's handle (or every sender is gone).
pub(crate) async fn supervise(sh: Arc<Shared>, mut events: mpsc::UnboundedReceiver<Event>) {
    let cfg = &sh.cfg;
    let start = Instant::now();
    let mut redistribute = interval_at(
        start + cfg.rdy_redistribute_interval,
        cfg.rdy_redistribute_interval,
    );
    redistribute.set_missed_tick_behavior(MissedTickBehavior::Delay);
    // The first poll waits a random part of the interval (jitter), as go-nsq's.
    let jitter = cfg
        .lookupd_poll_interval
        .mul_f64(cfg.lookupd_poll_jitter * jitter_fraction());
    let mut poll = interval_at(
        start + jitter + Duration::from_millis(1),
        cfg.lookupd_poll_interval,
    );
    poll.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut polling = false;
    let mut next_lookupd = 0usize;
    loop {
        tokio::select! {
            _ = redistribute.tick() => sh.rdy.redistribute(&sh),
            _ = poll.tick(), if polling => query_lookupd(&sh, &mut next_lookupd).await,
            e = events.recv() => match e {
                None => return,
                Some(Event::LookupdAdded) => {
                    if !polling {
                        polling = true;
                        query_lookupd(&sh, &mut next_lookupd).await;
                    }
                }
                Some(Event::Closed(name)) => {
                    if sh.is_stopping() {
                        continue;
                    }
                    if polling {
                        query_lookupd(&sh, &mut next_lookupd).await;
                    } else if sh.conns.lock().nsqd.contains(&name) {
                        tracing::info!(
                            "nsqr-client: {name} closed, reconnecting in {:?}",
                            cfg.lookupd_poll_interval
                        );
                        tokio::spawn(reconnect(Arc::clone(&sh), name));
                    }
                }
            },
        }
    }
}

fn jitter_fraction() -> f64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    f64::from(nanos % 1000) / 1000.0
}
