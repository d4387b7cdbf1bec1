//! The pub/sub hub: channels, patterns and shard channels (`SSUBSCRIBE`, a namespace of its
//! own, as on a Redis server outside a cluster), and who listens to them. `PUBLISH` and keyspace
//! notifications come here; each receiver gets the message in its own outbox
//! ([`Subscriber`]), framed for its protocol version. Subscription confirmations are written
//! into the same outbox under the hub's lock, so a client always reads its `subscribe` reply
//! before the first message of that channel, and nothing of a channel after its `unsubscribe`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use resp_wire::Reply;

use crate::glob;
use crate::subscriber::Subscriber;

/// What one client listens to, in subscription order.
#[derive(Debug, Default)]
struct Listening {
    channels: Vec<Box<[u8]>>,
    patterns: Vec<Box<[u8]>>,
    shards: Vec<Box<[u8]>>,
}

impl Listening {
    /// The count a confirmation of `kind` shows: shard channels count apart, as in Redis.
    fn count(&self, kind: Kind) -> i64 {
        match kind {
            Kind::Shard => self.shards.len() as i64,
            _ => (self.channels.len() + self.patterns.len()) as i64,
        }
    }

    fn mine(&mut self, kind: Kind) -> &mut Vec<Box<[u8]>> {
        match kind {
            Kind::Channel => &mut self.channels,
            Kind::Pattern => &mut self.patterns,
            Kind::Shard => &mut self.shards,
        }
    }

    fn total(&self) -> usize {
        self.channels.len() + self.patterns.len() + self.shards.len()
    }
}

/// A pattern and its subscribers.
type PatternSubs = (Box<[u8]>, Vec<Arc<Subscriber>>);

#[derive(Debug, Default)]
struct Inner {
    channels: HashMap<Box<[u8]>, Vec<Arc<Subscriber>>>,
    shards: HashMap<Box<[u8]>, Vec<Arc<Subscriber>>>,
    /// Pattern → its subscribers, in first-subscription order.
    patterns: Vec<PatternSubs>,
    clients: HashMap<u64, Listening>,
}

/// Channels, patterns and their subscribers.
#[derive(Debug, Default)]
pub struct Hub {
    inner: Mutex<Inner>,
    /// Subscriptions of every kind; 0 lets notifications skip the hub entirely.
    subscriptions: AtomicUsize,
}

/// Which kind of subscription a call is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Channel,
    Pattern,
    /// A shard channel (`SSUBSCRIBE` / `SPUBLISH`).
    Shard,
}

impl Kind {
    pub fn subscribe_name(self) -> &'static [u8] {
        match self {
            Kind::Channel => b"subscribe",
            Kind::Pattern => b"psubscribe",
            Kind::Shard => b"ssubscribe",
        }
    }

    pub fn unsubscribe_name(self) -> &'static [u8] {
        match self {
            Kind::Channel => b"unsubscribe",
            Kind::Pattern => b"punsubscribe",
            Kind::Shard => b"sunsubscribe",
        }
    }
}

fn confirmation(r: &mut Reply, name: &[u8], target: Option<&[u8]>, count: i64) {
    r.push(3);
    r.bulk(name);
    match target {
        Some(t) => r.bulk(t),
        None => r.null(),
    }
    r.integer(count);
}

/// Channel names, or patterns.
pub type Targets = Vec<Box<[u8]>>;

impl Hub {
    pub fn new() -> Hub {
        Hub::default()
    }

    /// Whether anyone listens to anything.
    pub fn is_idle(&self) -> bool {
        self.subscriptions.load(Ordering::Relaxed) == 0
    }

