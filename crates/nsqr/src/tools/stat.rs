//! `nsqr stat`: a live view of one channel of a topic summed over its nsqd (given, or found
//! through lookupd), from their `/stats`, as NSQ's `nsq_stat` prints it: every `--interval`
//! a row of rates (ingress, egress), depths (total, in memory, on disk), in flight, deferred,
//! requeued, timed out, messages and clients, a header every 25 rows, `--count` rows (or
//! until stopped). On a terminal the row being measured is shown live, refreshed in place
//! four times a second, and committed when its interval ends.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use clap::Args;
use serde::Deserialize;

use super::{signalled, usage, Outcome};
use crate::fail::{err, Result};

const TOOL: &str = "stat";

#[derive(Debug, Clone, Args)]
pub struct StatArgs {
    /// NSQ topic.
    #[arg(long)]
    pub topic: String,

    /// NSQ channel.
    #[arg(long)]
    pub channel: String,

    /// nsqd HTTP address (may be given multiple times).
    #[arg(long = "nsqd-http-address")]
    pub nsqd_http_address: Vec<String>,

    /// nsqlookupd HTTP address (may be given multiple times).
    #[arg(long = "lookupd-http-address")]
    pub lookupd_http_address: Vec<String>,

    /// Time between rows, Go-style (2s, 500ms).
    #[arg(long, default_value = "2s", value_parser = crate::cli::parse_duration)]
    pub interval: Duration,

    /// Number of rows (default: until stopped).
    #[arg(long)]
    pub count: Option<u64>,

    /// Timeout for HTTP connect.
    #[arg(long, default_value = "2s", value_parser = crate::cli::parse_duration)]
    pub http_client_connect_timeout: Duration,

    /// Timeout for an HTTP request.
    #[arg(long, default_value = "5s", value_parser = crate::cli::parse_duration)]
    pub http_client_request_timeout: Duration,
}

/// A channel's counters, summed over the nodes that have it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChannelTotals {
    pub depth: i64,
    pub backend_depth: i64,
    pub in_flight: i64,
    pub deferred: i64,
    pub requeued: i64,
    pub timed_out: i64,
    pub messages: i64,
    pub clients: i64,
}

/// `/stats` (nsqd writes `null` for an empty list).
#[derive(Deserialize)]
struct Stats {
    #[serde(default)]
    topics: Option<Vec<TopicJson>>,
}

#[derive(Deserialize)]
struct TopicJson {
    topic_name: String,
    #[serde(default)]
    channels: Option<Vec<ChannelJson>>,
}

#[derive(Deserialize)]
struct ChannelJson {
    channel_name: String,
    depth: i64,
    backend_depth: i64,
    in_flight_count: i64,
    deferred_count: i64,
    requeue_count: i64,
    timeout_count: i64,
    message_count: i64,
    #[serde(default)]
    clients: Option<Vec<serde_json::Value>>,
}

/// The channel's totals in one `/stats` answer (None if that node does not have it).
pub fn channel_totals(body: &[u8], topic: &str, channel: &str) -> Result<Option<ChannelTotals>> {
    let s: Stats =
        serde_json::from_slice(body).map_err(|e| err(format!("unreadable /stats: {e}")))?;
    let found = s
        .topics
        .iter()
        .flatten()
        .filter(|t| t.topic_name == topic)
        .flat_map(|t| t.channels.iter().flatten())
        .find(|c| c.channel_name == channel);
    Ok(found.map(|c| ChannelTotals {
        depth: c.depth,
        backend_depth: c.backend_depth,
        in_flight: c.in_flight_count,
        deferred: c.deferred_count,
        requeued: c.requeue_count,
        timed_out: c.timeout_count,
        messages: c.message_count,
        clients: c.clients.as_ref().map_or(0, Vec::len) as i64,
    }))
}

impl std::ops::AddAssign for ChannelTotals {
    fn add_assign(&mut self, o: ChannelTotals) {
        self.depth += o.depth;
        self.backend_depth += o.backend_depth;
        self.in_flight += o.in_flight;
        self.deferred += o.deferred;
        self.requeued += o.requeued;
        self.timed_out += o.timed_out;
        self.messages += o.messages;
        self.clients += o.clients;
    }
}

/// nsq_stat's two header lines.
pub fn header() -> String {
    format!(
        "{}+{}+{}\n{:>7} {:>7} | {:>7} {:>7} {:>7} {:>5} {:>5} | {:>7} {:>7} {:>12} {:>7}",
        "------rate------",
        "----------------depth----------------",
        "--------------metadata---------------",
        "ingress",
        "egress",
        "total",
        "mem",
        "disk",
        "inflt",
        "def",
        "req",
        "t-o",
        "msgs",
        "clients"
    )
}

/// One row: rates over `secs` from `old` to `new`, and `new`'s levels.
pub fn row(old: &ChannelTotals, new: &ChannelTotals, secs: f64) -> String {
    let secs = secs.max(1e-9);
    let ingress = (new.messages - old.messages) as f64 / secs;
    let egress = ((new.messages - old.messages) - (new.depth - old.depth)) as f64 / secs;
    format!(
        "{:>7} {:>7} | {:>7} {:>7} {:>7} {:>5} {:>5} | {:>7} {:>7} {:>12} {:>7}",
        ingress as i64,
        egress as i64,
        new.depth,
        new.depth - new.backend_depth,
        new.backend_depth,
        new.in_flight,
        new.deferred,
        new.requeued,
        new.timed_out,
        new.messages,
        new.clients
    )
}

