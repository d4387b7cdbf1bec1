//! The registration database: nsqlookupd's whole state, in memory.
//!
//! Registrations are keyed by (category, key, subkey): `client::` (one producer per identified
//! nsqd connection), `topic:<t>:` and `channel:<t>:<c>`. Each holds producers keyed by peer id
//! (the connection's remote `ip:port`). A producer shares its peer's info and `last_update`
//! (set by IDENTIFY and PING) with every registration of that peer, and has its own tombstone.
//! Keys outlive their producers: only `/topic/delete`, `/channel/delete` and the last producer
//! of an `#ephemeral` name leaving remove them.
//!
//! Each public method is one operation of nsqlookupd (a TCP command or an HTTP endpoint) done
//! under one lock, so readers never see half of a REGISTER. Lookups take `*` as a wildcard
//! for the key or subkey, as nsqlookupd's `FindRegistrations` does (so `/lookup?topic=*` sees
//! every topic, as upstream). Time is passed in (Unix nanoseconds), never read here.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

/// `tombstoned_at` of a producer never tombstoned: Go's zero `time.Time` in Unix nanoseconds.
pub const GO_ZERO_TIME_NS: i64 = -6_795_364_578_871_345_152;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Category {
    Client,
    Topic,
    Channel,
}

impl Category {
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Client => "client",
            Category::Topic => "topic",
            Category::Channel => "channel",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Registration {
    pub category: Category,
    pub key: String,
    pub subkey: String,
}

impl Registration {
    pub fn new(category: Category, key: &str, subkey: &str) -> Registration {
        Registration {
            category,
            key: key.to_string(),
            subkey: subkey.to_string(),
        }
    }

    /// nsqlookupd's `IsMatch`: `*` matches any key or subkey.
    fn is_match(&self, category: Category, key: &str, subkey: &str) -> bool {
        self.category == category
            && (key == "*" || self.key == key)
            && (subkey == "*" || self.subkey == subkey)
    }
}

impl std::fmt::Display for Registration {
    /// `category:key:subkey`, as `/debug` keys its map.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}", self.category.as_str(), self.key, self.subkey)
    }
}

/// What an nsqd said in IDENTIFY, plus its connection's address and liveness.
#[derive(Debug)]
pub struct PeerInfo {
    /// The connection's remote `ip:port`: the producer key everywhere.
    pub id: String,
    pub remote_address: String,
    pub hostname: String,
    pub broadcast_address: String,
    pub tcp_port: i64,
    pub http_port: i64,
    pub version: String,
    pub topology_zone: String,
    pub topology_region: String,
    last_update: AtomicI64,
}

impl PeerInfo {
    pub fn new(id: String, body: crate::identify::IdentifyBody, now: i64) -> PeerInfo {
        PeerInfo {
            remote_address: id.clone(),
            id,
            hostname: body.hostname,
            broadcast_address: body.broadcast_address,
            tcp_port: body.tcp_port,
            http_port: body.http_port,
            version: body.version,
            topology_zone: body.topology_zone,
            topology_region: body.topology_region,
            last_update: AtomicI64::new(now),
        }
    }

    /// Records a PING.
    pub fn touch(&self, now: i64) {
        self.last_update.store(now, Ordering::Relaxed);
    }

    pub fn last_update(&self) -> i64 {
        self.last_update.load(Ordering::Relaxed)
    }

    fn is_active(&self, now: i64, inactive_timeout: i64) -> bool {
        now.saturating_sub(self.last_update()) <= inactive_timeout
    }
}

#[derive(Debug, Clone)]
struct Producer {
    peer: Arc<PeerInfo>,
    tombstoned: bool,
    tombstoned_at: i64,
}

impl Producer {
    fn is_tombstoned(&self, now: i64, lifetime: i64) -> bool {
        self.tombstoned && now.saturating_sub(self.tombstoned_at) < lifetime
    }
}

/// The two time windows of nsqlookupd, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Windows {
    pub inactive_producer_timeout: i64,
    pub tombstone_lifetime: i64,
}

/// One `/nodes` entry.
#[derive(Debug, Clone)]
pub struct Node {
    pub peer: Arc<PeerInfo>,
    pub topics: Vec<String>,
    pub tombstones: Vec<bool>,
}