    /// Subscribes `sub` to each of `targets`, writing one confirmation per target into its
    /// outbox. Returns the client's subscription count afterwards.
    pub fn subscribe<'a>(
        &self,
        sub: &Arc<Subscriber>,
        kind: Kind,
        targets: impl IntoIterator<Item = &'a [u8]>,
    ) -> i64 {
        let mut inner = self.inner.lock();
        let inner = &mut *inner;
        let client = inner.clients.entry(sub.id()).or_default();
        for t in targets {
            let mine = client.mine(kind);
            if !mine.iter().any(|c| &**c == t) {
                mine.push(t.into());
                match kind {
                    Kind::Channel => inner
                        .channels
                        .entry(t.into())
                        .or_default()
                        .push(Arc::clone(sub)),
                    Kind::Shard => inner
                        .shards
                        .entry(t.into())
                        .or_default()
                        .push(Arc::clone(sub)),
                    Kind::Pattern => match inner.patterns.iter_mut().find(|(p, _)| &**p == t) {
                        Some((_, subs)) => subs.push(Arc::clone(sub)),
                        None => inner.patterns.push((t.into(), vec![Arc::clone(sub)])),
                    },
                }
                self.subscriptions.fetch_add(1, Ordering::Relaxed);
            }
            let n = client.count(kind);
            sub.write(|r| confirmation(r, kind.subscribe_name(), Some(t), n));
        }
        client.count(kind)
    }

    /// Unsubscribes `sub` from `targets` (from all of its channels or patterns if empty),
    /// writing one confirmation per target. Returns the client's count afterwards.
    pub fn unsubscribe<'a>(
        &self,
        sub: &Arc<Subscriber>,
        kind: Kind,
        targets: impl IntoIterator<Item = &'a [u8]>,
    ) -> i64 {
        let mut inner = self.inner.lock();
        let mut targets: Vec<Box<[u8]>> = targets.into_iter().map(Into::into).collect();
        if targets.is_empty() {
            targets = match inner.clients.get_mut(&sub.id()) {
                Some(c) => c.mine(kind).clone(),
                None => Vec::new(),
            };
            if targets.is_empty() {
                let n = inner.clients.get(&sub.id()).map_or(0, |c| c.count(kind));
                sub.write(|r| confirmation(r, kind.unsubscribe_name(), None, n));
                return n;
            }
        }
        for t in &targets {
            if self.remove_one(&mut inner, sub.id(), kind, t) {
                self.subscriptions.fetch_sub(1, Ordering::Relaxed);
            }
            let n = inner.clients.get(&sub.id()).map_or(0, |c| c.count(kind));
            sub.write(|r| confirmation(r, kind.unsubscribe_name(), Some(t), n));
        }
        if inner.clients.get(&sub.id()).is_some_and(|c| c.total() == 0) {
            inner.clients.remove(&sub.id());
        }
        inner.clients.get(&sub.id()).map_or(0, |c| c.count(kind))
    }

    /// Removes one subscription; false if the client did not have it.
    fn remove_one(&self, inner: &mut Inner, id: u64, kind: Kind, target: &[u8]) -> bool {
        let Some(client) = inner.clients.get_mut(&id) else {
            return false;
        };
        let mine = client.mine(kind);
        let Some(i) = mine.iter().position(|c| &**c == target) else {
            return false;
        };
        mine.remove(i);
        Self::detach(inner, id, kind, target);
        true
    }

    /// Takes client `id` off the subscriber list of one channel or pattern.
    fn detach(inner: &mut Inner, id: u64, kind: Kind, target: &[u8]) {
        match kind {
            Kind::Channel | Kind::Shard => {
                let map = if kind == Kind::Channel {
                    &mut inner.channels
                } else {
                    &mut inner.shards
                };
                if let Some(subs) = map.get_mut(target) {
                    subs.retain(|s| s.id() != id);
                    if subs.is_empty() {
                        map.remove(target);
                    }
                }
            }
            Kind::Pattern => {
                if let Some(i) = inner.patterns.iter().position(|(p, _)| &**p == target) {
                    inner.patterns[i].1.retain(|s| s.id() != id);
                    if inner.patterns[i].1.is_empty() {
                        inner.patterns.remove(i);
                    }
                }
            }
        }
    }

    /// Drops every subscription of a client (it disconnected).
    pub fn remove_client(&self, id: u64) {
        let mut inner = self.inner.lock();
        let Some(client) = inner.clients.remove(&id) else {
            return;
        };
        for t in &client.channels {
            Self::detach(&mut inner, id, Kind::Channel, t);
        }
        for t in &client.patterns {
            Self::detach(&mut inner, id, Kind::Pattern, t);
        }
        for t in &client.shards {
            Self::detach(&mut inner, id, Kind::Shard, t);
        }
        let gone = client.total();
        self.subscriptions.fetch_sub(gone, Ordering::Relaxed);
    }

    /// The client's (channels, patterns).
    pub fn subscriptions(&self, id: u64) -> (Targets, Targets) {
        let inner = self.inner.lock();
        inner
            .clients
            .get(&id)
            .map_or((Vec::new(), Vec::new()), |c| {
                (c.channels.clone(), c.patterns.clone())
            })
    }

    /// The client's (channels, patterns) counts.
    pub fn counts(&self, id: u64) -> (usize, usize) {
        let inner = self.inner.lock();
        inner
            .clients
            .get(&id)
            .map_or((0, 0), |c| (c.channels.len(), c.patterns.len()))
    }

    /// Every subscription of the client, of all kinds.
    pub fn total(&self, id: u64) -> usize {
        self.inner
            .lock()
            .clients
            .get(&id)
            .map_or(0, Listening::total)
    }

    /// The client's shard channel count.
    pub fn shard_count(&self, id: u64) -> usize {
        self.inner
            .lock()
            .clients
            .get(&id)
            .map_or(0, |c| c.shards.len())
    }

    /// Delivers `message` to the subscribers of shard channel `channel` (`SPUBLISH`).
    pub fn publish_shard(&self, channel: &[u8], message: &[u8]) -> usize {
        if self.is_idle() {
            return 0;
        }
        let inner = self.inner.lock();
        let Some(subs) = inner.shards.get(channel) else {
            return 0;
        };
        for s in subs {
            s.write(|r| {
                r.push(3);
                r.bulk(b"smessage");
                r.bulk(channel);
                r.bulk(message);
            });
        }
        subs.len()
    }

    /// The outbox of client `id` if it is subscribed to `channel`.
    pub fn subscriber_of(&self, channel: &[u8], id: u64) -> Option<Arc<Subscriber>> {
        let inner = self.inner.lock();
        let subs = inner.channels.get(channel)?;
        subs.iter().find(|s| s.id() == id).cloned()
    }

    /// Delivers `message` to the subscribers of `channel` and of every matching pattern.
    /// Returns how many clients received it.
    pub fn publish(&self, channel: &[u8], message: &[u8]) -> usize {
        if self.is_idle() {
            return 0;
        }
        let inner = self.inner.lock();
        let mut receivers = 0;
        if let Some(subs) = inner.channels.get(channel) {
            for s in subs {
                s.write(|r| {
                    r.push(3);
                    r.bulk(b"message");
                    r.bulk(channel);
                    r.bulk(message);
                });
                receivers += 1;
            }
        }
        for (pattern, subs) in &inner.patterns {
            if !glob::matches(pattern, channel) {
                continue;
            }
            for s in subs {
                s.write(|r| {
                    r.push(4);
                    r.bulk(b"pmessage");
                    r.bulk(pattern);
                    r.bulk(channel);
                    r.bulk(message);
                });
                receivers += 1;
            }
        }
        receivers
    }

    /// Active channels (with at least one subscriber) of `kind` (channels or shard channels)
    /// matching `pattern` (all if `None`).
    pub fn channels(&self, kind: Kind, pattern: Option<&[u8]>) -> Vec<Vec<u8>> {
        let inner = self.inner.lock();
        let map = if kind == Kind::Shard {
            &inner.shards
        } else {
            &inner.channels
        };
        let mut out: Vec<Vec<u8>> = map
            .keys()
            .filter(|c| pattern.is_none_or(|p| glob::matches(p, c)))
            .map(|c| c.to_vec())
            .collect();
        out.sort();
        out
    }

    /// Subscribers of `channel` (patterns not counted, as in Redis), or of a shard channel.
    pub fn numsub(&self, kind: Kind, channel: &[u8]) -> usize {
        let inner = self.inner.lock();
        let map = if kind == Kind::Shard {
            &inner.shards
        } else {
            &inner.channels
        };
        map.get(channel).map_or(0, Vec::len)
    }

    /// Distinct patterns subscribed to.
    pub fn numpat(&self) -> usize {
        self.inner.lock().patterns.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::subscriber::OutputLimit;
    use resp_wire::{decode, Frame, Protocol};

    fn client(id: u64, proto: Protocol) -> Arc<Subscriber> {
        Arc::new(Subscriber::new(id, proto, OutputLimit::default()))
    }

    fn frames(s: &Subscriber) -> Vec<Frame> {
        let mut buf = Vec::new();
        s.take(&mut buf);
        let mut at = 0;
        let mut out = Vec::new();
        while let Some((f, n)) = decode(&buf[at..]).unwrap() {
            out.push(f);
            at += n;
        }
        assert_eq!(at, buf.len());
        out
    }

    fn b(s: &str) -> Frame {
        Frame::Bulk(s.as_bytes().to_vec())
    }

    #[test]
    fn subscribe_publish_unsubscribe() {
        let hub = Hub::new();
        let a = client(1, Protocol::Resp2);
        assert!(hub.is_idle());
        assert_eq!(hub.subscribe(&a, Kind::Channel, [&b"x"[..], b"y", b"x"]), 2);
        assert_eq!(hub.publish(b"x", b"hello"), 1);
        assert_eq!(hub.publish(b"z", b"nobody"), 0);
        assert_eq!(hub.unsubscribe(&a, Kind::Channel, []), 0);
        assert_eq!(hub.publish(b"x", b"gone"), 0);
        assert!(hub.is_idle());
        assert_eq!(
            frames(&a),
            vec![
                Frame::Array(vec![b("subscribe"), b("x"), Frame::Integer(1)]),
                Frame::Array(vec![b("subscribe"), b("y"), Frame::Integer(2)]),
                Frame::Array(vec![b("subscribe"), b("x"), Frame::Integer(2)]),
                Frame::Array(vec![b("message"), b("x"), b("hello")]),
                Frame::Array(vec![b("unsubscribe"), b("x"), Frame::Integer(1)]),
                Frame::Array(vec![b("unsubscribe"), b("y"), Frame::Integer(0)]),
            ]
        );
    }

    #[test]
    fn patterns_and_resp3_pushes() {
        let hub = Hub::new();
        let a = client(1, Protocol::Resp3);
        hub.subscribe(&a, Kind::Pattern, [&b"__keyspace@0__:*"[..]]);
        assert_eq!(hub.publish(b"__keyspace@0__:k", b"set"), 1);
        assert_eq!(hub.numpat(), 1);
        assert_eq!(hub.unsubscribe(&a, Kind::Pattern, []), 0);
        assert_eq!(hub.unsubscribe(&a, Kind::Pattern, []), 0);
        assert_eq!(
            frames(&a),
            vec![
                Frame::Push(vec![
                    b("psubscribe"),
                    b("__keyspace@0__:*"),
                    Frame::Integer(1)
                ]),
                Frame::Push(vec![
                    b("pmessage"),
                    b("__keyspace@0__:*"),
                    b("__keyspace@0__:k"),
                    b("set")
                ]),
                Frame::Push(vec![
                    b("punsubscribe"),
                    b("__keyspace@0__:*"),
                    Frame::Integer(0)
                ]),
                Frame::Push(vec![b("punsubscribe"), Frame::Null, Frame::Integer(0)]),
            ]
        );
    }

    #[test]
    fn introspection_and_disconnect() {
        let hub = Hub::new();
        let (a, c) = (client(1, Protocol::Resp2), client(2, Protocol::Resp2));
        hub.subscribe(&a, Kind::Channel, [&b"news"[..], b"sport"]);
        hub.subscribe(&c, Kind::Channel, [&b"news"[..]]);
        hub.subscribe(&c, Kind::Pattern, [&b"n*"[..]]);
        assert_eq!(
            hub.channels(Kind::Channel, None),
            vec![b"news".to_vec(), b"sport".to_vec()]
        );
        assert_eq!(
            hub.channels(Kind::Channel, Some(b"s*")),
            vec![b"sport".to_vec()]
        );
        assert_eq!(
            (
                hub.numsub(Kind::Channel, b"news"),
                hub.numsub(Kind::Channel, b"none")
            ),
            (2, 0)
        );
        assert_eq!(hub.counts(2), (1, 1));
        assert_eq!(hub.publish(b"news", b"m"), 3);
        hub.remove_client(2);
        assert_eq!(
            (
                hub.numsub(Kind::Channel, b"news"),
                hub.numpat(),
                hub.counts(2)
            ),
            (1, 0, (0, 0))
        );
        hub.remove_client(1);
        assert!(hub.is_idle());
        assert!(hub.channels(Kind::Channel, None).is_empty());
    }

    #[test]
    fn shard_channels_are_a_namespace_of_their_own() {
        let hub = Hub::new();
        let a = client(1, Protocol::Resp2);
        hub.subscribe(&a, Kind::Channel, [&b"c"[..]]);
        assert_eq!(hub.subscribe(&a, Kind::Shard, [&b"c"[..], b"d"]), 2);
        assert_eq!(hub.publish_shard(b"c", b"s"), 1);
        assert_eq!(hub.publish(b"d", b"p"), 0);
        assert_eq!(hub.numsub(Kind::Shard, b"d"), 1);
        assert_eq!(
            hub.channels(Kind::Shard, None),
            vec![b"c".to_vec(), b"d".to_vec()]
        );
        assert_eq!((hub.total(1), hub.shard_count(1)), (3, 2));
        assert_eq!(hub.unsubscribe(&a, Kind::Shard, []), 0);
        assert_eq!(hub.total(1), 1);
        hub.remove_client(1);
        assert!(hub.is_idle());
        assert_eq!(
            frames(&a),
            vec![
                Frame::Array(vec![b("subscribe"), b("c"), Frame::Integer(1)]),
                Frame::Array(vec![b("ssubscribe"), b("c"), Frame::Integer(1)]),
                Frame::Array(vec![b("ssubscribe"), b("d"), Frame::Integer(2)]),
                Frame::Array(vec![b("smessage"), b("c"), b("s")]),
                Frame::Array(vec![b("sunsubscribe"), b("c"), Frame::Integer(1)]),
                Frame::Array(vec![b("sunsubscribe"), b("d"), Frame::Integer(0)]),
            ]
        );
    }

    #[test]
    fn a_stalled_subscriber_is_cut_off_and_others_still_served() {
        let hub = Hub::new();
        let slow = Arc::new(Subscriber::new(
            1,
            Protocol::Resp2,
            OutputLimit {
                hard: 10_000,
                soft: 0,
                soft_time: std::time::Duration::ZERO,
            },
        ));
        let fast = client(2, Protocol::Resp2);
        hub.subscribe(&slow, Kind::Channel, [&b"c"[..]]);
        hub.subscribe(&fast, Kind::Channel, [&b"c"[..]]);
        for _ in 0..100 {
            hub.publish(b"c", &[b'x'; 200]);
            frames(&fast);
        }
        assert!(slow.is_killed());
        assert_eq!(slow.queued(), 0);
        assert!(!fast.is_killed());
    }
}
