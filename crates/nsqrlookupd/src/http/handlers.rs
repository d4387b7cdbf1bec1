//! The 12 endpoints: argument checks in nsqlookupd's order with its error texts, then one
//! registry call, then the JSON shapes nsqlookupd sends (Go structs keep field order, Go maps
//! are sorted by key). Lists come out sorted, where nsqlookupd's order is arbitrary.

use std::collections::BTreeMap;

use nsq_common::http::query::Query;
use nsq_common::http::response::{ApiError, Reply};
use nsq_wire::names::is_valid_name;
use serde::Serialize;

use super::router::Endpoint;
use super::HttpState;
use crate::json::to_go_json;
use crate::registry::PeerInfo;
use crate::tcp::now_ns;

type Outcome = Result<Reply, ApiError>;

/// The version nsqlookupd reports; clients gate features on it. nsqlookupd is released with
/// nsqd, so it is the nsqd version nsqr reproduces.
pub const VERSION: &str = nsq_wire::NSQD_VERSION;

/// Runs a V1 endpoint (everything but `/ping`).
pub fn run(s: &HttpState, endpoint: Endpoint, raw_query: Option<&str>) -> Outcome {
    match endpoint {
        // `/ping` is plain text without the V1 header: the service answers it before this.
        Endpoint::Ping => Ok(Reply::Empty),
        Endpoint::Info => info(),
        Endpoint::Debug => debug(s),
        Endpoint::Topics => Ok(json(&Topics {
            topics: s.registry.topics(),
        })),
        Endpoint::Nodes => nodes(s),
        Endpoint::Channels => {
            let topic = topic_arg(&query(raw_query)?)?;
            Ok(json(&Channels {
                channels: s.registry.channels(&topic),
            }))
        }
        Endpoint::Lookup => lookup(s, &query(raw_query)?),
        Endpoint::TopicCreate => {
            let topic = topic_arg(&query(raw_query)?)?;
            if !is_valid_name(topic.as_bytes()) {
                return Err(ApiError::bad_request("INVALID_ARG_TOPIC"));
            }
            tracing::info!("DB: adding topic({topic})");
            s.registry.create_topic(&topic);
            Ok(Reply::Empty)
        }
        Endpoint::TopicDelete => {
            let topic = topic_arg(&query(raw_query)?)?;
            let (channels, existed) = s.registry.delete_topic(&topic);
            for c in channels {
                tracing::info!("DB: removing channel({}) from topic({topic})", c.subkey);
            }
            if existed {
                tracing::info!("DB: removing topic({topic})");
            }
            Ok(Reply::Empty)
        }
        Endpoint::ChannelCreate => {
            let (topic, channel) = topic_channel_args(&query(raw_query)?)?;
            tracing::info!("DB: adding channel({channel}) in topic({topic})");
            tracing::info!("DB: adding topic({topic})");
            s.registry.create_channel(&topic, &channel);
            Ok(Reply::Empty)
        }
        Endpoint::ChannelDelete => {
            let (topic, channel) = topic_channel_args(&query(raw_query)?)?;
            if !s.registry.delete_channel(&topic, &channel) {
                return Err(ApiError::not_found("CHANNEL_NOT_FOUND"));
            }
            tracing::info!("DB: removing channel({channel}) from topic({topic})");
            Ok(Reply::Empty)
        }
        Endpoint::TopicTombstone => {
            let q = query(raw_query)?;
            let topic = topic_arg(&q)?;
            let node = q
                .get("node")
                .ok_or(ApiError::bad_request("MISSING_ARG_NODE"))?;
            tracing::info!("DB: setting tombstone for producer@{node} of topic({topic})");
            s.registry.tombstone(&topic, node, now_ns());
            Ok(Reply::Empty)
        }
    }
}

/// A structure as the 200 JSON answer, serialized as Go does.
fn json<T: Serialize>(v: &T) -> Reply {
    Reply::Json(to_go_json(v))
}

fn query(raw: Option<&str>) -> Result<Query, ApiError> {
    Query::parse(raw).map_err(|_| ApiError::bad_request("INVALID_REQUEST"))
}

fn topic_arg(q: &Query) -> Result<String, ApiError> {
    q.get("topic")
        .map(str::to_string)
        .ok_or(ApiError::bad_request("MISSING_ARG_TOPIC"))
}

