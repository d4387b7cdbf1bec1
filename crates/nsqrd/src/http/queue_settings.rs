//! `/topic/config` and `/channel/config` (nsqr only): a topic's and a channel's queue settings
//! (`nsqr_broker::queue_settings`: delivery limit, dead-letter topic, order, time to live, in-flight
//! timeout, memory queue size). `POST` takes a JSON object of the settings to change (`null`
//! unsets one) and answers with the effective settings; `GET` answers with them. A bad key or
//! value is a 400 that names it, and nothing changes (nothing is created either). A change
//! reaches `nsqd.dat` before the answer, as a pause does.

use hyper::body::Incoming;
use hyper::{Request, StatusCode};
use nsq_common::http::query::Query;
use nsq_common::http::response::{ApiError, Reply};
use nsq_wire::names::is_valid_name;
use nsqr_broker::{BrokerError, EffectiveSettings};

use super::body::{content_length, read_body};
use super::HttpState;
use super::RequestCtx;

/// A settings body is small; anything larger is refused before it is read.
const MAX_CONFIG_BODY: usize = 64 * 1024;

/// `GET /topic/config?topic=T`: what a channel of `T` without settings of its own runs with.
pub fn get_topic(state: &HttpState, raw_query: Option<&str>) -> Result<Reply, ApiError> {
    let q = parse(raw_query)?;
    let topic = name_arg(&q, "topic", "MISSING_ARG_TOPIC", "INVALID_TOPIC")?;
    let t = state
        .broker
        .topic(topic)
        .ok_or(ApiError::not_found("TOPIC_NOT_FOUND"))?;
    effective(&t.effective_settings())
}

/// `GET /channel/config?topic=T&channel=C`: what the channel runs with.
pub fn get_channel(state: &HttpState, raw_query: Option<&str>) -> Result<Reply, ApiError> {
    let q = parse(raw_query)?;
    let topic = name_arg(&q, "topic", "MISSING_ARG_TOPIC", "INVALID_TOPIC")?;
    let channel = name_arg(&q, "channel", "MISSING_ARG_CHANNEL", "INVALID_CHANNEL")?;
    let ch = state
        .broker
        .topic(topic)
        .ok_or(ApiError::not_found("TOPIC_NOT_FOUND"))?
        .channel(channel)
        .ok_or(ApiError::not_found("CHANNEL_NOT_FOUND"))?;
    effective(&ch.effective_settings())
}

/// `POST /topic/config?topic=T` with a JSON object: change the topic's settings (the
/// defaults of its channels), creating it if needed.
pub async fn set_topic(
    state: &HttpState,
    req: Request<Incoming>,
    cx: RequestCtx,
) -> Result<Reply, ApiError> {
    let q = parse(req.uri().query())?;
    let topic = name_arg(&q, "topic", "MISSING_ARG_TOPIC", "INVALID_TOPIC")?.to_string();
    let changes = json_body(req, cx).await?;
    state
        .broker
        .configure_topic(&topic, &changes)
        .map_err(refused)?;
    persist(state)?;
    let t = state.broker.topic(&topic).ok_or_else(ApiError::exiting)?;
    effective(&t.effective_settings())
}

/// `POST /channel/config?topic=T&channel=C` with a JSON object: change the channel's
/// settings, creating the topic and the channel if needed.
pub async fn set_channel(
    state: &HttpState,
    req: Request<Incoming>,
    cx: RequestCtx,
) -> Result<Reply, ApiError> {
    let q = parse(req.uri().query())?;
    let topic = name_arg(&q, "topic", "MISSING_ARG_TOPIC", "INVALID_TOPIC")?.to_string();
    let channel = name_arg(&q, "channel", "MISSING_ARG_CHANNEL", "INVALID_CHANNEL")?.to_string();
    let changes = json_body(req, cx).await?;
    state
        .broker
        .configure_channel(&topic, &channel, &changes)
        .map_err(refused)?;
    persist(state)?;
    let ch = state
        .broker
        .topic(&topic)
        .and_then(|t| t.channel(&channel))
        .ok_or_else(ApiError::exiting)?;
    effective(&ch.effective_settings())
}

fn parse(raw_query: Option<&str>) -> Result<Query, ApiError> {
    Query::parse(raw_query).map_err(|_| ApiError::bad_request("INVALID_REQUEST"))
}

/// A topic or channel name from the query, present and valid.
pub(crate) fn name_arg<'q>(
    q: &'q Query,
    key: &str,
    missing: &'static str,
    invalid: &'static str,
) -> Result<&'q str, ApiError> {
    let v = q.get(key).ok_or(ApiError::bad_request(missing))?;
    if !is_valid_name(v.as_bytes()) {
        return Err(ApiError::bad_request(invalid));
    }
    Ok(v)
}

/// The request body as a JSON value (at most 64 KiB).
async fn json_body(req: Request<Incoming>, cx: RequestCtx) -> Result<serde_json::Value, ApiError> {
    if content_length(req.body()).is_some_and(|n| n > MAX_CONFIG_BODY as u64) {
        return Err(ApiError::too_large("BODY_TOO_BIG"));
    }
    let body = read_body(req.into_body(), cx.deadline, MAX_CONFIG_BODY + 1).await?;
    if body.len() > MAX_CONFIG_BODY {
        return Err(ApiError::too_large("BODY_TOO_BIG"));
    }
    serde_json::from_slice(&body)
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, format!("INVALID_JSON: {e}")))
}

/// A refused change: the setting and why (400), or the broker shutting down (503).
fn refused(e: BrokerError) -> ApiError {
    match e {
        BrokerError::QueueSettings(p) => {
            ApiError::new(StatusCode::BAD_REQUEST, format!("INVALID_CONFIG: {p}"))
        }
        BrokerError::InvalidName(_) => ApiError::bad_request("INVALID_TOPIC"),
        _ => ApiError::exiting(),
    }
}

fn persist(state: &HttpState) -> Result<(), ApiError> {
    state.broker.persist_metadata().map_err(|e| {
        tracing::error!("{e}");
        ApiError::internal()
    })
}

fn effective(e: &EffectiveSettings) -> Result<Reply, ApiError> {
    Reply::json(&e.to_settings())
}