/// One producer as `/debug` shows it.
#[derive(Debug, Clone)]
pub struct DebugProducer {
    pub peer: Arc<PeerInfo>,
    pub tombstoned: bool,
    pub tombstoned_at: i64,
}

/// `/lookup`'s answer.
#[derive(Debug, Clone)]
pub struct Lookup {
    pub channels: Vec<String>,
    pub producers: Vec<Arc<PeerInfo>>,
}

/// What UNREGISTER changed, for the log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unregistered {
    /// Registrations the peer was removed from.
    pub removed: Vec<Registration>,
    /// Channel registrations a topic-wide UNREGISTER removed the peer from (nsqlookupd warns).
    pub unexpected: Vec<Registration>,
}

type ProducerMap = BTreeMap<String, Producer>;

#[derive(Default)]
struct Db {
    regs: BTreeMap<Registration, ProducerMap>,
    /// Reverse index: the registrations each peer id is a producer of.
    by_peer: HashMap<String, BTreeSet<Registration>>,
}

impl Db {
    fn add_registration(&mut self, r: Registration) {
        self.regs.entry(r).or_default();
    }

    /// Adds the producer unless one with this peer id is there; true if added.
    fn add_producer(&mut self, r: &Registration, peer: &Arc<PeerInfo>) -> bool {
        let producers = self.regs.entry(r.clone()).or_default();
        if producers.contains_key(&peer.id) {
            return false;
        }
        let p = Producer {
            peer: Arc::clone(peer),
            tombstoned: false,
            tombstoned_at: GO_ZERO_TIME_NS,
        };
        producers.insert(peer.id.clone(), p);
        self.by_peer
            .entry(peer.id.clone())
            .or_default()
            .insert(r.clone());
        true
    }

    /// Removes a producer (the key stays): (was it there, producers left).
    fn remove_producer(&mut self, r: &Registration, id: &str) -> (bool, usize) {
        let Some(producers) = self.regs.get_mut(r) else {
            return (false, 0);
        };
        let removed = producers.remove(id).is_some();
        let left = producers.len();
        if removed {
            self.unindex(id, r);
        }
        (removed, left)
    }

    fn remove_registration(&mut self, r: &Registration) {
        if let Some(producers) = self.regs.remove(r) {
            for id in producers.keys() {
                self.unindex(id, r);
            }
        }
    }

    fn unindex(&mut self, id: &str, r: &Registration) {
        if let Some(set) = self.by_peer.get_mut(id) {
            set.remove(r);
            if set.is_empty() {
                self.by_peer.remove(id);
            }
        }
    }

    /// The registrations matching, `*` being a wildcard for key or subkey.
    fn find(&self, category: Category, key: &str, subkey: &str) -> Vec<Registration> {
        if key != "*" && subkey != "*" {
            let r = Registration::new(category, key, subkey);
            return if self.regs.contains_key(&r) {
                vec![r]
            } else {
                Vec::new()
            };
        }
        let start = Registration::new(category, if key == "*" { "" } else { key }, "");
        self.regs
            .range((Bound::Included(start), Bound::Unbounded))
            .map(|(r, _)| r)
            .take_while(|r| r.category == category && (key == "*" || r.key == key))
            .filter(|r| r.is_match(category, key, subkey))
            .cloned()
            .collect()
    }

    /// The producers of the matching registrations, each peer id once (its first producer).
    fn find_producers(&self, category: Category, key: &str, subkey: &str) -> Vec<&Producer> {
        let mut seen = BTreeSet::new();
        self.find(category, key, subkey)
            .iter()
            .filter_map(|r| self.regs.get(r))
            .flat_map(|ps| ps.values())
            .filter(|p| seen.insert(p.peer.id.as_str()))
            .collect()
    }
}

/// The registration database shared by the TCP and HTTP servers.
#[derive(Default)]
pub struct Registry {
    db: RwLock<Db>,
}

fn topic_reg(topic: &str) -> Registration {
    Registration::new(Category::Topic, topic, "")
}

