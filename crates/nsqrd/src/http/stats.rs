//! `/stats`: one broker snapshot rendered as nsqd's JSON document (`format=json`) or its text
//! report (anything else). The filters (`topic`, `channel`, `include_clients`, `include_mem`)
//! use nsqd's parsing: an empty value means no filter, and the booleans accept only
//! `true`/`1`/`false`/`0`, anything else counting as true.

use std::collections::BTreeMap;

use serde::Serialize;

use super::stats_json::{ClientStats, StatsView, TopicStats};
use nsq_common::http::query::Query;
use nsq_common::http::response::{ApiError, Reply};

use super::query::nsq_bool;
use super::stats_text;
use super::HttpState;
use crate::cluster::GroupStats;

/// The parsed `/stats` parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatsParams {
    pub json: bool,
    pub topic: Option<String>,
    pub channel: Option<String>,
    pub include_clients: bool,
    pub include_mem: bool,
}

impl StatsParams {
    pub fn parse(raw_query: Option<&str>) -> Result<StatsParams, ApiError> {
        let q = Query::parse(raw_query).map_err(|_| ApiError::bad_request("INVALID_REQUEST"))?;
        let non_empty = |k: &str| q.get(k).filter(|v| !v.is_empty()).map(str::to_owned);
        Ok(StatsParams {
            json: q.get("format") == Some("json"),
            topic: non_empty("topic"),
            channel: non_empty("channel"),
            include_clients: nsq_bool(q.get("include_clients")).unwrap_or(true),
            include_mem: nsq_bool(q.get("include_mem")).unwrap_or(true),
        })
    }
}

/// nsqd's `memStats`. These are Go runtime numbers; nsqrd reports what the process can tell
/// cheaply (resident memory as heap in use) and zeros for the garbage collector's figures.
#[derive(Debug, Clone, Default, Serialize)]
pub struct MemStats {
    pub heap_objects: u64,
    pub heap_idle_bytes: u64,
    pub heap_in_use_bytes: u64,
    pub heap_released_bytes: u64,
    pub gc_pause_usec_100: u64,
    pub gc_pause_usec_99: u64,
    pub gc_pause_usec_95: u64,
    pub next_gc_bytes: u64,
    pub gc_total_runs: u32,
}

impl MemStats {
    /// Read from `/proc/self/statm` (zeros where that is unavailable).
    pub fn current() -> MemStats {
        MemStats {
            heap_in_use_bytes: nsq_common::procfs::statm().map_or(0, |m| m.resident_bytes),
            ..MemStats::default()
        }
    }
}

/// The JSON document, in nsqd's key order.
#[derive(Debug, Serialize)]
struct StatsDoc<'a> {
    version: &'a str,
    health: &'a str,
    start_time: i64,
    topics: &'a Option<Vec<TopicStats>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    memory: Option<&'a MemStats>,
    /// `null` when there are none (Go's nil slice).
    producers: Option<&'a [ClientStats]>,
}

/// Every replicated topic's group on this node, for `/stats` and `/metrics`.
pub async fn groups(state: &HttpState) -> BTreeMap<String, GroupStats> {
    match &state.cluster {
        Some(cluster) => cluster.stats().await,
        None => BTreeMap::new(),
    }
}

/// `GET /stats`.
pub fn stats(
    state: &HttpState,
    raw_query: Option<&str>,
    groups: BTreeMap<String, GroupStats>,
) -> Result<Reply, ApiError> {
    let p = StatsParams::parse(raw_query)?;
    let snap = state
        .broker
        .snapshot(p.topic.as_deref(), p.channel.as_deref(), p.include_clients);
    let producers = if p.include_clients {
        state.clients.producers()
    } else {
        Vec::new()
    };
    let mut view = StatsView::new(&snap, &producers, p.topic.as_deref());
    view.add_replication(groups);
    let health = state.broker.health();
    let mem = p.include_mem.then(MemStats::current);
    if !p.json {
        let text = stats_text::render(&stats_text::TextStats {
            version: state.settings.version(),
            start_time_ns: state.broker.start_time_ns(),
            now_ns: nsqr_broker::now_unix_nanos(),
            health: &health,
            memory: mem.as_ref(),
            view: &view,
        });
        return Ok(Reply::Text(text.into()));
    }
    Reply::json(&StatsDoc {
        version: state.settings.version(),
        health: &health,
        start_time: state.broker.start_time(),
        topics: &view.topics,
        memory: mem.as_ref(),
        producers: (!view.producers.is_empty()).then_some(&view.producers[..]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params() {
        let p = StatsParams::parse(None).unwrap();
        assert_eq!(
            p,
            StatsParams {
                json: false,
                topic: None,
                channel: None,
                include_clients: true,
                include_mem: true
            }
        );
        let p = StatsParams::parse(Some(
            "format=json&topic=t&channel=&include_clients=0&include_mem=false",
        ))
        .unwrap();
        assert!(p.json && !p.include_clients && !p.include_mem);
        assert_eq!((p.topic.as_deref(), p.channel), (Some("t"), None));
        let p = StatsParams::parse(Some("format=JSON&include_clients=no&include_mem=")).unwrap();
        assert!(!p.json && p.include_clients && p.include_mem);
        assert!(StatsParams::parse(Some("topic=%zz")).is_err());
    }

    #[test]
    fn percentiles_render_like_go() {
        let e = super::super::stats_json::E2eLatency {
            count: 1,
            percentiles: Some(vec![
                super::super::stats_json::Percentile {
                    quantile: 1.0,
                    value: 0.0,
                },
                super::super::stats_json::Percentile {
                    quantile: 0.99,
                    value: 1234.5,
                },
            ]),
        };
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"count":1,"percentiles":[{"quantile":1,"value":0},{"quantile":0.99,"value":1234.5}]}"#
        );
    }

    #[test]
    fn memory_is_plausible() {
        let m = MemStats::current();
        let v = serde_json::to_value(&m).unwrap();
        assert_eq!(v.as_object().unwrap().len(), 9);
        if std::path::Path::new("/proc/self/statm").exists() {
            assert!(m.heap_in_use_bytes > 0);
        }
    }
}
