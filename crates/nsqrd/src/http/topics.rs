//! `/topic/*` and `/channel/*` administration. Each handler keeps nsqd's exact checks, which
//! differ per route: `/topic/delete` and `/topic/(un)pause` never validate the name (an invalid
//! one is simply `TOPIC_NOT_FOUND`), `/topic/create` creates, the channel routes never create
//! the topic, and channel argument errors say `INVALID_ARG_TOPIC` where topic routes say
//! `INVALID_TOPIC`.

use std::sync::Arc;

use nsq_common::http::query::Query;
use nsq_common::http::response::{ApiError, Reply};
use nsq_wire::names::is_valid_name;
use nsqr_broker::{Channel, Topic};

use super::publish::topic_from_query;
use super::HttpState;

/// The topic routes that act on an existing topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopicAction {
    Delete,
    Empty,
    Pause,
    Unpause,
}

/// The channel routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChannelAction {
    Create,
    Delete,
    Empty,
    Pause,
    Unpause,
}

fn parse(raw_query: Option<&str>) -> Result<Query, ApiError> {
    Query::parse(raw_query).map_err(|_| ApiError::bad_request("INVALID_REQUEST"))
}

fn topic_not_found() -> ApiError {
    ApiError::not_found("TOPIC_NOT_FOUND")
}

/// `POST /topic/create`.
pub fn create_topic(state: &HttpState, raw_query: Option<&str>) -> Result<Reply, ApiError> {
    topic_from_query(state, raw_query)?;
    Ok(Reply::Empty)
}

/// `POST /topic/{delete,empty,pause,unpause}`.
pub fn topic_action(
    state: &HttpState,
    raw_query: Option<&str>,
    action: TopicAction,
) -> Result<Reply, ApiError> {
    let query = parse(raw_query)?;
    let name = query
        .get("topic")
        .ok_or(ApiError::bad_request("MISSING_ARG_TOPIC"))?;
    // Only /topic/empty validates the name.
    if action == TopicAction::Empty && !is_valid_name(name.as_bytes()) {
        return Err(ApiError::bad_request("INVALID_TOPIC"));
    }
    if action == TopicAction::Delete {
        state
            .broker
            .delete_topic(name)
            .map_err(|_| topic_not_found())?;
        return Ok(Reply::Empty);
    }
    let topic = state.broker.topic(name).ok_or_else(topic_not_found)?;
    match action {
        TopicAction::Empty => topic.empty(),
        TopicAction::Pause | TopicAction::Unpause => {
            topic.set_paused(action == TopicAction::Pause);
            persist(state)?;
        }
        TopicAction::Delete => {}
    }
    Ok(Reply::Empty)
}

/// `POST /channel/{create,delete,empty,pause,unpause}`.
pub fn channel_action(
    state: &HttpState,
    raw_query: Option<&str>,
    action: ChannelAction,
) -> Result<Reply, ApiError> {
    let (topic, channel) = existing_topic_and_channel_arg(state, raw_query)?;
    let existing = || -> Result<Arc<Channel>, ApiError> {
        topic
            .channel(&channel)
            .ok_or(ApiError::not_found("CHANNEL_NOT_FOUND"))
    };
    match action {
        ChannelAction::Create => {
            topic
                .get_or_create_channel(&channel)
                .map_err(|_| ApiError::exiting())?;
        }
        ChannelAction::Delete => {
            state
                .broker
                .delete_channel(topic.name(), &channel)
                .map_err(|_| ApiError::not_found("CHANNEL_NOT_FOUND"))?;
        }
        ChannelAction::Empty => existing()?.empty(),
        ChannelAction::Pause | ChannelAction::Unpause => {
            existing()?.set_paused(action == ChannelAction::Pause);
            persist(state)?;
        }
    }
    Ok(Reply::Empty)
}

/// Pause and unpause reach `nsqd.dat` before the reply, as in nsqd, so they survive a crash.
fn persist(state: &HttpState) -> Result<(), ApiError> {
    state.broker.persist_metadata().map_err(|e| {
        tracing::error!("{e}");
        ApiError::internal()
    })
}

/// nsqd's `getExistingTopicFromQuery`: both names present and valid, then the topic must exist.
fn existing_topic_and_channel_arg(
    state: &HttpState,
    raw_query: Option<&str>,
) -> Result<(Arc<Topic>, String), ApiError> {
    let query = parse(raw_query)?;
    let topic = query
        .get("topic")
        .ok_or(ApiError::bad_request("MISSING_ARG_TOPIC"))?;
    if !is_valid_name(topic.as_bytes()) {
        return Err(ApiError::bad_request("INVALID_ARG_TOPIC"));
    }
    let channel = query
        .get("channel")
        .ok_or(ApiError::bad_request("MISSING_ARG_CHANNEL"))?;
    if !is_valid_name(channel.as_bytes()) {
        return Err(ApiError::bad_request("INVALID_ARG_CHANNEL"));
    }
    let t = state.broker.topic(topic).ok_or_else(topic_not_found)?;
    Ok((t, channel.to_string()))
}