fn channel_reg(topic: &str, channel: &str) -> Registration {
    Registration::new(Category::Channel, topic, channel)
}

fn client_reg() -> Registration {
    Registration::new(Category::Client, "", "")
}

impl Registry {
    pub fn new() -> Registry {
        Registry::default()
    }

    /// IDENTIFY: the peer joins `client::`; true if it was added.
    pub fn identify(&self, peer: &Arc<PeerInfo>) -> bool {
        self.db.write().add_producer(&client_reg(), peer)
    }

    /// REGISTER: the peer becomes a producer of the channel (if any) and of the topic. Returns
    /// the registrations it was newly added to. A peer already there keeps its tombstone.
    pub fn register(
        &self,
        peer: &Arc<PeerInfo>,
        topic: &str,
        channel: Option<&str>,
    ) -> Vec<Registration> {
        let mut db = self.db.write();
        let mut added = Vec::new();
        let mut regs = Vec::with_capacity(2);
        if let Some(c) = channel {
            regs.push(channel_reg(topic, c));
        }
        regs.push(topic_reg(topic));
        for r in regs {
            if db.add_producer(&r, peer) {
                added.push(r);
            }
        }
        added
    }

    /// UNREGISTER. With a channel: leave that channel (deleting its key if it is `#ephemeral`
    /// and now empty). Without: leave every channel of the topic and the topic (deleting the
    /// topic key if it is `#ephemeral` and now empty; channel keys stay).
    pub fn unregister(&self, id: &str, topic: &str, channel: Option<&str>) -> Unregistered {
        let mut db = self.db.write();
        let mut out = Unregistered::default();
        let (r, ephemeral) = match channel {
            Some(c) => (channel_reg(topic, c), nsq_wire::names::is_ephemeral(c)),
            None => {
                for r in db.find(Category::Channel, topic, "*") {
                    if db.remove_producer(&r, id).0 {
                        out.unexpected.push(r);
                    }
                }
                (topic_reg(topic), nsq_wire::names::is_ephemeral(topic))
            }
        };
        let (removed, left) = db.remove_producer(&r, id);
        if left == 0 && ephemeral {
            db.remove_registration(&r);
        }
        if removed {
            out.removed.push(r);
        }
        out
    }

    /// The connection closed: the peer leaves every registration (keys stay).
    pub fn disconnect(&self, id: &str) -> Vec<Registration> {
        let mut db = self.db.write();
        let regs: Vec<Registration> = db
            .by_peer
            .get(id)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        regs.into_iter()
            .filter(|r| db.remove_producer(r, id).0)
            .collect()
    }

    /// `/topics`: every topic key, with or without producers.
    pub fn topics(&self) -> Vec<String> {
        let db = self.db.read();
        db.find(Category::Topic, "*", "")
            .into_iter()
            .map(|r| r.key)
            .collect()
    }

    /// `/channels`: every channel key of the topic.
    pub fn channels(&self, topic: &str) -> Vec<String> {
        let db = self.db.read();
        db.find(Category::Channel, topic, "*")
            .into_iter()
            .map(|r| r.subkey)
            .collect()
    }

    /// `/lookup`: `None` if the topic key does not exist; else its channels and its active,
    /// untombstoned producers.
    pub fn lookup(&self, topic: &str, now: i64, w: Windows) -> Option<Lookup> {
        let db = self.db.read();
        if db.find(Category::Topic, topic, "").is_empty() {
            return None;
        }
        let channels = db
            .find(Category::Channel, topic, "*")
            .into_iter()
            .map(|r| r.subkey)
            .collect();
        let producers = db
            .find_producers(Category::Topic, topic, "")
            .into_iter()
            .filter(|p| {
                p.peer.is_active(now, w.inactive_producer_timeout)
                    && !p.is_tombstoned(now, w.tombstone_lifetime)
            })
            .map(|p| Arc::clone(&p.peer))
            .collect();
        Some(Lookup {
            channels,
            producers,
        })
    }