/// nsqlookupd's `GetTopicChannelArgs`: topic present, valid; channel present, valid.
fn topic_channel_args(q: &Query) -> Result<(String, String), ApiError> {
    let topic = topic_arg(q)?;
    if !is_valid_name(topic.as_bytes()) {
        return Err(ApiError::bad_request("INVALID_ARG_TOPIC"));
    }
    let channel = q
        .get("channel")
        .ok_or(ApiError::bad_request("MISSING_ARG_CHANNEL"))?;
    if !is_valid_name(channel.as_bytes()) {
        return Err(ApiError::bad_request("INVALID_ARG_CHANNEL"));
    }
    Ok((topic, channel.to_string()))
}

#[derive(Serialize)]
struct Info {
    version: &'static str,
}

fn info() -> Outcome {
    Ok(json(&Info { version: VERSION }))
}

#[derive(Serialize)]
struct Topics {
    topics: Vec<String>,
}

#[derive(Serialize)]
struct Channels {
    channels: Vec<String>,
}

/// nsqlookupd's `PeerInfo` as JSON (struct order).
#[derive(Serialize)]
struct Peer<'a> {
    remote_address: &'a str,
    hostname: &'a str,
    broadcast_address: &'a str,
    tcp_port: i64,
    http_port: i64,
    version: &'a str,
    topology_zone: &'a str,
    topology_region: &'a str,
}

impl<'a> From<&'a PeerInfo> for Peer<'a> {
    fn from(p: &'a PeerInfo) -> Self {
        Peer {
            remote_address: &p.remote_address,
            hostname: &p.hostname,
            broadcast_address: &p.broadcast_address,
            tcp_port: p.tcp_port,
            http_port: p.http_port,
            version: &p.version,
            topology_zone: &p.topology_zone,
            topology_region: &p.topology_region,
        }
    }
}

#[derive(Serialize)]
struct LookupJson<'a> {
    channels: Vec<String>,
    producers: Vec<Peer<'a>>,
}

fn lookup(s: &HttpState, q: &Query) -> Outcome {
    let topic = topic_arg(q)?;
    let l = s
        .registry
        .lookup(&topic, now_ns(), s.windows)
        .ok_or(ApiError::not_found("TOPIC_NOT_FOUND"))?;
    Ok(json(&LookupJson {
        channels: l.channels,
        producers: l.producers.iter().map(|p| Peer::from(&**p)).collect(),
    }))
}

/// A `/nodes` entry (struct order).
#[derive(Serialize)]
struct NodeJson<'a> {
    #[serde(flatten)]
    peer: Peer<'a>,
    tombstones: &'a [bool],
    topics: &'a [String],
}

#[derive(Serialize)]
struct Nodes<'a> {
    producers: Vec<NodeJson<'a>>,
}

fn nodes(s: &HttpState) -> Outcome {
    let nodes = s.registry.nodes(now_ns(), s.windows);
    let producers = nodes
        .iter()
        .map(|n| NodeJson {
            peer: Peer::from(&*n.peer),
            tombstones: &n.tombstones,
            topics: &n.topics,
        })
        .collect();
    Ok(json(&Nodes { producers }))
}

/// A `/debug` producer: a Go map, so the keys are sorted.
#[derive(Serialize)]
struct DebugJson<'a> {
    broadcast_address: &'a str,
    hostname: &'a str,
    http_port: i64,
    id: &'a str,
    last_update: i64,
    tcp_port: i64,
    tombstoned: bool,
    tombstoned_at: i64,
    topology_region: &'a str,
    topology_zone: &'a str,
    version: &'a str,
}

fn debug(s: &HttpState) -> Outcome {
    let regs = s.registry.debug();
    let mut out: BTreeMap<String, Vec<DebugJson>> = BTreeMap::new();
    for (r, producers) in &regs {
        let list = producers
            .iter()
            .map(|p| DebugJson {
                broadcast_address: &p.peer.broadcast_address,
                hostname: &p.peer.hostname,
                http_port: p.peer.http_port,
                id: &p.peer.id,
                last_update: p.peer.last_update(),
                tcp_port: p.peer.tcp_port,
                tombstoned: p.tombstoned,
                tombstoned_at: p.tombstoned_at,
                topology_region: &p.peer.topology_region,
                topology_zone: &p.peer.topology_zone,
                version: &p.peer.version,
            })
            .collect();
        out.insert(r.to_string(), list);
    }
    Ok(json(&out))
}