pub async fn run(a: StatArgs) -> Result<Outcome> {
    if a.nsqd_http_address.is_empty() == a.lookupd_http_address.is_empty() {
        usage(
            TOOL,
            "give --nsqd-http-address or --lookupd-http-address, not both or neither",
        );
    }
    if a.interval.is_zero() {
        usage(TOOL, "--interval should be positive");
    }
    if a.count == Some(0) {
        usage(TOOL, "--count should be positive");
    }
    for addr in a.nsqd_http_address.iter().chain(&a.lookupd_http_address) {
        if addr.starts_with("http") {
            usage(TOOL, &format!("{addr}: address should not contain scheme"));
        }
    }
    tokio::select! {
        r = report(&a) => r.map(|()| Outcome::Done),
        _ = signalled() => {
            println!();
            Ok(Outcome::Done)
        }
    }
}

/// The row loop.
async fn report(a: &StatArgs) -> Result<()> {
    let live = std::io::stdout().is_terminal();
    let mut last = (Instant::now(), totals(a).await?);
    let mut rows = 0u64;
    while a.count.is_none_or(|c| rows < c) {
        if rows.is_multiple_of(25) {
            println!("{}", header());
        }
        let due = last.0 + a.interval;
        if live {
            // Redraw the row being measured until its interval is over.
            while Instant::now() + Duration::from_millis(250) < due {
                tokio::time::sleep(Duration::from_millis(250)).await;
                let now = totals(a).await?;
                print!(
                    "\r{}\x1b[K",
                    row(&last.1, &now, last.0.elapsed().as_secs_f64())
                );
                let _ = std::io::stdout().flush();
            }
        }
        tokio::time::sleep_until(due.into()).await;
        let now = (Instant::now(), totals(a).await?);
        let line = row(&last.1, &now.1, now.0.duration_since(last.0).as_secs_f64());
        if live {
            println!("\r{line}\x1b[K");
        } else {
            println!("{line}");
        }
        last = now;
        rows += 1;
    }
    Ok(())
}

/// The channel summed over its nodes now.
async fn totals(a: &StatArgs) -> Result<ChannelTotals> {
    let nodes = nodes(a).await?;
    let timeout = a.http_client_connect_timeout + a.http_client_request_timeout;
    let path = format!(
        "/stats?format=json&topic={}&channel={}",
        a.topic.replace('#', "%23"),
        a.channel.replace('#', "%23")
    );
    let mut sum = ChannelTotals::default();
    let mut found = false;
    for node in &nodes {
        let (status, body) = nsqr_client::http::get(node, &path, timeout, None)
            .await
            .map_err(|e| err(format!("failed to get nsqd stats - {e}")))?;
        if status != 200 {
            return Err(err(format!(
                "failed to get nsqd stats - {node} answered {status}"
            )));
        }
        if let Some(t) = channel_totals(&body, &a.topic, &a.channel)? {
            sum += t;
            found = true;
        }
    }
    if !found {
        return Err(err(format!(
            "failed to find channel({}) in stats metadata for topic({})",
            a.channel, a.topic
        )));
    }
    Ok(sum)
}

/// The nodes to ask: given, or the topic's producers in lookupd.
async fn nodes(a: &StatArgs) -> Result<Vec<String>> {
    if !a.nsqd_http_address.is_empty() {
        return Ok(a.nsqd_http_address.clone());
    }
    let timeout = a.http_client_connect_timeout + a.http_client_request_timeout;
    let mut all = Vec::new();
    for l in &a.lookupd_http_address {
        let producers = nsqr_client::lookupd::lookup(l, &a.topic, timeout, None)
            .await
            .map_err(|e| err(format!("failed to get topic producers - {e}")))?;
        for p in producers {
            let addr = p.http_address();
            if !all.contains(&addr) {
                all.push(addr);
            }
        }
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_as_nsq_stat_prints_them() {
        let old = ChannelTotals {
            messages: 100,
            depth: 10,
            ..Default::default()
        };
        let new = ChannelTotals {
            depth: 30,
            backend_depth: 5,
            in_flight: 2,
            deferred: 1,
            requeued: 3,
            timed_out: 4,
            messages: 300,
            clients: 2,
        };
        // 200 in over 2 s, depth up by 20: 90/s out.
        assert_eq!(
            row(&old, &new, 2.0),
            "    100      90 |      30      25       5     2     1 |       3       4          300       2"
        );
        assert!(header().starts_with("------rate------+"));
        let body = br#"{"topics":[{"topic_name":"t","channels":[{"channel_name":"c","depth":3,
            "backend_depth":1,"in_flight_count":2,"deferred_count":0,"requeue_count":0,
            "timeout_count":0,"message_count":9,"clients":[{},{}]}]}]}"#;
        let t = channel_totals(body, "t", "c").unwrap().unwrap();
        assert_eq!((t.depth, t.messages, t.clients), (3, 9, 2));
        assert_eq!(channel_totals(body, "t", "x").unwrap(), None);
        assert!(channel_totals(b"<html>", "t", "c").is_err());
        assert_eq!(
            channel_totals(br#"{"topics":null}"#, "t", "c").unwrap(),
            None
        );
    }
}