    /// `/nodes`: every active identified peer with its topics and, per topic, whether it is
    /// tombstoned there now (tombstones do not hide nodes).
    pub fn nodes(&self, now: i64, w: Windows) -> Vec<Node> {
        let db = self.db.read();
        db.find_producers(Category::Client, "", "")
            .into_iter()
            .filter(|p| p.peer.is_active(now, w.inactive_producer_timeout))
            .map(|p| {
                let topics: Vec<String> = db
                    .by_peer
                    .get(&p.peer.id)
                    .into_iter()
                    .flatten()
                    .filter(|r| r.category == Category::Topic)
                    .map(|r| r.key.clone())
                    .collect();
                let tombstones = topics
                    .iter()
                    .map(|t| {
                        db.regs
                            .get(&topic_reg(t))
                            .into_iter()
                            .flat_map(|ps| ps.values())
                            .find(|tp| Arc::ptr_eq(&tp.peer, &p.peer))
                            .is_some_and(|tp| tp.is_tombstoned(now, w.tombstone_lifetime))
                    })
                    .collect();
                Node {
                    peer: Arc::clone(&p.peer),
                    topics,
                    tombstones,
                }
            })
            .collect()
    }

    /// `/debug`: every registration that has producers, unfiltered.
    pub fn debug(&self) -> Vec<(Registration, Vec<DebugProducer>)> {
        let db = self.db.read();
        db.regs
            .iter()
            .filter(|(_, ps)| !ps.is_empty())
            .map(|(r, ps)| {
                let list = ps
                    .values()
                    .map(|p| DebugProducer {
                        peer: Arc::clone(&p.peer),
                        tombstoned: p.tombstoned,
                        tombstoned_at: p.tombstoned_at,
                    })
                    .collect();
                (r.clone(), list)
            })
            .collect()
    }

    /// `/topic/create`.
    pub fn create_topic(&self, topic: &str) {
        self.db.write().add_registration(topic_reg(topic));
    }

    /// `/topic/delete`: the topic key and all its channel keys. Returns the channels removed
    /// and whether the topic key existed.
    pub fn delete_topic(&self, topic: &str) -> (Vec<Registration>, bool) {
        let mut db = self.db.write();
        let channels = db.find(Category::Channel, topic, "*");
        for r in &channels {
            db.remove_registration(r);
        }
        let topics = db.find(Category::Topic, topic, "");
        for r in &topics {
            db.remove_registration(r);
        }
        (channels, !topics.is_empty())
    }

    /// `/channel/create`: the channel key and its topic key.
    pub fn create_channel(&self, topic: &str, channel: &str) {
        let mut db = self.db.write();
        db.add_registration(channel_reg(topic, channel));
        db.add_registration(topic_reg(topic));
    }

    /// `/channel/delete`: false if the channel key does not exist.
    pub fn delete_channel(&self, topic: &str, channel: &str) -> bool {
        let mut db = self.db.write();
        let found = db.find(Category::Channel, topic, channel);
        for r in &found {
            db.remove_registration(r);
        }
        !found.is_empty()
    }

    /// `/topic/tombstone`: tombstones, in the topic, each producer whose
    /// `broadcast_address:http_port` is `node`. Returns how many.
    pub fn tombstone(&self, topic: &str, node: &str, now: i64) -> usize {
        let mut db = self.db.write();
        let targets: Vec<(Registration, String)> = db
            .find(Category::Topic, topic, "")
            .into_iter()
            .flat_map(|r| {
                let ids: Vec<String> = db
                    .regs
                    .get(&r)
                    .into_iter()
                    .flat_map(|ps| ps.values())
                    .filter(|p| {
                        format!("{}:{}", p.peer.broadcast_address, p.peer.http_port) == node
                    })
                    .map(|p| p.peer.id.clone())
                    .collect();
                ids.into_iter().map(move |id| (r.clone(), id))
            })
            .collect();
        // With a `*` topic nsqlookupd tombstones one producer per peer (the first found).
        let mut seen = BTreeSet::new();
        let mut n = 0;
        for (r, id) in targets {
            if !seen.insert(id.clone()) {
                continue;
            }
            if let Some(p) = db.regs.get_mut(&r).and_then(|ps| ps.get_mut(&id)) {
                p.tombstoned = true;
                p.tombstoned_at = now;
                n += 1;
            }
        }
        n
    }
}

#[cfg(test)]
mod tests;
